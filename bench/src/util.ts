// Small helpers shared by the benchmark (`npm run bench`): statistics over samples, size flags, an async
// process runner that times a child, the patchgate server as a child process (start, stop,
// memory), a deterministic PRNG for the repository generator, git environment for the bench's
// own git clients, and a registry of temp folders and child processes that are cleaned up
// however the run ends.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** The repository top (bench/dist/util.js -> ../../). */
export const REPO_TOP = fileURLToPath(new URL('../../', import.meta.url));
/** The built product's CLI (`npm run build`'s dist/cli.js), for the child servers of the push and concurrency runs. */
export const CLI_JS = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** A fixed identity and no user/system config, so git behaves the same on every machine. */
export const GIT_ENV: Record<string, string> = {
  GIT_AUTHOR_NAME: 'Bench Agent', GIT_AUTHOR_EMAIL: 'bench@example.test',
  GIT_COMMITTER_NAME: 'Bench Agent', GIT_COMMITTER_EMAIL: 'bench@example.test',
  GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true',
  LC_ALL: 'C',
};

export function gitEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...GIT_ENV };
  for (const k of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES']) delete env[k];
  return env;
}

// ------------------------------------------------------------------ statistics

/** A repository size as the bench's flags give it: 1k, 10k, 50k, 1.5k, 2m or a plain count. */
export function parseSize(s: string): number {
  const m = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(s.trim());
  if (!m) throw new Error(`not a size: ${s} (use e.g. 1k, 10k, 50k)`);
  return Math.round(Number(m[1]) * (m[2]!.toLowerCase() === 'k' ? 1000 : m[2]!.toLowerCase() === 'm' ? 1e6 : 1));
}

/** Runs a bench tool's main: its temp folders and children are cleaned up; an error is one line and exit code 1. */
export function runTool(name: string, main: () => Promise<void>): void {
  main().then(() => cleanup(), (err: unknown) => {
    console.error(`${name}: ${err instanceof Error ? err.message : String(err)}`);
    cleanup();
    process.exitCode = 1;
  });
}

/** `--size` and `--pushes` of the phase tools (push-phases.ts, client-phases.ts); bad input throws the usage line. */
export function phaseFlags(script: string, defaultPushes: number): { files: number; pushes: number } {
  const usage = `usage: node bench/dist/${script} [--size 1k|10k|N] [--pushes N]`;
  let flags: { size: string; pushes: string };
  try {
    flags = parseArgs({ options: { size: { type: 'string', default: '1k' }, pushes: { type: 'string', default: String(defaultPushes) } }, strict: true }).values as { size: string; pushes: string };
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : String(err)}; ${usage}`);
  }
  const files = parseSize(flags.size);
  const pushes = Number(flags.pushes);
  if (files < 10 || !Number.isInteger(pushes) || pushes < 1) throw new Error(usage);
  return { files, pushes };
}

export function median(xs: readonly number[]): number {
  return percentile(xs, 50);
}

/** Nearest-rank percentile (p in 0..100) of a sample; NaN for an empty one. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(s.length - 1, Math.max(0, rank - 1))]!;
}

export function round(x: number, digits = 1): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

// ------------------------------------------------------------------ processes

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Run a command asynchronously (never blocks the event loop the in-process server needs). */
export function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string | Buffer; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const t0 = nowMs();
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? gitEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = opts.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs) : null;
    child.on('error', (e) => err.push(Buffer.from(String(e))));
    child.on('close', (code) => {
      if (timer) clearTimeout(timer);
      resolve({ code: code ?? 1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), ms: nowMs() - t0 });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

/** Run git; throw with its stderr on failure (for setup steps that must not fail). */
export async function git(cwd: string, args: string[], input?: string): Promise<string> {
  const r = await run('git', args, { cwd, input });
  if (r.code !== 0) throw new Error(`git ${args.join(' ')} (in ${cwd}) failed with ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}

// ------------------------------------------------------------------ the server as a child process

/**
 * `node dist/cli.js serve` on `data`, port 0 on loopback, as in production: its own process, so
 * its memory and the cost of every process it spawns are its own, not the bench's.
 */
