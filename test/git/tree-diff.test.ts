// The gate compares trees itself (over the cat-file reader) instead of running diff-tree per
// commit. The write-block rule stands on that comparison, so this test builds random pairs
// of real trees with `git mktree` (files, executables, symlinks, submodules, a name that is
// a file on one side and a folder on the other, names git orders in surprising ways) and
// checks that the result equals `git diff-tree -r --no-renames`, entry by entry and in order.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Git } from '../../src/git/git.js';
import { TestRepo } from '../helpers/repo.js';

type Node = { kind: 'file'; mode: string; id: string } | { kind: 'tree'; mode?: string; children: Map<string, Node> };

// Digits git stores but never writes; each reads as the canonical mode after it (src/git/modes.ts).
const ODD: Record<string, string[]> = { '100644': ['100664', '100600', '100011'], '100755': ['100700', '100775'], '120000': ['120777'], '160000': ['160755'] };

// Deterministic pseudo-random numbers so a failure can be replayed.
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const NAMES = ['a', 'a.txt', 'a-b', 'a0', 'b', 'B', 'src', 'tests', 'z', 'é', 'x y'];

function makeTree(r: () => number, blobs: string[], depth: number): Node {
  const children = new Map<string, Node>();
  const n = 1 + Math.floor(r() * 5);
  for (let i = 0; i < n; i++) {
    const name = NAMES[Math.floor(r() * NAMES.length)]!;
    children.set(name, depth > 0 && r() < 0.35 ? makeTree(r, blobs, depth - 1) : makeFile(r, blobs));
  }
  return { kind: 'tree', mode: r() < 0.2 ? '40755' : undefined, children };
}

function makeFile(r: () => number, blobs: string[]): Node {
  const x = r();
  const mode = x < 0.6 ? '100644' : x < 0.75 ? '100755' : x < 0.9 ? '120000' : '160000';
  const id = pick(r, mode, blobs);
  const odd = ODD[mode]!;
  return { kind: 'file', mode: r() < 0.25 ? odd[Math.floor(r() * odd.length)]! : mode, id };
}

// Submodule entries point at commits that are not in the repository (as in real repos).
const GITLINKS = ['1'.repeat(40), '2'.repeat(40), '3'.repeat(40)];

function pick(r: () => number, mode: string, blobs: string[]): string {
  const pool = mode.startsWith('160') ? GITLINKS : blobs;
  return pool[Math.floor(r() * pool.length)]!;
}

function mutate(r: () => number, node: Node, blobs: string[], depth: number): Node {
  if (node.kind === 'file') {
    const x = r();
    if (x < 0.4) return { ...node, id: pick(r, node.mode, blobs) };
    if (x < 0.7) return makeFile(r, blobs);
    return depth > 0 ? makeTree(r, blobs, depth - 1) : node;
  }
  const children = new Map(node.children);
  for (const [name, child] of node.children) {
    const x = r();
    if (x < 0.15) children.delete(name);
    else if (x < 0.55) children.set(name, mutate(r, child, blobs, depth - 1));
  }
  if (r() < 0.4) {
    const name = NAMES[Math.floor(r() * NAMES.length)]!;
    children.set(name, r() < 0.3 && depth > 0 ? makeTree(r, blobs, depth - 1) : makeFile(r, blobs));
  }
  if (children.size === 0) children.set('keep', makeFile(r, blobs));
  return { kind: 'tree', mode: r() < 0.2 ? '40755' : undefined, children };
}

let oddWritten = 0;

function writeTree(repo: TestRepo, node: Node): string {
  if (node.kind !== 'tree') throw new Error('not a tree');
  const lines: Buffer[] = [];
  for (const [name, child] of node.children) {
    if (child.mode && !['100644', '100755', '120000', '160000'].includes(child.mode)) oddWritten++;
    if (child.kind === 'tree') lines.push(Buffer.from(`${child.mode ?? '040000'} tree ${writeTree(repo, child)}\t${name}\0`));
    else lines.push(Buffer.from(`${child.mode} ${child.mode.startsWith('160') ? 'commit' : 'blob'} ${child.id}\t${name}\0`));
  }
  return execFileSync('git', ['mktree', '-z', '--missing'], { cwd: repo.dir, input: Buffer.concat(lines) }).toString().trim();
}

