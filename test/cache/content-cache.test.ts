// The persistent cache survives a restart, and a corrupt entry is detected and recomputed:
// the contract digest with a tampered cache equals the digest with no cache at all. Writes are
// queued and flushed in batches (readable before and after), and memory is bounded by bytes.

import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { APPROX_BYTES, approxBytes, ContentCache, PersistentCache } from '../../src/cache/content-cache.js';
import { contractOf } from '../../src/contract/digest.js';
import { Git } from '../../src/git/git.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { countDiskReads } from '../helpers/disk-reads.js';

t.test('values survive a reopen; corrupt values are dropped', async (t) => {
  const dir = tempDir('pg-cache-');
  const path = join(dir, 'cache.db');
  const a = new PersistentCache(path);
  a.set('k', { rows: ['x'] });
  a.set('k2', 'v2');
  a.close();
  const b = new PersistentCache(path);
  t.same(b.get('k'), { rows: ['x'] });
  const raw = new Database(path);
  raw.prepare("UPDATE kv SET value = '\"forged\"' WHERE key = 'k2'").run();
  raw.close();
  t.equal(b.get('k2'), undefined, 'checksum mismatch is a miss');
  t.equal(b.dropped, 1);
  t.equal(b.get('k2'), undefined, 'and the row is gone');
  b.close();
});

t.test('a tampered cache cannot change a contract digest', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'src/a.ts': 'export function f(a: number): string { return String(a); }\n', 'src/b.py': 'def g(x: int) -> str:\n    return str(x)\n' });
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const truth = await contractOf(git, 'HEAD', ['src/'], 'v1', new Map());
  const path = join(tempDir('pg-cache-'), 'cache.db');
  const disk = new PersistentCache(path);
  const first = await contractOf(git, 'HEAD', ['src/'], 'v1', new ContentCache(disk));
  t.equal(first.digest, truth.digest);
  disk.flush(); // writes are queued: on disk now, for the forgery below
  // Forge every cached value (rows and digests) while keeping valid JSON; checksums no longer match.
  const raw = new Database(path);
  const n = raw.prepare(`UPDATE kv SET value = '{"format":"v1","digest":"${'0'.repeat(64)}","rows":[],"files":0}'`).run().changes;
  raw.close();
  t.equal(n, 8, `forged the rows and Merkle lines of both files, b.py's re-export links, a.ts's signature key, and the stored digest and re-export rows of src/`);
  const again = await contractOf(git, 'HEAD', ['src/'], 'v1', new ContentCache(disk));
  t.equal(again.digest, truth.digest, 'recomputed, not read from the forged cache');
  t.ok(disk.dropped >= 1);
  disk.close();
});

t.test('the tree walk gives rows in the byte order of their paths, and a Merkle digest', async (t) => {
  const r = TestRepo.init(t);
  const src = (name: string) => `export function f_${name.replace(/\W/g, '_')}(x: number): number { return x; }\n`;
  const names = ['src/a.ts', 'src/a-b.ts', 'src/a/b.ts', 'src/a/c/d.py', 'src/A.ts', 'src/é.ts', 'src/z.py', 'src/a.b/c.ts', 'src/a0.ts', 'src/a_/x.ts'];
  r.commit('base', Object.fromEntries(names.map((n) => [n, n.endsWith('.py') ? `def g_${n.length}(y: int) -> int:\n    return y\n` : src(n)])));
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const walked = await contractOf(git, 'HEAD', ['src/'], 'v1', new Map());
  const pathOf = (row: string) => Buffer.from(row.slice(0, row.indexOf('::')));
  const sorted = [...walked.rows].sort((a, b) => Buffer.compare(pathOf(a), pathOf(b)));
  t.same(walked.rows, sorted, 'git tree order is the byte order of full paths');
  t.equal(walked.rows.length, names.length);
  t.equal(walked.files, names.length);
  const again = await contractOf(git, 'HEAD', ['src/'], 'v1', new Map());
  t.equal(again.digest, walked.digest, 'deterministic');
  r.commit('a file without exports', { 'src/a/notes.ts': 'const x = 1;\n' });
  t.equal((await contractOf(git, 'HEAD', ['src/'], 'v1', new Map())).digest, walked.digest, 'a file with no rows does not count');
  r.commit('an export', { 'src/a/notes.ts': 'export const x = 1;\n' });
  t.not((await contractOf(git, 'HEAD', ['src/'], 'v1', new Map())).digest, walked.digest);
});

