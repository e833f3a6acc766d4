// Escalations in the audit log (issue 21): the push options the hooks forward, the agent's
// text made safe (bounded, control characters out, secrets redacted), SQLite's migration 5 on
// a log made before it (old rows keep their hashes), and the list/close round trip through the
// CLI against PostgreSQL (`--audit postgres://…`, the password in PGPASSWORD), after a real
// escalating push to a gate whose log is that database.

import t from 'tap';
import Database from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AuditStore, MIGRATIONS, ESCALATION_TEXT_MAX, chainRow, adminRows, ZERO_HASH } from '../../src/audit/store.js';
import { readPushOptions, sanitizeText, listEscalations } from '../../src/audit/escalation.js';
import { auditArg, closeCommand } from '../../src/server/escalate.js';
import { GIT_ENV, TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';
import { CLI } from '../helpers/serve.js';
import { needPostgres, startPostgres } from '../helpers/postgres.js';

t.test('push options: the escalation, repeated ones joined, unknown patchgate.* named, a bad count ignored', async (t) => {
  t.same(readPushOptions({}), { escalate: null, unknown: [] });
  t.same(readPushOptions({ GIT_PUSH_OPTION_COUNT: '2', GIT_PUSH_OPTION_0: 'ci.skip', GIT_PUSH_OPTION_1: 'patchgate.escalate=the test is wrong' }), { escalate: 'the test is wrong', unknown: [] });
  t.same(readPushOptions({ GIT_PUSH_OPTION_COUNT: '3', GIT_PUSH_OPTION_0: 'patchgate.escalate=a', GIT_PUSH_OPTION_1: 'patchgate.escalate=b=c', GIT_PUSH_OPTION_2: 'patchgate.nope' }), { escalate: 'a / b=c', unknown: ['patchgate.nope'] });
  t.same(readPushOptions({ GIT_PUSH_OPTION_COUNT: 'x', GIT_PUSH_OPTION_0: 'patchgate.escalate=a' }), { escalate: null, unknown: [] }, 'a count that is no number: no options');
  t.same(readPushOptions({ GIT_PUSH_OPTION_COUNT: '1', GIT_PUSH_OPTION_0: 'patchgate.escalate' }).escalate, '', 'no value: an empty text');
  const many: Record<string, string> = { GIT_PUSH_OPTION_COUNT: '100' };
  for (let i = 0; i < 100; i++) many[`GIT_PUSH_OPTION_${i}`] = `patchgate.escalate=${i}`;
  t.equal(readPushOptions(many).escalate!.split(' / ').length, 16, 'at most 16 options are read');
});

t.test('the text: control characters out, secrets redacted, commit ids kept, bounded', async (t) => {
  t.equal(sanitizeText('a\nb\r\nc\x1b[31md\u202ee\u0000'), 'a b c [31md e');
  t.equal(sanitizeText(''), '(no reason given)');
  t.equal(sanitizeText('   \n\t '), '(no reason given)');
  const secret = 'pg_Zq9xK2mLp0vB7nR4tY6uW1sE3dF5gH8jA';
  t.equal(sanitizeText(`token ${secret} leaked`), 'token [redacted token] leaked');
  t.equal(sanitizeText('see http://agent-1:hunter2@gate:7005/app.git'), 'see http://[redacted]@gate:7005/app.git');
  t.equal(sanitizeText('password=hunter2 and ghp_abcdefghijklmnopqrstuvwxyz0123'), 'password=[redacted] and [redacted token]');
  t.equal(sanitizeText('random Xk29sLq0Pz83Nv61Mb47Qw25Ertyu8Io'), 'random [redacted]');
  const sha = '0123456789abcdef0123456789abcdef01234567';
  t.equal(sanitizeText(`commit ${sha} and tests/test_long_name_of_a_test_module_number_1.py`), `commit ${sha} and tests/test_long_name_of_a_test_module_number_1.py`, 'ids and paths stay');
  const long = sanitizeText('x '.repeat(5000));
  t.equal(long.length, ESCALATION_TEXT_MAX);
  t.ok(long.endsWith('…'));
});

t.test('SQLite migration 5 on a log made before it: old rows keep their hashes, escalations can be written', async (t) => {
  const dir = tempDir('pg-mig5-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'patchgate.db');
  const db = new Database(path);
  for (let i = 0; i < 4; i++) MIGRATIONS[i]!(db);
  db.pragma('user_version = 4');
  const row = chainRow(adminRows({ actor: 'cli', action: 'repo.create', subject: 'app' })[0]!, 1, ZERO_HASH);
  db.prepare(`INSERT INTO events (${Object.keys(row).join(', ')}) VALUES (${Object.keys(row).map((k) => '@' + k).join(', ')})`).run(row);
  db.prepare('UPDATE chain_head SET last_id = 1, last_hash = ? WHERE singleton = 1').run(row.hash);
  t.throws(() => db.prepare("INSERT INTO events (id, kind, time, prev_hash, hash) VALUES (2, 'escalation', 'x', 'y', 'z')").run(), 'schema 4 refuses the kind');
  db.close();
  const store = AuditStore.open(path);
  t.teardown(() => store.close());
  t.equal(store.db.pragma('user_version', { simple: true }), MIGRATIONS.length);
  t.same(store.verify(), { ok: true, rows: 1 }, 'the old row verifies after the rebuild');
  const id = store.appendEscalation({ pushId: 'p-1', repo: 'app', actor: 'agent-1', role: 'agent', ref: 'refs/heads/x', old: '0'.repeat(40), new: 'a'.repeat(40), verdict: 'reject', text: 'the test is wrong' });
  t.equal(id, 2);
  t.throws(() => store.closeEscalation({ id: 1, actor: 'alice', note: 'x' }), /no escalation 1/, 'a row that is no escalation');
  store.closeEscalation({ id, actor: 'alice', note: 'fixed' });
  t.throws(() => store.closeEscalation({ id, actor: 'alice', note: 'again' }), /already closed/);
  t.same(store.verify(), { ok: true, rows: 3 });
  const list = await listEscalations(store);
  t.same(list.map((e) => [e.id, e.open, e.closed?.note]), [[2, false, 'fixed']]);
  t.equal(store.query({ kind: 'escalation' }).length, 2, 'audit --kind escalation');
  t.equal(store.query({}).filter((r) => r.kind === 'escalation').length, 2, 'listed with everything else');
});

const why = needPostgres(t);
if (why) t.comment(`skipping the PostgreSQL escalation test: ${why}`);
else {
  t.test('PostgreSQL: an escalating push, then escalation list/close through --audit', async (t) => {
    const pg = await startPostgres(t);
    const gate = await startGate(t, { auditUrl: pg.url });
    await gate.repo('app');
    const human = await gate.tokenAsync('alice', 'human');
    const agent = await gate.tokenAsync('agent-1', 'agent');
    const w = TestRepo.init(t);
    w.commit('base', { 'src/app.py': 'x = 1\n', 'tests/test_app.py': 'def test_x():\n    assert True\n' });
    t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0, 'a person seeds main');
    const dir = tempDir('pg-esc-pg-');
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    t.equal((await gitAsync(dirname(dir), ['clone', '-q', gate.remote('app', 'agent-1', agent), dir])).code, 0);
    mkdirSync(join(dir, 'tests'), { recursive: true });
    writeFileSync(join(dir, 'tests', 'test_app.py'), 'def test_x():\n    assert False\n');
    await gitAsync(dir, ['commit', '-qam', 'edit the test']);
    const r = await gitAsync(dir, ['push', '-o', 'patchgate.escalate=test_x contradicts the spec', 'origin', 'HEAD:refs/heads/agent/x']);
    t.not(r.code, 0);
    const id = Number(/escalation (\d+) recorded/.exec(r.stderr)?.[1]);
    t.ok(id > 0, 'recorded in PostgreSQL');
    // The URL without its password on the command line; the password where libpq looks.
    const u = new URL(pg.url);
    const password = decodeURIComponent(u.password);
    u.password = '';
    const env = { ...process.env, ...GIT_ENV, PGPASSWORD: password, PATCHGATE_AUDIT_URL: '' };
    const cli = (args: string[]) => new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [CLI, ...args, '--audit', u.toString(), '--data', gate.data], { env }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    });
    const list = await cli(['escalation', 'list', '--open', '--json']);
    t.equal(list.code, 0, list.stderr);
    const open = list.stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: number; text: string; repo: string });
    t.same(open.map((e) => [e.id, e.text, e.repo]), [[id, 'test_x contradicts the spec', 'app']]);
    // The printed close command names this log by its URL, never its password (src/server/escalate.ts).
    const printed = closeCommand(id, { dataDir: gate.data, audit: auditArg(pg.url)! });
    t.notOk(printed.includes(password), 'no password in the printed close command');
    t.match(printed, new RegExp(`--audit ${u.toString().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} `));
    const close = await cli(['escalation', 'close', String(id), '--note', 'spec updated', '--as', 'alice']);
    t.equal(close.code, 0, close.stderr);
    t.match(close.stdout, /by alice\)/, 'the person is the closer');
    const twice = await cli(['escalation', 'close', String(id), '--note', 'again', '--as', 'alice']);
    t.not(twice.code, 0);
    t.match(twice.stderr, /already closed/);
    t.notOk(twice.stderr.includes(password), 'no password in the error');
    t.equal((await cli(['escalation', 'list', '--open', '--json'])).stdout.trim(), '', 'none open');
    const kinds = (await cli(['audit', '--kind', 'escalation', '--json'])).stdout.trim().split('\n');
    t.equal(kinds.length, 2);
    const verify = await cli(['audit', 'verify', '--json']);
    t.match(JSON.parse(verify.stdout), { ok: true });
    t.equal((await listEscalations(gate.srv.sink)).filter((e) => e.open).length, 0, 'the server reads the same store');
  });
}