export async function startServeChild(data: string, hookTimeoutS: number, env: Record<string, string> = {}): Promise<{ child: ChildProcess; port: number }> {
  // BENCH_SERVE_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof": node options for the served gate only (a profile of the daemon, not of the bench).
  const nodeArgs = (process.env.BENCH_SERVE_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const args = [...nodeArgs, CLI_JS, 'serve', '--data', data, '--port', '0', '--host', '127.0.0.1', '--hook-timeout', String(hookTimeoutS)];
  return startNodeChild(args, /serving .* at https?:\/\/127\.0\.0\.1:(\d+)/, 'patchgate serve', env);
}

/** A node script as a tracked child; resolves with the port it prints (first group of `portLine`). */
export async function startNodeChild(args: string[], portLine: RegExp, what: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, args, { env: { ...gitEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  trackChild(child);
  let out = '';
  child.stderr!.on('data', (b: Buffer) => (out += b.toString('utf8')));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not start: ${out}`));
    }, 60_000);
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString('utf8');
      const m = portLine.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited ${code}: ${out}`));
    });
  });
  return { child, port };
}

/** Stop a child server the way an operator does (SIGTERM drains in-flight pushes); SIGKILL after `graceMs`. */
export async function stopServeChild(child: ChildProcess, graceMs = 60_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  let timer: NodeJS.Timeout | undefined;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
  clearTimeout(timer);
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await exited;
  }
}

/** RSS and peak RSS (VmHWM) of a process in MB, from /proc/PID/status; null when it is gone. */
export function memOf(pid: number): { rss: number; hwm: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? Number.NaN);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return null;
  }
}

/**
 * The fields of /proc/PID/stat after the command name (field 3, the state, first), or null when
 * the process is gone. The name (field 2) may hold spaces and parentheses: it ends at the last `)`.
 */
export function statFields(pid: number | string): string[] | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** CPU time a process has used so far (user + system), in clock ticks; null when it is gone. */
export function cpuTicks(pid: number): number | null {
  const f = statFields(pid);
  return f ? Number(f[11]) + Number(f[12]) : null; // utime, stime (fields 14 and 15)
}

/**
 * Waits until process `pid` has used at most one clock tick of CPU in each of two windows of
 * 500 ms in a row (at most `maxMs`); the time waited. A daemon's background work at start (the
 * parsers' JIT warm-up, src/server/hook/parser-warm.ts, which /healthz does not report) runs
 * between pushes and would share the machine with both servers' timed pushes.
 */
export async function waitQuiet(pid: number, maxMs = 60_000): Promise<number> {
  const t0 = nowMs();
  let quiet = 0;
  let last = cpuTicks(pid);
  while (last !== null && quiet < 2 && nowMs() - t0 < maxMs) {
    await new Promise((r) => setTimeout(r, 500));
    const now = cpuTicks(pid);
    quiet = now !== null && now - last <= 1 ? quiet + 1 : 0;
    last = now;
  }
  return nowMs() - t0;
}

// ------------------------------------------------------------------ cleanup

const tempDirs = new Set<string>();
const children = new Set<ChildProcess>();

/** A fresh temp folder under `base` (default: bench/work/), removed by cleanup(). */
export function tempDir(prefix: string, base = join(REPO_TOP, 'bench', 'work')): string {
  mkdirSync(base, { recursive: true });
  const d = mkdtempSync(join(base, prefix));
  tempDirs.add(d);
  return d;
}

export function keepDir(dir: string): void {
  tempDirs.delete(dir);
}

export function trackChild(c: ChildProcess): void {
  children.add(c);
  c.once('exit', () => children.delete(c));
}

/** Kill the children this bench started (by their pid) and remove its temp folders. */
export function cleanup(): void {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null && c.pid) {
      try {
        process.kill(c.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }
  children.clear();
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
  tempDirs.clear();
}

// ------------------------------------------------------------------ deterministic randomness

/** mulberry32: a tiny seeded PRNG, so the same flags generate the same repositories. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

export function fmtMs(x: number): string {
  if (!Number.isFinite(x)) return 'n/a';
  return x >= 100 ? `${Math.round(x)} ms` : `${round(x, 1)} ms`;
}

export function fmtBytes(n: number): string {
  if (n >= 1 << 30) return `${round(n / (1 << 30), 2)} GB`;
  if (n >= 1 << 20) return `${round(n / (1 << 20), 1)} MB`;
  return `${round(n / 1024, 1)} KB`;
}
