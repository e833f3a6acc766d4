// Push ref advertisements made ahead (src/git/ref-advert.ts): the key moves with every input of
// git's answer and refuses what it cannot key; a gate answers a push's GET from the kept bytes,
// byte for byte what git would say now, and from git again once a ref moved outside it; a run
// made ahead that fails leaves the request to git.

import t from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { advertKey, MAX_REF_FILES, RefAdverts, type AdvertChild } from '../../src/git/ref-advert.js';
import { gitAsync, seededGate } from '../helpers/gate.js';
import { GIT_ENV, TestRepo, tempDir, removeTree } from '../helpers/repo.js';

const env = { ...process.env, ...GIT_ENV };
const git = (cwd: string, args: string[]): string => execFileSync('git', args, { cwd, env, encoding: 'utf8' }).trim();
/** What git itself advertises for a push now. */
const gitAdvert = (dir: string): Buffer => execFileSync('git-receive-pack', ['--stateless-rpc', '--advertise-refs', dir], { env });
const startAdvert = (dir: string): AdvertChild => spawn('git-receive-pack', ['--stateless-rpc', '--advertise-refs', dir], { stdio: ['ignore', 'pipe', 'ignore'] });

function readAll(c: AdvertChild): Promise<Buffer> {
  const chunks: Buffer[] = [];
  c.stdout!.on('data', (b: Buffer) => chunks.push(b));
  return new Promise((resolve, reject) => {
    c.once('error', reject);
    c.stdout!.once('end', () => resolve(Buffer.concat(chunks)));
  });
}

/** A bare repository with two commits on main; `first` is the older one. */
function bareRepo(t: { teardown(fn: () => unknown): void }): { dir: string; first: string } {
  const root = tempDir('pg-advert-');
  t.teardown(() => removeTree(root));
  const dir = join(root, 'r.git');
  git(root, ['init', '-q', '--bare', '--initial-branch=main', dir]);
  const w = TestRepo.init(t);
  const first = w.commit('one', { 'a.txt': 'a\n' });
  w.commit('two', { 'a.txt': 'b\n' }); // main one ahead of `first`
  git(w.dir, ['push', '-q', dir, 'main']);
  return { dir, first };
}

t.test('the key moves with every input of the answer, and is null for what it cannot key', async (t) => {
  const { dir, first } = bareRepo(t);
  const k0 = advertKey(dir);
  t.match(k0, /^[0-9a-f]{64}$/, 'a plain repository has a key');
  t.equal(advertKey(dir), k0, 'read twice, the same');
  git(dir, ['update-ref', 'refs/heads/other', first]);
  const k1 = advertKey(dir);
  t.not(k1, k0, 'a new loose ref moves it');
  git(dir, ['update-ref', 'refs/heads/other', `${first}~0`]);
  t.equal(advertKey(dir), k1, 'the same ref written again with the same id: the same key');
  git(dir, ['update-ref', 'refs/heads/other', 'main']);
  t.not(advertKey(dir), k1, 'a ref moved to another commit moves it');
  const k2 = advertKey(dir);
  git(dir, ['pack-refs', '--all']);
  t.not(advertKey(dir), k2, 'refs packed: packed-refs is in the key');
  const k3 = advertKey(dir);
  git(dir, ['config', 'receive.hideRefs', 'refs/heads/other']);
  t.not(advertKey(dir), k3, 'a config change moves it (hidden refs change the answer)');

  const lock = join(dir, 'refs', 'heads', 'x.lock');
  writeFileSync(lock, '');
  t.equal(advertKey(dir), null, 'a ref being written: no key');
  rmSync(lock);
  t.not(advertKey(dir), null);
  writeFileSync(join(dir, 'objects', 'info', 'alternates'), '/nowhere\n');
  t.equal(advertKey(dir), null, 'alternates (their refs are advertised as .have): no key');
  rmSync(join(dir, 'objects', 'info', 'alternates'));
  git(dir, ['config', 'receive.certNonceSeed', 'seed']);
  t.equal(advertKey(dir), null, 'push certificates (a nonce per answer): no key');
  git(dir, ['config', '--unset', 'receive.certNonceSeed']);
  appendFileSync(join(dir, 'config'), '[include]\n\tpath = elsewhere\n');
  t.equal(advertKey(dir), null, 'config includes: no key');
  t.equal(advertKey(join(dir, 'missing')), null, 'no repository: no key');
});

