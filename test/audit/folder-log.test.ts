// Issue 48, item 2: a data folder knows where its log is. A folder whose history is in its
// SQLite file (real pushes through a real gate, an escalation among them) is moved into a real
// PostgreSQL with `audit migrate`; from then on every command run against the folder with no URL
// at all (the password only in PGPASSWORD) acts on PostgreSQL: token create/list/revoke, repo
// create/hooks/upstream/sync/mode, escalation list/show/close, audit, audit show/verify/export/
// checkpoint/prove, audit verify --checkpoints, ci --data and serve. The moved SQLite file is
// never read or written again: it is unchanged at the end, refuses to open, and refuses an
// append even from a writer that does not know the mark. A URL that is not the recorded one,
// a missing password and a stopped PostgreSQL each refuse with one line and change nothing.
// (serve --config and a daemon's config recording their log: test/server/audit-location.test.ts.)
// Skipped with the reason when PostgreSQL is not installed; failed instead in CI.

import t from 'tap';
import Database from 'better-sqlite3';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { needPostgres, startPostgres, type Postgres } from '../helpers/postgres.js';
import { gitAsync, startGate } from '../helpers/gate.js';
import { TestRepo, removeTree, tempDir } from '../helpers/repo.js';
import { cliRun, serve, serveExpectingExit, type CliRun } from '../helpers/serve.js';
import { AuditStore } from '../../src/audit/store.js';

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'def test_add():\n    assert True\n',
};

/** The environment of a person's shell: no PATCHGATE_AUDIT_URL, and the password (when given) in PGPASSWORD only. */
function shellEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const k of ['PATCHGATE_AUDIT_URL', 'PGPASSWORD', 'PGPASSFILE', 'PATCHGATE_DATA']) if (!(k in extra)) delete env[k];
  return env;
}

const oneLine = (r: CliRun): string[] => r.stderr.trim().split('\n');

