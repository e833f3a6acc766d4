// A wide folder (64 contract files or more) keeps one record of its files' Merkle lines and
// Python re-exports (issue 24), so a one-file change there looks up one file, not every
// sibling, in memory and after a restart. The digest and rows must equal a walk of its own.
// Real repositories, a real cat-file reader and a real cache.db; lookups are only counted.

import t from 'tap';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Git } from '../../src/git/git.js';
import { contractOf, contractRows } from '../../src/contract/digest.js';
import { ContentCache, PersistentCache } from '../../src/cache/content-cache.js';
import Database from 'better-sqlite3';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { countDiskReads } from '../helpers/disk-reads.js';

/** A Map that counts lookups of per-file Merkle lines. */
class Counting extends Map<string, unknown> {
  lineGets = 0;
  override get(key: string): unknown {
    if (key.startsWith('file-line:')) this.lineGets++;
    return super.get(key);
  }
}

function wide(n: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) files[`src/wide/f${i}.ts`] = `export function f${i}(a: number): number { return a + ${i}; }\n`;
  // A file without rows is recorded too (its line is empty).
  files['src/wide/quiet.ts'] = 'const hidden = 1;\n';
  files['src/narrow/one.ts'] = 'export const one = 1;\n';
  return files;
}

/** A cache.db left by a daemon that computed the contract of `rev` and stopped (a restart opens it). */
async function cacheDbAfter(t: Tap.Test, git: Git, rev: string): Promise<string> {
  const dir = tempDir('pg-folder-record-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'cache.db');
  const first = new PersistentCache(db);
  await contractOf(git, rev, ['src/'], 'v1', new ContentCache(first));
  first.close();
  return db;
}

t.test('a one-file change in a wide folder looks up only that file', async (t) => {
  const r = TestRepo.init(t);
  const base = r.commit('base', wide(150));
  const head = r.commit('one change', { 'src/wide/f77.ts': 'export function f77(a: number, b?: number): number { return a; }\n' });
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const cache = new Counting();
  const b = await contractOf(git, base, ['src/'], 'v1', cache);
  t.equal(cache.lineGets, 152, 'the cold walk looks up every file');
  cache.lineGets = 0;
  const h = await contractOf(git, head, ['src/'], 'v1', cache);
  t.equal(cache.lineGets, 1, 'only the changed file is looked up');
  t.not(h.digest, b.digest, 'the change moved the digest');
  const fresh = await contractOf(git, head, ['src/'], 'v1', new Map());
  t.equal(h.digest, fresh.digest, 'the digest a walk of its own gives');
  t.same(h.rows, fresh.rows, 'and the same rows');
  t.ok(h.rows.some((row) => row.includes('f77(a: number, b?: number)')), 'the changed row is there');

  // Back to the base tree: the record now holds the head's blob for f77; the base's is looked up.
  cache.lineGets = 0;
  const again = await contractOf(git, base, ['src/'], 'v1', new Map([...cache]));
  t.equal(again.digest, b.digest);
});

t.test('the record comes back from cache.db after a restart; a damaged one is ignored', async (t) => {
  const r = TestRepo.init(t);
  const base = r.commit('base', wide(100));
  const head = r.commit('one change', { 'src/wide/f3.ts': 'export function f3(a: string): number { return 3; }\n' });
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const db = await cacheDbAfter(t, git, base);

  const second = new PersistentCache(db);
  const reads = countDiskReads(second);
  const restarted = new ContentCache(second);
  const h = await contractOf(git, head, ['src/'], 'v1', restarted);
  const fresh = await contractOf(git, head, ['src/'], 'v1', new Map());
  t.equal(h.digest, fresh.digest);
  t.ok(reads.single < 20, `a restarted walk of a 101-file folder reads few entries from disk (${reads.single})`);
  // Its rows are walked again from the per-file entries (a refusal's diff).
  t.same(await contractRows(git, h, head, ['src/'], restarted), fresh.rows);
  second.close();

  // A record of the wrong shape (a line that names another file, a short entry) is not trusted.
  const keys = (new Database(db, { readonly: true }).prepare("SELECT key FROM kv WHERE key LIKE 'folder-record:%'").all() as Array<{ key: string }>).map((k) => k.key);
  t.same(keys.map((k) => k.replace(/^.*:/, '')), ['src/wide/'], 'one record: the wide folder, not the narrow one');
  for (const damaged of [[['f3', 'x', 'F f4 00', []]], [['f3']], 'not a record']) {
    const third = new PersistentCache(db);
    third.set(keys[0]!, damaged);
    third.flush();
    const got = await contractOf(git, head, ['src/'], 'v1', new ContentCache(third));
    t.equal(got.digest, fresh.digest, `damaged record ${JSON.stringify(damaged)} ignored`);
    third.close();
  }
});

t.test('Python re-exports in a wide folder come back from the record', async (t) => {
  const r = TestRepo.init(t);
  const files: Record<string, string> = {
    'src/pkg/__init__.py': 'from ._impl import parse\n',
    'src/pkg/_impl.py': 'def parse(data, strict=False) -> dict:\n    return {}\n',
  };
  for (let i = 0; i < 80; i++) files[`src/pkg/m${i}.py`] = `def m${i}(x: int) -> int:\n    return x\n`;
  const base = r.commit('base', files);
  const head = r.commit('one change', { 'src/pkg/m5.py': 'def m5(x: int, y: int = 0) -> int:\n    return x\n' });
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const cache = new Counting();
  await contractOf(git, base, ['src/'], 'v1', cache);
  cache.lineGets = 0;
  const h = await contractOf(git, head, ['src/'], 'v1', cache);
  t.equal(cache.lineGets, 1, 'only the changed module is looked up');
  const fresh = await contractOf(git, head, ['src/'], 'v1', new Map());
  t.equal(h.digest, fresh.digest);
  t.same(h.rows, fresh.rows);
  t.ok(h.rows.some((row) => row.startsWith('src/pkg/__init__.py::') && row.includes('parse')), 'the re-export row of the private definition is there');
});

t.test('a wide folder that gains and loses files reuses its last walk for the rest', async (t) => {
  const r = TestRepo.init(t);
  const base = r.commit('base', wide(120));
  // "a0.ts" sorts before every f*.ts, so each later file sits one place further on than last time.
  const added = r.commit('one added first', { 'src/wide/a0.ts': 'export const a0 = 0;\n' });
  const removed = r.commit('two removed', { 'src/wide/f5.ts': null, 'src/wide/f50.ts': null });
  const changed = r.commit('one changed', { 'src/wide/f99.ts': 'export function f99(a: string): string { return a; }\n' });
  const back = r.commit('two back as they were', { 'src/wide/f5.ts': wide(120)['src/wide/f5.ts']!, 'src/wide/f50.ts': wide(120)['src/wide/f50.ts']! });
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const cache = new Counting();
  await contractOf(git, base, ['src/'], 'v1', cache);
  for (const [rev, lookups, what] of [[added, 1, 'the added file'], [removed, 0, 'nothing (two files left)'], [changed, 1, 'the changed file'], [back, 2, 'the two files back']] as const) {
    cache.lineGets = 0;
    const got = await contractOf(git, rev, ['src/'], 'v1', cache);
    t.equal(cache.lineGets, lookups, `only ${what} is looked up`);
    const fresh = await contractOf(git, rev, ['src/'], 'v1', new Map());
    t.equal(got.digest, fresh.digest, `${what}: the digest a walk of its own gives`);
    t.same(got.rows, fresh.rows, `${what}: the same rows`);
  }
});

t.test('after a restart, the siblings on a change\'s path come from cache.db in one batched read, not one read each', async (t) => {
  const r = TestRepo.init(t);
  const files: Record<string, string> = {};
  // 30 sibling folders, and a folder of 40 files (under the folder-record width).
  for (let d = 0; d < 30; d++) files[`src/pkg/d${d}/m.ts`] = `export const m${d} = ${d};\n`;
  for (let i = 0; i < 40; i++) files[`src/pkg/d7/f${i}.ts`] = `export function f${i}(a: number): number { return a; }\n`;
  const base = r.commit('base', files);
  const head = r.commit('one change', { 'src/pkg/d7/f9.ts': 'export function f9(a: number, b = 2): number { return a; }\n' });
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const db = await cacheDbAfter(t, git, base);

  const second = new PersistentCache(db);
  t.teardown(() => second.close());
  const reads = countDiskReads(second);
  const h = await contractOf(git, head, ['src/'], 'v1', new ContentCache(second));
  t.equal(h.digest, (await contractOf(git, head, ['src/'], 'v1', new Map())).digest, 'the digest a walk of its own gives');
  t.ok(reads.batchedKeys >= 29 + 39, `the 29 unchanged sibling folders and 39 unchanged files were asked for together (${reads.batchedKeys} keys)`);
  t.ok(reads.single < 15, `few single reads are left (${reads.single})`);
});
