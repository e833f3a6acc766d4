// The tamper scan's worker path (src/contract/parse-pool.ts `kind: 'tamper'`): in the hook
// daemon a changed source file over 16 KiB is scanned on a parse worker thread, a small one on
// the main thread. Real pushes over HTTP to a real gate: the same vector is refused with the
// same finding (file, line, construct) on both paths, the worker judges only the changed
// lines, and a worker stopped by the hook time limit refuses the push (fail closed).

import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync, refIn, seededGate, type Gate } from '../helpers/gate.js';
import { parsePool } from '../../src/contract/parse-pool.js';
import { startServer } from '../../src/server/app.js';
import { DEFAULT_MAX_SOURCE_BYTES } from '../../src/policy/config.js';

type TT = Test;

const INLINE = 16 * 1024;

/** Non-public padding (no contract change), enough to push `head` past the inline size. */
function pyPad(head: string): string {
  let s = head;
  for (let i = 0; s.length <= INLINE + 2048; i++) s += `\n\ndef _helper_${i}(x):\n    return x * ${i} + len(str(x))\n`;
  return s;
}
function tsPad(head: string): string {
  let s = head;
  for (let i = 0; s.length <= INLINE + 2048; i++) s += `function helper${i}(x: number): number {\n  return x * ${i} + String(x).length;\n}\n`;
  return s;
}

const BASE = {
  'src/pkg/__init__.py': 'X = 1\n',
  'src/lib.ts': 'export const y = 1;\n',
  'tests/test_x.py': 'def test_x():\n    pass\n',
};

const PY_VECTOR = 'import atexit, os\n\natexit.register(lambda: os._exit(0))\n';
const TS_VECTOR = 'export const y = 1;\nprocess.exit(0);\n';

/** The tamper-scan finding lines of a refusal (remote: prefix removed). */
function findings(stderr: string): string[] {
  return stderr.split('\n').map((l) => l.replace(/^remote:\s*/, '').trim()).filter((l) => /^\[tamper-scan\] commit [0-9a-f]+: /.test(l)).map((l) => l.replace(/commit [0-9a-f]+/, 'commit C'));
}

async function push(gate: Gate, w: TestRepo, token: string, branch: string, files: Record<string, string>) {
  w.checkout('main').checkout(branch, true);
  const head = w.commit(branch, files);
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', token), branch]);
  return { ...r, head };
}

t.test('a >16 KiB file with a tamper vector is refused on the worker with the same finding as a small one on the main thread', async (t) => {
  const { gate, agent, w, bare } = await seededGate(t, BASE);
  await gate.srv.hooks.warmed;
  t.ok(parsePool.isolated, 'the daemon isolates parses (large files go to workers)');

  for (const [lang, path, vector, pad, want] of [
    ['Python', 'src/pkg/hack.py', PY_VECTOR, pyPad, /^\[tamper-scan\] commit C: src\/pkg\/hack\.py:3: os\._exit\(\) \(exit\): /],
    ['TypeScript', 'src/lib.ts', TS_VECTOR, tsPad, /^\[tamper-scan\] commit C: src\/lib\.ts:2: process\.exit\(\) at load time \(exit\): /],
  ] as const) {
    const before = parsePool.tamperJobs;
    const small = await push(gate, w, agent, `agent/${lang}-small`, { [path]: vector });
    t.not(small.code, 0, `${lang}: the small file is refused`);
    t.equal(parsePool.tamperJobs, before, `${lang}: the small file was scanned on the main thread`);

    const big = pad(vector);
    t.ok(big.length > INLINE, `${lang}: the large file is ${big.length} characters`);
    const large = await push(gate, w, agent, `agent/${lang}-large`, { [path]: big });
    t.not(large.code, 0, `${lang}: the large file is refused`);
    t.ok(parsePool.tamperJobs > before, `${lang}: the large file was scanned on a worker`);
    t.equal(await refIn(bare, `refs/heads/agent/${lang}-large`), null, `${lang}: the branch was not created`);

    const f = findings(small.stderr);
    t.ok(f.some((l) => want.test(l)), `${lang}: the main thread names file, line and construct: ${f.join(' | ')}`);
    t.same(findings(large.stderr), f, `${lang}: the worker names the same file, line and construct${findings(large.stderr).length ? "" : `: ${large.stderr.slice(0, 600)}`}`);
    t.match(large.stderr, /next step: remove the constructs named above/);
  }
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.ok(rows.length >= 4 && rows.every((r) => r.verdict === 'reject' && r.decision === 'src-tamper'), 'every push is audited as src-tamper');
});

