// Issue 24, fewer processes per push: gated repositories carry receive.autogc=false (no
// `git gc --auto` inside every receive-pack), and the daemon runs `git gc --auto` itself once
// the repository is quiet, never while a push to it is in flight, and only where
// receive.autogc is false. Real repositories, real pushes over HTTP to a real gate.

import t from 'tap';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';
import { IdleGc } from '../../src/server/idle-gc.js';
import { runRepoHooks } from '../../src/commands/admin.js';
import { installHostHooks } from '../../src/host/install.js';
import { daemonConfig, gitWithEnv, seededBare, startTestDaemon } from '../helpers/host.js';

const packs = (bare: string) => readdirSync(join(bare, 'objects', 'pack')).filter((f) => f.endsWith('.pack')).length;
const config = async (dir: string, key: string) => (await gitAsync(dir, ['config', '--get', key])).stdout.trim();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('receive-pack runs no gc; the daemon packs the repository once it is quiet, not while a push holds it', async (t) => {
  const gate = await startGate(t, { gc: { quietMs: 200 } });
  await gate.repo('app');
  const bare = bareDir(gate, 'app');
  t.equal(await config(bare, 'receive.autogc'), 'false', 'a new gated repository has receive.autogc=false');
  // Every push keeps its own pack, and two packs are enough for `gc --auto` to repack.
  await gitAsync(bare, ['config', 'receive.unpackLimit', '1']);
  await gitAsync(bare, ['config', 'gc.autoPackLimit', '1']);
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const gc = gate.srv.hooks.gc;
  // A push in flight (as the front marks one) holds the gc for the whole test's first half.
  const hold = await gc.enter(bare);
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0);
  w.checkout('agent/fix', true);
  const head = w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.equal(r.code, 0, r.stderr);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), head);
  t.equal(gc.inFlight(bare), 1, 'the pushes released their hold; the test\'s own is left');
  await sleep(800); // four quiet periods: nothing may start while the hold is there
  t.ok(packs(bare) >= 2, `receive-pack did not repack (${packs(bare)} packs)`);
  t.same(gc.runs.filter((x) => x.repoDir === bare), [], 'no gc while a push is in flight');
  hold();
  await gc.settled();
  t.same(gc.runs.filter((x) => x.repoDir === bare).map((x) => x.outcome), ['done'], 'one gc once the repository was quiet');
  t.equal(packs(bare), 1, 'the daemon\'s gc --auto repacked the pushes\' packs into one');
  const fsck = await gitAsync(bare, ['fsck', '--no-progress']);
  t.equal(fsck.code, 0, fsck.stderr);
  // The repository still takes pushes after its gc.
  w.commit('again', { 'src/app.py': 'def add(a, b):\n    return a + b + 0\n' });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix'])).code, 0);
});

t.test('the daemon leaves repositories whose receive.autogc is not false to git', async (t) => {
  const bare = tempDir('pg-gc-');
  await gitAsync(bare, ['init', '-q', '--bare', '.']);
  const w = TestRepo.init(t);
  w.commit('one', { 'a.txt': '1\n' });
  await gitAsync(bare, ['config', 'receive.unpackLimit', '1']);
  await gitAsync(bare, ['config', 'gc.autoPackLimit', '1']);
  await gitAsync(bare, ['config', 'receive.autogc', 'false']);
  t.equal((await gitAsync(w.dir, ['push', bare, 'HEAD:refs/heads/main'])).code, 0);
  w.commit('two', { 'a.txt': '2\n' });
  t.equal((await gitAsync(w.dir, ['push', bare, 'HEAD:refs/heads/main'])).code, 0);
  t.equal(packs(bare), 2);
  await gitAsync(bare, ['config', 'receive.autogc', 'true']);
  const gc = new IdleGc({ quietMs: 10, log: () => {} });
  t.teardown(() => gc.stop());
  (await gc.enter(bare))();
  await gc.settled();
  t.same(gc.runs.map((x) => x.outcome), ['skipped']);
  t.equal(packs(bare), 2, 'not repacked');
  await gitAsync(bare, ['config', 'receive.autogc', 'false']);
  (await gc.enter(bare))();
  await gc.settled();
  t.same(gc.runs.map((x) => x.outcome), ['skipped', 'done']);
  t.equal(packs(bare), 1);
  // stop() cancels what is pending: nothing runs after it.
  (await gc.enter(bare))();
  await gc.stop();
  await sleep(50);
  t.equal(gc.runs.length, 2);
});

t.test('`repo hooks` and `hook install --host generic` set receive.autogc=false; gitlab keeps its own', async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  const bare = bareDir(gate, 'app');
  await gitAsync(bare, ['config', '--unset', 'receive.autogc']);
  const out = await runRepoHooks({ data: gate.data, name: 'app' });
  t.match(out[0], /and set receive\.autogc$/);
  t.equal(await config(bare, 'receive.autogc'), 'false');
  // An operator's own value is kept.
  await gitAsync(bare, ['config', 'receive.autogc', 'true']);
  await runRepoHooks({ data: gate.data, name: 'app' });
  t.equal(await config(bare, 'receive.autogc'), 'true');

  const data = tempDir('pg-daemon-');
  const cfg = daemonConfig(data, {});
  for (const host of ['generic', 'gitlab'] as const) {
    const dir = tempDir(`pg-${host}-`);
    await gitAsync(dir, ['init', '-q', '--bare', '.']);
    const lines = await installHostHooks(host, cfg, [dir]);
    t.equal(await config(dir, 'receive.autogc'), host === 'generic' ? 'false' : '', host);
    t.equal(lines.some((l) => /receive\.autogc=false/.test(l)), host === 'generic');
  }
});

t.test('a git host (generic): the daemon gcs a repository its shim gates once it is quiet', async (t) => {
  const { d, cfg } = await startTestDaemon(t, {}, { log: () => {}, gc: { quietMs: 200 } });
  const { bare, w } = await seededBare(t);
  await installHostHooks('generic', cfg, [bare]);
  t.equal(await config(bare, 'receive.autogc'), 'false');
  await gitAsync(bare, ['config', 'receive.unpackLimit', '1']);
  await gitAsync(bare, ['config', 'gc.autoPackLimit', '1']);
  const env = { PATCHGATE_USER: 'agent-1', PATCHGATE_REPO: 'app' };
  w.checkout('agent/a', true);
  w.commit('one', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const a = await gitWithEnv(w.dir, ['push', bare, 'agent/a'], env);
  t.equal(a.code, 0, a.stderr);
  w.commit('two', { 'src/app.py': 'def add(a, b):\n    return a + b + 0\n' });
  const b = await gitWithEnv(w.dir, ['push', bare, 'agent/a'], env);
  t.equal(b.code, 0, b.stderr);
  await d.hooks.gc.settled();
  // A run that came due while the second push was still judged (a slow machine) is skipped as
  // busy and comes again once the repository is quiet: a done, never a failure.
  const runs = d.hooks.gc.runs.map((x) => `${x.outcome}${x.detail ? ` (${x.detail})` : ''}`);
  t.ok(runs.includes('done') && runs.every((o) => o === 'done' || /^skipped \((busy|busy or stopping)\)$/.test(o)), `the daemon's gc ran once the repository was quiet (${runs.join(', ')})`);
  t.equal(packs(bare), 1);
});
