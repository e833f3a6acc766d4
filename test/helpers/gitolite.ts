// A real gitolite3 reached over a real sshd on 127.0.0.1, for the gitolite test. Both run as
// a non-root user in a temp folder (sshd as non-root can only log that user in, which is
// exactly gitolite's model: one system user, one key per person in authorized_keys). When the
// tests run as root the user is `patchgate-ci` (created here when missing); otherwise the
// current user. Missing gitolite3 or sshd: `missing` says so (the test skips by hand, fails in CI).
// That user may not be able to read the clone at all (a clone under /root, mode 0700): `hostCli`
// gives it its own readable copy of what the CLI needs (dist/, node_modules, hooks/, package.json),
// hard-linked where the file system allows, so the test never relies on the clone's parents.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { tempDir } from './repo.js';

export const SSHD = ['/usr/sbin/sshd', '/usr/bin/sshd'].find((p) => existsSync(p));
export const GITOLITE = ['/usr/bin/gitolite', '/usr/share/gitolite3/gitolite'].find((p) => existsSync(p));
const SHELL = '/usr/share/gitolite3/gitolite-shell';

export function missing(): string | null {
  const lack = [!SSHD && 'sshd (Debian package openssh-server)', !GITOLITE && 'gitolite (Debian package gitolite3)', !existsSync('/usr/bin/ssh') && 'ssh'].filter(Boolean);
  return lack.length ? `not installed: ${lack.join(', ')}` : null;
}

export interface Run { code: number; stdout: string; stderr: string }