t.test('diffTrees equals git diff-tree -r --no-renames on random trees', async (t) => {
  const repo = TestRepo.init(t);
  const blobs: string[] = [];
  for (let i = 0; i < 6; i++) {
    const f = join(repo.dir, `blob${i}`);
    writeFileSync(f, `content ${i}\n`);
    blobs.push(repo.git('hash-object', '-w', f));
  }
  const git = new Git({ dir: repo.dir });
  t.teardown(() => git.close());
  let compared = 0;
  let nonEmpty = 0;
  const statuses = new Set<string>();
  for (let seed = 1; seed <= 60; seed++) {
    const r = rng(seed);
    const a = makeTree(r, blobs, 3);
    const b = mutate(r, a, blobs, 3);
    const ta = writeTree(repo, a);
    const tb = writeTree(repo, b);
    const expected = await git.diffTree(ta, tb);
    const actual = await git.diffTrees(ta, tb);
    t.same(actual, expected, `seed ${seed}: ${ta}..${tb}`);
    const reverse = await git.diffTrees(tb, ta);
    t.same(reverse, await git.diffTree(tb, ta), `seed ${seed} reversed`);
    compared++;
    if (expected.length) nonEmpty++;
    for (const c of expected) statuses.add(c.status);
  }
  // The generator must actually exercise additions, deletions, modifications and type changes.
  t.equal(compared, 60);
  t.ok(nonEmpty >= 40, `${nonEmpty} of 60 pairs differ`);
  t.same([...statuses].sort(), ['A', 'D', 'M', 'T']);
  t.ok(oddWritten > 50, `${oddWritten} entries with digits git never writes were compared`);
});

t.test('commitChanges: root commit, ordinary commit and merge agree with diff-tree', async (t) => {
  const repo = TestRepo.init(t);
  repo.write('a.txt', '1\n').write('src/x.ts', 'export const x = 1;\n').commit('root');
  const root = repo.git('rev-parse', 'HEAD');
  repo.git('checkout', '-q', '-b', 'side');
  repo.write('tests/t.py', 'assert True\n').commit('side');
  repo.git('checkout', '-q', 'main');
  repo.write('src/x.ts', 'export const x = 2;\n').commit('main edit');
  repo.git('merge', '-q', '--no-ff', '--no-edit', 'side');
  repo.write('src/evil.ts', 'export const e = 1;\n').git('add', '-A');
  repo.git('commit', '-q', '--amend', '--no-edit');
  const merge = repo.git('rev-parse', 'HEAD');
  const [p1, p2] = repo.git('rev-parse', 'HEAD^1', 'HEAD^2').split('\n');
  const git = new Git({ dir: repo.dir });
  t.teardown(() => git.close());

  const rootChanges = await git.commitChanges({ id: root, parents: [] });
  t.same(rootChanges.map((c) => `${c.status} ${c.path}`), ['A a.txt', 'A src/x.ts']);
  t.same(rootChanges, await git.diffTree(await git.emptyTree(), root));

  const one = await git.commitChanges({ id: p1!, parents: [root] });
  t.same(one, await git.diffTree(root, p1!));
  t.same(one.map((c) => `${c.status} ${c.path}`), ['M src/x.ts']);

  // The merge brings tests/t.py from side and src/x.ts from main: neither differs from every
  // parent. Only the file added in the merge itself does.
  const m = await git.commitChanges({ id: merge, parents: [p1!, p2!] });
  t.same(m.map((c) => `${c.status} ${c.path}`), ['A src/evil.ts']);
});

