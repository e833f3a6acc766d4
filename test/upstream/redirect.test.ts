// Upstream credentials only ever go to upstream (issue 20, item 5). A real upstream (git
// http-backend behind Basic auth) and, in front of it, a small HTTP server on port 0 that
// answers every request with a 302 to that upstream's port (the second listener, which
// records every Authorization header it is sent). git would follow the redirect and answer
// the 401 there with the gate's upstream token; the gate's git follows no redirect, and its
// credential helper answers only for the configured scheme, host and port.

import t from 'tap';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { TestRepo, tempDir, GIT_ENV } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';
import { startUpstream } from '../helpers/upstream.js';
import { runRepoCreateUpstream, runRepoSync, runRepoUpstream } from '../../src/commands/upstream.js';
import { readSettings, writeSettings } from '../../src/upstream/settings.js';
import { credentialArgs } from '../../src/git/git.js';

type TT = Parameters<Parameters<typeof t.test>[1]>[0];

/** A listener that 302s every request to `to` (same path); counts what it answered. */
async function redirector(t: TT, to: string): Promise<{ url: (name: string) => string; hits: number }> {
  const state = { hits: 0, url: (name: string) => `http://127.0.0.1:${port}/${name}.git` };
  const srv = http.createServer((req, res) => {
    state.hits++;
    req.resume();
    res.writeHead(302, { Location: `${to}${req.url ?? '/'}` }).end();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as AddressInfo).port;
  t.teardown(() => new Promise<void>((r) => {
    srv.close(() => r());
    srv.closeAllConnections();
  }));
  return state;
}

t.test('a redirecting upstream: refused with one redacted line on a push, repo sync and repo upstream; the redirect target gets no Authorization', async (t) => {
  const up = await startUpstream(t);
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n' });
  await up.create('app', w.dir);
  const gate = await startGate(t, { upstreamFreshMs: 0 });
  const credDir = tempDir('pg-cred-');
  t.teardown(() => rmSync(credDir, { recursive: true, force: true }));
  const cred = join(credDir, 'token');
  writeFileSync(cred, `${up.secret}\n`);
  await runRepoCreateUpstream({ data: gate.data, name: 'app', trusted: 'main', upstream: up.url('app'), credentialFile: cred });
  const redir = await redirector(t, `http://127.0.0.1:${up.port}`);
  const b64 = Buffer.from(`x-access-token:${up.secret}`).toString('base64');

  // repo upstream: the new address redirects; it is refused and the working one kept.
  let seen = up.authSeen.length;
  const set = await runRepoUpstream({ data: gate.data, name: 'app', url: redir.url('app'), credentialFile: cred }).then(() => null, (e: Error) => e);
  t.ok(set instanceof Error, 'repo upstream refuses a redirecting address');
  t.match(set!.message, /answered the fetch of refs\/heads\/main with a redirect \(HTTP 302\), which the gate does not follow/);
  t.match(set!.message, /patchgate repo upstream app NEW_URL/);
  t.equal(set!.message.split('\n').length, 1, 'one line');
  t.notOk(set!.message.includes(up.secret));
  t.ok(redir.hits > 0, 'the redirector was asked');
  t.same(up.authSeen.slice(seen), [], 'the redirect target received no request, so no Authorization');
  t.equal(readSettings(gate.data, 'app').upstream?.url, up.url('app'));

  // Upstream starts redirecting after it was set (a moved repository, a hostile proxy).
  const s = readSettings(gate.data, 'app');
  writeSettings(gate.data, 'app', { ...s, upstream: { ...s.upstream!, url: redir.url('app') } });
  seen = up.authSeen.length;
  const sync = await runRepoSync({ data: gate.data, name: 'app' }).then(() => null, (e: Error) => e);
  t.ok(sync instanceof Error, 'repo sync refuses');
  t.match(sync!.message, /with a redirect \(HTTP 302\)/);

  // A push's refresh of the trusted branch.
  const agent = gate.token('agent-1', 'agent');
  w.checkout('agent/fix', true);
  w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.not(r.code, 0, 'the push is refused');
  t.match(r.stderr, /remote: .*upstream http:\/\/127\.0\.0\.1:\d+\/app\.git answered the fetch of refs\/heads\/main with a redirect \(HTTP 302\)/);
  t.equal(await refIn(bareDir(gate, 'app'), 'refs/heads/agent/fix'), null);
  t.notOk(r.stderr.includes(up.secret) || r.stderr.includes(b64));
  t.same(up.authSeen.slice(seen), [], 'nothing reached the redirect target on sync or push');
});

t.test('the credential helper answers only for the configured scheme, host and port', async (t) => {
  const auth: string[] = [];
  const other = http.createServer((req, res) => {
    auth.push(req.headers.authorization ?? '');
    req.resume();
    res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="other"' }).end();
  });
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => other.close(() => r())));
  const port = (other.address() as AddressInfo).port;
  const secret = 'helper-secret-Qw3-xyz';
  const lsRemote = (configured: string, asked: string) => {
    const { pre, env } = credentialArgs('x-access-token', secret, configured);
    return new Promise<{ code: number; stderr: string }>((resolve) => execFile('git', [...pre, 'ls-remote', asked], { env: { ...process.env, ...GIT_ENV, ...env } }, (err, _o, stderr) => resolve({ code: err ? 1 : 0, stderr })));
  };
  // Same host, another port; another host name for the same address.
  for (const configured of [`http://127.0.0.1:${port + 1}/app.git`, `http://localhost:${port}/app.git`]) {
    const r = await lsRemote(configured, `http://127.0.0.1:${port}/app.git`);
    t.not(r.code, 0, `configured ${configured}: no credential, so the listener refuses`);
    t.notOk(r.stderr.includes(secret));
  }
  t.ok(auth.length > 0, 'the listener was asked');
  t.same(auth.filter(Boolean), [], 'and never sent an Authorization header');
  // The configured origin itself does get it (the control).
  await lsRemote(`http://127.0.0.1:${port}/app.git`, `http://127.0.0.1:${port}/app.git`);
  t.ok(auth.includes('Basic ' + Buffer.from(`x-access-token:${secret}`).toString('base64')), 'the configured origin receives the credential');
});
