// The accept cache of src/policy/carried.ts over a real cache.db: an accept survives a reopen
// (a restart of the daemon), a forged or damaged entry is no accept (the commit is judged),
// and the policy digest ignores where the policy was read but not what it says.

import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { ContentCache, PersistentCache } from '../../src/cache/content-cache.js';
import { acceptedBefore, carriedCommits, policyDigest, rememberAccepted } from '../../src/policy/carried.js';
import { Git } from '../../src/git/git.js';
import { parsePolicy } from '../../src/policy/config.js';
import { TestRepo, tempDir } from '../helpers/repo.js';

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

t.test('the carried commits without a rev-list equal rev-list\'s: a line walked and memoised; a merge or an unrelated tip falls back', async (t) => {
  const w = TestRepo.init(t);
  const trusted = w.commit('base', { 'a.txt': 'a\n' });
  w.checkout('agent/x', true);
  const tips: string[] = [];
  for (let i = 0; i < 5; i++) tips.push(w.commit(`agent ${i}`, { [`f${i}.txt`]: `${i}\n` }));
  const git = new Git({ dir: w.dir });
  t.teardown(() => git.close());
  const cache = new Map<string, unknown>();
  const revList = (tip: string) => git.newCommits(tip, [trusted]);
  // Push by push: each time the line ends on the ref's old tip (the pushed line is the last commit).
  for (let i = 0; i < tips.length; i++) {
    const line = i === 0 ? null : [{ id: tips[i]!, parents: [tips[i - 1]!] }];
    t.same(await carriedCommits(git, tips[i]!, trusted, line, cache), await revList(tips[i]!), `push ${i + 1}: the same commits in the same order`);
  }
  t.ok([...cache.keys()].some((k) => k.startsWith('mem:carried-linear:')), 'lines are memoised per trusted tip');
  t.same(await carriedCommits(git, tips[4]!, tips[1]!, null, cache), await git.newCommits(tips[4]!, [tips[1]!]), 'another trusted tip: its own walk');

  // A merge in the line: rev-list's answer (the walk gives up).
  w.checkout('main');
  const side = w.commit('side', { 's.txt': 's\n' });
  w.checkout('agent/x');
  w.git('merge', '-q', '--no-edit', 'main');
  const merged = w.commit('after the merge', { 'g.txt': 'g\n' });
  t.same(await carriedCommits(git, merged, trusted, null, cache), await revList(merged), 'through a merge: rev-list');
  t.ok((await revList(merged)).some((c) => c.id === side), 'which includes the merged side');
  // A trusted tip the line never reaches (another history): rev-list.
  w.git('checkout', '-q', '--orphan', 'other');
  const lone = w.commit('unrelated', { 'u.txt': 'u\n' });
  t.same(await carriedCommits(git, lone, trusted, null, cache), await revList(lone), 'an unrelated tip: rev-list');
});