t.test('a bare repository: HEAD read from its file, ref tips through cat-file', async (t) => {
  const repo = TestRepo.init(t);
  repo.write('f', '1\n').commit('one');
  const tip = repo.git('rev-parse', 'HEAD');
  const bareDir = `${repo.dir}.git`;
  execFileSync('git', ['clone', '-q', '--bare', repo.dir, bareDir]);
  t.teardown(() => execFileSync('rm', ['-rf', bareDir]));
  const git = new Git({ dir: bareDir, bare: true });
  t.teardown(() => git.close());
  t.equal(await git.symbolicHead(), 'refs/heads/main');
  t.equal(await git.refTip('refs/heads/main'), tip);
  t.equal(await git.refTip('refs/heads/nope'), null);
  // The daemon keeps one reader per repository for the trusted tip: it must see refs move,
  // loose and packed, or a push would be judged against an old policy.
  repo.write('f', '2\n').commit('two');
  const two = repo.git('rev-parse', 'HEAD');
  execFileSync('git', ['push', '-q', bareDir, 'main'], { cwd: repo.dir });
  t.equal(await git.refTip('refs/heads/main'), two, 'a loose ref update is seen');
  repo.write('f', '3\n').commit('three');
  const three = repo.git('rev-parse', 'HEAD');
  execFileSync('git', ['push', '-q', bareDir, 'main'], { cwd: repo.dir });
  execFileSync('git', ['pack-refs', '--all'], { cwd: bareDir });
  t.equal(await git.refTip('refs/heads/main'), three, 'a packed ref update is seen');
  execFileSync('git', ['symbolic-ref', 'HEAD', 'refs/heads/trunk'], { cwd: bareDir });
  t.equal(await git.symbolicHead(), 'refs/heads/trunk');
  execFileSync('git', ['update-ref', '--no-deref', 'HEAD', three], { cwd: bareDir });
  t.equal(await git.symbolicHead(), null, 'a detached HEAD names no branch');
  // A tag object peels to its commit, as rev-parse ^{commit} does; a tree is not a commit.
  execFileSync('git', ['tag', '-a', '-m', 'v', 'v1', tip], { cwd: bareDir });
  t.equal(await git.refTip('refs/tags/v1'), tip, 'a tag peels to its commit');
  const tree = execFileSync('git', ['rev-parse', 'HEAD^{tree}'], { cwd: bareDir }).toString().trim();
  execFileSync('git', ['update-ref', 'refs/other/tree-ref', tree], { cwd: bareDir });
  t.equal(await git.refTip('refs/other/tree-ref'), null, 'a ref to a tree names no commit (as rev-parse --verify -q)');
});

t.test('pushedLine equals rev-list --not --all where it answers, and declines otherwise', async (t) => {
  // The "main store" is a bare repository; the "quarantine" is a second object directory
  // that only the push's reader sees (as receive-pack's quarantine does, via alternates).
  const work = TestRepo.init(t);
  work.write('src/a.ts', 'export const a = 1;\n').commit('root');
  work.write('src/a.ts', 'export const a = 2;\n').commit('two');
  const main = `${work.dir}-main.git`;
  execFileSync('git', ['clone', '-q', '--bare', work.dir, main]);
  t.teardown(() => execFileSync('rm', ['-rf', main]));
  const trusted = work.git('rev-parse', 'HEAD');
  // Old history the store has but no ref reaches in the "pushed" sense: a side branch.
  work.git('checkout', '-q', '-b', 'side');
  work.write('tests/t.py', 'assert 1\n').commit('side, stored');
  const side = work.git('rev-parse', 'HEAD');
  execFileSync('git', ['fetch', '-q', work.dir, 'side:side'], { cwd: main });
  // Pushed commits: a line of three on top of the trusted tip, and one on top of `side`.
  work.git('checkout', '-q', '-b', 'agent', trusted);
  for (const n of [1, 2, 3]) work.write(`src/n${n}.ts`, `export const n = ${n};\n`).commit(`pushed ${n}`);
  const tip = work.git('rev-parse', 'HEAD');
  work.git('checkout', '-q', '-b', 'on-side', side);
  work.write('src/s.ts', 'export const s = 1;\n').commit('pushed on side');
  const onSide = work.git('rev-parse', 'HEAD');
  work.git('checkout', '-q', '-b', 'merged', tip);
  work.git('merge', '-q', '--no-edit', 'on-side');
  const merged = work.git('rev-parse', 'HEAD');
  const push = new Git({ dir: main, env: { GIT_ALTERNATE_OBJECT_DIRECTORIES: join(work.dir, '.git', 'objects') }, bare: true });
  const store = new Git({ dir: main, bare: true });
  t.teardown(() => { push.close(); store.close(); });

  const line = await push.pushedLine(tip, [trusted], store);
  t.ok(line, 'a line of pushed commits on the trusted tip is answered');
  t.same(line, await push.newCommits(tip, 'all'));
  t.equal(line!.length, 3);
  // Ending on the ref's old tip works the same way.
  t.same(await push.pushedLine(onSide, [side], store), await push.newCommits(onSide, 'all'));
  // A line that runs into a stored commit that is not a boundary: rev-list is asked instead.
  t.equal(await push.pushedLine(onSide, [trusted], store), null);
  // A merge: declined.
  t.equal(await push.pushedLine(merged, [trusted, side], store), null);
  // A tip that is a boundary itself brings no commits, as rev-list says.
  t.same(await push.pushedLine(trusted, [trusted], store), []);
  t.same(await push.newCommits(trusted, 'all'), []);
  // A store reader that sees nothing (say the repository was removed): declined, not "all new".
  const empty = `${work.dir}-empty.git`;
  execFileSync('git', ['init', '-q', '--bare', empty]);
  t.teardown(() => execFileSync('rm', ['-rf', empty]));
  const blind = new Git({ dir: empty, bare: true });
  t.teardown(() => blind.close());
  t.equal(await push.pushedLine(tip, [trusted], blind), null);
  // The line's length is bounded.
  t.equal(await push.pushedLine(tip, [trusted], store, 2), null);
});

