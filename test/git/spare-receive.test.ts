// Push receive-packs started while the client packs (src/git/spare-receive.ts): a gate's push
// is received and judged by the receive-pack started at its advertisement; a spare whose start
// read another config, environment or repository than a start now would is never used (a
// config change between the GET and the POST applies to the push); a dead, idle or surplus
// spare is stopped; nothing is started without the spawn helper.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GitSpawner } from '../../src/git/spawner.js';
import { spareKey } from '../../src/git/spare-receive.js';
import { gitAsync, seededGate } from '../helpers/gate.js';
import { GIT_ENV, tempDir, removeTree } from '../helpers/repo.js';

const env = { ...process.env, ...GIT_ENV };
const git = (cwd: string, args: string[]): string => execFileSync('git', args, { cwd, env, encoding: 'utf8' }).trim();

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** True once `pid` has ended, within 5 s. */
async function ends(pid: number): Promise<boolean> {
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
  return !alive(pid);
}

/** A spawner whose helper serves (one child run through it). */
async function helper(t: { teardown(fn: () => unknown): void }, opts: { spareIdleMs?: number } = {}): Promise<GitSpawner> {
  const sp = new GitSpawner(() => {}, opts);
  t.teardown(() => sp.stop());
  sp.start();
  for (let i = 0; i < 100; i++) {
    const c = sp.spawn('true', []);
    if (c) {
      c.stdout.resume();
      c.stderr.resume();
      await new Promise((r) => c.once('exit', r));
      return sp;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the spawn helper did not start');
}

function bare(t: { teardown(fn: () => unknown): void }): string {
  const root = tempDir('pg-spare-');
  t.teardown(() => removeTree(root));
  const dir = join(root, 'r.git');
  git(root, ['init', '-q', '--bare', '--initial-branch=main', dir]);
  return dir;
}

t.test('the key: config bytes, the repository itself and the environment; none for an include', async (t) => {
  const dir = bare(t);
  const k0 = spareKey(dir);
  t.match(k0, /^[0-9a-f]{64}$/);
  t.equal(spareKey(dir), k0, 'read twice, the same');
  git(dir, ['config', 'receive.denyDeletes', 'true']);
  const k1 = spareKey(dir);
  t.not(k1, k0, 'a config change moves it');
  process.env.PATCHGATE_SPARE_TEST = '1';
  t.teardown(() => void delete process.env.PATCHGATE_SPARE_TEST);
  t.not(spareKey(dir), k1, 'an environment change moves it');
  delete process.env.PATCHGATE_SPARE_TEST;
  t.equal(spareKey(dir), k1, 'and back');
  const config = execFileSync('cat', [join(dir, 'config')]);
  rmSync(dir, { recursive: true });
  git(join(dir, '..'), ['init', '-q', '--bare', '--initial-branch=main', dir]);
  writeFileSync(join(dir, 'config'), config);
  t.not(spareKey(dir), k1, 'the same config in a repository made again at the same path: another key');
  git(dir, ['config', 'include.path', '/dev/null']);
  t.equal(spareKey(dir), null, 'an include names other files: no key');
  t.equal(spareKey(join(dir, 'missing')), null, 'no repository: no key');
});

t.test('spares are taken while they match, and stopped when they do not', async (t) => {
  const sp = await helper(t);
  const dir = bare(t);
  sp.spares.prime(dir);
  const [pid] = await sp.spares.pids(dir);
  t.ok(pid && alive(pid), 'a spare runs');
  const c = sp.spares.take(dir);
  t.equal(c?.pid, pid, 'the POST takes it');
  t.equal(sp.spares.size, 0, 'and it is no spare any more');
  c!.stdout.resume();
  c!.stderr.resume();
  c!.stdin.end('0000'); // no commands: receive-pack ends
  const code = await new Promise((r) => c!.once('exit', r));
  t.equal(code, 0, 'it was a receive-pack waiting for its commands');

  sp.spares.prime(dir);
  const [p2] = await sp.spares.pids(dir);
  git(dir, ['config', 'receive.denyDeletes', 'true']);
  t.equal(sp.spares.take(dir), null, 'the config changed after its start: not taken');
  t.ok(await ends(p2!), 'and stopped');

  sp.spares.prime(dir);
  const [p3] = await sp.spares.pids(dir);
  process.kill(p3!, 'SIGKILL');
  await new Promise((r) => setTimeout(r, 300));
  const before = sp.spares.stats.dropped;
  t.equal(sp.spares.take(dir), null, 'a spare that died is not taken');
  t.equal(sp.spares.stats.dropped, before + 1, 'it is dropped');

  sp.spares.prime(dir);
  sp.spares.prime(dir);
  sp.spares.prime(dir);
  t.equal(sp.spares.size, 2, 'two spares a repository at most');
  const pids = await sp.spares.pids(dir);
  sp.spares.closeAll();
  for (const p of pids) t.ok(await ends(p), `closeAll stops spare ${p}`);
  sp.spares.prime(dir);
  t.equal(sp.spares.size, 0, 'nothing is started after closeAll');
});

t.test('an idle spare is stopped; many repositories stay within the bound; no helper, no spare', async (t) => {
  const sp = await helper(t, { spareIdleMs: 300 });
  const dir = bare(t);
  sp.spares.prime(dir);
  const [pid] = await sp.spares.pids(dir);
  t.ok(await ends(pid!), 'nobody took it: stopped after its idle time');
  t.equal(sp.spares.size, 0);

  const dirs = Array.from({ length: 18 }, () => bare(t));
  for (const d of dirs) sp.spares.prime(d);
  t.equal(sp.spares.size, 16, 'sixteen spares at most');
  const first = await sp.spares.pids(dirs[0]!);
  t.same(first, [], 'the oldest went first');
  sp.spares.closeAll();

  const none = new GitSpawner();
  t.teardown(() => none.stop());
  none.spares.prime(dir);
  t.equal(none.spares.size, 0, 'without the spawn helper nothing is started ahead (a fork of the daemon would block its loop)');
});

t.test('a gate\'s push is received by the receive-pack started at its advertisement, and judged', async (t) => {
  /** The receive-pack pids whose hooks asked for a judgement (the sessions under way when the hook judges). */
  const hookPids: number[] = [];
  let srv: { hooks: { sessions: Map<number, unknown> } } | null = null;
  const { gate, agent, w, bare: repo } = await seededGate(t, { 'src/a.ts': 'export function a(): number { return 1; }\n' }, {
    beforeJudge: async () => void hookPids.push(...(srv?.hooks.sessions.keys() ?? [])),
  });
  srv = gate.srv;
  const url = gate.remote('app', 'agent-1', agent);
  const auth = { authorization: `Basic ${Buffer.from(`agent-1:${agent}`).toString('base64')}` };
  /** A push's GET as git makes it, then its spare's pid once it runs. */
  const advertise = async (): Promise<number> => {
    const res = await fetch(`http://127.0.0.1:${gate.srv.port}/app.git/info/refs?service=git-receive-pack`, { headers: auth });
    t.equal(res.status, 200);
    await res.arrayBuffer();
    // An agent's spares: the person who seeded main may have left one of theirs (src/git/push-fsck.ts), never taken by an agent.
    for (let i = 0; i < 100 && (await gate.srv.spares.pids(repo, 'strict')).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    const pids = await gate.srv.spares.pids(repo, 'strict');
    t.ok(pids.length >= 1, 'the advertisement started a spare');
    return pids[0]!;
  };

  // The order is driven, not raced: the spare runs before the push starts (advertise waits for
  // its pid), and the receive-pack that ran the push's hook is read in the hook (beforeJudge).
  // Whether the POST may take it is then a matter of what it read at its start: if anything
  // of that moved meanwhile (the repository's folder or config, the global configs: spareKey),
  // it must be dropped instead, and nothing else may make the POST start its own.
  const pid = await advertise();
  const { taken, dropped: droppedBefore } = { ...gate.srv.spares.stats };
  const key = spareKey(repo);
  hookPids.length = 0;
  w.commit('one', { 'src/a.ts': 'export function a(): number { return 2; }\n' });
  let r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/one']);
  t.equal(r.code, 0, r.stderr || 'the push lands');
  if (spareKey(repo) === key) {
    t.equal(gate.srv.spares.stats.taken, taken + 1, 'its POST took a spare');
    t.same(hookPids, [pid], 'the spare that was running is the receive-pack that ran its hook');
  } else {
    t.ok(gate.srv.spares.stats.dropped >= droppedBefore + 1, 'what the spare read at its start moved before the POST: it was dropped, not used');
    t.not(hookPids[0], pid, 'and the push was received by a receive-pack started for it');
  }
  t.ok(await ends(pid), 'the spare has ended');
  const rows = () => gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(rows().filter((row) => row.ref === 'refs/heads/agent/one' && row.verdict === 'accept' && row.moved === 1).length, 1, 'judged, audited and confirmed as moved');

  // The same through a spare, refused: the hook judged it with the push's identity.
  await advertise();
  w.commit('tests', { 'tests/test_a.py': 'def test_a():\n    assert True\n' });
  r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/two']);
  t.not(r.code, 0, 'a write to the test tree is refused');
  t.match(r.stderr, /write-block/, 'by the write-block rule');
  t.equal(git(repo, ['for-each-ref', 'refs/heads/agent/two']), '', 'nothing moved');
  t.equal(rows().filter((row) => row.ref === 'refs/heads/agent/two' && row.verdict === 'reject').length, 1, 'audited as refused');

  // git's own config changed between the advertisement and the POST: the push gets the new one.
  git(w.dir, ['reset', '-q', '--hard', 'HEAD~1']);
  const stale = await advertise();
  git(repo, ['config', 'receive.maxInputSize', '64']);
  const dropped = gate.srv.spares.stats.dropped;
  w.commit('big', { 'src/b.ts': `export const b = ${JSON.stringify('x'.repeat(4000))};\n` });
  r = await gitAsync(w.dir, ['push', url, 'HEAD:refs/heads/agent/three']);
  t.not(r.code, 0, 'receive.maxInputSize set after the spare started still refuses the push');
  t.match(r.stderr, /maximum allowed size|too large/i, 'with git\'s own reason');
  t.ok(gate.srv.spares.stats.dropped >= dropped + 1, 'the stale spare was dropped');
  t.ok(await ends(stale), 'and stopped');
  t.equal(git(repo, ['for-each-ref', 'refs/heads/agent/three']), '', 'nothing moved');
});
