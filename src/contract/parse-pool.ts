// Parses over worker threads, for two reasons.
// 1. Isolation (the hook daemon, `isolate()`): parsing is CPU-bound and a pathological file can
//    take minutes and gigabytes. On the main thread that would freeze the event loop that serves
//    HTTP, /healthz and the hook endpoint, and no timer could interrupt it. So in the daemon every
//    parse of more than a small file (16 KiB by default, whose parse takes milliseconds whatever
//    it holds) runs on a worker. The first worker starts when the first such file arrives (an idle
//    worker with TypeScript loaded holds about 85 MB, and a daemon whose files are all small never
//    needs one; issue 24), stays warm while files keep coming, and stops after ISOLATED_KEEP_MS
//    without one; a second starts when the first is busy (so one slow push does not hold
//    up the others) and stops after IDLE_MS idle, and a job whose judgement is cancelled (its AbortSignal, see src/cancel.ts)
//    or that overruns its own limit gets its worker terminated: the parse stops and its memory
//    is freed. A worker that fails or runs out of memory fails that file; nothing falls back to
//    the main thread.
// 2. Speed (a cold `check` in CI, no isolation): files are spread over workers (see poolSize) and
//    the main thread; a few files stay on the main thread. Workers start when a backlog builds up
//    and stop after a while idle. A worker that fails is not trusted with anything: its files are
//    parsed on the main thread.

import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { ContractParseError, ParseWorkerError } from '../errors.js';
import { cancelledBy, currentSignal } from '../cancel.js';
import { extractRows, type RowsFormat } from './extract.js';

interface Job {
  id: number;
  /** `rows`: contract rows; `tamper`: the tamper scan of `lines` (src/policy/tamper/), hits as JSON rows. */
  kind?: 'rows' | 'tamper';
  lines?: number[];
  format: RowsFormat;
  path: string;
  source: string;
  /** A TS/JS signature key seen before, answered with its rows (extract.ts): on this thread only. */
  known?: (sig: string) => string[] | undefined;
  resolve: (rows: string[]) => void;
  reject: (err: unknown) => void;
  signal?: AbortSignal;
  onAbort?: () => void;
  timer?: NodeJS.Timeout;
  done: boolean;
}

type Reply = { id: number; rows?: string[]; parseError?: { path: string; line: number; column: number; detail: string }; error?: string };

/** Parses waiting before workers are started (speed mode). */
const BACKLOG = 16;
const IDLE_MS = 20_000;
/** Workers an isolated pool may run at once at least: one busy with a slow file leaves one for everyone else. */
const MIN_ISOLATED = 2;
/** The last isolated worker stops after this long without a job (the next large file starts one again). */
const ISOLATED_KEEP_MS = 120_000;

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

/** Heap limit of one worker (MB): a file that needs more fails alone instead of growing the server. */
function workerHeapMb(): number {
  const env = process.env.PATCHGATE_PARSE_WORKER_MB;
  return env !== undefined && /^\d+$/.test(env) && Number(env) >= 64 ? Number(env) : 1024;
}

// The worker module next to this one: .js when built, .ts when the tests run the sources.
const WORKER_URL = new URL(import.meta.url.endsWith('.ts') ? './parse-worker.ts' : './parse-worker.js', import.meta.url);

interface Slot {
  worker: Worker;
  busy: Job | null;
}

export interface IsolateOptions {
  /** Longest parse of one file; past it the worker is terminated and the file fails. */
  jobTimeoutMs: number;
  /**
   * Files up to this many characters are parsed on the calling thread: a round trip to a worker
   * costs more than their parse, and a file this small parses in milliseconds whatever it holds
   * (its time is bounded by its size). Default PATCHGATE_INLINE_PARSE_CHARS or 16384; 0: none.
   */
  inlineMaxChars?: number;
}

function inlineDefault(): number {
  const env = process.env.PATCHGATE_INLINE_PARSE_CHARS;
  return env !== undefined && /^\d+$/.test(env) ? Number(env) : 16 * 1024;
}

