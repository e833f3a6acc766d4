// A real PostgreSQL server for tests: initdb in a temp folder, pg_ctl on a free port, a
// password for TCP logins (so tests can prove it never leaks). PostgreSQL refuses to run as
// root, so under root the folder is given to the `postgres` user (the Debian package makes
// it) and every server command runs through `runuser`. All commands are async: tests run
// gate servers in this process. Missing binaries: `skipReason` says why; in CI (process.env.CI)
// the caller must fail instead (see `needPostgres`).

import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { tempDir } from './repo.js';

export interface Postgres {
  /** postgres://patchgate:PASSWORD@127.0.0.1:PORT/patchgate */
  url: string;
  password: string;
  port: number;
  /** Run SQL through the real psql client; resolves with stdout. */
  psql(sql: string): Promise<string>;
  stop(): Promise<void>;
  start(): Promise<void>;
}

function binDir(): string | null {
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const versions = readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'pg_ctl'))).sort((a, b) => Number(b) - Number(a));
    if (versions.length) return join(base, versions[0]!, 'bin');
  }
  for (const d of (process.env.PATH ?? '').split(':')) if (d && existsSync(join(d, 'pg_ctl')) && existsSync(join(d, 'initdb'))) return d;
  return null;
}

/** Why PostgreSQL tests cannot run here, or null when they can. */
export function skipReason(): string | null {
  if (!binDir()) return 'PostgreSQL is not installed (no initdb/pg_ctl in /usr/lib/postgresql/*/bin or on PATH); .ci/run installs it with apt-get';
  if (process.getuid?.() === 0 && !/^postgres:/m.test(readFileSync('/etc/passwd', 'utf8'))) {
    return 'running as root and there is no `postgres` user to run the server as (PostgreSQL refuses root)';
  }
  return null;
}

/** t.skip with the reason when run by hand; a failure in CI, where PostgreSQL must be there. */
export function needPostgres(t: { fail(msg: string): void }): string | null {
  const why = skipReason();
  if (why && process.env.CI) {
    t.fail(`CI must run the PostgreSQL tests: ${why}`);
  }
  return why;
}

function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cmd, args, { env: { ...process.env, ...opts.env }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Starts a fresh server; stopped and deleted at teardown. */
export async function startPostgres(t: { teardown(fn: () => unknown): void }): Promise<Postgres> {
  const bin = binDir();
  if (!bin) throw new Error(skipReason()!);
  const root = process.getuid?.() === 0;
  const dir = tempDir('pg-postgres-');
  const data = join(dir, 'data');
  const sock = join(dir, 'sock');
  const password = `pw-${Math.random().toString(36).slice(2)}-secret`;
  writeFileSync(join(dir, 'pw'), password + '\n');
  mkdirSync(sock);
  if (root) {
    const { uid, gid } = await userIds('postgres');
    for (const p of [dir, sock, join(dir, 'pw')]) chownSync(p, uid, gid);
  }
  chmodSync(dir, 0o755);
  const as = (cmd: string, args: string[]): Promise<string> => (root ? run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]) : run(join(bin, cmd), args));
  await as('initdb', ['-D', data, '-U', 'patchgate', '--pwfile', join(dir, 'pw'), '--auth-local=trust', '--auth-host=scram-sha-256', '-E', 'UTF8', '--no-instructions']);
  const port = await freePort();
  let running = false;
  const start = async (): Promise<void> => {
    await as('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '60', '-o', `-p ${port} -k ${sock} -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off`, 'start']);
    running = true;
  };
  const stop = async (): Promise<void> => {
    if (!running) return;
    running = false;
    await as('pg_ctl', ['-D', data, '-w', '-t', '60', '-m', 'immediate', 'stop']);
  };
  await start();
  t.teardown(async () => {
    await stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  });
  const url = `postgres://patchgate:${encodeURIComponent(password)}@127.0.0.1:${port}/patchgate`;
  const psqlBin = existsSync(join(bin, 'psql')) ? join(bin, 'psql') : 'psql';
  const psql = (sql: string): Promise<string> =>
    run(psqlBin, ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(port), '-U', 'patchgate', '-d', 'patchgate', '-c', sql], { env: { PGPASSWORD: password } });
  await run(psqlBin, ['-X', '-q', '-h', '127.0.0.1', '-p', String(port), '-U', 'patchgate', '-d', 'postgres', '-c', 'CREATE DATABASE patchgate'], { env: { PGPASSWORD: password } });
  return { url, password, port, psql, stop, start };
}

async function userIds(name: string): Promise<{ uid: number; gid: number }> {
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${name}:`));
  if (!line) throw new Error(`no ${name} user`);
  const f = line.split(':');
  return { uid: Number(f[2]), gid: Number(f[3]) };
}
