// A push whose base is not cached is judged on the files it touches (src/contract/unchanged.ts,
// issue 24). What it decides must be what the full digests decide: checked on consecutive
// commits of two real projects from ../shared/corpus (attrs, whose __init__.py re-exports from
// private modules, and jotai in TypeScript), then end to end: an agent's push to a repository
// the gate never digested is accepted on its one changed file, and a moved signature is still
// refused with its row.

import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { Git } from '../../src/git/git.js';
import { contractCached, contractOf, contractRows, diffContracts } from '../../src/contract/digest.js';
import { ContractParseError } from '../../src/errors.js';
import { sameContract } from '../../src/contract/unchanged.js';
import { GIT_ENV, TestRepo } from '../helpers/repo.js';
import { cloneCorpus } from '../helpers/corpus.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';

async function digestOrError(git: Git, rev: string, cache: Map<string, unknown>): Promise<string> {
  try {
    return (await contractOf(git, rev, ['src/'], 'v1', cache)).digest;
  } catch (err) {
    if (err instanceof ContractParseError) return `error: ${err.message}`;
    throw err;
  }
}

for (const name of ['attrs', 'jotai']) {
  t.test(`${name}: judged on the changed files, the verdict is the full digests' on each of 60 commits`, async (t) => {
    const dir = cloneCorpus(t, name);
    if (!dir) return;
    const commits = execFileSync('git', ['rev-list', '--first-parent', '--no-merges', '--max-count=60', 'HEAD', '--', 'src/'], { cwd: dir, encoding: 'utf8' }).trim().split('\n');
    const git = new Git({ dir });
    t.teardown(() => git.close());
    const fullCache = new Map<string, unknown>();
    const counts = { equal: 0, moved: 0, unknown: 0 };
    for (const c of commits) {
      const parent = `${c}^`;
      // A fresh cache per pair: nothing of either side is known, as on a never-seen repository.
      const cache = new Map<string, unknown>();
      const same = await sameContract(git, parent, c, ['src/'], cache);
      counts[same.verdict]++;
      if (same.verdict === 'unknown') continue;
      const [a, b] = [await digestOrError(git, parent, fullCache), await digestOrError(git, c, fullCache)];
      if (a.startsWith('error') || b.startsWith('error')) continue;
      if (same.verdict === 'equal') t.equal(b, a, `${c.slice(0, 10)}: equal on ${same.compared.length} changed file(s), so the digests are`);
      else {
        t.not(b, a, `${c.slice(0, 10)}: ${same.path} moved, so the digests differ`);
        // The changed files' rows give the full contracts' row diff (every other row is the same).
        const full = diffContracts(
          await contractRows(git, await contractOf(git, parent, ['src/'], 'v1', fullCache), parent, ['src/'], fullCache),
          await contractRows(git, await contractOf(git, c, ['src/'], 'v1', fullCache), c, ['src/'], fullCache));
        t.same(diffContracts(same.before, same.after), full, `${c.slice(0, 10)}: the row diff is the full contracts'`);
      }
      // Only the changed files were read: one rows entry per side of each compared file at most.
      const parsed = [...cache.keys()].filter((k) => k.startsWith('rows:')).length;
      t.ok(parsed <= same.compared.length * 2, `${c.slice(0, 10)}: ${parsed} file versions parsed for ${same.compared.length} changed file(s)`);
    }
    t.ok(counts.equal > 0 && counts.moved > 0, `both verdicts occur (${JSON.stringify(counts)})`);
    t.ok(counts.unknown < commits.length / 2, `most commits are decided from their changed files (${JSON.stringify(counts)})`);
  });
}

const LIB = (i: number) => `export function f${i}(a: number): number {\n  return a + ${i};\n}\n`;

