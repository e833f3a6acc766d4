// patchgate's node:test reporter. patchgate ci adds it with --test-reporter from a folder
// outside the work tree, its destination a pipe the gate reads: each test's path of names
// and outcome, then an end record. The gate cross-checks it against the TAP/JUnit report.
export default async function* patchgateReporter(source) {
  const stacks = new Map();
  yield JSON.stringify({ t: 'start' }) + '\n';
  for await (const e of source) {
    const d = e.data ?? {};
    if (e.type === 'test:start') {
      const s = stacks.get(d.file) ?? [];
      s.length = d.nesting;
      s.push(d.name);
      stacks.set(d.file, s);
    } else if (e.type === 'test:pass' || e.type === 'test:fail') {
      const s = stacks.get(d.file) ?? [];
      const path = [...s.slice(0, d.nesting), d.name];
      const skipped = (d.skip !== undefined && d.skip !== false) || (d.todo !== undefined && d.todo !== false);
      const status = skipped ? 'skipped' : e.type === 'test:fail' ? 'failed' : 'passed';
      yield JSON.stringify({ t: 'test', path, file: d.file ?? null, nesting: d.nesting, status }) + '\n';
    }
  }
  yield JSON.stringify({ t: 'end' }) + '\n';
}
