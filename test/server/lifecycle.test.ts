// Server life cycle: the first start mints a one-time admin token; SIGTERM-style shutdown
// lets an in-flight push finish and refuses new requests; a repo whose hook is missing at
// start is not served.

import t from 'tap';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '../../src/server/app.js';
import { createRepo } from '../../src/server/repos.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';

t.test('first start prints an admin token once; later starts do not', async (t) => {
  const data = tempDir('pg-life-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const a = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: () => {} });
  t.match(a.firstAdminSecret, /^pg_/);
  t.same(a.tokens.authenticate(a.firstAdminSecret!), { name: 'admin', role: 'admin', repos: '*' });
  await a.close();
  const b = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: () => {} });
  t.equal(b.firstAdminSecret, null);
  await b.close();
});

t.test('shutdown lets an in-flight push finish and refuses new work', async (t) => {
  let slow = false;
  let entered: () => void = () => {};
  const inJudge = new Promise<void>((r) => (entered = r));
  const gate = await startGate(t, { beforeJudge: async () => { if (slow) { entered(); await new Promise((r) => setTimeout(r, 1500)); } } });
  await gate.repo('app');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'x = 1\n' });
  const bare = bareDir(gate, 'app');
  t.equal((await gitAsync(bare, ['fetch', '-q', w.dir, 'main:main'])).code, 0);
  w.checkout('agent/fix', true);
  const head = w.commit('fix', { 'src/app.py': 'x = 2\n' });
  slow = true;
  const push = gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  await inJudge;
  const closing = gate.srv.close();
  const refused = await new Promise<number | string>((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: gate.srv.port, path: '/healthz' }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
  });
  t.ok(refused === 'ECONNREFUSED' || refused === 503, `a new request during shutdown is refused (${refused})`);
  const r = await push;
  await closing;
  t.equal(r.code, 0, r.code ? r.stderr : 'the in-flight push finished');
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), head);
});

t.test('a repository whose hook is missing at start is not served', async (t) => {
  const data = tempDir('pg-life-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  await createRepo(data, 'app');
  rmSync(join(data, 'repos', 'app.git', 'hooks', 'pre-receive'));
  const logs: string[] = [];
  const srv = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: (l) => logs.push(l) });
  t.teardown(() => srv.close());
  t.match(logs.join('\n'), /NOT serving repository app: hook pre-receive is missing/);
  const secret = srv.tokens.create('a', 'agent');
  const status = await new Promise<number>((resolve) => {
    http.get({ host: '127.0.0.1', port: srv.port, path: '/app.git/info/refs?service=git-receive-pack', headers: { Authorization: `Basic ${Buffer.from(`a:${secret}`).toString('base64')}` } }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
  });
  t.equal(status, 503);
});

const hasOpenssl = (() => {
  try {
    return execFileSync('openssl', ['version'], { stdio: 'pipe' }).length > 0;
  } catch {
    return false;
  }
})();

t.test('TLS: --tls-cert/--tls-key serve HTTPS, and git pushes over it', { skip: hasOpenssl ? false : 'openssl is not installed' }, async (t) => {
  const https = await import('node:https');
  const dir = tempDir('pg-tls-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
  const gate = await startGate(t, { tlsCert: join(dir, 'cert.pem'), tlsKey: join(dir, 'key.pem') });
  t.match(gate.srv.url, /^https:\/\//);
  const status = await new Promise<number>((resolve, reject) => {
    https.get({ host: '127.0.0.1', port: gate.srv.port, path: '/healthz', rejectUnauthorized: false }, (res) => { res.resume(); resolve(res.statusCode ?? 0); }).on('error', reject);
  });
  t.equal(status, 200);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const w = TestRepo.init(t);
  const head = w.commit('base', { 'src/a.py': 'x = 1\n' });
  const r = await gitAsync(w.dir, ['-c', 'http.sslVerify=false', 'push', `https://alice:${human}@127.0.0.1:${gate.srv.port}/app.git`, 'main']);
  t.equal(r.code, 0, r.code ? r.stderr : 'pushed over https');
  t.equal(await refIn(bareDir(gate, 'app'), 'refs/heads/main'), head);
});

t.test('the daemon warms its cache with each repository\'s trusted tip at start', async (t) => {
  const Database = (await import('better-sqlite3')).default;
  const data = tempDir('pg-life-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const bare = await createRepo(data, 'app');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/a.ts': 'export function a(x: number): string { return String(x); }\n', 'src/b.py': 'def b(y: int) -> int:\n    return y\n' });
  t.equal((await gitAsync(bare, ['fetch', '-q', w.dir, 'main:main'])).code, 0);
  const rowKeys = (): string[] => {
    const db = new Database(join(data, 'cache.db'), { readonly: true });
    try {
      return (db.prepare("SELECT key FROM kv WHERE key LIKE 'rows:%'").all() as Array<{ key: string }>).map((r) => r.key);
    } finally {
      db.close();
    }
  };
  const srv = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: () => {} });
  t.teardown(() => srv.close());
  await srv.hooks.warmed;
  const first = rowKeys();
  t.ok(first.some((k) => k.endsWith(':src/a.ts')), 'the TypeScript file of the trusted tip was parsed before any push');
  t.ok(first.some((k) => k.endsWith(':src/b.py')), 'and the Python file');
});
