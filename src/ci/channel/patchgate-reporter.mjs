// patchgate's node:test reporter. patchgate ci adds it with --test-reporter from a folder
// outside the work tree; it writes to fd 3, a socket the gate owns (its destination is
// /dev/null): each test's path of names and outcome, then an end record. The gate
// cross-checks the stream against the TAP/JUnit report.
import { writeSync } from 'node:fs';

function send(rec) {
  const buf = Buffer.from(JSON.stringify(rec) + '\n');
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(3, buf, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}

export default async function* patchgateReporter(source) {
  const stacks = new Map();
  send({ t: 'start' });
  for await (const e of source) {
    const d = e.data ?? {};
    if ((e.type === 'test:stderr' || e.type === 'test:stdout') && typeof d.message === 'string' && d.message.includes('patchgate-tripwire ')) {
      // The preload's tripwire line from a test process: a record of its own on the gate's pipe.
      for (const line of d.message.split('\n')) {
        const i = line.indexOf('patchgate-tripwire ');
        if (i < 0) continue;
        try {
          send({ t: 'tamper', ...JSON.parse(line.slice(i + 19)) });
        } catch {
          send({ t: 'tamper', event: 'unreadable', file: '', line: 0, detail: 'a tripwire line was cut' });
        }
      }
    } else if (e.type === 'test:start') {
      const s = stacks.get(d.file) ?? [];
      s.length = d.nesting;
      s.push(d.name);
      stacks.set(d.file, s);
    } else if (e.type === 'test:pass' || e.type === 'test:fail') {
      const s = stacks.get(d.file) ?? [];
      const path = [...s.slice(0, d.nesting), d.name];
      const skipped = (d.skip !== undefined && d.skip !== false) || (d.todo !== undefined && d.todo !== false);
      const status = skipped ? 'skipped' : e.type === 'test:fail' ? 'failed' : 'passed';
      send({ t: 'test', path, file: d.file ?? null, nesting: d.nesting, status });
    }
  }
  send({ t: 'end' });
  yield '';
}
