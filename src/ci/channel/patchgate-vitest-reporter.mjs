// patchgate's vitest reporter. patchgate ci adds it with --reporter from a folder outside the
// work tree, beside vitest's own JUnit reporter; it writes to fd 3, a pipe the gate owns: each
// test's id (file relative to the project root, then the names joined with " > ") and outcome,
// then an end record. The gate cross-checks the stream against the JUnit report.
import { writeSync } from 'node:fs';
import { relative } from 'node:path';

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

const STATUS = { passed: 'passed', failed: 'failed', skipped: 'skipped', pending: 'skipped' };

export default class PatchgateVitestReporter {
  onInit(ctx) {
    this.root = ctx.config.root;
    send({ t: 'start', runner: 'vitest' });
  }

  onTestRunEnd(testModules, unhandledErrors) {
    for (const m of testModules) {
      const file = relative(this.root, m.moduleId);
      let tests = 0;
      for (const tc of m.children.allTests()) {
        tests++;
        send({ t: 'test', id: `${file}::${tc.fullName}`, status: STATUS[tc.result().state] ?? 'failed' });
      }
      // A file that failed to load runs no test: it is a failure of its own.
      if (!tests && m.errors().length) send({ t: 'test', id: `${file}::(file)`, status: 'failed' });
    }
    send({ t: 'end', exitstatus: null, errors: unhandledErrors.length });
  }
}
