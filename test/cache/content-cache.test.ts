// The persistent cache survives a restart, and a corrupt entry is detected and recomputed:
// the contract digest with a tampered cache equals the digest with no cache at all.

import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { ContentCache, PersistentCache } from '../../src/cache/content-cache.js';
import { contractOf } from '../../src/contract/digest.js';
import { Git } from '../../src/git/git.js';
import { TestRepo, tempDir } from '../helpers/repo.js';

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
  // Forge every cached value (rows and digests) while keeping valid JSON; checksums no longer match.
  const raw = new Database(path);
  const n = raw.prepare(`UPDATE kv SET value = '{"format":"v1","digest":"${'0'.repeat(64)}","rows":[],"files":0}'`).run().changes;
  raw.close();
  t.ok(n >= 3, `forged ${n} cache rows`);
  const again = await contractOf(git, 'HEAD', ['src/'], 'v1', new ContentCache(disk));
  t.equal(again.digest, truth.digest, 'recomputed, not read from the forged cache');
  t.ok(disk.dropped >= 1);
  disk.close();
});
