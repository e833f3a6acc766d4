// A git service the daemon cannot start must cost one request, never the daemon. The CI run of
// eda25fe ended request-fuzz.test.ts with an unhandled error: an info/refs whose
// `git-receive-pack --advertise-refs` could not be started (its stdio socket had no connection
// within 5 s on a loaded machine) made node-git-server emit 'error' on its server object, which
// had no listener. Here the spawn helper is frozen (SIGSTOP) so the next info/refs gets no
// answer: that push fails with a "remote error:" line saying why, the daemon logs it and
// lives, and once a new helper runs, a push lands and is audited. The same holds when the
// advertisement was made ahead (src/git/ref-advert.ts) and the push's POST is the first start
// the frozen helper cannot make: the reason comes on sideband 3, not as a hang-up.

import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { HelperChild } from '../../src/git/spawner.js';
import { TestRepo } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';

/** This process's children whose command line names the spawn helper's script. */
function helpers(): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
      if (ppid === process.pid && readFileSync(`/proc/${d}/cmdline`, 'utf8').includes('spawner-process')) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}

for (const at of ['info/refs', 'POST'] as const) t.test(`a frozen spawn helper at the push's ${at}: that push fails with the reason logged, the daemon lives, the next push lands`, async (t) => {
  const logs: string[] = [];
  const gate = await startGate(t, { log: (l: string) => logs.push(l) });
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'x = 1\n' });
  const seed = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(seed.code, 0, seed.code ? seed.stderr : 'a person seeds main');
  const [helper, ...more] = helpers();
  t.ok(helper, 'the gate runs a spawn helper');
  t.same(more, [], 'one helper');
  // The helper may still be loading (from source, under the test's loaders): until it says it
  // listens, services start from the daemon. Probe the way node-git-server spawns, until it serves.
  const cp = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  let serving = false;
  for (let i = 0; i < 300 && !serving; i++) {
    const probe = cp.spawn('git-upload-pack', ['--stateless-rpc', '--advertise-refs', bareDir(gate, 'app')]);
    probe.stdout!.resume();
    probe.stderr!.resume();
    serving = probe instanceof HelperChild;
    await new Promise((r) => probe.once('exit', r));
    if (!serving) await new Promise((r) => setTimeout(r, 100));
  }
  t.ok(serving, 'the helper serves');
  const bare = bareDir(gate, 'app');
  if (at === 'info/refs') {
    // A ref moved outside the gate: the advertisement made after the seed no longer holds.
    await gitAsync(bare, ['update-ref', 'refs/heads/outside', 'main']);
  } else t.equal(await gate.srv.adverts.isKept(bare), true, 'the advertisement for the next push was made ahead');
  const before = { ...gate.srv.adverts.stats };
  process.kill(helper!, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(helper!, 'SIGKILL');
    } catch {
      // killed by the gate already
    }
  });

  w.checkout('agent/one', true);
  w.commit('one', { 'src/app.py': 'x = 2\n' });
  const stuck = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/one']);
  t.not(stuck.code, 0, 'the push whose service could not be started failed');
  t.match(stuck.stderr, at === 'info/refs' ? /remote error: patchgate: the gate could not start git-receive-pack \(the spawn helper did not start git-receive-pack within 15 s\); nothing was pushed or fetched: run the same git command again/ : /remote: patchgate: the gate could not start git-receive-pack \(the spawn helper did not start git-receive-pack within 15 s\); nothing was pushed or fetched: run the same git command again/, 'the agent is told why and what to do');
  t.equal(await refIn(bare, 'refs/heads/agent/one'), null, 'and moved nothing');
  if (at === 'info/refs') t.equal(gate.srv.adverts.stats.git, before.git + 1, 'its advertisement was to be started');
  else t.equal(gate.srv.adverts.stats.kept, before.kept + 1, 'its advertisement came from the bytes made ahead');
  for (let i = 0; i < 300 && !logs.some((l) => /git request error: .*did not start git-receive-pack/.test(l)); i++) await new Promise((r) => setTimeout(r, 100));
  t.match(logs.join('\n'), /patchgate: git request error: .*the spawn helper did not start git-receive-pack within 15 s/, 'the daemon logged why');

  const health = await fetch(`http://127.0.0.1:${gate.srv.port}/healthz`);
  t.equal(health.status, 200, 'the daemon still answers');
  let r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/one']);
  for (let i = 0; i < 5 && r.code !== 0; i++) {
    await new Promise((res) => setTimeout(res, 500));
    r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/one']);
  }
  t.equal(r.code, 0, r.code ? r.stderr : 'the next push lands');
  t.ok(await refIn(bare, 'refs/heads/agent/one'), 'its ref moved');
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' }).filter((row) => row.ref === 'refs/heads/agent/one');
  t.equal(rows.filter((row) => row.verdict === 'accept' && row.moved === 1).length, 1, 'audited once, accepted and moved');
  t.notOk(helpers().includes(helper!), 'the frozen helper was stopped');
  t.ok(gate.srv.audit.verify().ok, 'the chain verifies');
});