t.test('more loose refs than the key reads: no key', async (t) => {
  const { dir, first } = bareRepo(t);
  mkdirSync(join(dir, 'refs', 'heads', 'many'), { recursive: true });
  for (let i = 0; i < MAX_REF_FILES; i++) writeFileSync(join(dir, 'refs', 'heads', 'many', `b${i}`), `${first}\n`);
  t.equal(advertKey(dir), null);
  rmSync(join(dir, 'refs', 'heads', 'many', 'b0'));
  t.not(advertKey(dir), null, `${MAX_REF_FILES} loose refs in all (main included) still have a key`);
});

t.test('no spawn helper: nothing is made ahead, requests are answered from the daemon', async (t) => {
  const { dir } = bareRepo(t);
  let direct = 0;
  const adverts = new RefAdverts({ helper: () => null, direct: (d) => (direct++, startAdvert(d)) });
  adverts.prime(dir);
  t.equal(await adverts.isKept(dir), false, 'nothing made ahead');
  t.ok((await readAll(adverts.answer(dir))).equals(gitAdvert(dir)), 'git\'s answer');
  t.equal(direct, 1, 'started by the daemon itself');
});

t.test('a run made ahead that hangs is stopped in time: the request waiting on it gets git\'s answer', async (t) => {
  const { dir } = bareRepo(t);
  let hung: AdvertChild | null = null;
  const adverts = new RefAdverts({ helper: (d) => (hung ? startAdvert(d) : (hung = spawn('sleep', ['30'], { stdio: ['ignore', 'pipe', 'pipe'] }))), direct: startAdvert }, { makeMs: 300 });
  adverts.prime(dir);
  const t0 = Date.now();
  const got = await readAll(adverts.answer(dir));
  t.equal(adverts.stats.ahead, 1, 'the request waited on the run made ahead');
  t.ok(got.equals(gitAdvert(dir)), 'and got git\'s answer once it was stopped');
  t.ok(Date.now() - t0 < 20_000, 'not after the hung run\'s own end');
  t.equal(await adverts.isKept(dir), false);
  const killed = await new Promise((r) => (hung!.exitCode !== null || (hung as unknown as { signalCode: unknown }).signalCode ? r(true) : hung!.once('exit', () => r(true))));
  t.ok(killed, 'the hung git was killed');
});

t.test('kept bytes are git\'s answer; a failed run made ahead leaves the request to git', async (t) => {
  const { dir, first } = bareRepo(t);
  let fail = 1;
  const adverts = new RefAdverts({ helper: (d) => (fail-- > 0 ? spawn('git', ['receive-pack', '--no-such-option', d], { stdio: ['ignore', 'pipe', 'pipe'] }) : startAdvert(d)), direct: startAdvert });
  adverts.prime(dir); // fails: git exits non-zero
  const viaFallback = await readAll(adverts.answer(dir));
  t.same(adverts.stats, { kept: 0, ahead: 1, git: 0 }, 'the request waited on the run made ahead');
  t.ok(viaFallback.equals(gitAdvert(dir)), 'and got git\'s own answer when that run failed');
  t.equal(await adverts.isKept(dir), false, 'nothing kept from a failed run or a fallback');

  adverts.prime(dir);
  t.equal(await adverts.isKept(dir), true, 'a run made ahead is kept');
  const kept = await readAll(adverts.answer(dir));
  t.equal(adverts.stats.kept, 1, 'the next request is answered from it');
  t.ok(kept.equals(gitAdvert(dir)), 'byte for byte git\'s answer');

  git(dir, ['update-ref', 'refs/heads/main', first]);
  const moved = await readAll(adverts.answer(dir));
  t.equal(adverts.stats.git, 1, 'a ref moved outside: git answers');
  t.ok(moved.includes(first) && moved.equals(gitAdvert(dir)), 'with the ref where it is now');
  t.equal(await adverts.isKept(dir), false, 'what was kept under the old key is dropped');
  await readAll(adverts.answer(dir));
  t.same(adverts.stats, { kept: 1, ahead: 1, git: 2 }, 'nothing kept: git again (and no key read for it)');
  adverts.prime(dir);
  t.ok((await readAll(adverts.answer(dir))).equals(gitAdvert(dir)), 'made ahead again: git\'s answer');
  t.equal(adverts.stats.ahead + adverts.stats.kept, 3, 'from the run made ahead');
});

