// No secret in argv: a database URL with a password given as a command-line flag is refused
// by every command that takes one (argv is readable by every user through `ps`), with one
// line that says where the password goes instead, never the password itself, and before
// anything is opened or created. The same URL from PATCHGATE_AUDIT_URL is accepted (it then
// fails here only because nothing listens on its port). Needs no PostgreSQL server.

import t from 'tap';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { refuseSecretInArgv, urlHasPassword } from '../../src/audit/sink.js';
import { tempDir } from '../helpers/repo.js';
import { cliRun } from '../helpers/serve.js';

const PASSWORD = 'hunter2-argv-secret';
const URLS = [`postgres://gate:${PASSWORD}@127.0.0.1:9/patchgate`, `postgresql://127.0.0.1:9/patchgate?user=gate&password=${PASSWORD}`];

t.test('urlHasPassword and refuseSecretInArgv', async (t) => {
  for (const u of URLS) t.ok(urlHasPassword(u), u);
  t.notOk(urlHasPassword('postgres://gate@127.0.0.1/patchgate'), 'a user without a password');
  t.notOk(urlHasPassword('sqlite:./data/patchgate.db'));
  t.throws(() => refuseSecretInArgv(URLS[0], '--audit'), /^CONFIG: --audit: a password on the command line .*PATCHGATE_AUDIT_URL.*PGPASSFILE.*PGPASSWORD/);
  t.doesNotThrow(() => refuseSecretInArgv(undefined, '--audit'));
  try {
    refuseSecretInArgv(URLS[1], '--audit');
  } catch (err) {
    t.notMatch((err as Error).message, PASSWORD, 'the message does not repeat the password');
  }
});

t.test('every command refuses --audit with a password: exit 2, one line, no password, nothing made', async (t) => {
  const data = tempDir('pg-argv-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const cfg = join(data, 'daemon.json');
  writeFileSync(cfg, JSON.stringify({ data: join(data, 'd') }));
  const cases: Array<[string, string[]]> = [
    ['serve', ['serve', '--data', join(data, 'serve'), '--port', '0', '--audit', URLS[0]!]],
    ['serve (?password=)', ['serve', '--data', join(data, 'serve'), '--port', '0', '--audit', URLS[1]!]],
    ['daemon', ['daemon', '--config', cfg, '--audit', URLS[0]!]],
    ['audit', ['audit', '--data', data, '--audit', URLS[0]!]],
    ['audit show', ['audit', 'show', '1', '--data', data, '--audit', URLS[0]!]],
    ['audit verify', ['audit', 'verify', '--data', data, '--audit', URLS[0]!]],
    ['audit export', ['audit', 'export', '--since', '2020-01-01', '--data', data, '--audit', URLS[0]!]],
    ['audit migrate --to', ['audit', 'migrate', '--from', `sqlite:${join(data, 'x.db')}`, '--to', URLS[0]!]],
    ['token create', ['token', 'create', 'a', '--role', 'agent', '--data', join(data, 'tok'), '--audit', URLS[0]!]],
    ['token list', ['token', 'list', '--data', data, '--audit', URLS[0]!]],
    ['token revoke', ['token', 'revoke', 'a', '--data', data, '--audit', URLS[0]!]],
    ['repo create', ['repo', 'create', 'app', '--data', join(data, 'repo'), '--audit', URLS[0]!]],
  ];
  for (const [name, args] of cases) {
    const r = await cliRun(args);
    const all = r.stdout + r.stderr;
    t.equal(r.code, 2, `${name}: exit 2`);
    t.equal(all.trim().split('\n').length, 1, `${name}: one line`);
    t.match(all, /a password on the command line is visible to every user in ps.*PATCHGATE_AUDIT_URL/, `${name}: says where to put it`);
    t.notMatch(all, PASSWORD, `${name}: the password is not printed`);
  }
  t.notOk(existsSync(join(data, 'serve', 'patchgate.db')), 'serve opened nothing');
  t.notOk(existsSync(join(data, 'tok')), 'token create made no data folder');
  t.notOk(existsSync(join(data, 'repo', 'repos', 'app.git')), 'repo create made no repository');
});

t.test('the same URL in PATCHGATE_AUDIT_URL is taken (and fails only because nothing listens)', async (t) => {
  const data = tempDir('pg-argv-env-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  mkdirSync(data, { recursive: true });
  const r = await cliRun(['audit', 'verify', '--data', data], { env: { ...process.env, PATCHGATE_AUDIT_URL: URLS[0]! } });
  t.equal(r.code, 2);
  t.match(r.stderr, /cannot open the audit log postgres:\/\/gate:\*\*\*@127\.0\.0\.1:9\/patchgate/, 'it tried the database');
  t.notMatch(r.stdout + r.stderr, PASSWORD);
});
