// One store, every reader: the same end-to-end run once on SQLite and once on PostgreSQL.
// Real pushes over HTTP to a real gate; then `/api/audit`, the page (`/pushes`, `/push/ID`),
// `audit export` and `audit verify` all read the configured log, /metrics starts from it after
// a restart, and a log cut down by deleting rows fails verify while the page lists only the
// rows still in it. On PostgreSQL, a stale row planted in the data folder's SQLite file shows
// nowhere (the bug: readers that read a file nobody writes to any more).

import t from 'tap';
import { rmSync } from 'node:fs';
import { needPostgres, startPostgres, type Postgres } from '../helpers/postgres.js';
import { gitAsync, startGate, type Gate } from '../helpers/gate.js';
import { TestRepo } from '../helpers/repo.js';
import { cliRun } from '../helpers/serve.js';
import { AuditStore, rowHash } from '../../src/audit/store.js';
import { startServer } from '../../src/server/app.js';

type Tap = Parameters<Parameters<typeof t.test>[1]>[0];

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'def test_add():\n    assert True\n',
};
const hex = (c: string) => c.repeat(40);

for (const kind of ['sqlite', 'postgres'] as const) {
  const why = kind === 'postgres' ? needPostgres(t) : null;
  if (why) {
    t.comment(`skipping the PostgreSQL run: ${why}`);
    continue;
  }
  t.test(`every reader reads the configured log (${kind})`, (t) => run(t, kind));
}

