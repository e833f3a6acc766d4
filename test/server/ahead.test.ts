// A push judged from its pack before its hook asks (src/server/hook/ahead.ts), through a real
// gate: the hook takes that judgement only when it was made on what the hook would judge on,
// and the size limits always run on the real quarantine. A refused push is refused with the
// rules' own findings, a trusted branch that moved between the two is judged again (on the
// new tip), and the sealed view behind it answers from the pack and the store or not at all.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { Git } from '../../src/git/git.js';
import { PackView, readPack } from '../../src/git/pack-read.js';
import { aheadFor, type Ahead } from '../../src/server/hook/ahead.js';
import { defaultPolicy } from '../../src/policy/config.js';
import { gitAsync, seededGate } from '../helpers/gate.js';
import { drivenGate } from '../helpers/driven.js';
import { TestRepo } from '../helpers/repo.js';

const BASE = {
  'src/a.ts': 'export function a(x: number): number {\n  return x + 1;\n}\n',
  'tests/a.test.ts': 'import { a } from "../src/a";\nconsole.log(a(1));\n',
};

type PushRow = { id: number; ref?: string; verdict?: string; timings?: Record<string, number> };
/** The push rows of `actor`, newest first. */
function pushes(gate: Awaited<ReturnType<typeof seededGate>>['gate'], actor: string): PushRow[] {
  return gate.srv.audit.query({ kind: 'push', actor }) as unknown as PushRow[];
}

t.test('an agent\'s push is judged from its pack, and its hook takes that judgement', async (t) => {
  const { gate, agent, w, expect, settle } = await drivenGate(t, BASE);
  const url = gate.remote('app', 'agent-1', agent);
  const warm = gate.srv.hooks.prewarms;

  const before = warm.judged;
  w.commit('honest', { 'src/a.ts': 'export function a(x: number): number {\n  return x + 2;\n}\n' });
  expect('judged');
  let r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/one']);
  t.equal(r.code, 0, r.stderr || 'the honest push lands');
  t.equal(warm.judged, before + 1, 'it was judged ahead');
  t.equal(pushes(gate, 'agent-1')[0]?.timings?.ahead, 1, 'and its hook used that judgement (the audit row says so)');

  // The next push to the same branch (its line starts at the branch's old tip, whose merge base
  // with main the last push kept): a write to the test tree, refused with the write-block
  // rule's own finding.
  w.commit('tests', { 'tests/a.test.ts': 'console.log("green");\n' });
  await settle();
  expect('judged');
  r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/one']);
  t.not(r.code, 0, 'a write to tests/ is refused');
  t.match(r.stderr, /\[write-block\].*tests\/a\.test\.ts/, 'naming the rule and the path');
  const row = pushes(gate, 'agent-1')[0]!;
  t.equal(row.verdict, 'reject');
  t.equal(row.timings?.ahead, 1, 'from the judgement made ahead');
  t.equal(warm.judged, before + 2);
});

t.test('a push of two refs is judged ahead ref by ref; a refused one stays refused, the other lands', async (t) => {
  const { gate, agent, w, expect } = await drivenGate(t, BASE);
  const url = gate.remote('app', 'agent-1', agent);
  const seed = w.git('rev-parse', 'HEAD').trim();
  w.git('checkout', '-q', '-b', 'good', seed);
  w.commit('good', { 'src/a.ts': 'export function a(x: number): number {\n  return x + 4;\n}\n' });
  w.git('checkout', '-q', '-b', 'bad', seed);
  w.commit('bad', { 'tests/a.test.ts': 'console.log("always green");\n' });
  const before = gate.srv.hooks.prewarms.judged;
  expect('judged');
  const r = await gitAsync(w.dir, ['push', url, 'good:refs/heads/agent/good', 'bad:refs/heads/agent/bad']);
  t.not(r.code, 0, 'one ref is refused');
  t.match(r.stderr, /agent\/good/, 'the good one is reported');
  t.match(r.stderr, /\[write-block\].*tests\/a\.test\.ts/, 'the bad one is refused by the write-block rule');
  t.equal(gate.srv.hooks.prewarms.judged, before + 1, 'both judged ahead, in one judgement');
  const row = pushes(gate, 'agent-1')[0]!;
  t.equal(row.timings?.ahead, 1, 'and the hook used it');
  t.ok(/\[new branch\]\s+good -> agent\/good/.test(r.stderr), 'the good ref landed');
});

t.test('the size limits run on the quarantine even when the rest was judged ahead', async (t) => {
  const { gate, agent, w, expect } = await drivenGate(t, { ...BASE, 'ci/patchgate.json': JSON.stringify({ limits: { maxObjects: 2 } }) });
  const url = gate.remote('app', 'agent-1', agent);
  w.commit('small', { 'src/a.ts': 'export function a(x: number): number {\n  return x + 3;\n}\n' });
  expect('judged');
  const r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/big']);
  t.not(r.code, 0, 'a push of more objects than limits.maxObjects is refused');
  t.match(r.stderr, /\[limits\] the push brings \d+ objects, over limits\.maxObjects \(2\)/, 'by the size limits, counted in the quarantine');
  t.equal(pushes(gate, 'agent-1')[0]?.timings?.ahead, 1, 'though every other rule was judged ahead (and passed)');
});

