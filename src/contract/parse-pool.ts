// Cold parses over worker threads. A daemon that has never seen a repository, or `check` in a
// fresh CI, must parse every contract file once; typescript-estree is CPU-bound, so files are
// spread over workers (see poolSize for how many) and the main thread. A warm push parses a file or two: those stay on the
// main thread (a worker would first have to load TypeScript). Workers start when a backlog
// builds up and stop after a while idle, so a quiet daemon holds one TypeScript, not several.
// A worker that fails is not trusted with anything: its files are parsed on the main thread.

import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { ContractParseError } from '../errors.js';
import { extractRows, type RowsFormat } from './extract.js';

interface Job {
  id: number;
  format: RowsFormat;
  path: string;
  source: string;
  resolve: (rows: string[]) => void;
  reject: (err: unknown) => void;
}

type Reply = { id: number; rows?: string[]; parseError?: { path: string; line: number; column: number; detail: string }; error?: string };

/** Parses waiting before workers are started. */
const BACKLOG = 16;
const IDLE_MS = 20_000;

/**
 * Workers besides the main thread, which parses too. PATCHGATE_PARSE_WORKERS=N sets it; by
 * default one per core beyond the first, at most 4, and none below 4 cores: on the 2-core
 * machines measured (docs/performance.md) a worker saved about 7 % of a cold parse's time and
 * cost about 200 MB, because each worker warms up its own TypeScript and garbage collector.
 */
function poolSize(): number {
  const env = process.env.PATCHGATE_PARSE_WORKERS;
  if (env !== undefined && /^\d+$/.test(env)) return Math.min(Number(env), 16);
  const cores = availableParallelism();
  return cores >= 4 ? Math.min(cores - 1, 4) : 0;
}

// The worker module next to this one: .js when built, .ts when the tests run the sources.
const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? './parse-worker.ts' : './parse-worker.js', import.meta.url);

interface Slot {
  worker: Worker;
  busy: Job | null;
}

class ParsePool {
  private readonly queue: Job[] = [];
  private readonly slots: Slot[] = [];
  private nextId = 1;
  private draining = false;
  private idleTimer: NodeJS.Timeout | null = null;
  /** Worker failures so far; after a few, parse on the main thread only. */
  private failures = 0;

  rows(format: RowsFormat, path: string, source: string): Promise<string[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ id: this.nextId++, format, path, source, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.draining) return;
    this.draining = true;
    setImmediate(() => {
      this.draining = false;
      this.drain();
    });
  }

  private drain(): void {
    const size = this.failures >= 3 ? 0 : poolSize();
    if (size > 0 && (this.slots.length > 0 || this.queue.length >= BACKLOG)) {
      while (this.slots.length < size) this.slots.push(this.startWorker());
      for (const slot of this.slots) if (!slot.busy) this.feed(slot);
      // Every worker busy and more waiting: this thread parses one too (it has a core as well).
      if (!this.queue.length) return;
    }
    // Few files: parse one here, then let more work arrive.
    const job = this.queue.shift();
    if (!job) return;
    inline(job);
    if (this.queue.length) this.schedule();
  }

  private startWorker(): Slot {
    const worker = new Worker(WORKER_URL);
    const slot: Slot = { worker, busy: null };
    worker.on('message', (m: Reply) => {
      const job = slot.busy;
      if (!job || job.id !== m.id) return;
      slot.busy = null;
      if (m.rows) job.resolve(m.rows);
      else if (m.parseError) job.reject(new ContractParseError(m.parseError.path, m.parseError.line, m.parseError.column, m.parseError.detail));
      else inline(job); // an unexpected failure in the worker: do not trust it, parse here
      this.feed(slot);
    });
    const lost = (why: unknown): void => {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      if (slot.busy) inline(slot.busy);
      slot.busy = null;
      if (why instanceof Error) this.failures++;
      this.schedule();
    };
    worker.on('error', lost);
    worker.on('exit', () => lost(null));
    worker.unref(); // referenced only while it holds a job: an idle pool never keeps the process alive
    return slot;
  }

  private feed(slot: Slot): void {
    const job = this.queue.shift();
    if (!job) {
      slot.worker.unref();
      this.armIdle();
      return;
    }
    slot.worker.ref();
    if (this.idleTimer) {
      clearTimeout(this.idleTimer);
      this.idleTimer = null;
    }
    slot.busy = job;
    slot.worker.postMessage({ id: job.id, format: job.format, path: job.path, source: job.source });
  }

  private armIdle(): void {
    if (this.idleTimer || this.slots.some((s) => s.busy)) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.queue.length || this.slots.some((s) => s.busy)) return;
      for (const s of this.slots.splice(0)) void s.worker.terminate();
    }, IDLE_MS);
    this.idleTimer.unref();
  }

  /** Workers currently running (for tests and the benchmark). */
  get workers(): number {
    return this.slots.length;
  }
}

function inline(job: Job): void {
  try {
    job.resolve(extractRows(job.format, job.path, job.source));
  } catch (err) {
    job.reject(err);
  }
}

export const parsePool = new ParsePool();
