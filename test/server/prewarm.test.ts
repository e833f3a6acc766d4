// A push's changed files parsed from its pack while receive-pack unpacks it
// (src/server/hook/prewarm.ts): through a real gate, the tamper scan and the contract rows an
// agent's push needs are in the cache before its hook asks (the rule scans nothing itself),
// and the verdicts are the ones the rules give without it: a tamper construct and a moved
// signature are still refused, with the same findings, and an honest change lands.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { gitAsync, seededGate } from '../helpers/gate.js';
import { drivenGate } from '../helpers/driven.js';

const BASE = {
  'src/a.ts': 'export function a(x: number): number {\n  return x + 1;\n}\n',
  'src/b.py': 'def b(x):\n    return x\n',
};

/** The ref rows' rule outcomes of the agent's last push to `ref`. */
function lastRules(gate: Awaited<ReturnType<typeof seededGate>>['gate'], ref: string): Array<{ rule: string; status: string; details?: Record<string, unknown>; findings: unknown[] }> {
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' }).filter((r) => r.ref === ref).sort((x, y) => y.id - x.id);
  return (rows[0] as unknown as { rules: Array<{ rule: string; status: string; details?: Record<string, unknown>; findings: unknown[] }> }).rules;
}

t.test('an agent\'s push finds its changed files parsed from its pack, and is judged as before', async (t) => {
  // Each push's hook waits until its pack was read ahead (test/helpers/driven.ts): the counters are not raced.
  const { gate, agent, w, expect, settle } = await drivenGate(t, BASE);
  const url = gate.remote('app', 'agent-1', agent);
  const warm = gate.srv.hooks.prewarms;
  const seed = w.git('rev-parse', 'HEAD').trim();

  // An honest change to a TS and a Python file: accepted, both files parsed ahead.
  const before = { ...warm };
  w.commit('honest', { 'src/a.ts': 'export function a(x: number): number {\n  return x + 2;\n}\n', 'src/b.py': 'def b(x):\n    return x * 2\n' });
  expect('read');
  let r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/one']);
  t.equal(r.code, 0, r.stderr || 'the honest push lands');
  t.equal(warm.pushes, before.pushes + 1, 'its pack was read');
  t.equal(warm.files, before.files + 2, 'and its two changed files parsed ahead');
  t.equal(warm.contracts, before.contracts + 1, 'and its tip\'s contract walked ahead (its base, main, was judged at the seed)');
  t.equal(warm.failed, before.failed);
  const honest = lastRules(gate, 'refs/heads/agent/one');
  t.equal(honest.find((x) => x.rule === 'tamper-scan')?.details?.scanned, 0, 'the tamper scan found both results cached: it scanned nothing itself');
  t.equal(honest.find((x) => x.rule === 'contract')?.status, 'pass');

  // A tamper construct on a changed line: refused with the rule's own finding.
  w.commit('exit', { 'src/a.ts': 'export function a(x: number): number {\n  return x + 2;\n}\nprocess.exit(0);\n' });
  await settle();
  expect('read');
  r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/one']);
  t.not(r.code, 0, 'a process exit at load time is refused');
  t.match(r.stderr, /\[tamper-scan\] commit [0-9a-f]+: src\/a\.ts:4: process\.exit\(\) at load time \(exit\)/, 'with the line and the construct');
  const exit = lastRules(gate, 'refs/heads/agent/one').find((x) => x.rule === 'tamper-scan')!;
  t.equal(exit.status, 'fail');
  t.equal(exit.details?.scanned, 0, 'from the result parsed ahead');

  // Nine changed files: more than are parsed ahead, so no walk either (it would parse the rest).
  const nine = { ...warm };
  w.git('checkout', '-q', '-b', 'nine', seed);
  w.commit('nine', Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`src/n${i}.ts`, `const n${i} = ${i};\nconsole.log(n${i});\n`])));
  await settle();
  expect('read');
  r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/nine']);
  t.equal(r.code, 0, r.stderr || 'nine new files land');
  t.equal(warm.files, nine.files + 8, 'eight files parsed ahead');
  t.equal(warm.contracts, nine.contracts, 'and no contract walked ahead');
  t.equal(lastRules(gate, 'refs/heads/agent/nine').find((x) => x.rule === 'contract')?.status, 'pass', 'the rule walked it itself');

  // A merge in the pack: no walk ahead (a merge's changes are not all in the pack's diffs).
  const merge = { ...warm };
  w.git('checkout', '-q', '-b', 'side', seed);
  w.commit('side', { 'src/side.ts': 'const side = 1;\nconsole.log(side);\n' });
  w.git('merge', '-q', '--no-edit', 'nine');
  await settle();
  expect('read');
  r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/merge']);
  t.equal(r.code, 0, r.stderr || 'the merge lands');
  t.equal(warm.pushes, merge.pushes + 1, 'its pack was read');
  t.equal(warm.contracts, merge.contracts, 'a merge is not walked ahead');
  w.git('checkout', '-q', 'main');

  // A moved signature: the contract rule refuses it from the rows parsed ahead.
  w.commit('undo', { 'src/a.ts': 'export function a(x: number): number {\n  return x + 2;\n}\n' });
  w.commit('sig', { 'src/a.ts': 'export function a(x: string): string {\n  return x;\n}\n' });
  r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/two']);
  t.not(r.code, 0, 'a changed exported signature is refused');
  t.match(r.stderr, /\[contract\]/, 'by the contract rule');
  t.match(r.stderr, /a\(x: string\): string|x: string/, 'naming the new signature');
});

t.test('a person\'s push warms the contract rows only; a pack too large to read is judged as before', async (t) => {
  const { gate, human, w, expect, settle } = await drivenGate(t, BASE);
  const url = gate.remote('app', 'alice', human);
  const warm = gate.srv.hooks.prewarms;
  const before = { ...warm };
  w.commit('person', { 'src/a.ts': 'export function a(x: number): number {\n  return x + 3;\n}\n' });
  expect('read');
  let r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/feature']);
  t.equal(r.code, 0, r.stderr);
  t.equal(warm.files, before.files + 1, 'the changed file was parsed ahead');

  // Over a MiB of pack (random bytes do not compress): not kept, nothing read, judged as before.
  const big = randomBytes(1_300_000);
  await settle();
  const mid = { ...warm };
  w.commit('big', { 'data/blob.bin': big, 'src/a.ts': 'export function a(x: number): number {\n  return x + 4;\n}\n' });
  r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/feature']);
  t.equal(r.code, 0, r.stderr || 'the large push lands');
  t.same(warm, mid, 'its pack was not read');
});
