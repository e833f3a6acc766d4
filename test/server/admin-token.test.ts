// The first start's admin token, through a real `patchgate serve` child process: the secret
// is written to <data>/admin-token (mode 0600) and never printed; the output names the
// file; the token in the file authenticates as admin; a later start mints no other token.

import t from 'tap';
import http from 'node:http';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/repo.js';
import { startServer } from '../../src/server/app.js';
import { AuditStore } from '../../src/audit/store.js';
import { TokenStore } from '../../src/audit/tokens.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

interface Serve { child: ChildProcess; port: number; out: () => string; err: () => string; exited: Promise<number | null> }

/** Start `serve --port 0` and wait (generous deadline, to catch a hang) for its "serving" line. */
function serve(data: string): Promise<Serve> {
  const child = spawn('node', [CLI, 'serve', '--data', data, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`serve did not start within 60 s: ${out} ${err}`)), 60_000);
    child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /serving .* at http:\/\/127\.0\.0\.1:(\d+) /.exec(out);
      if (m && out.endsWith('\n')) {
        clearTimeout(deadline);
        resolve({ child, port: Number(m[1]), out: () => out, err: () => err, exited });
      }
    });
    void exited.then((code) => reject(new Error(`serve exited (${code}) before it was ready: ${out} ${err}`)));
  });
}

async function stop(s: Serve): Promise<void> {
  s.child.kill('SIGTERM');
  await s.exited;
}

function get(port: number, path: string, secret: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers: { Authorization: `Basic ${Buffer.from(`admin:${secret}`).toString('base64')}` } }, (res) => {
      let body = '';
      res.on('data', (b: Buffer) => (body += b.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

t.test('serve writes the first admin token to <data>/admin-token (0600) and prints only the path', async (t) => {
  const data = tempDir('pg-admin-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const first = await serve(data);
  t.teardown(() => first.child.kill('SIGKILL'));
  const file = join(data, 'admin-token');
  t.ok(existsSync(file), 'the token file exists');
  t.equal(statSync(file).mode & 0o777, 0o600, 'mode 0600');
  const secret = readFileSync(file, 'utf8').trim();
  t.match(secret, /^pg_[A-Za-z0-9_-]{20,}$/, 'the file holds one token');
  const ok = await get(first.port, '/api/tokens', secret);
  t.equal(ok.status, 200, 'the token in the file is an admin token');
  t.match(ok.body, /"name":"admin"/);
  t.notMatch(ok.body, secret, 'the token list holds no secret');
  t.equal((await get(first.port, '/api/tokens', `${secret}x`)).status, 401, 'and another secret is not');
  await stop(first);
  t.match(first.out(), new RegExp(`written to ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(mode 0600\\)`), 'the output names the file');
  t.notOk(first.out().includes(secret), 'the secret is not on stdout');
  t.notOk(first.err().includes(secret), 'the secret is not on stderr');
  const db = AuditStore.open(join(data, 'patchgate.db'));
  const rows = JSON.stringify(db.query({ limit: 1000 }));
  db.close();
  t.notOk(rows.includes(secret), 'the secret is not in the audit log');

  const second = await serve(data);
  t.teardown(() => second.child.kill('SIGKILL'));
  await stop(second);
  t.notMatch(second.out(), /first start/, 'a later start mints no token');
  t.match(second.out(), /admin-token still holds the first admin token; delete it/, 'and reminds that the file is still there');
  t.equal(readFileSync(file, 'utf8').trim(), secret, 'the file is unchanged');
});

t.test('a token file that cannot be written stops the start and revokes the token', async (t) => {
  const data = tempDir('pg-admin-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  mkdirSync(join(data, 'admin-token')); // a folder where the file should go: rename fails
  writeFileSync(join(data, 'admin-token', 'keep'), 'x');
  await t.rejects(startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: () => {} }), { code: 'ADMIN_TOKEN_FILE', message: /could not write the first admin token to .*admin-token.*the token was revoked/ });
  const db = AuditStore.open(join(data, 'patchgate.db'));
  t.teardown(() => db.close());
  t.equal(new TokenStore(db).count(), 0, 'no usable token is left behind');
  t.same(db.query({ kind: 'admin' }).map((r) => r.action).sort(), ['token.create', 'token.revoke']);
});