t.test('commitDiff: an odd mode counts where the commit wrote it, not where a parent already had it', async (t) => {
  const repo = TestRepo.init(t);
  const blob = repo.git('hash-object', '-w', '--stdin', '--path', 'x'); // empty blob
  const mk = (lines: string) => execFileSync('git', ['mktree', '-z'], { cwd: repo.dir, input: Buffer.from(lines) }).toString().trim();
  const inner = mk(`100644 blob ${blob}\tf\0`);
  const plain = mk(`040000 tree ${inner}\tsrc\0`);
  const odd = mk(`40755 tree ${inner}\tsrc\x00100664 blob ${blob}\tz\0`);
  const c = (tree: string, ...parents: string[]) => repo.git('commit-tree', tree, ...parents.flatMap((p) => ['-p', p]), '-m', 'c');
  const base = c(plain);
  const person = c(odd, base); // a person's commit that wrote the odd entries
  const agent = c(plain, base);
  const merge = c(odd, agent, person); // takes the person's tree as it is
  const git = new Git({ dir: repo.dir });
  t.teardown(() => git.close());
  const wrote = await git.commitDiff({ id: person, parents: [base] });
  t.same(wrote.oddModes.map((o) => `${o.mode} ${o.kind} ${o.path}`), ['40755 tree src', '100664 regular z']);
  t.same(wrote.changes.map((c) => `${c.status} ${c.newMode} ${c.path}`), ['A 100644 z'], 'git sees only the new file: src reads the same');
  const merged = await git.commitDiff({ id: merge, parents: [agent, person] });
  t.same(merged.oddModes, [], 'a merge that keeps a parent\'s entry did not write it');
  const root = await git.commitDiff({ id: c(odd), parents: [] });
  t.equal(root.oddModes.length, 2, 'a root commit wrote all its entries');
});

t.test('names that are not UTF-8 (and so decode alike) are still told apart by their bytes', async (t) => {
  const repo = TestRepo.init(t);
  const blob = (s: string): string => {
    const f = join(repo.dir, `b-${s}`);
    writeFileSync(f, `${s}\n`);
    return repo.git('hash-object', '-w', f);
  };
  const [one, two] = [blob('one'), blob('two')];
  // 0xfe, 0xff and the bytes of U+FFFD itself all decode to U+FFFD.
  const names = [Buffer.from([0xfe]), Buffer.from([0xff]), Buffer.from('\uFFFD', 'utf8'), Buffer.from('plain')];
  // Each side is [name index, blob] pairs: names present on one side only must come out as D and A.
  const mk = (entries: Array<[number, string]>): string => execFileSync('git', ['mktree', '-z'], {
    cwd: repo.dir,
    input: Buffer.concat(entries.map(([n, id]) => Buffer.concat([Buffer.from(`100644 blob ${id}\t`), names[n]!, Buffer.from('\0')]))),
  }).toString().trim();
  const git = new Git({ dir: repo.dir });
  t.teardown(() => git.close());
  const pairs: Array<[Array<[number, string]>, Array<[number, string]>]> = [
    [[[0, one], [3, one]], [[1, one], [3, one]]],
    [[[0, one], [1, one], [3, one]], [[1, two], [2, one], [3, one]]],
    [[[2, one]], [[0, one], [1, one]]],
    [[[0, one], [1, two], [2, one], [3, two]], [[0, two], [1, one], [2, two], [3, one]]],
  ];
  const statuses = new Set<string>();
  for (const [a, b] of pairs) {
    const ta = mk(a);
    const tb = mk(b);
    const expected = await git.diffTree(ta, tb);
    t.ok(expected.length > 0, 'git sees a change');
    for (const c of expected) statuses.add(c.status);
    t.same(await git.diffTrees(ta, tb), expected, `${JSON.stringify(a)} -> ${JSON.stringify(b)}`);
    t.same(await git.diffTrees(tb, ta), await git.diffTree(tb, ta), 'and reversed');
  }
  t.ok(statuses.has('A') && statuses.has('D') && statuses.has('M'), 'additions, deletions and modifications were compared');
});
