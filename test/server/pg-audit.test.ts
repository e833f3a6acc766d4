// The gate with its decisions in a shared PostgreSQL log (`--audit postgres://…`), end to end:
// the real git client pushes over HTTP to real gate servers whose audit log is a real
// PostgreSQL server. Refusals and accepts land as rows there; PostgreSQL stopped in the middle
// of a push refuses that push; `audit migrate` copies a SQLite log and verifies both sides.
// (Four nodes at once: ./pg-scale.test.ts.) Skipped with the reason when
// PostgreSQL is not installed; failed instead in CI.

import t from 'tap';

import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { needPostgres, startPostgres, type Postgres } from '../helpers/postgres.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { cliRun, serve } from '../helpers/serve.js';
import { AuditStore } from '../../src/audit/store.js';
import { TokenStore } from '../../src/audit/tokens.js';
import { PgAuditStore } from '../../src/audit/pg-store.js';
import { PgTokenStore } from '../../src/audit/pg-tokens.js';
import { createRepo } from '../../src/server/repos.js';
import type { AuditSink } from '../../src/audit/sink.js';

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
};

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => cliRun(args, { env: { ...process.env, ...env } });

/** Rows written after git returns (post-receive confirms are written as receive-pack exits): wait for them, by count, not by time. */
async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, tries = 200): Promise<T> {
  let v = await fn();
  for (let i = 0; i < tries && !ok(v); i++) {
    await new Promise((r) => setTimeout(r, 50));
    v = await fn();
  }
  return v;
}