t.test('queued writes: readable before and after the flush, in one transaction per batch, and after a reopen', async (t) => {
  const dir = tempDir('pg-cache-');
  const path = join(dir, 'cache.db');
  const disk = new PersistentCache(path, () => {}, { batchEntries: 100, flushMs: 60_000 });
  const raw = new Database(path, { readonly: true });
  t.teardown(() => raw.close());
  const onDisk = () => (raw.prepare('SELECT count(*) AS n FROM kv').get() as { n: number }).n;
  const cache = new ContentCache(disk);
  cache.set('rows:a', ['a::x']);
  cache.setMany([['rows:b', ['b::y']], ['mem:c', { big: true }]]);
  t.equal(onDisk(), 0, 'nothing written yet: the writes wait in the queue');
  t.equal(disk.queuedEntries, 2, 'the mem: key is not queued');
  t.same(disk.get('rows:a'), ['a::x'], 'the disk layer reads its queue');
  t.same([...disk.getMany(['rows:a', 'rows:b', 'rows:none'])], [['rows:a', ['a::x']], ['rows:b', ['b::y']]], 'getMany too');
  cache.clear();
  t.same(cache.get('rows:b'), ['b::y'], 'a value dropped from memory is read back from the queue');
  disk.flush();
  t.equal(onDisk(), 2, 'one flush wrote both');
  t.equal(disk.flushes, 1);
  t.equal(disk.queuedEntries, 0);
  t.same(disk.get('rows:a'), ['a::x'], 'readable after the flush');
  // A full batch flushes by itself, in one transaction.
  for (let i = 0; i < 100; i++) disk.set(`rows:n${i}`, [`n${i}::z`]);
  t.equal(onDisk(), 102, 'the 100th entry flushed the batch');
  t.equal(disk.flushes, 2, 'in one transaction');
  disk.set('rows:last', ['last::w']);
  disk.close();
  t.equal(onDisk(), 103, 'close flushed the rest');
  disk.set('rows:late', ['late']);
  const again = new PersistentCache(path);
  t.teardown(() => again.close());
  t.same(again.get('rows:last'), ['last::w'], 'a reopened cache sees what was flushed at close');
  t.same(again.get('rows:n99'), ['n99::z']);
  t.equal(again.get('rows:late'), undefined, 'a set after close is dropped, not an error');
  t.equal(new ContentCache(again).get('mem:c'), undefined, 'mem: keys never reach the disk');
});

t.test('a queued write that cannot be written is a miss later, not an error', async (t) => {
  const dir = tempDir('pg-cache-');
  const path = join(dir, 'cache.db');
  const lines: string[] = [];
  const disk = new PersistentCache(path, (l) => lines.push(l), { flushMs: 60_000 });
  t.teardown(() => disk.close());
  // Another connection holds the write lock: the flush fails (busy), the batch is dropped.
  const other = new Database(path);
  other.pragma('busy_timeout = 0');
  other.exec('BEGIN IMMEDIATE');
  (disk as unknown as { db: Database.Database }).db.pragma('busy_timeout = 0');
  const cache = new ContentCache(disk);
  cache.set('rows:x', ['x::1']);
  t.doesNotThrow(() => disk.flush());
  other.exec('ROLLBACK');
  other.close();
  t.equal(disk.failedWrites, 1);
  t.match(lines.join('\n'), /could not write 1 cache entries/);
  t.same(cache.get('rows:x'), ['x::1'], 'memory still answers');
  cache.clear();
  t.equal(cache.get('rows:x'), undefined, 'the disk does not: a miss, computed again');
});

