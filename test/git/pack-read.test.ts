// Packs read in the daemon (src/git/pack-read.ts): a real thin pack from git pack-objects gives
// exactly the objects git says it holds, byte for byte, its id deltas resolved against the
// repository; its view diffs a commit as git diff-tree does; a damaged or oversized pack, and
// hundreds of mutated ones with a valid checksum, throw PackReadError and nothing else.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { applyDelta, PackView, readPack, type PackObject } from '../../src/git/pack-read.js';
import { Git } from '../../src/git/git.js';
import { commitDiff } from '../../src/git/trees.js';
import { PackReadError } from '../../src/errors.js';
import { GIT_ENV, TestRepo } from '../helpers/repo.js';

const env = { ...process.env, ...GIT_ENV };
const git = (cwd: string, args: string[], input?: string): Buffer => execFileSync('git', args, { cwd, env, input, maxBuffer: 64 << 20, stdio: ['pipe', 'pipe', 'ignore'] });

/** A repository with a base commit and two new commits on top: a changed file (a delta against the base's blob), a copy beside it, a new folder. */
function repo(t: Parameters<typeof TestRepo.init>[0]): { dir: string; base: string; head: string; pack: Buffer } {
  const w = TestRepo.init(t);
  const body = Array.from({ length: 200 }, (_, i) => `export function f${i}(x: number): number { return x + ${i}; }`).join('\n') + '\n';
  const base = w.commit('base', { 'src/a.ts': body, 'src/keep/k.ts': 'export const k = 1;\n', 'README.md': 'hello\n' });
  w.commit('one', { 'src/a.ts': body.replace('return x + 7;', 'return x + 70;') });
  const head = w.commit('two', { 'src/a2.ts': body.replace('return x + 9;', 'return x - 9;'), 'src/new/n.py': 'def n():\n    return 1\n' });
  const pack = git(w.dir, ['pack-objects', '--stdout', '--thin', '--revs', '-q'], `${head}\n^${base}\n`);
  return { dir: w.dir, base, head, pack };
}

const fromRepo = (dir: string) => async (id: string): Promise<PackObject | null> => {
  try {
    const type = git(dir, ['cat-file', '-t', id]).toString().trim();
    return { type, data: git(dir, ['cat-file', type, id]) };
  } catch {
    return null;
  }
};

t.test('a thin pack gives what git says it holds, byte for byte', async (t) => {
  const { dir, base, head, pack } = repo(t);
  const objects = await readPack(pack, fromRepo(dir));
  const expected = git(dir, ['rev-list', '--objects', head, `^${base}`]).toString().trim().split('\n').map((l) => l.split(' ')[0]!);
  t.same([...objects.keys()].sort(), expected.sort(), 'the same object ids as rev-list --objects');
  for (const [id, o] of objects) {
    t.ok(git(dir, ['cat-file', o.type, id]).equals(o.data), `${o.type} ${id.slice(0, 8)}: git's own bytes`);
    t.equal(createHash('sha1').update(`${o.type} ${o.data.length}\0`).update(o.data).digest('hex'), id);
  }
  await t.rejects(readPack(pack, async () => null), PackReadError, 'its id deltas need the repository: without it, a PackReadError');

  const store = new Git({ dir, bare: false });
  t.teardown(() => store.close());
  const view = new PackView(objects, store);
  t.same(view.commits().map((c) => c.id).sort(), git(dir, ['rev-list', head, `^${base}`]).toString().trim().split('\n').sort(), 'its commits');
  for (const c of view.commits()) {
    const { changes } = await commitDiff(view, c);
    const raw = git(dir, ['diff-tree', '-r', '--no-renames', '--no-commit-id', c.id]).toString().trim().split('\n');
    t.same(changes.map((ch) => `${ch.status} ${ch.newId} ${ch.path}`).sort(), raw.map((l) => {
      const [meta, path] = l.split('\t');
      const f = meta!.split(' ');
      return `${f[4]} ${f[3]} ${path}`;
    }).sort(), `commit ${c.id.slice(0, 8)}: diff-tree's changes`);
  }
  const blob = [...objects].find(([, o]) => o.type === 'blob')![0];
  t.equal((await view.pathId(blob, null))?.size, objects.get(blob)!.data.length, 'sizes from the pack');
  t.ok((await view.readBlob(blob))?.equals(objects.get(blob)!.data));
  for (const path of ['src/new/n.py', 'src/a2.ts', 'src', 'src/keep/k.ts', 'src/keep']) {
    const got = await view.pathId(head, path);
    t.equal(got?.id, git(dir, ['rev-parse', `${head}:${path}`]).toString().trim(), `${path} at the pushed tip, as rev-parse finds it`);
    t.equal(got?.type, git(dir, ['cat-file', '-t', got!.id]).toString().trim());
  }
  t.equal((await view.pathId(head, ''))?.id, git(dir, ['rev-parse', `${head}^{tree}`]).toString().trim(), 'the empty path is the root tree');
  t.equal(await view.pathId(head, 'src/nothing.ts'), null, 'a path that is not there');
  await t.rejects(view.lsTree(), PackReadError, 'no recursive listing from a pack');
  const old = git(dir, ['rev-parse', `${base}:src/keep/k.ts`]).toString().trim();
  t.equal((await view.readBlob(old))?.toString(), 'export const k = 1;\n', 'what the pack lacks comes from the repository');
});

