// A real "team remote" for upstream tests: `git http-backend` (git's own smart-HTTP CGI)
// behind node:http on port 0, demanding HTTP Basic credentials, serving bare repositories in
// a temp folder. It records every Authorization header it saw and can be switched to refuse
// everything (wrong credential), stopped (upstream down), or given its own pre-receive hook
// (a protected branch). Spawned asynchronously: it runs in the test's process.

import http from 'node:http';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { GIT_ENV, removeTree, tempDir } from './repo.js';
import { gitAsync } from './gate.js';

interface T { teardown(fn: () => unknown): void }

export interface Upstream {
  root: string;
  port: number;
  user: string;
  secret: string;
  /** http://127.0.0.1:PORT/NAME.git (no credentials). */
  url(name: string): string;
  /** The same with user:secret@ (what an admin may pass to --upstream). */
  urlWithCredential(name: string, secret?: string): string;
  /** A bare repository NAME.git with `main` holding the given work repo's main (or empty). */
  create(name: string, from?: string): Promise<string>;
  dir(name: string): string;
  /** Refuse pushes with the given pre-receive script body (bash), or remove it with null. */
  hook(name: string, script: string | null): void;
  /** Every request's Authorization header. */
  authSeen: string[];
  requests: number;
  /** `METHOD /path?query` of every authenticated request. */
  served: string[];
  stop(): Promise<void>;
}

export async function startUpstream(t: T, opts: { user?: string; secret?: string } = {}): Promise<Upstream> {
  const root = tempDir('pg-upstream-');
  const user = opts.user ?? 'x-access-token';
  const secret = opts.secret ?? `upsecret-${Math.random().toString(36).slice(2)}-Zq9`;
  const expected = 'Basic ' + Buffer.from(`${user}:${secret}`).toString('base64');
  const authSeen: string[] = [];
  const served: string[] = [];
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests++;
    const auth = req.headers.authorization ?? '';
    authSeen.push(auth);
    if (auth !== expected) {
      req.resume();
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="upstream"', 'Content-Type': 'text/plain' });
      return void res.end('authentication required\n');
    }
    const url = new URL(req.url ?? '/', 'http://upstream');
    served.push(`${req.method} ${url.pathname}${url.search}`);
    const env: NodeJS.ProcessEnv = {
      ...process.env, ...GIT_ENV,
      GIT_PROJECT_ROOT: root, GIT_HTTP_EXPORT_ALL: '1', REMOTE_USER: user, REMOTE_ADDR: '127.0.0.1',
      PATH_INFO: decodeURIComponent(url.pathname), QUERY_STRING: url.search.replace(/^\?/, ''),
      REQUEST_METHOD: req.method ?? 'GET', CONTENT_TYPE: req.headers['content-type'] ?? '',
      GIT_HTTP_MAX_REQUEST_BUFFER: '100M',
    };
    if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
    if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
    if (req.headers['git-protocol']) env.GIT_PROTOCOL = String(req.headers['git-protocol']);
    const cgi = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    req.pipe(cgi.stdin);
    cgi.stdin.on('error', () => {});
    cgi.stderr.resume();
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) return void res.write(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const i = line.indexOf(':');
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === 'status') status = Number(v.split(' ')[0]);
        else headers[k] = v;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => {
      if (!headersDone) res.writeHead(500).end();
      else res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    });
  };
  t.teardown(async () => {
    await stop();
    removeTree(root);
  });
  const dir = (name: string) => join(root, `${name}.git`);
  return {
    root, port, user, secret, authSeen, served,
    get requests() {
      return requests;
    },
    url: (name) => `http://127.0.0.1:${port}/${name}.git`,
    urlWithCredential: (name, s = secret) => `http://${encodeURIComponent(user)}:${encodeURIComponent(s)}@127.0.0.1:${port}/${name}.git`,
    dir,
    async create(name, from) {
      mkdirSync(dir(name), { recursive: true });
      await gitAsync(dir(name), ['init', '-q', '--bare', '-b', 'main', '.']);
      await gitAsync(dir(name), ['config', 'http.receivepack', 'true']);
      if (from) {
        const r = await gitAsync(from, ['push', '-q', dir(name), 'main:refs/heads/main']);
        if (r.code) throw new Error(`seeding upstream failed: ${r.stderr}`);
      }
      return dir(name);
    },
    hook(name, script) {
      const p = join(dir(name), 'hooks', 'pre-receive');
      if (script === null) return void rmSync(p, { force: true });
      mkdirSync(join(dir(name), 'hooks'), { recursive: true });
      writeFileSync(p, `#!/usr/bin/env bash\n${script}\n`);
      chmodSync(p, 0o755);
    },
    stop,
  };
}