t.test('memory is bounded by approximate bytes; what it drops is read back from disk', async (t) => {
  const dir = tempDir('pg-cache-');
  const disk = new PersistentCache(join(dir, 'cache.db'));
  t.teardown(() => disk.close());
  const cap = 64 * 1024;
  const cache = new ContentCache(disk, { maxBytes: cap });
  const value = (i: number) => Array.from({ length: 20 }, (_, j) => `src/f${i}.ts::function f${i}_${j}(a: number): string`);
  let max = 0;
  for (let i = 0; i < 500; i++) {
    cache.set(`rows:${i}`, value(i));
    max = Math.max(max, cache.memBytes);
  }
  t.ok(max <= cap, `memory never went over the cap (max ${max} of ${cap})`);
  t.ok(cache.size < 500 && cache.size > 10, `only part of the entries are in memory (${cache.size})`);
  t.ok(cache.evicted > 0);
  const before = cache.hits;
  for (let i = 0; i < 500; i += 7) t.same(cache.get(`rows:${i}`), value(i), `rows:${i} readable`);
  t.equal(cache.hits - before, Math.ceil(500 / 7), 'every one a hit, from memory or disk');
  t.ok(cache.memBytes <= cap, 'reading back stays under the cap');
  const many = cache.getMany(Array.from({ length: 500 }, (_, i) => `rows:${i}`));
  t.equal(many.size, 500, 'getMany reads the rest from disk');
  t.ok(cache.memBytes <= cap);
  // mem: keys: memory only, bounded too (their size is APPROX_BYTES when they carry one).
  for (let i = 0; i < 100; i++) cache.set(`mem:tree:${i}`, Object.defineProperty({ i }, APPROX_BYTES, { value: 4096 }));
  t.ok(cache.memBytes <= cap);
  t.equal(cache.get('mem:tree:0'), undefined, 'an old mem: value is gone (computed again), never read from disk');
  t.same(cache.get('mem:tree:99'), { i: 99 }, 'a recent one is kept');
  cache.set('mem:huge', Object.defineProperty({}, APPROX_BYTES, { value: cap * 2 }));
  t.equal(cache.get('mem:huge'), undefined, 'a value larger than the whole cap is not kept');
  t.equal(approxBytes(['ab', 'c']), 2 + 5 + 4);
});

t.test('a cold contract through a small memory cap: rows read back from disk, the same digest and rows', async (t) => {
  const r = TestRepo.init(t);
  const files: Record<string, string> = {};
  for (let d = 0; d < 8; d++) for (let i = 0; i < 10; i++) files[`src/d${d}/f${i}.ts`] = `export function f${d}_${i}(a: number, b: string): string { return b + a; }\nexport const k${d}_${i} = ${i};\n`;
  r.commit('base', files);
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const truth = await contractOf(git, 'HEAD', ['src/'], 'v1', new Map());
  const disk = new PersistentCache(join(tempDir('pg-cache-'), 'cache.db'));
  t.teardown(() => disk.close());
  const cache = new ContentCache(disk, { maxBytes: 4096 });
  const c = await contractOf(git, 'HEAD', ['src/'], 'v1', cache);
  t.equal(c.digest, truth.digest);
  t.ok(cache.evicted > 0, 'the cap dropped entries during the walk');
  t.ok(cache.memBytes <= 4096);
  t.same(c.rows, truth.rows, 'the rows, read back from the cache');
  t.equal(c.rows.length, 160);
});

t.test('prefetch: one batched read into memory, not counted as lookups; the gets after it read nothing more', async (t) => {
  const dir = tempDir('pg-cache-prefetch-');
  const path = join(dir, 'cache.db');
  const a = new PersistentCache(path);
  for (let i = 0; i < 5; i++) a.set(`rows:${i}`, [`r${i}`]);
  a.close();
  const disk = new PersistentCache(path);
  t.teardown(() => disk.close());
  const reads = countDiskReads(disk);
  const cache = new ContentCache(disk);
  cache.prefetch(['rows:0', 'rows:1', 'rows:2', 'rows:absent', 'mem:never']);
  t.equal(reads.batches, 1, 'one batched read');
  t.equal(cache.hits + cache.misses, 0, 'not counted as lookups');
  for (let i = 0; i < 3; i++) t.same(cache.get(`rows:${i}`), [`r${i}`]);
  t.equal(reads.single, 0, 'the prefetched keys are memory hits');
  t.equal(cache.hits, 3);
  t.equal(cache.get('rows:absent'), undefined, 'an absent key is still a miss');
  cache.prefetch(['rows:0', 'rows:3']);
  t.equal(reads.batches, 1, 'one key memory lacks is not worth a batch: its get reads it');
  t.same(cache.get('rows:3'), ['r3']);
});
