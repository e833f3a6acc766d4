// A wide tree is parsed by difference from the last wide tree that began with the same entry
// (src/git/tree-parse.ts). The answer must be what a full parse gives, whatever the edit, and
// the unchanged entries must really be reused (or the point is lost). Random edits of random
// trees (ids full of spaces and NULs, the bytes the parser looks for) check the first against
// a parse that remembers nothing; real trees made by `git mktree` and read through Git.readTree
// check both against `git ls-tree`.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { Git } from '../../src/git/git.js';
import { forgetWideTrees, parseTree, WIDE_TREE_BYTES } from '../../src/git/tree-parse.js';
import { TestRepo } from '../helpers/repo.js';

type Entry = { mode: string; name: Buffer; id: Buffer };

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const MODES = ['100644', '100644', '100644', '100755', '40000', '120000', '160000'];

function randomEntry(r: () => number, i: number): Entry {
  // Ids drawn from a few bytes, the parser's own separators among them; names of every length,
  // some with a space or bytes that are not UTF-8.
  const id = Buffer.alloc(20);
  for (let k = 0; k < 20; k++) id[k] = [0x00, 0x20, 0x31, 0xff, Math.floor(r() * 256)][Math.floor(r() * 5)]!;
  const base = `f${i}${'x'.repeat(Math.floor(r() * 30))}${r() < 0.1 ? ' sp' : ''}`;
  const name = r() < 0.05 ? Buffer.concat([Buffer.from(base), Buffer.from([0xc3])]) : Buffer.from(base);
  return { mode: MODES[Math.floor(r() * MODES.length)]!, name, id };
}

function bytesOf(entries: Entry[]): Buffer {
  return Buffer.concat(entries.flatMap((e) => [Buffer.from(`${e.mode} `), e.name, Buffer.from([0]), e.id]));
}

function fullParse(id: string, d: Buffer): ReturnType<typeof parseTree> {
  forgetWideTrees();
  const out = parseTree(id, d);
  forgetWideTrees();
  return out;
}

function edit(r: () => number, entries: Entry[], serial: { n: number }): Entry[] {
  const out = entries.slice();
  const edits = 1 + Math.floor(r() * 3);
  for (let k = 0; k < edits; k++) {
    const at = Math.floor(r() * out.length);
    const what = r();
    if (what < 0.3) out[at] = { ...out[at]!, id: randomEntry(r, 0).id };
    else if (what < 0.5) out.splice(at, 0, randomEntry(r, 100_000 + serial.n++));
    else if (what < 0.65 && at > 0) out.splice(at, 1);
    else if (what < 0.8) out[at] = { ...out[at]!, name: Buffer.from(`${out[at]!.name.toString('latin1')}y`, 'latin1') };
    else if (what < 0.9) out[at] = { ...out[at]!, mode: out[at]!.mode === '100644' ? '100755' : '100644' };
    else out.push(randomEntry(r, 200_000 + serial.n++)); // at the very end
  }
  return out;
}

const ID = 'a'.repeat(40);

t.test('a wide tree parsed by difference equals a full parse, for random edits', async (t) => {
  let reusedSome = 0;
  let cases = 0;
  for (let seed = 1; seed <= 40; seed++) {
    const r = rng(seed);
    const serial = { n: 0 };
    let entries = Array.from({ length: 600 + Math.floor(r() * 900) }, (_, i) => randomEntry(r, i));
    forgetWideTrees();
    let before = parseTree(ID, bytesOf(entries));
    for (let step = 0; step < 6; step++) {
      const next = edit(r, entries, serial);
      const d = bytesOf(next);
      if (d.length < WIDE_TREE_BYTES) continue;
      const got = parseTree(ID, d); // against `before`, kept under the same first entry
      const want = fullParse(ID, d);
      cases++;
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        t.fail(`seed ${seed} step ${step}: the parse by difference differs from a full parse`);
        return;
      }
      if (got.some((e) => before.includes(e))) reusedSome++;
      before = parseTree(ID, d); // `next` is the earlier tree of the next step (fullParse forgot it)
      entries = next;
    }
  }
  t.ok(cases >= 200, `${cases} edited trees compared`);
  t.ok(reusedSome >= cases * 0.9, `unchanged entries were taken from the earlier parse in ${reusedSome} of ${cases}`);
});

t.test('only the entries around a one-entry change are parsed again', async (t) => {
  const r = rng(7);
  const entries = Array.from({ length: 3000 }, (_, i) => randomEntry(r, i));
  forgetWideTrees();
  const a = parseTree(ID, bytesOf(entries));
  const changed = entries.slice();
  changed[1500] = { ...changed[1500]!, id: Buffer.alloc(20, 7) };
  const b = parseTree(ID, bytesOf(changed));
  t.equal(b.length, 3000);
  t.equal(b[1500]!.id, '07'.repeat(20));
  t.not(b[1500], a[1500], 'the changed entry is new');
  const shared = b.filter((e, i) => e === a[i]).length;
  t.ok(shared >= 2990, `${shared} of 3000 entries are the earlier parse's objects`);
});

t.test('a malformed wide tree is refused even when it shares its start with a good one', async (t) => {
  const r = rng(11);
  const entries = Array.from({ length: 1500 }, (_, i) => randomEntry(r, i));
  forgetWideTrees();
  const good = bytesOf(entries);
  parseTree(ID, good);
  const cut = good.subarray(0, good.length - 5); // the last id is short
  t.throws(() => parseTree(ID, cut), /malformed/);
  const noName = Buffer.concat([good, Buffer.from('100644 \0'), Buffer.alloc(20, 1)]);
  t.throws(() => parseTree(ID, noName), /malformed/);
});

t.test('real wide trees read through Git.readTree match git ls-tree', async (t) => {
  const repo = TestRepo.init(t);
  const blobs = ['one', 'two', 'three'].map((s) => execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: repo.dir, input: s }).toString().trim());
  const lines = Array.from({ length: 1200 }, (_, i) => `100644 blob ${blobs[i % 3]}\tfile-${String(i).padStart(5, '0')}.ts`);
  const mktree = (ls: string[]): string => execFileSync('git', ['mktree'], { cwd: repo.dir, input: `${ls.join('\n')}\n` }).toString().trim();
  const first = mktree(lines);
  const variants = [
    lines.map((l, i) => (i === 600 ? l.replace(blobs[0]!, blobs[1]!).replace(blobs[2]!, blobs[0]!) : l)),
    [...lines.slice(0, 300), `100755 blob ${blobs[2]}\tfile-00300a.ts`, ...lines.slice(300)],
    lines.filter((_, i) => i !== 1199),
    lines.filter((_, i) => i !== 0),
  ];
  const git = new Git({ dir: repo.dir });
  try {
    forgetWideTrees();
    await git.readTree(first);
    for (const v of variants) {
      const id = mktree(v);
      const got = (await git.readTree(id)).map((e) => `${e.rawMode} ${e.kind === 'tree' ? 'tree' : 'blob'} ${e.id}\t${e.name}`);
      const want = execFileSync('git', ['ls-tree', id], { cwd: repo.dir }).toString().trim().split('\n').map((l) => l.replace(/^100644/, '100644').replace(/^0*/, ''));
      t.same(got, want, `tree ${id.slice(0, 8)} (${v.length} entries)`);
    }
  } finally {
    git.close();
  }
});