t.test('on the worker too only the changed lines are judged', async (t) => {
  // Old code on main reads a runner variable (line 2); the agent adds an exit handler at the end.
  const old = pyPad('import os\nFLAG = os.environ.get("PYTEST_ADDOPTS")\n');
  const { gate, agent, w } = await seededGate(t, { ...BASE, 'src/pkg/big.py': old });
  await gate.srv.hooks.warmed;
  const lines = old.split('\n').length;
  const before = parsePool.tamperJobs;
  const edited = await push(gate, w, agent, 'agent/edit', { 'src/pkg/big.py': `${old}\nimport atexit\natexit.register(os._exit, 0)\n` });
  t.not(edited.code, 0, 'the new exit handler is refused (os._exit handed to atexit)');
  t.ok(parsePool.tamperJobs > before, 'scanned on a worker');
  const f = findings(edited.stderr);
  t.equal(f.length, 1, `only the new line is named: ${f.join(' | ')}`);
  t.match(f[0] ?? '', new RegExp(`src/pkg/big\\.py:${lines + 2}: atexit\\.register\\(\\) \\(exit\\)`));
  const honest = await push(gate, w, agent, 'agent/honest', { 'src/pkg/big.py': old.replace('return x * 3 +', 'return x * 3 - -') });
  t.equal(honest.code, 0, `an honest edit of the same file is accepted${honest.code ? `: ${honest.stderr}` : ''}`);
});

t.test('a tamper scan the hook time limit stops on its worker refuses the push', async (t) => {
  // About 1 MB of TypeScript: several seconds of typescript-estree here, far past a 1.5 s limit.
  const fn = (i: number) => `function g${i}(a: string, b: number = ${i}): Promise<Map<string, number[]>> { return null as any }\n`;
  // `process` in the comment: the tamper scan's text pre-check cannot rule the file out, so it is parsed.
  let slow = '// nothing here reads process.env\nexport const y = 1;\n';
  for (let i = 0; slow.length + fn(i).length < DEFAULT_MAX_SOURCE_BYTES - 64; i++) slow += fn(i);
  const data = tempDir('pg-data-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));

  // 1. A gate with the default limit learns main's contract (cached per tree, on disk).
  const first = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: () => {} });
  const { createRepo } = await import('../../src/server/repos.js');
  await createRepo(data, 'app');
  const human = first.tokens.create('alice', 'human', {});
  const agent = first.tokens.create('agent-1', 'agent', {});
  const remote = (port: number, user: string, secret: string) => `http://${user}:${encodeURIComponent(secret)}@127.0.0.1:${port}/app.git`;
  const w = TestRepo.init(t);
  w.commit('base', { ...BASE, 'src/lib.ts': slow });
  t.equal((await gitAsync(w.dir, ['push', remote(first.port, 'alice', human), 'main'])).code, 0, 'a person seeds main');
  w.checkout('agent/warm', true).commit('notes', { 'src/NOTES.md': 'notes\n' });
  const warm = await gitAsync(w.dir, ['push', remote(first.port, 'agent-1', agent), 'agent/warm']);
  t.equal(warm.code, 0, `an agent push under the default limit is accepted (main's contract is now cached)${warm.code ? `: ${warm.stderr}` : ''}`);
  await first.close();

  // 2. The same data with a 1.5 s limit. The agent deletes src/lib.ts and adds it back: the
  //    tip's tree is main's (its contract comes from the cache), but the tamper scan must read
  //    the re-added file, on a worker, and the limit stops it.
  const gate = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: () => {}, hookTimeoutMs: 1500 });
  t.teardown(() => gate.close());
  await gate.hooks.warmed;
  w.checkout('main').checkout('agent/readd', true);
  w.commit('drop lib', { 'src/lib.ts': null });
  w.commit("add lib back", { "src/lib.ts": slow });
  const killed = parsePool.killed;
  const jobs = parsePool.tamperJobs;
  const r = await gitAsync(w.dir, ['push', remote(gate.port, 'agent-1', agent), 'agent/readd']);
  t.not(r.code, 0, 'the push is refused, not accepted');
  t.ok(parsePool.tamperJobs > jobs, 'the tamper scan ran on a worker');
  t.ok(parsePool.killed > killed, 'its worker was terminated');
  t.match(r.stderr, /gate error: the policy did not finish within 1500 ms: still parsing src\/lib\.ts \(ref refs\/heads\/agent\/readd, running the rules for [\d.]+ s; still running: .*tamper-scan \([\d.]+ s.*; finished: .*\); the parse was stopped/, 'naming the phase, the rule still running and those finished');
  const bare = `${data}/repos/app.git`;
  t.equal(await refIn(bare, 'refs/heads/agent/readd'), null, 'the branch was not created');
  const rows = gate.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(rows[0]!.verdict, 'reject');
  t.equal(rows[0]!.decision, 'gate-error');
  const outcomes = rows[0]!.rules as Array<{ rule: string; details?: Record<string, unknown>; ms: number }>;
  t.match(outcomes.find((o) => o.rule === 'tamper-scan')?.details, { stopped: /still running when the time limit passed/ }, 'the audit row keeps the rule that ran out');
  t.ok(outcomes.some((o) => o.details?.finished === true), 'and the rules that had finished, with their times');
});