t.test('a gate answers a push\'s ref advertisement from bytes made ahead, and follows refs moved outside it', async (t) => {
  const { gate, agent, w, bare } = await seededGate(t, { 'src/a.ts': 'export function a(): number { return 1; }\n' });
  const url = gate.remote('app', 'agent-1', agent);
  const push = async (ref: string): Promise<void> => {
    const r = await gitAsync(w.dir, ['push', url, `HEAD:${ref}`]);
    t.equal(r.code, 0, `push to ${ref}: ${r.stderr}`);
  };
  const getAdvert = async (): Promise<Buffer> => {
    const res = await fetch(`http://127.0.0.1:${gate.srv.port}/app.git/info/refs?service=git-receive-pack`, { headers: { authorization: `Basic ${Buffer.from(`agent-1:${agent}`).toString('base64')}` } });
    t.equal(res.status, 200);
    return Buffer.from(await res.arrayBuffer());
  };
  const head = Buffer.from('001f# service=git-receive-pack\n0000');
  const expected = (): Buffer => Buffer.concat([head, gitAdvert(bare)]);

  w.commit('one', { 'src/a.ts': 'export function a(): number { return 2; }\n' });
  await push('refs/heads/agent/one');
  t.equal(await gate.srv.adverts.isKept(bare), true, 'after a push\'s answer, the next advertisement is made');
  const before = { ...gate.srv.adverts.stats };
  const body = await getAdvert();
  t.equal(gate.srv.adverts.stats.kept, before.kept + 1, 'the GET was answered from the kept bytes');
  t.equal(gate.srv.adverts.stats.git, before.git, 'with no git start');
  t.ok(body.equals(expected()), 'byte for byte what git says now');
  t.ok(body.includes('refs/heads/agent/one'), 'the pushed ref is in it');

  // A ref moved outside the gate (an operator's git in the data folder).
  git(bare, ['update-ref', 'refs/heads/agent/one', 'main']);
  const after = await getAdvert();
  t.equal(gate.srv.adverts.stats.git, before.git + 1, 'the key moved: git answered');
  t.ok(after.equals(expected()), 'with the ref where it is now');

  w.commit('two', { 'src/a.ts': 'export function a(): number { return 3; }\n' });
  const g = gate.srv.adverts.stats.git;
  await push('refs/heads/agent/two');
  t.equal(gate.srv.adverts.stats.git, g + 1, 'the next push\'s GET: nothing kept since the move, git answered');
  t.equal(git(bare, ['rev-parse', 'refs/heads/agent/two']), git(w.dir, ['rev-parse', 'HEAD']), 'and the push landed');
  t.equal(await gate.srv.adverts.isKept(bare), true, 'its end made the next advertisement');
  w.commit('three', { 'src/a.ts': 'export function a(): number { return 4; }\n' });
  const k = gate.srv.adverts.stats.kept + gate.srv.adverts.stats.ahead;
  await push('refs/heads/agent/two');
  t.equal(gate.srv.adverts.stats.kept + gate.srv.adverts.stats.ahead, k + 1, 'a real push\'s GET took the advertisement made for it');
  t.equal(git(bare, ['rev-parse', 'refs/heads/agent/two']), git(w.dir, ['rev-parse', 'HEAD']), 'and the push landed');
});

t.test('kept advertisements stay within their memory bound, the most recent kept', async (t) => {
  const { dir, first } = bareRepo(t);
  // About 0.95 MiB of advertisement per repository: 13,000 packed refs.
  const lines = ['# pack-refs with: peeled fully-peeled sorted'];
  for (let i = 0; i < 13_000; i++) lines.push(`${first} refs/heads/r/${String(i).padStart(6, '0')}-${'x'.repeat(8)}`);
  const repos: string[] = [];
  for (let n = 0; n < 20; n++) {
    const copy = `${dir}-${n}`;
    cpSync(dir, copy, { recursive: true });
    t.teardown(() => removeTree(copy));
    writeFileSync(join(copy, 'packed-refs'), lines.join('\n') + '\n');
    repos.push(copy);
  }
  const size = gitAdvert(repos[0]!).length;
  t.ok(size > 850_000 && size < 1 << 20, `one advertisement is ${size} bytes`);
  const adverts = new RefAdverts({ helper: startAdvert, direct: startAdvert });
  for (const r of repos) {
    adverts.prime(r);
    await adverts.isKept(r);
  }
  const kept = [];
  for (const r of repos) if (await adverts.isKept(r)) kept.push(r);
  t.ok(kept.length >= 15 && kept.length <= Math.floor((16 << 20) / size), `${kept.length} of 20 kept, no more than 16 MiB`);
  t.ok(kept.includes(repos[19]!) && !kept.includes(repos[0]!), 'the oldest went first');
});
