// Intent before effect in front of a real upstream (git http-backend): SQLite writes failing
// after the forward are retried, never dropped; a real `kill -9` of a real `patchgate serve`
// while upstream holds the forward leaves no git behind, and after a restart upstream's refs
// and the log agree; a ref mirrored from upstream during a push is refused before anything
// is written or forwarded. (PostgreSQL failure points: intent-pg.test.ts.)

import t from 'tap';
import { mkdirSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { TestRepo, processList, tempDir } from '../helpers/repo.js';
import { gitAsync, refIn } from '../helpers/gate.js';
import { startUpstream } from '../helpers/upstream.js';
import { cli, serve } from '../helpers/serve.js';
import { runRepoCreateUpstream } from '../../src/commands/upstream.js';
import { AuditStore } from '../../src/audit/store.js';
import { BASE, agree, holdingHook, intents, pushRows, setup, waitFor } from '../helpers/intent.js';

t.test('SQLite writes failing after the forward: the rows are retried until they land, never dropped', async (t) => {
  const g = await setup(t);
  const db = new Database(join(g.data, 'patchgate.db'));
  t.teardown(() => db.close());
  db.exec("CREATE TRIGGER test_fail_after BEFORE INSERT ON events WHEN NEW.kind IN ('admin', 'confirm') BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END");
  g.w.checkout('agent/fix', true);
  const head = g.w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(g.w.dir, ['push', g.remote(), 'agent/fix']);
  t.equal(r.code, 0, r.stderr);
  t.equal(await refIn(g.upDir, 'refs/heads/agent/fix'), head);
  await waitFor('the failed rows to be queued', () => g.srv.hooks.rows.pending > 0 && g.logs.some((l) => /could not be written .*kept and retried/.test(l)));
  t.equal(intents(g.data).length, 1, 'unsettled while its rows wait');
  db.exec('DROP TRIGGER test_fail_after');
  await waitFor('the queue to drain', () => g.srv.hooks.rows.pending === 0 && intents(g.data).length === 0);
  const [ref] = g.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(ref!.moved, 1, 'the confirm row landed');
  await agree(t, g.srv.audit, ref!.pushId!, g.upDir, 'refs/heads/agent/fix', head);
  t.notOk((await pushRows(g.srv.audit, ref!.pushId!)).outcomes.some((o) => (o.detail as { recovered?: boolean }).recovered), 'the live outcome row (with upstream\'s answer) landed, not a recovered one');
});

/** Processes whose command line holds `needle` (the forward's bash leader is named patchgate-git). */
function processesWith(needle: string): number[] {
  return processList().filter((p) => p.argv.join('\0').includes(needle)).map((p) => p.pid);
}

/** Processes whose working folder is `dir` or inside it (upstream's receive-pack and its hook). */
function processesIn(dir: string): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readlinkSync(`/proc/${p}/cwd`).startsWith(dir)) out.push(Number(p));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

