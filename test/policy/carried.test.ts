// The accept cache of src/policy/carried.ts over a real cache.db: an accept survives a reopen
// (a restart of the daemon), a forged or damaged entry is no accept (the commit is judged),
// and the policy digest ignores where the policy was read but not what it says.

import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { ContentCache, PersistentCache } from '../../src/cache/content-cache.js';
import { acceptedBefore, policyDigest, rememberAccepted } from '../../src/policy/carried.js';
import { parsePolicy } from '../../src/policy/config.js';
import { tempDir } from '../helpers/repo.js';

const ids = Array.from({ length: 1200 }, (_, i) => ({ id: i.toString(16).padStart(40, '0'), parents: [] as string[] }));

t.test('accepts survive a reopen, in batches; a forged entry is judged again', async (t) => {
  const path = join(tempDir('pg-carried-'), 'cache.db');
  const digest = policyDigest(parsePolicy({}));
  const a = new PersistentCache(path);
  rememberAccepted(new ContentCache(a), [{ policy: digest, commits: ids.slice(0, 1100).map((c) => c.id) }], 'push-1');
  a.close();
  const b = new PersistentCache(path);
  const known = acceptedBefore(new ContentCache(b), digest, ids);
  t.equal(known.size, 1100, 'every remembered commit, across more than one batch');
  t.notOk(known.has(ids[1150]!.id), 'a commit never accepted is not known');
  t.equal(acceptedBefore(new ContentCache(b), policyDigest(parsePolicy({ writable: ['**'] })), ids).size, 0, 'another policy knows none');
  b.close();
  const raw = new Database(path);
  raw.prepare(`UPDATE kv SET value = '{"verdict":"accept","pushId":"forged"}' WHERE key LIKE ?`).run(`%:${ids[0]!.id}`);
  raw.prepare(`INSERT INTO kv (key, value, sum) VALUES (?, '{"verdict":"accept"}', 'x')`).run(`judged-accept:${digest}:${ids[1150]!.id}`);
  raw.close();
  const c = new PersistentCache(path);
  const again = acceptedBefore(new ContentCache(c), digest, ids);
  t.notOk(again.has(ids[0]!.id), 'an entry whose checksum fails is no accept');
  t.notOk(again.has(ids[1150]!.id), 'nor an inserted one');
  t.equal(again.size, 1099);
  c.close();
});

t.test('the policy digest: same policy from another tip is the same; any change of it is another', async (t) => {
  const d = policyDigest(parsePolicy({}, 'ci/patchgate.json@aaaa'));
  t.equal(policyDigest(parsePolicy({}, 'ci/patchgate.json@bbbb')), d);
  t.not(policyDigest(parsePolicy({ protected: ['tests/**'] })), d);
  t.not(policyDigest({ ...parsePolicy({}), trustedBranch: 'trunk' }), d);
  t.equal(policyDigest(parsePolicy({ tamperScan: { checks: { exit: 'off', 'env-read': 'advisory' } } })), policyDigest(parsePolicy({ tamperScan: { checks: { 'env-read': 'advisory', exit: 'off' } } })), 'key order does not matter');
});

t.test('a plain Map (no disk) works the same, and a cache that throws answers none', async (t) => {
  const m = new Map<string, unknown>();
  rememberAccepted(m, [{ policy: 'p', commits: [ids[0]!.id] }], 'x');
  t.same([...acceptedBefore(m, 'p', ids.slice(0, 3))], [ids[0]!.id]);
  const broken = new Map<string, unknown>();
  broken.get = () => {
    throw new Error('unreadable');
  };
  t.equal(acceptedBefore(broken, 'p', ids.slice(0, 3)).size, 0);
});
