// The front authenticates EVERY request itself: raw receive-pack POSTs without or with bad
// credentials, or with a token for another repo, change nothing; repo-name escapes get 4xx;
// repeated failures are slowed, then refused with 429.

import t from 'tap';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';

function request(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: Buffer): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const basic = (user: string, secret: string) => ({ Authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}` });

function pkt(line: string): Buffer {
  const b = Buffer.from(line);
  return Buffer.concat([Buffer.from((b.length + 4).toString(16).padStart(4, '0')), b]);
}

async function fixture(t: Parameters<Parameters<typeof t.test>[1]>[0]) {
  const gate = await startGate(t, { limiter: { slowAfter: 100, blockAfter: 1000, windowMs: 60_000, stepMs: 1, maxDelayMs: 1 } });
  await gate.repo('app');
  await gate.repo('other');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent', 'app');
  const stranger = gate.token('agent-2', 'agent', 'other');
  const w = TestRepo.init(t);
  const base = w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n' });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0);
  w.checkout('agent/raw', true);
  const head = w.commit('raw', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const pack = execFileSync('git', ['pack-objects', '--stdout', '--revs', '-q'], { cwd: w.dir, input: `${head}\n^${base}\n` });
  const body = Buffer.concat([pkt(`${'0'.repeat(40)} ${head} refs/heads/agent/raw\0 report-status\n`), Buffer.from('0000'), pack]);
  return { gate, agent, stranger, body, head, bare: bareDir(gate, 'app') };
}

const RECEIVE = '/app.git/git-receive-pack';
const CT = { 'Content-Type': 'application/x-git-receive-pack-request' };

t.test('raw receive-pack POSTs are authenticated by the front', async (t) => {
  const { gate, agent, stranger, body, head, bare } = await fixture(t);
  const port = gate.srv.port;
  const objects = async () => (await gitAsync(bare, ['count-objects', '-v'])).stdout;
  const before = await objects();

  const none = await request(port, 'POST', RECEIVE, CT, body);
  t.equal(none.status, 401, 'no credentials');
  t.match(String(none.headers['www-authenticate']), /^Basic/);
  const wrong = await request(port, 'POST', RECEIVE, { ...CT, ...basic('agent-1', 'pg_' + 'x'.repeat(43)) }, body);
  t.equal(wrong.status, 401, 'known user name, wrong token');
  const nameOnly = await request(port, 'POST', RECEIVE, { ...CT, ...basic('alice', '') }, body);
  t.equal(nameOnly.status, 401, 'a user name alone is nothing');
  const other = await request(port, 'POST', RECEIVE, { ...CT, ...basic('agent-2', stranger) }, body);
  t.equal(other.status, 403, 'token granted another repo');
  t.equal(await refIn(bare, 'refs/heads/agent/raw'), null, 'no ref was created');
  t.equal(await objects(), before, 'no object was written');
  t.not((await gitAsync(bare, ['cat-file', '-e', head])).code, 0);

  // Control: the same bytes with a valid token are a real push, so the refusals above were about auth.
  const ok = await request(port, 'POST', RECEIVE, { ...CT, ...basic('whoever', agent) }, body);
  t.equal(ok.status, 200);
  t.match(ok.body, /ok refs\/heads\/agent\/raw/);
  t.equal(await refIn(bare, 'refs/heads/agent/raw'), head);

  const failures = gate.srv.audit.query({ kind: 'auth', limit: 10 });
  t.ok(failures.length >= 2, 'auth failures are audited');
  t.ok(failures.some((r) => r.actor === 'agent-1' && /bad or revoked/.test(r.reason ?? '')));
  t.ok(failures.some((r) => r.actor === 'agent-2' && /no grant/.test(r.reason ?? '')));
});

t.test('every git route and the API need credentials', async (t) => {
  const { gate } = await fixture(t);
  const port = gate.srv.port;
  for (const [method, path] of [['GET', '/app.git/info/refs?service=git-receive-pack'], ['GET', '/app.git/info/refs?service=git-upload-pack'], ['GET', '/app.git/HEAD'], ['POST', '/app.git/git-upload-pack'], ['GET', '/api/audit']] as const) {
    const r = await request(port, method, path);
    t.equal(r.status, 401, `${method} ${path}`);
  }
  const health = await request(port, 'GET', '/healthz');
  t.equal(health.status, 200);
});

t.test('repository name escapes get 4xx', async (t) => {
  const { gate, agent } = await fixture(t);
  const port = gate.srv.port;
  const outside = tempDir('pg-outside-');
  execFileSync('git', ['init', '-q', '--bare', join(outside, 'loot.git')]);
  symlinkSync(join(outside, 'loot.git'), join(gate.data, 'repos', 'loot.git'));
  mkdirSync(join(gate.data, 'repos', 'nested'), { recursive: true });
  const auth = basic('agent-1', agent);
  for (const path of [
    '/../app.git/info/refs?service=git-upload-pack',
    '/%2e%2e/app.git/info/refs?service=git-upload-pack',
    '/repos/../app.git/info/refs?service=git-upload-pack',
    '/..%2fapp.git/info/refs?service=git-upload-pack',
    '/%2Fetc%2Fpasswd.git/info/refs?service=git-upload-pack',
    '/nested/app.git/info/refs?service=git-upload-pack',
    '/.git/info/refs?service=git-upload-pack',
    '/app.git/../../x/info/refs?service=git-upload-pack',
  ]) {
    const r = await request(port, 'GET', path, auth);
    t.ok(r.status >= 400 && r.status < 500, `${path} -> ${r.status}`);
  }
  const loot = await request(port, 'GET', '/loot.git/info/refs?service=git-upload-pack', basic('alice', gate.token('root-ish', 'admin')));
  t.equal(loot.status, 404, 'a symlink out of data/repos is not a repository');
});

t.test('repeated failures are slowed, then refused with 429', async (t) => {
  const gate = await startGate(t, { limiter: { slowAfter: 1, blockAfter: 3, windowMs: 60_000, stepMs: 5, maxDelayMs: 20 } });
  await gate.repo('app');
  const good = gate.token('agent-1', 'agent');
  const port = gate.srv.port;
  const bad = basic('agent-1', 'pg_' + 'y'.repeat(43));
  const codes = [];
  for (let i = 0; i < 4; i++) codes.push((await request(port, 'GET', '/app.git/info/refs?service=git-upload-pack', bad)).status);
  t.same(codes, [401, 401, 401, 429]);
  const blocked = await request(port, 'GET', '/app.git/info/refs?service=git-upload-pack', basic('agent-1', good));
  t.equal(blocked.status, 429, 'even a good token is refused from a blocked address until the window passes');
});

t.test('audit API: people read it, agents do not', async (t) => {
  const { gate, agent } = await fixture(t);
  const human = gate.token('bob', 'human');
  const port = gate.srv.port;
  t.equal((await request(port, 'GET', '/api/audit', basic('a', agent))).status, 403);
  const r = await request(port, 'GET', '/api/audit?kind=ref&verdict=accept', basic('b', human));
  t.equal(r.status, 200);
  const rows = r.body.trim().split('\n').map((l) => JSON.parse(l) as { kind: string; verdict: string; actor: string });
  t.ok(rows.length >= 1);
  t.ok(rows.every((x) => x.kind === 'ref' && x.verdict === 'accept'));
  t.equal((await request(port, 'GET', '/api/audit?since=yesterday', basic('b', human))).status, 400);
});

t.test('a repository whose hook is not ours is not served', async (t) => {
  const { gate, agent } = await fixture(t);
  const { writeFileSync } = await import('node:fs');
  writeFileSync(join(bareDir(gate, 'app'), 'hooks', 'pre-receive'), '#!/bin/sh\nexit 0\n');
  const r = await request(gate.srv.port, 'GET', '/app.git/info/refs?service=git-receive-pack', basic('a', agent));
  t.equal(r.status, 503);
  t.match(r.body, /not patchgate's/);
});
