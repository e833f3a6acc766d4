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
  t.equal(n, 7, `forged the rows and Merkle lines of both files, b.py's re-export links, and the stored digest and re-export rows of src/`);
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