t.test('a private module added or removed, or a file that does not parse, is left to the full digest', async (t) => {
  const r = TestRepo.init(t);
  const base = r.commit('base', { 'src/pkg/__init__.py': 'from ._impl import parse\n', 'src/pkg/_impl.py': 'def parse(s: str) -> int: ...\n', 'src/a.ts': LIB(1) });
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const added = r.commit('add a private module', { 'src/pkg/_more.py': 'def x(): ...\n' });
  t.match(await sameContract(git, base, added, ['src/'], new Map()), { verdict: 'unknown' });
  const broken = r.commit('broken', { 'src/a.ts': 'export function (\n' });
  t.match(await sameContract(git, added, broken, ['src/'], new Map()), { verdict: 'unknown' });
  const body = r.commit('body edit', { 'src/a.ts': LIB(1).replace('a + 1', '1 + a') });
  t.match(await sameContract(git, broken, body, ['src/'], new Map()), { verdict: 'unknown' }, 'the base side does not parse');
  const cache = new Map<string, unknown>();
  t.notOk(await contractCached(git, base, ['src/'], cache), 'nothing cached yet');
  await contractOf(git, base, ['src/'], 'v1', cache);
  t.ok(await contractCached(git, base, ['src/'], cache), 'cached once digested');
});

/** A gate whose repository `app` has `files` on main, put there without the gate digesting anything (a never-seen repository). */
async function neverSeen(t: Test, files: Record<string, string>) {
  const gate = await startGate(t);
  await gate.repo('app');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', files);
  // Into the bare repository by fetch: no hook runs, so no contract is computed or cached.
  execFileSync('git', ['--git-dir', bareDir(gate, 'app'), 'fetch', '-q', w.dir, 'main:main'], { env: { ...process.env, ...GIT_ENV } });
  return { gate, agent, w };
}

const refRow = (gate: Awaited<ReturnType<typeof startGate>>) => {
  const row = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' })[0]!;
  return { row, contract: (row.rules as Array<{ rule: string; details?: Record<string, unknown> }>).find((x) => x.rule === 'contract') };
};

t.test('a push to a never-seen repository is judged on its changed file; the rest of the tree is not parsed', async (t) => {
  const files: Record<string, string> = { 'tests/test_a.py': 'def test_a():\n    assert True\n' };
  for (let i = 0; i < 40; i++) files[`src/m${i}.ts`] = LIB(i);
  // A file of the trusted tree that does not parse: the full digest refuses every push that
  // carries it; judged on the changed files it is never read.
  files['src/legacy.ts'] = 'export function legacy(: number {\n';
  const { gate, agent, w } = await neverSeen(t, files);
  w.checkout('agent/one', true);
  const sha = w.commit('body only', { 'src/m7.ts': LIB(7).replace('a + 7', '7 + a') });
  const push = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/one']);
  t.equal(push.code, 0, push.stderr);
  t.equal(await refIn(bareDir(gate, 'app'), 'refs/heads/agent/one'), sha);
  const { row, contract } = refRow(gate);
  t.equal(row.verdict, 'accept');
  t.match(contract?.details, { matched: 'changed files', against: 'merge-base', comparedFiles: 1, compared: ['src/m7.ts'] });

});

t.test('a moved signature on a never-seen repository is refused with its row; with digests in the allow file the full digests decide', async (t) => {
  const files: Record<string, string> = { 'tests/test_a.py': 'def test_a():\n    assert True\n' };
  for (let i = 0; i < 10; i++) files[`src/m${i}.ts`] = LIB(i);
  for (const allow of [null, `${'ab'.repeat(32)}\n`]) {
    const { gate, agent, w } = await neverSeen(t, allow ? { ...files, 'ci/contract.allow': allow } : files);
    w.checkout('agent/two', true);
    w.commit('signature', { 'src/m8.ts': LIB(8).replace('(a: number)', '(a: string)') });
    const refused = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/two']);
    t.not(refused.code, 0, 'refused');
    t.match(refused.stderr, /public API of src\/ changed/);
    t.match(refused.stderr, /~ src\/m8\.ts::.*number.*=>.*string/);
    t.equal(await refIn(bareDir(gate, 'app'), 'refs/heads/agent/two'), null, 'nothing moved');
    const details = refRow(gate).contract?.details;
    if (!allow) {
      t.match(details, { judgedOn: 'changed files', comparedFiles: 1, head: null }, 'no allow entries: refused from the changed file');
      t.match(refused.stderr, /not computed: judged on the changed files; patchgate contract --rev [0-9a-f]+ prints it/);
    } else {
      t.notOk(details?.judgedOn, 'an allow file with digests: the full digests decide');
      t.match(String(details?.head), /^[0-9a-f]{64}$/, 'and the head digest is in the audit row');
    }
  }
});