class ParsePool {
  private readonly queue: Job[] = [];
  private readonly slots: Slot[] = [];
  private nextId = 1;
  private draining = false;
  private idleTimer: NodeJS.Timeout | null = null;
  /** Worker failures so far; after a few, parse on the main thread only (speed mode). */
  private failures = 0;
  private isolation: IsolateOptions | null = null;
  /** Workers terminated because their job was cancelled or overran (for tests and the benchmark). */
  killed = 0;
  /** Tamper scans handed to a worker (for tests: the large-file path is taken). */
  tamperJobs = 0;

  /**
   * From now on every parse of more than a small file runs on a worker thread and none on this
   * one (the hook daemon). Workers start when such a file arrives. Calling it again only
   * updates the options.
   */
  isolate(opts: IsolateOptions): void {
    this.isolation = { inlineMaxChars: inlineDefault(), ...opts };
  }

  get isolated(): boolean {
    return this.isolation !== null;
  }

  /**
   * Rows of one decoded file. `signal` (default: the current judgement's, src/cancel.ts) cancels
   * it: a queued job is dropped, a running one has its worker terminated.
   */
  rows(format: RowsFormat, path: string, source: string, signal: AbortSignal | undefined = currentSignal(), known?: (sig: string) => string[] | undefined): Promise<string[]> {
    if (signal?.aborted) return Promise.reject(cancelledBy(signal));
    if (this.isolation && source.length <= (this.isolation.inlineMaxChars ?? 0)) {
      try {
        return Promise.resolve(extractRows(format, path, source, known));
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return new Promise((resolve, reject) => {
      const job: Job = { id: this.nextId++, format, path, source, ...(known ? { known } : {}), resolve, reject, signal, done: false };
      if (signal) {
        job.onAbort = () => this.cancel(job, cancelledBy(signal));
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.queue.push(job);
      this.schedule();
    });
  }

  /**
   * The tamper scan of one decoded file (src/policy/rules/tamper-scan.ts) on a worker thread,
   * cancelled like a parse: for an isolated pool (the daemon), where a large file must not hold
   * the event loop. Resolves to the hits as JSON strings.
   */
  tamperScan(path: string, source: string, lines: Set<number>, signal: AbortSignal | undefined = currentSignal()): Promise<string[]> {
    if (!this.isolation) return Promise.reject(new ParseWorkerError(path, 'the tamper scan runs on a worker only in an isolated pool'));
    if (signal?.aborted) return Promise.reject(cancelledBy(signal));
    return new Promise((resolve, reject) => {
      this.tamperJobs++;
      const job: Job = { id: this.nextId++, kind: 'tamper', lines: [...lines], format: 'v1', path, source, resolve, reject, signal, done: false };
      if (signal) {
        job.onAbort = () => this.cancel(job, cancelledBy(signal));
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.queue.push(job);
      this.schedule();
    });
  }

  /** Settle a job once: drop its abort listener and timer. */
  settle(job: Job, fn: () => void): void {
    if (job.done) return;
    job.done = true;
    if (job.timer) clearTimeout(job.timer);
    if (job.onAbort) job.signal?.removeEventListener('abort', job.onAbort);
    job.source = ''; // a settled job keeps no copy of the file
    fn();
  }

  /** Cancel a job: drop it from the queue, or terminate the worker that holds it. */
  private cancel(job: Job, err: unknown): void {
    if (job.done) return;
    const q = this.queue.indexOf(job);
    if (q >= 0) this.queue.splice(q, 1);
    const slot = this.slots.find((s) => s.busy === job);
    if (slot) this.kill(slot);
    this.settle(job, () => job.reject(err));
    this.schedule();
  }

  /** Terminate a worker now; its job (if any) is the caller's to settle. */
  private kill(slot: Slot): void {
    slot.busy = null;
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    this.killed++;
    slot.worker.removeAllListeners('message');
    void slot.worker.terminate();
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
    if (this.isolation) return this.drainIsolated();
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
    inline(job, this);
    if (this.queue.length) this.schedule();
  }

  /** Isolated: free workers take jobs; while jobs wait and every worker is busy, start another. */
  private drainIsolated(): void {
    const max = Math.max(MIN_ISOLATED, poolSize());
    for (const slot of this.slots) if (!slot.busy) this.feed(slot);
    while (this.queue.length && this.slots.length < max) {
      const slot = this.startWorker();
      this.slots.push(slot);
      this.feed(slot);
    }
  }

  private startWorker(): Slot {
    const worker = new Worker(WORKER_URL, { resourceLimits: { maxOldGenerationSizeMb: workerHeapMb() } });
    const slot: Slot = { worker, busy: null };
    worker.on('message', (m: Reply) => {
      const job = slot.busy;
      if (!job || job.id !== m.id) return;
      slot.busy = null;
      if (m.rows) this.settle(job, () => job.resolve(m.rows!));
      else if (m.parseError) {
        const pe = m.parseError;
        this.settle(job, () => job.reject(new ContractParseError(pe.path, pe.line, pe.column, pe.detail)));
      } else if (this.isolation) {
        this.settle(job, () => job.reject(new ParseWorkerError(job.path, `the parser failed: ${m.error ?? 'no reason given'}`)));
      } else inline(job, this); // an unexpected failure in the worker: do not trust it, parse here
      this.feed(slot);
    });
    const lost = (why: unknown): void => {
      const i = this.slots.indexOf(slot);
      if (i < 0) return; // killed on purpose: its job is already settled
      this.slots.splice(i, 1);
      const job = slot.busy;
      slot.busy = null;
      if (job) {
        if (this.isolation) {
          const reason = why instanceof Error ? why.message : 'the parse worker exited';
          const detail = /ERR_WORKER_OUT_OF_MEMORY|out of memory/i.test(`${(why as { code?: string })?.code ?? ''} ${reason}`)
            ? `parsing needs more than the parse worker's ${workerHeapMb()} MB heap`
            : reason;
          this.settle(job, () => job.reject(new ParseWorkerError(job.path, detail, { cause: why })));
        } else inline(job, this);
      }
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
    const limit = this.isolation?.jobTimeoutMs;
    if (limit && limit > 0) {
      job.timer = setTimeout(() => {
        if (slot.busy !== job) return;
        this.kill(slot);
        this.settle(job, () => job.reject(new ParseWorkerError(job.path, `parsing took longer than ${limit} ms; the parse was stopped`)));
        this.schedule();
      }, limit);
      job.timer.unref();
    }
    slot.worker.postMessage({ id: job.id, kind: job.kind ?? 'rows', lines: job.lines, format: job.format, path: job.path, source: job.source });
  }

  private armIdle(): void {
    if (this.idleTimer || this.slots.some((s) => s.busy)) return;
    // Isolated: extra workers stop after IDLE_MS, the last one after ISOLATED_KEEP_MS.
    const keep = this.isolation && this.slots.length > 1 ? 1 : 0;
    if (this.slots.length <= keep) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.queue.length || this.slots.some((s) => s.busy)) return;
      for (const s of this.slots.splice(keep)) void s.worker.terminate();
      if (this.slots.length) this.armIdle();
    }, keep === 0 && this.isolation ? ISOLATED_KEEP_MS : IDLE_MS);
    this.idleTimer.unref();
  }

  /** Paths of the files being parsed, or waiting, for a judgement (its signal): a timeout names them. */
  pathsOf(signal: AbortSignal): string[] {
    const held = this.slots.map((s) => s.busy).filter((j): j is Job => !!j && j.signal === signal);
    return [...held, ...this.queue.filter((j) => j.signal === signal)].map((j) => j.path);
  }

  /** Workers currently running (for tests and the benchmark). */
  get workers(): number {
    return this.slots.length;
  }

  /** Jobs waiting or running (for tests). */
  get pending(): number {
    return this.queue.length + this.slots.filter((s) => s.busy).length;
  }
}

function inline(job: Job, pool: { settle(job: Job, fn: () => void): void }): void {
  let rows: string[];
  try {
    rows = extractRows(job.format, job.path, job.source, job.known);
  } catch (err) {
    pool.settle(job, () => job.reject(err));
    return;
  }
  pool.settle(job, () => job.resolve(rows));
}

export const parsePool = new ParsePool();