t.test('a trusted branch that moves between the judgement ahead and the hook is judged again', async (t) => {
  let move: (() => void) | null = null;
  // The hook moves main only once the judgement ahead was made (on the old tip): no race with it.
  const { gate, agent, w, bare, expect } = await drivenGate(t, BASE, { then: () => move?.() });
  const url = gate.remote('app', 'agent-1', agent);
  // The trusted branch gains a commit (as a person's push would give it) while the agent's push
  // waits for its hook: the agent's branch does not carry it, and its new contract moved.
  move = () => {
    move = null;
    const main = execFileSync('git', ['-C', bare, 'rev-parse', 'refs/heads/main'], { encoding: 'utf8' }).trim();
    const tree = execFileSync('git', ['-C', bare, 'rev-parse', `${main}^{tree}`], { encoding: 'utf8' }).trim();
    const next = execFileSync('git', ['-C', bare, 'commit-tree', tree, '-p', main, '-m', 'a person\'s commit'], { encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 'p', GIT_AUTHOR_EMAIL: 'p@x', GIT_COMMITTER_NAME: 'p', GIT_COMMITTER_EMAIL: 'p@x' } }).trim();
    execFileSync('git', ['-C', bare, 'update-ref', 'refs/heads/main', next, main]);
  };
  const before = gate.srv.hooks.prewarms.judged;
  w.commit('honest', { 'src/a.ts': 'export function a(x: number): number {\n  return x + 2;\n}\n' });
  expect('judged');
  const r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/moved']);
  t.equal(r.code, 0, r.stderr || 'the push lands');
  t.equal(move, null, 'the trusted branch moved before the hook judged');
  t.equal(gate.srv.hooks.prewarms.judged, before + 1, 'it had been judged ahead, on the old tip');
  const row = pushes(gate, 'agent-1')[0]!;
  t.equal(row.timings?.ahead, undefined, 'but the hook judged it again, on the new tip');
});

t.test('which judgements made ahead the hook takes', async (t) => {
  const policy = defaultPolicy();
  const u = { ref: 'refs/heads/agent/x', oldId: '0'.repeat(40), newId: 'a'.repeat(40) };
  const trusted = { trustedBranch: 'main', trustedTip: 'b'.repeat(40), policy };
  const rules = [{ update: u, newCommits: [], reusedCommits: 0, commitsMs: 0, diffs: new Map(), results: [] }];
  const a: Ahead = { generation: 3, role: 'agent', trusted, rules };
  const now = { generation: 3, role: 'agent' as const, trusted, updates: [u] };
  t.equal(aheadFor(a, now), rules, 'the same inputs: taken');
  t.equal(aheadFor(a, { ...now, generation: 4 }), null, 'a push of the repository was written or ended since: not taken');
  t.equal(aheadFor(a, { ...now, role: 'human' }), null, 'another role: not taken');
  t.equal(aheadFor(a, { ...now, trusted: { ...trusted, trustedTip: 'c'.repeat(40) } }), null, 'another trusted tip: not taken');
  t.equal(aheadFor(a, { ...now, trusted: { ...trusted, trustedBranch: 'dev' } }), null, 'another trusted branch: not taken');
  t.equal(aheadFor(a, { ...now, trusted: { ...trusted, policy: { ...policy, writable: ['x/**'] } } }), null, 'another policy: not taken');
  t.equal(aheadFor(a, { ...now, updates: [{ ...u, newId: 'd'.repeat(40) }] }), null, 'another ref update: not taken');
  t.equal(aheadFor(a, { ...now, updates: [u, u] }), null, 'more ref updates: not taken');
  t.equal(aheadFor(null, now), null);
});

t.test('a sealed view answers from the pack and the store, and refuses the rest', async (t) => {
  const w = TestRepo.init(t);
  w.commit('base', { 'src/a.ts': 'export const a = 1;\n' });
  const base = w.git('rev-parse', 'HEAD').trim();
  w.commit('next', { 'src/b.ts': 'export const b = 2;\n' });
  const tip = w.git('rev-parse', 'HEAD').trim();
  const pack = execFileSync('git', ['-C', w.dir, 'pack-objects', '--stdout', '--thin', '--revs'], { input: `${tip}\n^${base}\n` });
  // The store: the same repository with only `base` (a clone cut there).
  const storeDir = TestRepo.init(t).dir;
  execFileSync('git', ['-C', storeDir, 'fetch', '-q', w.dir, `${base}:refs/heads/cut`]);
  const store = new Git({ dir: storeDir });
  t.teardown(() => store.close());
  const view = new PackView(await readPack(pack, (id) => store.readObject(id)), store);
  const sealed = new Git({ dir: storeDir, store, pushObjects: view.pushObjects(), sealed: true });
  t.equal((await sealed.readBlob(`${tip}:src/b.ts`))?.toString(), 'export const b = 2;\n', 'a pushed commit\'s file, from the pack');
  t.equal((await sealed.readBlob(`${tip}:src/a.ts`))?.toString(), 'export const a = 1;\n', 'a file the pack did not bring, from the store');
  t.equal(await sealed.readBlob(`${tip}:src/none.ts`), null, 'a path that is in neither tree: absent');
  t.equal((await sealed.commitHeader(tip))?.parents[0], base, 'the pushed commit\'s header');
  await t.rejects(sealed.readBlob('HEAD:src/a.ts'), /answers from the pack and the store only/, 'a ref name would need a reader: refused');
  await t.rejects(sealed.refTip('refs/heads/cut'), /answers from the pack and the store only/);
  await t.rejects(sealed.newCommits(tip, [base]), /answers from the pack and the store only/, 'and so would a process');
  await t.rejects(sealed.mergeBase(tip, base), /answers from the pack and the store only/);
});