t.test('kill -9 of the gate while upstream holds the forward: no git outlives it, and after a restart the log and upstream agree', async (t) => {
  const up = await startUpstream(t);
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  await up.create('app', w.dir);
  const data = tempDir('pg-intent-kill-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const cred = join(tempDir('pg-cred-'), 'token');
  writeFileSync(cred, `${up.secret}\n`);
  await runRepoCreateUpstream({ data, name: 'app', trusted: 'main', upstream: up.url('app'), credentialFile: cred });
  const agent = cli('token', 'create', 'agent-1', '--role', 'agent', '--data', data);
  const hold = holdingHook(up, 'pre-receive', tempDir('pg-hold-'));
  let srv = await serve(data);
  t.teardown(() => void srv.child.kill('SIGKILL'));
  w.checkout('agent/fix', true);
  const head = w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const push = gitAsync(w.dir, ['push', `http://agent-1:${agent}@127.0.0.1:${srv.port}/app.git`, 'agent/fix']);
  await waitFor('upstream to hold the forward', hold.entered);
  const needle = `127.0.0.1:${up.port}/app.git`;
  const leaders = processesWith('patchgate-git');
  const forwarders = processesWith(needle).filter((p) => leaders.includes(p));
  t.ok(forwarders.length > 0, 'the gate\'s forward is running (bash leader named patchgate-git)');
  const [pushId] = intents(data);
  t.ok(pushId, 'its intent entry is on disk');
  const store0 = AuditStore.open(join(data, 'patchgate.db'));
  t.equal(store0.getPush(pushId!)?.refs[0]?.verdict, 'accept', 'the decision was durable before the forward started');
  store0.close();
  process.kill(srv.child.pid!, 'SIGKILL');
  t.equal(await srv.exited, 'SIGKILL');
  await waitFor('the forward\'s processes to die with the gate', () => processesWith('patchgate-git').filter((p) => forwarders.includes(p)).length === 0, 30_000);
  t.same(processesWith('patchgate-git').filter((p) => forwarders.includes(p)), [], 'no forward outlives the gate');
  const r = await push;
  t.not(r.code, 0, 'the agent\'s push did not succeed (its gate died)');
  hold.release();
  // Upstream's receive-pack finishes on its own (or not); the log must match whatever it did.
  await waitFor('upstream\'s receive-pack to finish', () => processesIn(up.dir('app')).length === 0, 60_000);
  srv = await serve(data);
  const log = srv.out();
  t.match(log, /recovery: push \S+: upstream (has|does not have) refs\/heads\/agent\/fix; recorded as upstream\.forward(ed|-failed)/, 'the start recorded what happened');
  t.same(intents(data), [], 'settled');
  const store = AuditStore.open(join(data, 'patchgate.db'));
  t.teardown(() => store.close());
  await agree(t, store, pushId!, up.dir('app'), 'refs/heads/agent/fix', head);
  const upTip = await refIn(up.dir('app'), 'refs/heads/agent/fix');
  t.equal(await refIn(join(data, 'repos', 'app.git'), 'refs/heads/agent/fix'), upTip, 'the gate\'s ref is upstream\'s (repaired)');
  const confirm = store.getPush(pushId!)!.confirms.at(-1);
  t.equal(confirm?.moved, 0, 'the push itself never moved the gate\'s ref');
  process.kill(srv.child.pid!, 'SIGTERM');
  await srv.exited;
});

t.test('a ref the gate mirrors from upstream during a push is refused before anything is written or forwarded; the next push lands', async (t) => {
  const g = await setup(t);
  // Upstream takes X, the gate's own update fails (a stale lock): the gate marks the ref diverged.
  mkdirSync(join(g.bare, 'refs', 'heads', 'agent'), { recursive: true });
  writeFileSync(join(g.bare, 'refs', 'heads', 'agent', 'fix.lock'), '');
  g.w.checkout('agent/fix', true);
  const x = g.w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  t.not((await gitAsync(g.w.dir, ['push', g.remote(), 'agent/fix'])).code, 0);
  t.equal(await refIn(g.upDir, 'refs/heads/agent/fix'), x);
  rmSync(join(g.bare, 'refs', 'heads', 'agent', 'fix.lock'));
  // The next push's refresh sets the gate's ref to upstream's X while receive-pack expects none.
  const z = g.w.commit('more', { 'src/app.py': 'def add(a, b):\n    return a + b + 0\n' });
  const r = await gitAsync(g.w.dir, ['push', g.remote(), 'agent/fix']);
  t.not(r.code, 0, 'refused');
  t.notMatch(r.stderr, /cannot lock ref/, 'not an ACCEPT that git then fails to apply');
  t.notMatch(r.stderr, /ACCEPT/);
  t.match(r.stderr, /refs\/heads\/agent\/fix is at [0-9a-f]{12} on the gate now .* not at nothing as your push expected/);
  t.match(r.stderr, /git pull --rebase origin agent\/fix && git push origin agent\/fix/);
  t.equal(await refIn(g.upDir, 'refs/heads/agent/fix'), x, 'nothing was forwarded');
  t.equal(await refIn(g.bare, 'refs/heads/agent/fix'), x, 'the gate mirrors upstream');
  const again = await gitAsync(g.w.dir, ['push', g.remote(), 'agent/fix']);
  t.equal(again.code, 0, again.stderr);
  t.equal(await refIn(g.upDir, 'refs/heads/agent/fix'), z);
  t.equal(await refIn(g.bare, 'refs/heads/agent/fix'), z);
  await waitFor('every push to settle', () => intents(g.data).length === 0 && g.srv.hooks.rows.pending === 0);
  t.ok((await g.srv.audit.verify()).ok);
  const diverged = g.srv.audit.query({ kind: 'admin' }).filter((row) => row.action === 'upstream.diverged');
  t.equal(diverged.length, 1, 'the first push\'s divergence is in the log');
});
