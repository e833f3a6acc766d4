// `--audit URL` parsing and redaction, and an unreachable PostgreSQL: `serve` does not start
// and `audit verify` fails, each with one line that never holds the password. Needs no
// PostgreSQL server (nothing listens on the port these URLs name).

import t from 'tap';
import net from 'node:net';

import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describeAudit, parseAuditUrl, redactUrl } from '../../src/audit/sink.js';
import { ConfigError } from '../../src/errors.js';
import { tempDir } from '../helpers/repo.js';
import { cliRun, serveExpectingExit } from '../helpers/serve.js';

/** A port nothing listens on (bound, then released). */
function closedPort(): Promise<number> {
  return new Promise((res) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => res(port));
    });
  });
}

t.test('parseAuditUrl: default, sqlite:PATH, postgres://, refusals', async (t) => {
  t.same(parseAuditUrl(undefined, '/d'), { kind: 'sqlite', path: '/d/patchgate.db' });
  t.same(parseAuditUrl('', '/d'), { kind: 'sqlite', path: '/d/patchgate.db' });
  t.same(parseAuditUrl('sqlite:x/a.db', '/d'), { kind: 'sqlite', path: resolve('x/a.db') });
  t.same(parseAuditUrl('sqlite:///abs/a.db', '/d'), { kind: 'sqlite', path: '/abs/a.db' });
  t.same(parseAuditUrl('postgresql://u@h/db', '/d'), { kind: 'postgres', url: 'postgresql://u@h/db' });
  t.throws(() => parseAuditUrl('mysql://u:hunter2@h/db', '/d'), ConfigError);
  try {
    parseAuditUrl('mysql://u:hunter2@h/db', '/d');
  } catch (err) {
    t.notMatch((err as Error).message, /hunter2/, 'a refused URL is named without its password');
    t.match((err as Error).message, /^CONFIG: --audit: must be sqlite:PATH or postgres:/);
  }
  t.throws(() => parseAuditUrl('sqlite:', '/d'), /needs a path/);
});

t.test('redactUrl hides the password in the userinfo and in a password= parameter', async (t) => {
  t.equal(redactUrl('postgres://gate:s3cr%40t@db:5432/pg'), 'postgres://gate:***@db:5432/pg');
  t.equal(redactUrl('postgres://db/pg?user=gate&password=s3cret&sslmode=require'), 'postgres://db/pg?user=gate&password=***&sslmode=require');
  t.equal(redactUrl('postgres://gate@db/pg'), 'postgres://gate@db/pg', 'nothing to hide');
  t.equal(describeAudit({ kind: 'postgres', url: 'postgres://a:b@c/d' }), 'postgres://a:***@c/d');
});

t.test('an unreachable PostgreSQL: serve does not start, audit verify fails; one line, no password', async (t) => {
  const port = await closedPort();
  const url = `postgres://gate:hunter2-secret@127.0.0.1:${port}/patchgate`;
  const data = tempDir('pg-sink-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const s = await serveExpectingExit(data, ['--port', '0'], 30_000, { ...process.env, PATCHGATE_AUDIT_URL: url });
  t.equal(s.code, 2, 'serve exits 2');
  t.match(s.output, /^patchgate: cannot open the audit log postgres:\/\/gate:\*\*\*@127\.0\.0\.1:\d+\/patchgate: .*ECONNREFUSED/m);
  t.notMatch(s.output, /hunter2/, 'no password in the output');
  const r = await cliRun(['audit', 'verify', '--data', join(data, 'x')], { env: { ...process.env, PATCHGATE_AUDIT_URL: url } });
  const v = { code: r.code, out: r.stdout + r.stderr };
  t.equal(v.code, 2, 'audit verify exits 2 (an error, not "intact" and not "tampered")');
  t.equal(v.out.trim().split('\n').length, 1, 'one line');
  t.notMatch(v.out, /hunter2/);
});
