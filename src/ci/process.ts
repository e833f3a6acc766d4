// Runs the test command of `patchgate ci` and `ledger freeze`: argv spawned directly (never
// through a shell), in the repository, with the run seed exported. Output is relayed line by
// line to the job log; stdout is also kept, because a TAP report is read from it.

import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { UsageError } from '../errors.js';

export const MAX_SEED = 2 ** 31 - 1;

/** Parse `--seed`: a decimal integer from 0 to 2^31-1 (what jest, pytest-randomly and PYTHONHASHSEED all accept). */
export function parseSeed(s: string | number | undefined, option = '--seed'): number {
  const text = String(s ?? '').trim();
  if (!/^\d{1,10}$/.test(text) || Number(text) > MAX_SEED) throw new UsageError(`${option}: ${JSON.stringify(s)} is not an integer from 0 to ${MAX_SEED}`);
  return Number(text);
}

export function randomSeed(): number {
  return randomInt(0, MAX_SEED + 1);
}

/**
 * The variables a run gets. PATCHGATE_SEED is ours; PYTHONHASHSEED is read by every CPython
 * interpreter (str/bytes hash randomisation). No other runner we know reads a seed from the
 * environment; pass it on their command line with `{seed}` (see `withSeed`).
 */
export function seedEnv(seed: number, seedFile: string): Record<string, string> {
  return { PATCHGATE_SEED: String(seed), PATCHGATE_SEED_FILE: seedFile, PYTHONHASHSEED: String(seed) };
}

/** Replace every `{seed}` in the argv with the seed, e.g. `--randomly-seed={seed}`. */
export function withSeed(argv: string[], seed: number): string[] {
  return argv.map((a) => a.split('{seed}').join(String(seed)));
}

export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the command could not be started (not found, not executable). */
  spawnError?: string;
  stdout: string;
  /** What the child wrote on fd 3 (with `channel`). */
  channel?: string;
  ms: number;
}

export interface RunOptions {
  cwd: string;
  env: Record<string, string>;
  onStdout?(line: string): void;
  onStderr?(line: string): void;
  /** Keep stdout (for a TAP report). */
  capture?: boolean;
  /** Give the child a pipe on fd 3 (patchgate's reporter channel) and keep what it writes. */
  channel?: boolean;
  /** Use exactly `env`, not the gate's environment plus `env` (the sealed run). */
  exactEnv?: boolean;
  /** Bytes written to the child's stdin, then closed (held-out tests handed over from memory); default: no stdin. */
  stdin?: Buffer;
  /** Each line of fd 3 as it arrives (the progress of a sealed run: run-progress.ts); the whole is still kept. */
  onChannel?(line: string): void;
}

function lineSplitter(emit: ((line: string) => void) | undefined): { push(b: Buffer): void; end(): void } {
  let partial = '';
  return {
    push(b) {
      if (!emit) return;
      partial += b.toString('utf8');
      let nl: number;
      while ((nl = partial.indexOf('\n')) >= 0) {
        emit(partial.slice(0, nl).replace(/\r$/, ''));
        partial = partial.slice(nl + 1);
      }
    },
    end() {
      if (emit && partial) emit(partial);
      partial = '';
    },
  };
}

/** Spawn argv[0] with argv[1..] (no shell), wait for it, relay its output. Never throws. */
export function runCommand(argv: string[], opts: RunOptions): Promise<CommandResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const [file, ...args] = argv;
    if (!file) {
      resolve({ code: null, signal: null, spawnError: 'no command given', stdout: '', ms: 0 });
      return;
    }
    const child = spawn(file, args, { cwd: opts.cwd, env: opts.exactEnv ? opts.env : { ...process.env, ...opts.env }, stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe', ...(opts.channel ? ['pipe' as const] : [])], shell: false });
    if (opts.stdin && child.stdin) {
      child.stdin.on('error', () => {});
      child.stdin.end(opts.stdin);
    }
    const chunks: Buffer[] = [];
    const chan: Buffer[] = [];
    const fd3 = opts.channel ? (child.stdio[3] as NodeJS.ReadableStream | null) : null;
    const chanLines = lineSplitter(opts.onChannel);
    fd3?.on('data', (b: Buffer) => {
      chan.push(b);
      chanLines.push(b);
    });
    fd3?.on('error', () => {});
    const out = lineSplitter(opts.onStdout);
    const err = lineSplitter(opts.onStderr);
    let spawnError: string | undefined;
    child.stdout!.on('data', (b: Buffer) => {
      if (opts.capture) chunks.push(b);
      out.push(b);
    });
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      spawnError = `cannot run ${file}: ${e.message}`;
    });
    child.on('close', (code, signal) => {
      out.end();
      err.end();
      chanLines.end();
      resolve({ code, signal, ...(spawnError ? { spawnError } : {}), stdout: Buffer.concat(chunks).toString('utf8'), ...(opts.channel ? { channel: Buffer.concat(chan).toString('utf8') } : {}), ms: Date.now() - started });
    });
  });
}

/** A command line for people to read and paste (POSIX quoting). */
export function showArgv(argv: string[]): string {
  return argv.map((a) => (/^[A-Za-z0-9_./:@=+,{}-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}
