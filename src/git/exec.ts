// How every short-lived git child is started: the scrubbed environment (no variable that
// would point git at another repository or config), one plumbing command with its output
// collected, and a git that talks to another repository, bounded in time and tied to the
// gate's life. The Git facade's run() and remote() are these.

import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, statSync } from 'node:fs';
import { GitError } from '../errors.js';
import { QUARANTINE_VARS } from './quarantine.js';

/**
 * Set one key of a repository's config file, synchronously (`hook install` is synchronous);
 * throws GitError. `--file`, not `--local`: git's safe.directory check refuses `--local` in a
 * repository another user owns (root installing into the host user's repositories), and never
 * applies to a named file. git rewrites the file through a lock file, so run as root it would
 * leave the file root's: the file keeps the owner it had.
 */
export function setConfigSync(configFile: string, key: string, value: string): void {
  const args = ['config', '--file', configFile, key, value];
  let owner: { uid: number; gid: number } | null = null;
  try {
    owner = statSync(configFile);
  } catch {
    owner = null;
  }
  try {
    execFileSync('git', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
    if (owner && process.getuid?.() === 0) {
      const now = statSync(configFile);
      if (now.uid !== owner.uid || now.gid !== owner.gid) chownSync(configFile, owner.uid, owner.gid);
    }
  } catch (err) {
    if (err instanceof GitError) throw err;
    const e = err as { status?: number | null; stderr?: Buffer };
    throw new GitError(args, e.status ?? null, e.stderr?.toString('utf8') ?? String(err), { cause: err });
  }
}

/** Variables that would make git read another repository or config than the one we chose. */
const SCRUBBED_VARS = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_COUNT', 'GIT_NAMESPACE', 'GIT_CEILING_DIRECTORIES', 'GIT_COMMON_DIR', ...QUARANTINE_VARS];

/**
 * How a git that talks to another repository is started so that it dies with the gate: in its
 * own process group (the time limit kills the whole group), led by a bash that the kernel
 * signals when the gate dies (`setpriv --pdeathsig`, util-linux), and that then kills the
 * group: no forward or fetch outlives a gate that was killed (kill -9 included). Without
 * setpriv on PATH, git is started directly (the time limit still bounds it).
 */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv', ...(process.env.PATH ?? '').split(':').filter(Boolean).map((d) => `${d}/setpriv`)].find((p) => existsSync(p)) ?? null;
function diesWithGate(args: string[]): [string, string[]] {
  if (!SETPRIV) return ['git', args];
  return [SETPRIV, ['--pdeathsig', 'TERM', '--', 'bash', '-c', 'trap "kill -KILL 0" TERM; git "$@" & wait $!', 'patchgate-git', ...args]];
}

/** The environment of a Git's children: ours without SCRUBBED_VARS, no prompt, C locale, then `extra`. */
export function gitEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of SCRUBBED_VARS) delete env[k];
  env.GIT_TERMINAL_PROMPT = '0';
  env.LC_ALL = 'C';
  // git reads the objects as they are, never through refs/replace (issue 45: what the gate
  // reads in process and what git tells it must be one reading of the same bytes).
  env.GIT_NO_REPLACE_OBJECTS = '1';
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

export interface RunOptions {
  input?: string | Buffer;
  okExit?: number[];
}

/** Run one git command in `dir` and return stdout. Non-zero exit throws GitError unless listed in `okExit`. */
export function runGit(dir: string, env: NodeJS.ProcessEnv, args: string[], opts: RunOptions = {}): Promise<{ stdout: Buffer; code: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd: dir, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => reject(new GitError(args, null, String(e), { cause: e })));
    child.on('close', (code) => {
      const stdout = Buffer.concat(out);
      if (code === 0 || (code !== null && opts.okExit?.includes(code))) resolve({ stdout, code: code ?? 0 });
      else reject(new GitError(args, code, Buffer.concat(err).toString('utf8')));
    });
    child.stdin.on('error', () => {}); // a child that exits early closes its stdin; its exit code tells.
    child.stdin.end(opts.input ?? '');
  });
}

export interface RemoteOptions {
  env?: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface RemoteResult {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/**
 * A git command that talks to another repository (or a long maintenance run), in `dir`, bounded
 * by `timeoutMs` (its whole process group is killed) and by `signal`; `opts.env` is added to
 * `baseEnv` for this call only. Never throws for git's own failure: the caller reads code and stderr.
 */
export function runRemote(dir: string, baseEnv: NodeJS.ProcessEnv, args: string[], opts: RemoteOptions): Promise<RemoteResult> {
  return new Promise((resolve) => {
    const env = { ...baseEnv, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', SSH_ASKPASS: 'true', ...opts.env };
    const [cmd, argv] = diesWithGate(args);
    const child = spawn(cmd, argv, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    // `signal` (e.g. the daemon stopping) ends it like the time limit, without timedOut.
    opts.signal?.addEventListener('abort', kill, { once: true });
    if (opts.signal?.aborted) kill();
    const done = () => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', kill);
    };
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      done();
      resolve({ code: null, stdout: '', stderr: String(e), timedOut });
    });
    child.on('close', (code) => {
      done();
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), timedOut });
    });
  });
}
