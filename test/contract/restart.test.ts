// A restarted daemon finds each tree's contract digest in cache.db: a push that changes one
// file opens only the trees on that file's path, and a refusal's diff still gets every row.

import t from 'tap';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Git } from '../../src/git/git.js';
import { contractOf, contractRows } from '../../src/contract/digest.js';
import { ContentCache, PersistentCache } from '../../src/cache/content-cache.js';
import { TestRepo, tempDir } from '../helpers/repo.js';

t.test('tree digests survive a restart; rows are walked again when a diff needs them', async (t) => {
  const repo = TestRepo.init(t);
  const files: Record<string, string> = {};
  for (let d = 0; d < 6; d++) {
    for (let i = 0; i < 5; i++) files[`src/d${d}/sub/f${i}.ts`] = `export function f${d}_${i}(a: number): string { return String(a); }\n`;
  }
  const before = repo.commit('base', files);
  const after = repo.commit('one change', { 'src/d3/sub/f2.ts': 'export function f3_2(a: number, b?: string): string { return String(a); }\n' });
  const dir = tempDir('pg-cache-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'cache.db');

  const git = new Git({ dir: repo.dir });
  t.teardown(() => git.close());
  const first = new PersistentCache(db);
  const c1 = await contractOf(git, before, ['src/'], 'v1', new ContentCache(first));
  first.close();

  // "Restart": a new cache over the same file, nothing in memory. Count the trees opened.
  const second = new PersistentCache(db);
  t.teardown(() => second.close());
  const cache = new ContentCache(second);
  let opened = 0;
  const readTree = git.readTree.bind(git);
  git.readTree = (id: string) => {
    opened++;
    return readTree(id);
  };
  const again = await contractOf(git, before, ['src/'], 'v1', cache);
  t.equal(again.digest, c1.digest, 'the same digest after the restart');
  t.equal(again.files, 30);
  t.equal(opened, 0, 'the unchanged root tree is a lookup: no tree opened');

  opened = 0;
  const c2 = await contractOf(git, after, ['src/'], 'v1', cache);
  t.equal(opened, 3, 'a one-file change opens src/, src/d3/ and src/d3/sub/ and no other tree');
  const fresh = await contractOf(git, after, ['src/'], 'v1', new Map());
  t.equal(c2.digest, fresh.digest, 'and gets the digest a cold computation gets');

  // Rows: the restarted contract has none in memory; contractRows walks them again.
  t.throws(() => again.rows);
  t.same(await contractRows(git, again, before, ['src/'], cache), c1.rows);
  t.same(await contractRows(git, c2, after, ['src/'], cache), fresh.rows);
  t.ok(fresh.rows.includes('src/d3/sub/f2.ts::function f3_2(a: number, b?: string): string'));
});
