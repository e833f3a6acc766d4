// A wide folder's last level (src/contract/folder-level.ts): a push that changes a few entries
// of a folder of many is walked on those entries only, and the folder's digest is hashed from
// the last level's text with the new lines spliced in. What it gives must be what a walk over
// every entry gives: checked on random edits of the parts (the splice against levelOf), and on
// real repositories (digest and rows against a walk with an empty cache).

import t from 'tap';
import { Git } from '../../src/git/git.js';
import { contractOf } from '../../src/contract/digest.js';
import { levelOf, sharedEnds, splice, type LevelEntry, type LevelPart } from '../../src/contract/folder-level.js';
import { EMPTY_INDEX } from '../../src/contract/py-reexport.js';
import { TestRepo } from '../helpers/repo.js';

/** A small deterministic generator (the same edits every run). */
function rng(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (x * 1664525 + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

type P = LevelPart & { tag: string };

function entry(name: string, id: string, kind: 'file' | 'tree' = 'file'): LevelEntry {
  return { name, id, mode: kind === 'tree' ? '040000' : '100644', kind };
}

function part(r: () => number, name: string): P | null {
  const x = r();
  if (x < 0.15) return null; // a file without rows, or not a contract file
  if (x < 0.2) return { tag: name, line: '', files: 0, py: { x: [[`${name}.py`, 'n', 'spec', 'orig']], p: [] } }; // only a Python index
  return { tag: name, line: `F ${name} ${Math.floor(r() * 1e9).toString(16)}`, files: 1 + Math.floor(r() * 3), py: EMPTY_INDEX };
}

t.test('splice gives what levelOf over every entry gives, on random edits', async (t) => {
  const r = rng(7);
  let runs = 0;
  for (let trial = 0; trial < 200; trial++) {
    const n = 1 + Math.floor(r() * 300);
    const entries = Array.from({ length: n }, (_, i) => entry(`e${String(i).padStart(4, '0')}`, `id${i}`));
    const parts = entries.map((e) => part(r, e.name));
    const last = levelOf(entries, parts, n);
    // Replace a run of entries (possibly empty) by a run of new ones (possibly empty), anywhere.
    const from = Math.floor(r() * (n + 1));
    const to = Math.min(n, from + Math.floor(r() * 5));
    const added = Math.floor(r() * 5);
    const fresh = Array.from({ length: added }, (_, k) => entry(`e${String(from).padStart(4, '0')}_${trial}_${k}`, `new${trial}_${k}`));
    const nextEntries = [...entries.slice(0, from), ...fresh, ...entries.slice(to)];
    const freshParts = fresh.map((e) => part(r, e.name));
    const nextParts = [...parts.slice(0, from), ...freshParts, ...parts.slice(to)];
    const { head, tail } = sharedEnds(last.entries, nextEntries);
    if (head + tail < n - (to - from) || head + tail > Math.min(n, nextEntries.length)) t.fail(`trial ${trial}: shared ends ${head} + ${tail} for an edit of [${from}, ${to})`);
    const middle = nextParts.slice(head, nextEntries.length - tail);
    const want = levelOf(nextEntries, nextParts, nextEntries.length);
    const got = splice(last, nextEntries, head, tail, middle, middle.length, n - head - tail);
    if (got.text !== want.text || got.files !== want.files || got.lined !== want.lined || got.contractFiles !== want.contractFiles
      || !Buffer.from(got.at.buffer).equals(Buffer.from(want.at.buffer)) || JSON.stringify(got.py) !== JSON.stringify(want.py)
      || got.parts.length !== want.parts.length || got.parts.some((p, i) => p !== want.parts[i])) {
      t.fail(`trial ${trial}: n ${n}, replaced [${from}, ${to}) by ${added}`);
      return;
    }
    runs++;
  }
  t.equal(runs, 200, 'every splice equals the whole walk');
});

t.test('sharedEnds never counts an entry twice, and tells entries apart by name, id and mode', async (t) => {
  const a = [entry('a', '1'), entry('b', '2'), entry('a', '1')];
  t.same(sharedEnds(a, a.slice()), { head: 3, tail: 0 });
  t.same(sharedEnds(a, [entry('a', '1')]), { head: 1, tail: 0 });
  t.same(sharedEnds(a, [entry('a', '1'), entry('b', 'X'), entry('a', '1')]), { head: 1, tail: 1 });
  t.same(sharedEnds(a, [entry('a', '1'), { ...entry('b', '2'), mode: '100755' }, entry('a', '1')]), { head: 1, tail: 1 }, 'a mode change is a change');
});

/** A Map that keeps the keys it was asked for. */
class Counting extends Map<string, unknown> {
  asked: string[] = [];
  override get(key: string): unknown {
    this.asked.push(key);
    return super.get(key);
  }
  count(re: RegExp): number {
    return this.asked.filter((k) => re.test(k)).length;
  }
}

/** The wide folder's last level; and its two subfolders' tree contracts, which a walk over every entry asks for, and a walk of a change elsewhere does not. */
const LEVEL = /^mem:level:.*:src\/wide\/$/;
const SUBTREES = /^mem:tree-contract:.*:src\/wide\/(sub|pkg)\/$/;

t.test('pushes into a wide folder are walked on what they change, with the digest and rows of a whole walk', async (t) => {
  const r = TestRepo.init(t);
  const files: Record<string, string> = {};
  for (let i = 0; i < 90; i++) files[`src/wide/f${String(i).padStart(2, '0')}.ts`] = `export function f${i}(a: number): number { return a + ${i}; }\n`;
  files['src/wide/README.md'] = 'not a contract file\n';
  files['src/wide/quiet.ts'] = 'const hidden = 1;\n';
  files['src/wide/sub/inner.ts'] = 'export const inner = 1;\n';
  files['src/wide/pkg/__init__.py'] = 'from ._impl import parse\n';
  files['src/wide/pkg/_impl.py'] = 'def parse(data, strict=False) -> dict:\n    return {}\n';
  const base = r.commit('base', files);
  // [what, the change, walked on the change only]: changes far apart span most of the folder, which is walked whole.
  const edits: Array<[string, Record<string, string | null>, boolean]> = [
    ['one changed', { 'src/wide/f40.ts': 'export function f40(a: string): number { return 1; }\n' }, true],
    ['one added at the start', { 'src/wide/a.ts': 'export const a = 0;\n' }, true],
    ['one removed at the end', { 'src/wide/sub/inner.ts': null }, true],
    ['a subfolder back', { 'src/wide/sub/inner.ts': 'export const inner = 2;\n' }, true],
    ['a Python re-export changed', { 'src/wide/pkg/_impl.py': 'def parse(data, strict=True) -> dict:\n    return {}\n' }, true],
    ['a file made rowless and a non-contract file changed', { 'src/wide/f10.ts': 'const f10 = 1;\n', 'src/wide/README.md': 'changed\n' }, true],
    ['three far apart', { 'src/wide/f01.ts': 'export const f1 = 1;\n', 'src/wide/f45.ts': 'export const f45 = 45;\n', 'src/wide/f88.ts': 'export const f88 = 88;\n' }, false],
  ];
  const revs = edits.map(([msg, change, spliced]) => [msg, r.commit(msg, change), spliced] as const);
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const cache = new Counting();
  await contractOf(git, base, ['src/'], 'v1', cache);
  for (const [msg, rev, spliced] of revs) {
    cache.asked = [];
    const got = await contractOf(git, rev, ['src/'], 'v1', cache);
    t.ok(cache.count(LEVEL) >= 1, `${msg}: the folder's last level was read`);
    if (spliced) t.ok(cache.count(SUBTREES) < 2, `${msg}: not walked over every entry (${cache.count(SUBTREES)} of the 2 subfolders asked for)`);
    else t.equal(cache.count(SUBTREES), 2, `${msg}: walked over every entry`);
    const whole = await contractOf(git, rev, ['src/'], 'v1', new Map());
    t.equal(got.digest, whole.digest, `${msg}: the digest a whole walk gives`);
    t.same(got.rows, whole.rows, `${msg}: the same rows`);
  }
  // A change of most of the folder is walked whole again (and still right).
  const many: Record<string, string> = {};
  for (let i = 0; i < 80; i++) many[`src/wide/f${String(i).padStart(2, '0')}.ts`] = `export const g${i} = ${i};\n`;
  const big = r.commit('most changed', many);
  cache.asked = [];
  const got = await contractOf(git, big, ['src/'], 'v1', cache);
  t.equal(cache.count(SUBTREES), 2, 'a large change walks every entry');
  t.equal(got.digest, (await contractOf(git, big, ['src/'], 'v1', new Map())).digest);
});