export function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string } = {}): Promise<Run> {
  return new Promise((resolve) => {
    const c = execFile(cmd, args, { env: opts.env ?? process.env, cwd: opts.cwd, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    if (opts.input !== undefined) c.stdin?.end(opts.input);
  });
}

const isRoot = process.getuid?.() === 0;
export const HOST_USER = isRoot ? 'patchgate-ci' : (process.env.USER ?? 'nobody');

async function ensureUser(): Promise<{ uid: number; gid: number }> {
  if (!isRoot) return { uid: process.getuid!(), gid: process.getgid!() };
  let id = await run('id', ['-u', HOST_USER]);
  if (id.code) {
    const add = await run('useradd', ['--system', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/bin/bash', HOST_USER]);
    if (add.code) throw new Error(`useradd ${HOST_USER}: ${add.stderr}`);
    id = await run('id', ['-u', HOST_USER]);
  }
  // Not locked (sshd without PAM refuses a locked account), still no password.
  await run('usermod', ['-p', '*', HOST_USER]);
  const gid = await run('id', ['-g', HOST_USER]);
  return { uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Run a command as the host user with HOME = the gitolite home. */
export function asHostUser(home: string, cmd: string, args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C', ...extraEnv };
  if (!isRoot) return run(cmd, args, { env: { ...process.env, ...env } });
  return run('runuser', ['-u', HOST_USER, '--', 'env', '-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), cmd, ...args]);
}

export function spawnAsHostUser(home: string, cmd: string, args: string[]): ChildProcess {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LANG: 'C' };
  if (!isRoot) return spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return spawn('runuser', ['-u', HOST_USER, '--', 'env', '-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), cmd, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
}

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const p = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

/** The project's root (where dist/ and node_modules are), from this file's place in test/helpers. */
const PROJECT = join(import.meta.dirname, '..', '..');
let runtime: string | null = null;

/**
 * The path of a `dist/cli.js` the host user can run. As that user is the current one (not root),
 * it is this clone's. As root, it is a copy made once per test process in a fresh 0755 folder of the
 * system temp dir (hard links when on the same file system, else a copy), removed at exit; the
 * copy is checked by running `--version` as the host user, so an unreadable copy fails here, by name.
 */
export async function hostCli(): Promise<string> {
  const own = join(PROJECT, 'dist', 'cli.js');
  if (!isRoot) return own;
  if (runtime) return join(runtime, 'dist', 'cli.js');
  const dir = mkdtempSync(join(tmpdir(), 'pg-runtime-'));
  chmodSync(dir, 0o755);
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  for (const part of ['dist', 'node_modules', 'hooks', 'package.json']) {
    const from = join(PROJECT, part);
    if (!existsSync(from)) throw new Error(`hostCli: ${from} is missing (run npm ci first)`);
    let r = await run('cp', ['-al', from, join(dir, part)]);
    if (r.code) {
      rmSync(join(dir, part), { recursive: true, force: true });
      r = await run('cp', ['-a', from, join(dir, part)]);
    }
    if (r.code) throw new Error(`hostCli: could not copy ${part}: ${r.stderr}`);
  }
  await ensureUser();
  const cli = join(dir, 'dist', 'cli.js');
  const check = await run('runuser', ['-u', HOST_USER, '--', 'env', '-i', `PATH=${process.env.PATH ?? '/usr/bin:/bin'}`, process.execPath, cli, '--version'], { cwd: dirname(dir) });
  if (check.code) throw new Error(`hostCli: ${HOST_USER} cannot run ${cli}: ${check.stderr.trim()}`);
  runtime = dir;
  return cli;
}

export interface Gitolite {
  root: string;
  home: string;
  port: number;
  /** ssh private key file of a gitolite user made by addUser */
  key(name: string): string;
  /** GIT_SSH_COMMAND for a user's key */
  sshCommand(name: string): string;
  url(repo: string): string;
  /** Write conf/gitolite.conf and the keys, then compile (gitolite setup). */
  configure(conf: string): Promise<void>;
}

interface T { teardown(fn: () => unknown): void }

export async function startGitolite(t: T, users: string[]): Promise<Gitolite> {
  const { uid, gid } = await ensureUser();
  const root = tempDir('pg-gitolite-');
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  chmodSync(root, 0o755);
  const home = join(root, 'home');
  const client = join(root, 'client');
  mkdirSync(home, { recursive: true });
  mkdirSync(client, { mode: 0o700 });
  if (isRoot) chownSync(home, uid, gid);
  // keys: made here, one per user; the admin key sets gitolite up
  for (const u of ['admin', ...users]) {
    const k = await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', u, '-f', join(client, u)]);
    if (k.code) throw new Error(k.stderr);
  }
  writeFileSync(join(root, 'admin.pub'), readFileSync(join(client, 'admin.pub')));
  chmodSync(join(root, 'admin.pub'), 0o644);
  const setup = await asHostUser(home, GITOLITE!, ['setup', '-pk', join(root, 'admin.pub')]);
  if (setup.code) throw new Error(`gitolite setup: ${setup.stderr}`);
  // repo-specific hooks from LOCAL_CODE (gitolite's documented way to add a pre-receive hook to chosen repos)
  const rcPath = join(home, '.gitolite.rc');
  let rc = readFileSync(rcPath, 'utf8');
  rc = rc.replace(/#\s*LOCAL_CODE\s*=>\s*"\$ENV\{HOME\}\/local",/, 'LOCAL_CODE => "$ENV{HOME}/local",').replace(/#\s*'repo-specific-hooks',/, "'repo-specific-hooks',");
  if (!rc.includes('LOCAL_CODE => "$ENV{HOME}/local"') || !rc.includes("\n            'repo-specific-hooks',")) throw new Error('could not enable LOCAL_CODE and repo-specific-hooks in .gitolite.rc');
  writeFileSync(rcPath, rc);
  // LOCAL_CODE itself is left to `patchgate hook install`, which creates it.
  if (isRoot) chownSync(rcPath, uid, gid);

  // sshd as that user: host key, config and pid in the temp folder, a high port, no PAM, no privilege separation user
  const sshDir = join(root, 'sshd');
  mkdirSync(sshDir);
  const hk = await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(sshDir, 'host_key')]);
  if (hk.code) throw new Error(hk.stderr);
  const port = await freePort();
  writeFileSync(join(sshDir, 'sshd_config'), [
    `Port ${port}`, 'ListenAddress 127.0.0.1', `HostKey ${join(sshDir, 'host_key')}`, `PidFile ${join(sshDir, 'sshd.pid')}`,
    `AuthorizedKeysFile ${join(home, '.ssh', 'authorized_keys')}`, 'UsePAM no', 'StrictModes no', 'PasswordAuthentication no',
    'KbdInteractiveAuthentication no', 'PubkeyAuthentication yes', `AllowUsers ${HOST_USER}`, `SetEnv HOME=${home}`,
    'PermitUserEnvironment no', 'LogLevel ERROR', '',
  ].join('\n'));
  if (isRoot) {
    for (const f of ['', 'host_key', 'host_key.pub', 'sshd_config']) chownSync(join(sshDir, f), uid, gid);
  }
  const sshd = spawnAsHostUser(home, SSHD!, ['-D', '-e', '-f', join(sshDir, 'sshd_config')]);
  let sshdErr = '';
  sshd.stderr?.on('data', (c) => (sshdErr += String(c)));
  t.teardown(() => new Promise<void>((r) => {
    if (sshd.exitCode !== null) return r();
    sshd.once('exit', () => r());
    sshd.kill('SIGTERM');
  }));
  // ready when the port accepts a connection
  for (let i = 0; ; i++) {
    const ok = await new Promise<boolean>((r) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => (s.destroy(), r(true)));
      s.once('error', () => r(false));
    });
    if (ok) break;
    if (sshd.exitCode !== null || i > 200) throw new Error(`sshd did not start: ${sshdErr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const sshCommand = (name: string) => `ssh -i ${join(client, name)} -p ${port} -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes`;
  return {
    root, home, port,
    key: (name) => join(client, name),
    sshCommand,
    url: (repo) => `${HOST_USER}@127.0.0.1:${repo}`,
    async configure(conf: string) {
      const keydir = join(home, '.gitolite', 'keydir');
      for (const u of users) writeFileSync(join(keydir, `${u}.pub`), readFileSync(join(client, `${u}.pub`)));
      writeFileSync(join(home, '.gitolite', 'conf', 'gitolite.conf'), conf);
      if (isRoot) {
        for (const u of users) chownSync(join(keydir, `${u}.pub`), uid, gid);
      }
      const r = await asHostUser(home, GITOLITE!, ['setup']);
      if (r.code) throw new Error(`gitolite setup: ${r.stderr}`);
    },
  };
}

export { SHELL as GITOLITE_SHELL };
