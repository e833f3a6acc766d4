// The long-lived `git cat-file --batch-command` reader behind every object read of a Git
// (blobs, trees, commit headers, sizes): one process per repository view, requests answered
// in order. Kept apart from the Git facade so the reader can change (e.g. read some objects
// in-process) without touching the walks built on it.

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { GitError } from '../errors.js';
import { helperSpawn } from './spawner.js';

export interface BatchResult {
  id: string;
  type: string;
  size: number;
  data: Buffer;
}

interface Pending {
  spec: string;
  headerOnly: boolean;
  resolve: (r: BatchResult | null) => void;
  reject: (e: unknown) => void;
}

/**
 * A long-lived `git cat-file --batch-command` reader: `contents` for object data and `info`
 * for headers, over one process (git 2.36+). Requests are answered in order; the parser is a
 * small state machine over the stdout byte stream.
 */
export class CatFileBatch {
  dead = false;
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly queue: Pending[] = [];
  private buf: Buffer = Buffer.alloc(0);
  /** Chunks read since `buf` was last joined, and their length: a large object arrives in many chunks, joined once. */
  private chunks: Buffer[] = [];
  private chunkBytes = 0;
  /** Bytes `buf` must hold before the next answer can be parsed (0: try at every chunk). */
  private need = 0;
  /** Requests made in this turn of the event loop, written to git's stdin in one write (setImmediate). */
  private out = '';
  private stderr = '';

  constructor(dir: string, env: NodeJS.ProcessEnv) {
    // From the serving daemon, started by its small spawn helper (a fork of the big daemon costs
    // it 7-30 ms of blocked event loop); elsewhere, and when the helper is not there, directly.
    const args = ['cat-file', '--batch-command'];
    this.proc = (helperSpawn('git', args, { cwd: dir, env }) as ChildProcessWithoutNullStreams | null) ?? spawn('git', args, { cwd: dir, env });
    this.proc.stderr.on('data', (b: Buffer) => (this.stderr += b.toString('utf8')));
    this.proc.on('error', (e) => this.fail(e));
    this.proc.on('close', () => this.fail(new Error('git cat-file exited')));
    this.proc.stdin.on('error', (e) => this.fail(e));
    this.proc.stdout.on('data', (b: Buffer) => {
      this.chunks.push(b);
      this.chunkBytes += b.length;
      if (this.buf.length + this.chunkBytes < this.need) return;
      this.buf = this.buf.length || this.chunks.length > 1 ? Buffer.concat([this.buf, ...this.chunks]) : b;
      this.chunks = [];
      this.chunkBytes = 0;
      this.need = 0;
      this.drain();
    });
  }

  private fail(e: unknown): void {
    if (this.dead) return;
    this.dead = true;
    const err = new GitError(['cat-file', '--batch-command'], null, this.stderr || String(e), { cause: e });
    for (const p of this.queue.splice(0)) p.reject(err);
  }

  private send(spec: string, headerOnly: boolean): Promise<BatchResult | null> {
    if (this.dead) return Promise.reject(new GitError(['cat-file', '--batch-command'], null, this.stderr || 'cat-file is not running'));
    if (/[\n\r]/.test(spec)) return Promise.reject(new GitError(['cat-file', '--batch-command'], null, `object name with a newline: ${JSON.stringify(spec)}`));
    return new Promise((resolve, reject) => {
      this.queue.push({ spec, headerOnly, resolve, reject });
      if (!this.out) setImmediate(() => this.flush());
      this.out += `${headerOnly ? 'info' : 'contents'} ${spec}\n`;
    });
  }

  private flush(): void {
    const text = this.out;
    this.out = '';
    if (text && !this.dead) this.proc.stdin.write(text);
  }

  read(spec: string): Promise<BatchResult | null> {
    return this.send(spec, false);
  }

  header(spec: string): Promise<BatchResult | null> {
    return this.send(spec, true);
  }

  private drain(): void {
    for (;;) {
      const nl = this.buf.indexOf(10);
      if (nl < 0) return;
      const p = this.queue[0];
      if (!p) return this.fail(new Error('unexpected cat-file output'));
      const head = parseHeader(this.buf.subarray(0, nl).toString('utf8'), Buffer.alloc(0));
      if (!head || p.headerOnly) {
        this.buf = this.buf.subarray(nl + 1);
        this.queue.shift();
        p.resolve(head);
        continue;
      }
      const end = nl + 1 + head.size;
      if (this.buf.length < end + 1) {
        this.need = end + 1; // wait for body and its trailing LF
        return;
      }
      head.data = Buffer.from(this.buf.subarray(nl + 1, end));
      this.buf = this.buf.subarray(end + 1);
      this.queue.shift();
      p.resolve(head);
    }
  }

  /** Runs `fn` once git's process has ended (a spare reader's slot is removed then). */
  whenClosed(fn: () => void): void {
    this.proc.once('close', fn);
  }

  close(): void {
    this.flush(); // requests not written yet are still answered, as before the end of stdin
    this.dead = true;
    this.proc.stdin.end();
  }
}

function parseHeader(line: string, data: Buffer): BatchResult | null {
  // "<id> <type> <size>" or "<spec> missing" / "<spec> ambiguous"
  const m = /^([0-9a-f]+) (\S+) (\d+)$/.exec(line);
  if (!m) return null;
  return { id: m[1]!, type: m[2]!, size: Number(m[3]), data };
}