t.test('damaged, oversized and mutated packs: PackReadError, never anything else', async (t) => {
  const { dir, pack } = repo(t);
  const base = fromRepo(dir);
  const bad = Buffer.from(pack);
  bad[20] ^= 0xff;
  await t.rejects(readPack(bad, base), { name: 'PackReadError', message: /checksum/ }, 'a flipped byte fails the checksum');
  await t.rejects(readPack(pack.subarray(0, pack.length - 7), base), PackReadError, 'cut short');
  await t.rejects(readPack(Buffer.alloc(2 << 20), base), { message: /more than/ }, 'over the size bound');
  await t.rejects(readPack(Buffer.from('not a pack at all, not a pack at all, not a pack'), base), { message: /signature/ });
  const many = Buffer.from(pack);
  many.writeUInt32BE(100_000, 8);
  await t.rejects(readPack(withChecksum(many), base), { message: /objects/ }, 'more objects than it reads');

  // A SHA-256 repository's pack (a 32-byte checksum, 32-byte ids) is not read as a SHA-1 one.
  const s256 = TestRepo.init(t, { objectFormat: 'sha256' });
  const sc = s256.commit('one', { 'src/a.ts': 'export const a = 1;\n' });
  await t.rejects(readPack(git(s256.dir, ['pack-objects', '--stdout', '--revs', '-q'], `${sc}\n`), fromRepo(s256.dir)), { name: 'PackReadError', message: /checksum/ }, 'a SHA-256 pack is refused by the checksum');

  // A small pack that inflates to a lot (zeros compress a thousandfold): refused on the way, whole.
  const z = TestRepo.init(t);
  const files: Record<string, Buffer> = {};
  for (let i = 0; i < 20; i++) files[`z/${i}.bin`] = Buffer.concat([Buffer.alloc(600_000), Buffer.from(String(i))]);
  const zc = z.commit('zeros', files);
  const zpack = git(z.dir, ['pack-objects', '--stdout', '--revs', '-q'], `${zc}\n`);
  t.ok(zpack.length < 200_000, `the pack is small (${zpack.length} bytes)`);
  await t.rejects(readPack(zpack, fromRepo(z.dir)), { name: 'PackReadError', message: /inflated/ }, 'twelve MB inflated: over the total bound');

  // Mutations with a valid checksum reach the parser itself.
  let seed = 7;
  const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
  let errors = 0;
  for (let i = 0; i < 400; i++) {
    const m = Buffer.from(pack);
    const flips = 1 + rand(3);
    for (let k = 0; k < flips; k++) m[12 + rand(m.length - 32)] = rand(256);
    try {
      const got = await readPack(withChecksum(m), base);
      for (const [id, o] of got) t.equal(createHash('sha1').update(`${o.type} ${o.data.length}\0`).update(o.data).digest('hex'), id);
    } catch (e) {
      if (!(e instanceof PackReadError)) t.fail(`mutation ${i}: ${(e as Error).name}: ${(e as Error).message}`);
      errors++;
    }
  }
  t.ok(errors > 300, `mutated packs refused (${errors} of 400), every refusal a PackReadError`);
});

t.test('deltas: copies and inserts applied, anything outside the base refused', async (t) => {
  const baseBuf = Buffer.from('0123456789abcdef');
  // size 16 -> 9: copy 4 bytes at offset 2, insert "xyz", copy 2 at offset 14
  const delta = Buffer.from([16, 9, 0x91, 2, 4, 3, ...Buffer.from('xyz'), 0x91, 14, 2]);
  t.equal(applyDelta(baseBuf, delta).toString(), '2345xyzef');
  t.throws(() => applyDelta(baseBuf, Buffer.from([16, 4, 0x91, 14, 4])), PackReadError, 'a copy past the base');
  t.throws(() => applyDelta(baseBuf, Buffer.from([15, 1, 1, 0x41])), PackReadError, 'the wrong base size');
  t.throws(() => applyDelta(baseBuf, Buffer.from([16, 1, 0])), PackReadError, 'the reserved opcode');
  t.throws(() => applyDelta(baseBuf, Buffer.from([16, 3, 1, 0x41])), PackReadError, 'fewer bytes than it says');
});

function withChecksum(p: Buffer): Buffer {
  const body = p.subarray(0, p.length - 20);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}