const why = needPostgres(t);
if (why) {
  t.comment(`skipping the migrated-folder tests: ${why}`);
  t.pass('skipped: ' + why);
} else {
  t.test('every command run against a migrated folder uses its PostgreSQL log; the SQLite file is never read or written again', async (t) => {
    const pg: Postgres = await startPostgres(t);
    const bare = pg.url.replace(`:${encodeURIComponent(pg.password)}@`, '@');
    const q = async (sql: string) => (await pg.psql(sql)).trim();

    // --- history in the folder's SQLite file: a seed, a refused push with an escalation
    const gate = await startGate(t);
    const data = gate.data;
    await gate.repo('app');
    const human = gate.token('alice', 'human');
    const agent = gate.token('agent-1', 'agent');
    const victim = gate.token('victim', 'agent');
    const w = TestRepo.init(t);
    w.commit('base', BASE);
    t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0, 'a person seeds main');
    w.checkout('agent/x', true);
    w.commit('weaken', { 'tests/test_app.py': 'x = 1\n' });
    const refused = await gitAsync(w.dir, ['push', '-o', 'patchgate.escalate=the test is wrong', gate.remote('app', 'agent-1', agent), 'agent/x']);
    t.not(refused.code, 0, 'a test edit is refused, with an escalation');
    const refusedPush = (await gate.srv.sink.query({ kind: 'ref', verdict: 'reject' }))[0]!.pushId!;
    await gate.srv.close();
    const dbFile = join(data, 'patchgate.db');
    const sqliteState = () => {
      const db = new Database(dbFile, { readonly: true });
      try {
        return { head: (db.prepare('SELECT last_id, last_hash FROM chain_head').get() as { last_id: number; last_hash: string }), rows: (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n, tokens: db.prepare('SELECT name, revoked FROM tokens ORDER BY id').all() };
      } finally {
        db.close();
      }
    };
    const before = sqliteState();
    t.ok(before.rows > 5, `${before.rows} rows of history in SQLite`);

    // --- audit migrate: copies, marks the file, records the log in the folder (no password in it)
    const m = await cliRun(['audit', 'migrate', '--data', data], { env: shellEnv({ PATCHGATE_AUDIT_URL: pg.url }) });
    t.equal(m.code, 0, m.stdout + m.stderr);
    t.match(m.stdout, `source ${dbFile}: marked as moved to`);
    t.match(m.stdout, `data folder ${data}: recorded in ${join(data, 'audit-location.json')}`);
    const record = readFileSync(join(data, 'audit-location.json'), 'utf8');
    t.notMatch(record, pg.password, 'the record holds no password');
    t.match(JSON.parse(record), { audit: bare, by: 'audit migrate' });
    t.equal(await q('SELECT last_id FROM chain_head'), String(before.head.last_id), 'PostgreSQL holds the whole chain');

    const env = shellEnv({ PGPASSWORD: pg.password });
    const run = (args: string[], e: NodeJS.ProcessEnv = env) => cliRun([...args, '--data', data], { env: e });
    const pgRows = async (where: string) => Number(await q(`SELECT count(*) FROM events WHERE ${where}`));
    const admin = (action: string, subject: string) => pgRows(`kind = 'admin' AND action = '${action}' AND subject = '${subject}'`);

    // --- token
    const made = await run(['token', 'create', 'bob', '--role', 'human']);
    t.equal(made.code, 0, made.stderr);
    t.equal(await q("SELECT count(*) FROM tokens WHERE name = 'bob'"), '1', 'token create: the token is in PostgreSQL');
    const listed = await run(['token', 'list', '--json']);
    t.equal(listed.code, 0, listed.stderr);
    t.same(listed.stdout.trim().split('\n').map((l) => JSON.parse(l).name).sort(), ['admin', 'agent-1', 'alice', 'bob', 'victim'].sort(), 'token list: PostgreSQL\'s tokens');
    const revoked = await run(['token', 'revoke', 'victim']);
    t.equal(revoked.code, 0, revoked.stderr);
    t.not(await q("SELECT coalesce(revoked, '') FROM tokens WHERE name = 'victim'"), '', 'token revoke: revoked in PostgreSQL');

    // --- repo
    const created = await run(['repo', 'create', 'app2']);
    t.equal(created.code, 0, created.stderr);
    t.equal(await admin('repo.create', 'app2'), 1, 'repo create: its row is in PostgreSQL');
    t.equal((await run(['repo', 'hooks', 'app'])).code, 0);
    t.equal(await admin('repo.hooks', 'app'), 1, 'repo hooks: its row is in PostgreSQL');
    const mode = await run(['repo', 'mode', 'app', 'evaluate']);
    t.equal(mode.code, 0, mode.stderr);
    t.match(mode.stdout, `recorded in the audit log postgres://patchgate@127.0.0.1:${pg.port}/patchgate (repo.mode enforce -> evaluate)`, 'repo mode names the log it wrote to');
    t.equal(await admin('repo.mode', 'app'), 1, 'repo mode: its row is in PostgreSQL');
    t.equal((await run(['repo', 'mode', 'app', 'enforce'])).code, 0);
    const up = tempDir('pg-folder-up-');
    t.teardown(() => removeTree(up));
    t.equal((await gitAsync(up, ['init', '-q', '--bare', '-b', 'main', join(up, 'app.git')])).code, 0);
    t.equal((await gitAsync(w.dir, ['push', join(up, 'app.git'), 'main'])).code, 0);
    const upstream = await run(['repo', 'upstream', 'app', `file://${join(up, 'app.git')}`]);
    t.equal(upstream.code, 0, upstream.stderr);
    t.equal(await admin('repo.upstream', 'app'), 1, 'repo upstream: its row is in PostgreSQL');
    const synced = await run(['repo', 'sync', 'app']);
    t.equal(synced.code, 0, synced.stderr);
    t.equal(await admin('repo.sync', 'app'), 2, 'repo sync (and the upstream\'s first fetch): rows in PostgreSQL');
    t.equal((await run(['repo', 'upstream', 'app', 'none'])).code, 0);

    // --- escalation
    const esc = await run(['escalation', 'list', '--json']);
    t.equal(esc.code, 0, esc.stderr);
    const escalations = esc.stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: number; open: boolean });
    t.equal(escalations.length, 1, 'escalation list: the escalation made before the move, read from PostgreSQL');
    const shown = await run(['escalation', 'show', String(escalations[0]!.id)]);
    t.equal(shown.code, 0, shown.stderr);
    t.match(shown.stdout, /tests\/test_app\.py/, 'escalation show: the escalation from PostgreSQL, and the diff it kept');
    // The closer is the person whose token PATCHGATE_TOKEN holds: looked up in PostgreSQL's tokens.
    const closed = await run(['escalation', 'close', String(escalations[0]!.id), '--note', 'the test was right'], { ...env, PATCHGATE_TOKEN: human });
    t.equal(closed.code, 0, closed.stderr);
    t.match(closed.stdout, /by alice/);
    t.equal(await pgRows(`kind = 'escalation' AND action = 'escalation.close' AND subject = '${escalations[0]!.id}' AND reason = 'the test was right' AND actor = 'alice'`), 1, 'escalation close: its row is in PostgreSQL');
    t.same((await run(['escalation', 'list', '--open', '--json'])).stdout.trim(), '', 'and it is closed there');

    // --- audit, show, export, verify (readers: at once)
    const [rows, show, exported, verified] = await Promise.all([
      run(['audit', '--json', '--limit', '1000']), run(['audit', 'show', refusedPush]), run(['audit', 'export', '--since', '2000-01-01T00:00:00Z']), run(['audit', 'verify']),
    ]);
    t.equal(rows.code, 0, rows.stderr);
    t.equal(rows.stdout.trim().split('\n').length, await pgRows("kind <> 'confirm'"), 'audit: every row of PostgreSQL (confirm rows aside)');
    t.match(show.stdout, /write-block\s+fail/, 'audit show: the trace, from PostgreSQL');
    t.equal(exported.stdout.trim().split('\n').length, await pgRows('true'), 'audit export: every row of PostgreSQL');
    const pgHead = Number(await q('SELECT last_id FROM chain_head'));
    t.ok(pgHead > before.head.last_id, 'the commands wrote their rows after the moved head');
    t.equal(verified.code, 0, verified.stdout + verified.stderr);
    t.match(verified.stdout, `ok: ${pgHead} row(s), hash chain intact`, 'audit verify: PostgreSQL\'s count, not the SQLite file\'s');

    // --- checkpoint, prove, verify --checkpoints
    const cp = await run(['audit', 'checkpoint']);
    t.equal(cp.code, 0, cp.stdout + cp.stderr);
    t.match(cp.stdout, `checkpoint: ${pgHead} row(s)`, 'audit checkpoint signs PostgreSQL\'s chain');
    const proved = await run(['audit', 'prove', String(pgHead)]);
    t.equal(proved.code, 0, proved.stdout + proved.stderr);
    const anchored = await run(['audit', 'verify', '--checkpoints', `file:${join(data, 'checkpoints.jsonl')}`]);
    t.equal(anchored.code, 0, anchored.stdout + anchored.stderr);
    t.match(anchored.stdout, `ok: ${pgHead} row(s), hash chain intact, extends all 1 checkpoint(s)`);

    // --- ci --data
    const { project, agent: agentRepo } = await import('../ci/project.js');
    const r = agentRepo(project(t), { 'src/notes.mjs': '// notes\n' }, 'agent');
    const ci = await cliRun(['ci', '--repo', r.dir, '--base', 'main', '--head', 'HEAD', '--data', data, '--', 'node', '-e', 'console.log("1 passed")'], { env });
    t.equal(ci.code, 1, 'a red run');
    t.match(ci.stdout, /recorded in the audit log as row (\d+)/);
    const ciRow = Number(/recorded in the audit log as row (\d+)/.exec(ci.stdout)?.[1]);
    t.equal(await q(`SELECT kind FROM events WHERE id = ${ciRow}`), 'ci', 'ci --data: its row is in PostgreSQL');

    // --- serve: no URL given, the recorded log; the revocation made by the CLI holds there
    const srv = await serve(data, [], 300_000, env);
    t.teardown(() => {
      srv.child.kill('SIGTERM');
      return srv.exited;
    });
    t.match(srv.out(), `(audit log postgres://patchgate@127.0.0.1:${pg.port}/patchgate, recorded in ${join(data, 'audit-location.json')})`);
    const remote = (u: string, s: string) => `http://${u}:${s}@127.0.0.1:${srv.port}/app.git`;
    w.checkout('main');
    w.checkout('agent/y', true);
    w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
    const byVictim = await gitAsync(w.dir, ['push', remote('victim', victim), 'agent/y']);
    t.not(byVictim.code, 0, 'the token revoked by the CLI is refused by the server');
    const byAgent = await gitAsync(w.dir, ['push', remote('agent-1', agent), 'agent/y']);
    t.equal(byAgent.code, 0, byAgent.stderr);
    t.equal(await pgRows("kind = 'ref' AND ref = 'refs/heads/agent/y' AND verdict = 'accept'"), 1, 'serve: the decision is in PostgreSQL');
    srv.child.kill('SIGTERM');
    await srv.exited;

    // --- the moved SQLite file: unchanged, refuses to open, refuses an append from anything
    t.same(sqliteState(), before, 'the SQLite file was neither written nor changed by any of it');
    t.throws(() => AuditStore.open(dbFile), { message: /the audit log .*patchgate\.db moved to postgres:\/\/patchgate@127\.0\.0\.1:\d+\/patchgate \(patchgate audit migrate, .*\): it is kept as history/ });
    const raw = new Database(dbFile);
    t.throws(() => raw.prepare('UPDATE chain_head SET last_id = last_id + 1').run(), /this audit log moved/, 'a writer that ignores the mark is refused by its triggers');
    t.throws(() => raw.prepare("UPDATE tokens SET revoked = NULL WHERE name = 'victim'").run(), /this audit log moved/);
    raw.close();
    const other = tempDir('pg-folder-other-');
    t.teardown(() => removeTree(other));
    const direct = await cliRun(['audit', 'verify', '--audit', `sqlite:${dbFile}`, '--data', other], { env });
    t.equal(direct.code, 2, 'the moved file named directly is refused');
    t.equal(oneLine(direct).length, 1);
    t.match(direct.stderr, `patchgate: the audit log ${dbFile} moved to ${bare} (patchgate audit migrate, `);
    t.match(direct.stderr, /it is kept as history and is not read or written as the current log/);

    // --- refusals, one line each, nothing changed (at once: none of them writes)
    const otherDb = pg.url.replace(/\/patchgate$/, '/postgres');
    const [asFile, viaVariable, sameWithPassword, ciOther, noPassword] = await Promise.all([
      run(['token', 'revoke', 'alice', '--audit', `sqlite:${dbFile}`]),
      run(['token', 'revoke', 'alice'], shellEnv({ PATCHGATE_AUDIT_URL: otherDb })),
      run(['token', 'list'], shellEnv({ PATCHGATE_AUDIT_URL: pg.url })),
      cliRun(['ci', '--repo', r.dir, '--base', 'main', '--head', 'HEAD', '--data', data, '--', 'node', '-e', '1'], { env: shellEnv({ PATCHGATE_AUDIT_URL: otherDb }) }),
      run(['token', 'revoke', 'alice'], shellEnv()),
    ]);
    t.equal(asFile.code, 2);
    t.equal(oneLine(asFile).length, 1);
    t.match(asFile.stderr, `patchgate: CONFIG: --audit: names the audit log ${dbFile}, but this data folder's log is ${bare} (recorded in ${join(data, 'audit-location.json')} by audit migrate`);
    t.equal(viaVariable.code, 2);
    t.equal(oneLine(viaVariable).length, 1);
    t.match(viaVariable.stderr, /^patchgate: CONFIG: PATCHGATE_AUDIT_URL: names the audit log postgres:\/\/patchgate:\*\*\*@127\.0\.0\.1:\d+\/postgres, but this data folder's log is/);
    t.notMatch(viaVariable.stderr, pg.password);
    t.equal(sameWithPassword.code, 0, 'the recorded log given again, with its password in the variable, is the same log');
    t.equal(ciOther.code, 2, 'ci --data with another log refuses before running anything');
    t.notMatch(ciOther.stdout, /seed/);
    t.match(ciOther.stderr, /^patchgate: CONFIG: PATCHGATE_AUDIT_URL: names the audit log/);
    t.equal(noPassword.code, 2);
    t.equal(oneLine(noPassword).length, 1);
    t.match(noPassword.stderr, `(this data folder's log, recorded in ${join(data, 'audit-location.json')}); nothing was done; the password comes from PATCHGATE_AUDIT_URL`);
    t.equal(await q("SELECT coalesce(revoked, 'active') FROM tokens WHERE name = 'alice'"), 'active', 'alice was not revoked');
    await pg.stop();
    const down = await run(['repo', 'create', 'app3']);
    t.equal(down.code, 2);
    t.equal(oneLine(down).length, 1);
    t.match(down.stderr, /^patchgate: cannot open the audit log postgres:\/\/patchgate@127\.0\.0\.1:\d+\/patchgate: .*\(this data folder's log, recorded in .*\); nothing was done/);
    t.notOk(existsSync(join(data, 'repos', 'app3.git')), 'no repository was made');
    const serveDown = await serveExpectingExit(data, ['--port', '0'], 60_000, env);
    t.equal(serveDown.code, 2, 'serve does not start without its log');
    t.match(serveDown.output, /cannot open the audit log postgres:\/\/patchgate@.*this data folder's log, recorded in/);
    await pg.start();
    t.same(sqliteState(), before, 'still unchanged');
    for (const r2 of [m, made, revoked, rows, verified, cp, ci, asFile, viaVariable, noPassword, down]) t.notMatch(r2.stdout + r2.stderr, pg.password, 'no password in any output');
  });
}
