// `node dist/cli.js serve` as a real child process, for what only a process can show: its
// exit code, a second server on the same data folder, kill -9, SIGSTOP/SIGCONT.

import { spawn, execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');

export interface Served {
  child: ChildProcess;
  port: number;
  out: () => string;
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<number | string>;
}

/** Start serve; resolves when it prints its URL, rejects when it exits first or after `deadlineMs`. */
export function serve(data: string, args: string[] = [], deadlineMs = 30_000, env?: NodeJS.ProcessEnv): Promise<Served> {
  const child = spawn(process.execPath, [CLI, 'serve', '--data', data, '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...(env ? { env } : {}) });
  let text = '';
  child.stdout!.on('data', (c) => (text += c));
  child.stderr!.on('data', (c) => (text += c));
  const exited = new Promise<number | string>((r) => child.once('exit', (code, sig) => r(code ?? sig ?? -1)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start within ${deadlineMs} ms: ${text}`)), deadlineMs);
    const check = (): void => {
      const m = / at https?:\/\/127\.0\.0\.1:(\d+) /.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve({ child, port: Number(m[1]), out: () => text, exited });
      }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`serve exited ${code}: ${text}`), { code, output: text }));
    });
  });
}

/** Run serve expecting it to exit; resolves with its code and output (rejects after `deadlineMs`). */
export function serveExpectingExit(data: string, args: string[], deadlineMs = 30_000, env?: NodeJS.ProcessEnv): Promise<{ code: number | string; output: string }> {
  const child = spawn(process.execPath, [CLI, 'serve', '--data', data, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...(env ? { env } : {}) });
  let text = '';
  child.stdout!.on('data', (c) => (text += c));
  child.stderr!.on('data', (c) => (text += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not exit within ${deadlineMs} ms: ${text}`));
    }, deadlineMs);
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      resolve({ code: code ?? sig ?? -1, output: text });
    });
  });
}

/** A CLI command on the data folder; returns the last line of stdout. */
export function cli(...args: string[]): string {
  return execFileSync(process.execPath, [CLI, ...args], { encoding: 'utf8' }).trim().split('\n').pop()!;
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `node dist/cli.js ARGS` without blocking this process (gate servers may run in it); never
 * throws on a non-zero exit. `env` is the child's whole environment (default: this process's).
 */
export function cliRun(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { encoding: 'utf8', env: opts.env ?? process.env, cwd: opts.cwd }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}