const why = needPostgres(t);
if (why) {
  t.comment(`skipping the PostgreSQL end-to-end tests: ${why}`);
  t.pass('skipped: ' + why);
} else {
  t.test('pushes through a gate with --audit postgres: refused, accepted, both audited there; PostgreSQL stopped mid-push refuses', async (t) => {
    const pg = await startPostgres(t);
    let stopMidPush = false;
    const gate = await startGate(t, { auditUrl: pg.url, beforeJudge: async () => { if (stopMidPush) await pg.stop(); } });
    const sink: AuditSink = gate.srv.sink;
    t.not(sink, gate.srv.audit, 'decisions go to PostgreSQL, not the data folder');
    await gate.repo('app');
    const human = await gate.tokenAsync('alice', 'human');
    const agent = await gate.tokenAsync('agent-1', 'agent');
    t.equal(gate.srv.audit, null, 'no SQLite store is opened');
    t.notOk(existsSync(join(gate.data, 'patchgate.db')), 'the tokens are in PostgreSQL: the data folder has no patchgate.db at all');
    const w = TestRepo.init(t);
    w.commit('base', BASE);
    const bare = bareDir(gate, 'app');
    const seed = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
    t.equal(seed.code, 0, seed.stderr);

    // An agent's push that touches tests/: refused with the same remote: lines, audited in PostgreSQL.
    w.checkout('agent/fix', true);
    w.commit('weaken', { 'src/app.py': 'def add(a, b):\n    return 0\n', 'tests/test_app.py': 'def test_add():\n    assert True\n' });
    const bad = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
    t.not(bad.code, 0);
    t.match(bad.stderr, /remote: .*\[write-block\] commit [0-9a-f]{12} modifies protected path tests\/test_app.py/);
    t.equal(await refIn(bare, 'refs/heads/agent/fix'), null);
    const refused = await until(() => Promise.resolve(sink.query({ kind: 'ref', actor: 'agent-1' })), (r) => r[0]?.moved === 0);
    t.equal(refused[0]?.verdict, 'reject', 'the refusal is a row in PostgreSQL');
    t.equal(refused[0]?.moved, 0);
    t.notOk(existsSync(join(gate.data, 'patchgate.db')), 'and not in a SQLite file of the data folder');

    // A person's push touching tests/: accepted, audited, confirmed as moved.
    w.checkout('main');
    const head = w.commit('more tests', { 'tests/test_more.py': 'def test_more():\n    assert 1\n' });
    const ok = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
    t.equal(ok.code, 0, ok.stderr);
    t.equal(await refIn(bare, 'refs/heads/main'), head);
    const accepted = await until(() => Promise.resolve(sink.query({ kind: 'ref', actor: 'alice' })), (r) => r[0]?.moved === 1);
    t.equal(accepted[0]?.verdict, 'accept');
    t.equal(accepted[0]?.new, head);
    t.equal(accepted[0]?.moved, 1, 'post-receive confirmed the move in PostgreSQL');

    // The CLI reads the same log with PATCHGATE_AUDIT_URL (or --audit without the password, and PGPASSWORD).
    const rows = await cli(['audit', '--audit', pg.url.replace(`:${encodeURIComponent(pg.password)}@`, '@'), '--json', '--kind', 'ref'], { PGPASSWORD: pg.password });
    t.equal(rows.code, 0, rows.stderr);
    t.equal(rows.stdout.trim().split('\n').length, 3, 'three ref rows: seed, refusal, accept');
    const show = await cli(['audit', 'show', refused[0]!.pushId!], { PATCHGATE_AUDIT_URL: pg.url });
    t.match(show.stdout, /write-block\s+fail/, 'audit show prints the rules trace from PostgreSQL');
    const verified = await cli(['audit', 'verify'], { PATCHGATE_AUDIT_URL: pg.url });
    t.equal(verified.code, 0, verified.stdout + verified.stderr);
    t.match(verified.stdout, /^ok: \d+ row\(s\), hash chain intact/);

    // PostgreSQL stops while the agent's (acceptable) push is being judged: refused, the ref does not move.
    w.checkout('agent/ok', true);
    w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
    stopMidPush = true;
    const down = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/ok']);
    stopMidPush = false;
    t.not(down.code, 0, 'the push is refused');
    t.match(down.stderr, /remote: patchgate: push refused: the audit log could not record push \S+, so nothing is accepted/); // refused in pre-receive, before any accept
    t.equal(await refIn(bare, 'refs/heads/agent/ok'), null, 'the ref did not move');
    t.notMatch(down.stderr, pg.password, 'no password in what the agent sees');
    const health = await fetch(`${gate.srv.url}/healthz`);
    t.equal(health.status, 503, '/healthz is down while PostgreSQL is');
    const body = await health.text();
    t.match(body, /audit database postgres:\/\/patchgate:\*\*\*@/);
    t.notMatch(body, pg.password);
    // A push while it stays down is refused too (here: a refusal that cannot be written).
    const again = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/ok']);
    t.not(again.code, 0);
    t.equal(await refIn(bare, 'refs/heads/agent/ok'), null);
    await pg.start();
    const back = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/ok']);
    t.equal(back.code, 0, `accepted once PostgreSQL is back: ${back.stderr}`);
    t.same(await sink.verify(), { ok: true, rows: (await sink.lastRow()).id }, 'the chain is whole');
  });

  t.test('audit migrate copies a SQLite log and its tokens into PostgreSQL and verifies both sides', async (t) => {
    const pg: Postgres = await startPostgres(t);
    const dir = tempDir('pg-migrate-');
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'patchgate.db');
    const makeLog = (path: string) => {
      const lite = AuditStore.open(path);
      for (let i = 0; i < 30; i++) {
        lite.recordPush({ pushId: `p-${i}`, repo: 'app', actor: 'agent-1', role: 'agent', verdict: 'reject', refs: [{ ref: 'refs/heads/x', old: '0'.repeat(40), new: 'c'.repeat(40), verdict: 'reject', rules: [] }] });
      }
      lite.appendAdmin({ actor: 'cli', action: 'repo.create', subject: 'app' });
      // Tokens (each with its admin row in the chain): one in use, one revoked.
      const liteTokens = new TokenStore(lite);
      const kept = liteTokens.create('agent-1', 'agent', { repos: 'app' });
      const gone = liteTokens.create('agent-2', 'agent');
      liteTokens.revoke('agent-2');
      const head = lite.lastRow();
      lite.close();
      return { kept, gone, head };
    };
    const { kept, gone, head } = makeLog(file);
    const env = { PATCHGATE_AUDIT_URL: pg.url };
    const m = await cli(['audit', 'migrate', '--from', `sqlite:${file}`], env);
    t.equal(m.code, 0, m.stdout + m.stderr);
    t.match(m.stdout, /source .*64 row\(s\), hash chain intact/);
    t.match(m.stdout, /target postgres:\/\/patchgate:\*\*\*@.*64 row\(s\) copied, hash chain intact, same head #64/);
    t.match(m.stdout, /tokens: 2 copied \(1 not revoked\)/);
    t.notMatch(m.stdout + m.stderr, pg.password);
    t.equal((await pg.psql('SELECT last_id || \' \' || last_hash FROM chain_head')).trim(), `${head.id} ${head.hash}`, 'the same chain head');
    const rows = await cli(['audit', '--json', '--limit', '1000'], env);
    t.equal(rows.stdout.trim().split('\n').length, 64, 'every row is readable there');
    // The moved tokens work against the shared log, the revoked one stays revoked.
    const shared = await PgAuditStore.open(pg.url);
    const pgTokens = new PgTokenStore(shared);
    t.same(await pgTokens.authenticate(kept), { name: 'agent-1', role: 'agent', repos: 'app' }, 'the token moved, with its grant');
    t.equal(await pgTokens.authenticate(gone), null, 'the revocation moved too');
    await shared.close();
    const listed = await cli(['token', 'list', '--json'], env);
    t.same(listed.stdout.trim().split('\n').map((l) => JSON.parse(l).status), ['active', 'revoked'], 'token list reads them there');

    // The source is marked as moved, and its folder records the shared log (test/audit/folder-log.test.ts runs every command against it).
    t.match(m.stdout, /source .*patchgate\.db: marked as moved to postgres:\/\/patchgate:\*\*\*@127\.0\.0\.1:\d+\/patchgate/);
    t.match(m.stdout, `data folder ${dir}: recorded in ${dir}/audit-location.json`);
    const again = await cli(['audit', 'migrate', '--from', `sqlite:${file}`], env);
    t.equal(again.code, 2, 'a second copy of a moved log is refused');
    t.match(again.stderr, /the audit log .*patchgate\.db moved to postgres:\/\/patchgate@127\.0\.0\.1:\d+\/patchgate \(patchgate audit migrate, .*, head #64\)/);
    // A second copy into a non-empty log is refused (a copy of the source that is not marked).
    const copyDir = tempDir('pg-migrate-copy-');
    t.teardown(() => rmSync(copyDir, { recursive: true, force: true }));
    const copyFile = join(copyDir, 'patchgate.db');
    makeLog(copyFile);
    const into = await cli(['audit', 'migrate', '--from', `sqlite:${copyFile}`], env);
    t.equal(into.code, 2, 'a copy into a non-empty log is refused');
    t.match(into.stderr, /already has 64 row\(s\); migrate only into an empty log/);
    t.notOk(existsSync(join(copyDir, 'audit-location.json')), 'and its folder records nothing');

    // A tampered source is not copied.
    const raw = AuditStore.open(copyFile);
    raw.db.exec("DROP TRIGGER events_no_update; UPDATE events SET actor = 'x' WHERE id = 7;");
    raw.close();
    const pg2 = await startPostgres(t);
    const tampered = await cli(['audit', 'migrate', '--from', `sqlite:${copyFile}`], { PATCHGATE_AUDIT_URL: pg2.url });
    t.equal(tampered.code, 1);
    t.match(tampered.stdout, /TAMPERED: source .*first bad row 7 .*nothing was copied/);
    t.equal((await pg2.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'events'")).trim(), '0', 'the target was not even touched');
  });
}