async function run(t: Tap, kind: 'sqlite' | 'postgres'): Promise<void> {
  const pg: Postgres | null = kind === 'postgres' ? await startPostgres(t) : null;
  const gate: Gate = await startGate(t, pg ? { auditUrl: pg.url } : {});
  const sink = gate.srv.sink;
  const env = { ...process.env, ...(pg ? { PATCHGATE_AUDIT_URL: pg.url } : {}) };
  const cli = (args: string[]) => cliRun([...args, '--data', gate.data], { env });
  if (pg) {
    // What an old reader would have shown: a push that is only in the data folder's file.
    const stale = AuditStore.open(`${gate.data}/patchgate.db`);
    stale.recordPush({ pushId: 'stale-local-push', repo: 'app', actor: 'ghost', role: 'agent', verdict: 'reject', refs: [{ ref: 'refs/heads/ghost', old: hex('0'), new: hex('a'), verdict: 'reject', decision: 'test-tree-write', rules: [] }] });
    stale.close();
  }
  await gate.repo('app');
  const human = await gate.tokenAsync('alice', 'human');
  const agent = await gate.tokenAsync('agent-1', 'agent');
  const admin = await gate.tokenAsync('root', 'admin');
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  const remote = (u: string, s: string) => gate.remote('app', u, s);
  t.equal((await gitAsync(w.dir, ['push', remote('alice', human), 'main'])).code, 0, 'a person seeds main');
  w.checkout('agent/evil', true);
  w.commit('weaken', { 'tests/test_app.py': 'x = 1\n' });
  t.not((await gitAsync(w.dir, ['push', remote('agent-1', agent), 'agent/evil'])).code, 0, 'a test edit is refused');
  w.checkout('main');
  w.checkout('agent/ok', true);
  w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  t.equal((await gitAsync(w.dir, ['push', remote('agent-1', agent), 'agent/ok'])).code, 0, 'a src change is accepted');
  const refused = (await sink.query({ kind: 'ref', verdict: 'reject' }))[0]!;
  const accepted = (await sink.query({ kind: 'ref', actor: 'agent-1', verdict: 'accept' }))[0]!;
  t.ok(refused?.pushId && accepted?.pushId, 'both decisions are rows of the configured log');
  const basic = (u: string, s: string) => ({ Authorization: `Basic ${Buffer.from(`${u}:${s}`).toString('base64')}` });
  const get = async (path: string) => {
    const r = await fetch(`${gate.srv.url}${path}`, { headers: basic('alice', human) });
    return { status: r.status, text: await r.text() };
  };

  // /api/audit: exactly the configured log's rows (an admin token sees them all; a person's
  // token only its repositories' rows, src/server/grant.ts).
  const adminApi = await fetch(`${gate.srv.url}/api/audit?limit=1000`, { headers: basic('root', admin) });
  t.equal(adminApi.status, 200);
  const adminIds = (await adminApi.text()).trim().split('\n').map((l) => JSON.parse(l).id as number);
  t.same(adminIds, (await sink.query({ limit: 1000 })).map((r) => r.id), '/api/audit = the log');
  const api = await get('/api/audit?limit=1000');
  t.equal(api.status, 200);
  const apiIds = api.text.trim().split('\n').map((l) => JSON.parse(l).id as number);
  t.same(apiIds, (await sink.query({ limit: 1000 })).filter((r) => r.repo === 'app').map((r) => r.id), 'a person\'s token: the log\'s rows of its repositories');
  // The page: the table and the push page, from the same log.
  let pushes = await get('/pushes');
  t.equal(pushes.status, 200);
  t.match(pushes.text, `/push/${refused.pushId}`, 'the refused push is listed');
  t.match(pushes.text, `/push/${accepted.pushId}`, 'the accepted push is listed');
  t.notMatch(pushes.text, /stale-local-push|ghost/, 'nothing from a file nobody writes to');
  t.equal((await get(`/push/${refused.pushId}`)).status, 200);
  t.equal((await get('/push/stale-local-push')).status, 404, 'a push only in the data folder\'s file is not a push');
  t.match((await get('/')).text, /test-tree-write/, 'the overview counts the refusal');

  // audit export: every row as stored, each hash recomputable, linked by prev_hash.
  const exp = await cli(['audit', 'export', '--since', '2000-01-01T00:00:00Z']);
  t.equal(exp.code, 0, exp.stderr);
  const rows = exp.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const head = await sink.lastRow();
  t.equal(rows.length, head.id, 'every row of the log, none of another');
  t.notMatch(exp.stdout, /stale-local-push/);
  let prev = '0'.repeat(64);
  let chained = true;
  for (const r of rows) {
    if (rowHash(r) !== r.hash || r.prev_hash !== prev || typeof r.id !== 'number') chained = false;
    prev = String(r.hash);
  }
  t.ok(chained, 'each exported hash recomputes and links to the one before');
  t.equal(prev, head.hash, 'the export ends at the chain head');
  const verify = await cli(['audit', 'verify']);
  t.equal(verify.code, 0, verify.stdout + verify.stderr);
  t.match(verify.stdout, new RegExp(`^ok: ${head.id} row\\(s\\), hash chain intact`));

  t.match(verify.stdout, /^ok: 4 token\(s\), each as its token\.create\/token\.revoke rows say$/m);

  // The tokens table is held to the chain: a grant widened with plain SQL fails verify.
  // (The first start's admin token, revoked here, for the revocation case.)
  await cli(['token', 'revoke', 'admin']);
  const revokedAt = ((await sink.query({ kind: 'admin', limit: 1 }))[0]!).time;
  const sql = async (q: string) => {
    if (pg) return void (await pg.psql(q));
    const raw = AuditStore.open(`${gate.data}/patchgate.db`);
    try {
      raw.db.exec(q);
    } finally {
      raw.close();
    }
  };
  await sql("UPDATE tokens SET repos = '**' WHERE name = 'agent-1'");
  const widened = await cli(['audit', 'verify']);
  t.equal(widened.code, 1, 'a widened grant fails verify');
  t.match(widened.stdout, /^TAMPERED: tokens: token agent-1: its repo grant "\*\*" is not the "\*" of its token\.create row \d+: changed outside patchgate/);
  await sql("UPDATE tokens SET repos = '*' WHERE name = 'agent-1'");
  await sql("INSERT INTO tokens (name, role, repos, secret_hash, created) VALUES ('backdoor', 'admin', '*', '" + 'ab'.repeat(32) + "', '2026-01-01T00:00:00.000Z')");
  const planted = await cli(['audit', 'verify']);
  t.equal(planted.code, 1, 'a token added with SQL fails verify');
  t.match(planted.stdout, /TAMPERED: tokens: token backdoor \(created 2026-01-01T00:00:00\.000Z\) has no token\.create row in the chain/);
  await sql("DELETE FROM tokens WHERE name = 'backdoor'");
  await sql("UPDATE tokens SET revoked = NULL WHERE name = 'admin'");
  const unrevoked = await cli(['audit', 'verify']);
  t.equal(unrevoked.code, 1, 'a revocation taken back with SQL fails verify');
  t.match(unrevoked.stdout, /TAMPERED: tokens: token admin is active, but token\.revoke row \d+ revoked it/);
  await sql(`UPDATE tokens SET revoked = '${revokedAt}' WHERE name = 'admin'`);
  t.equal((await cli(['audit', 'verify'])).code, 0, 'put back, it verifies again');

  // /metrics after a restart: the counters start from the log.
  const pushRows = await sink.query({ kind: 'push', limit: 1000 });
  await gate.srv.close();
  const again = await startServer({ dataDir: gate.data, port: 0, host: '127.0.0.1', log: () => {}, ...(pg ? { auditUrl: pg.url } : {}) });
  t.teardown(() => again.close());
  const metric = await fetch(`${again.url}/metrics`, { headers: { Authorization: `Bearer ${admin}` } });
  t.equal(metric.status, 200, 'the admin token works after the restart');
  const text = await metric.text();
  const count = (labels: string) => Number(new RegExp(`^patchgate_pushes_total\\{${labels}\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  t.equal(count('verdict="reject",rule="write-block"'), pushRows.filter((r) => r.verdict === 'reject').length, 'refusals restored, by rule');
  t.equal(count('verdict="accept",rule="none"'), pushRows.filter((r) => r.verdict === 'accept').length, 'accepts restored');
  t.equal(pushRows.length, 3, 'seed, refusal, accept');

  // A cut-down log: the refused push's rows deleted past the guard trigger.
  if (pg) {
    await pg.psql(`BEGIN; ALTER TABLE events DISABLE TRIGGER events_no_update; DELETE FROM events WHERE push_id = '${refused.pushId}'; ALTER TABLE events ENABLE TRIGGER events_no_update; COMMIT;`);
  } else {
    const raw = AuditStore.open(`${gate.data}/patchgate.db`);
    raw.db.exec(`DROP TRIGGER events_no_delete; DELETE FROM events WHERE push_id = '${refused.pushId}';`);
    raw.close();
  }
  const cut = await cli(['audit', 'verify']);
  t.equal(cut.code, 1, 'verify fails on the cut-down log');
  t.match(cut.stdout, /^TAMPERED: first bad row \d+/);
  const base2 = again.url;
  const page2 = await fetch(`${base2}/pushes`, { headers: basic('alice', human) });
  const html = await page2.text();
  t.notMatch(html, `/push/${refused.pushId}`, 'the page lists only rows still in the log');
  t.match(html, `/push/${accepted.pushId}`);
  t.equal((await fetch(`${base2}/push/${refused.pushId}`, { headers: basic('alice', human) })).status, 404);
  const api2 = await (await fetch(`${base2}/api/audit?limit=1000`, { headers: basic('alice', human) })).text();
  t.notMatch(api2, refused.pushId!, '/api/audit no longer has it either');
  if (pg) t.notMatch(exp.stdout + verify.stdout + cut.stdout + cut.stderr, pg.password, 'no password in any output');
  rmSync(`${gate.data}/overview.png`, { force: true });
}
