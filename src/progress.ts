// Why this exists (issue 24): a warm-up of a large repository parses for many seconds, and it
// used to say nothing until the end. This is the one progress reporter: files done of the
// total, the rate and the time left. On a terminal the line updates in place (`\r`, cleared
// to its end, at most every `everyMs`); anywhere else (a log, a pipe) it writes one line when
// a phase starts and one when it ends, so logs stay readable. Whether the stream is a
// terminal is a parameter, so both forms are tested without a terminal.

import { liveCount } from './policy/live.js';

export interface ProgressState {
  /** What is being done, e.g. "warming app". */
  label: string;
  done: number;
  /** null: not known (no rate-based time left then). */
  total: number | null;
  elapsedMs: number;
  /** The unit counted (default "files"). */
  unit?: string;
  /** What is done to each unit (default "parsed"; "checked" for audit rows). */
  verb?: string;
}

/** "12 s", "2 min 05 s", "1 h 02 min". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

/** One progress line: `LABEL: DONE/TOTAL files parsed, R files/s, about T left`. */
export function formatProgress(p: ProgressState): string {
  const unit = p.unit ?? 'files';
  const verb = p.verb ?? 'parsed';
  const secs = p.elapsedMs / 1000;
  const rate = secs > 0 ? p.done / secs : 0;
  const count = p.total === null ? `${p.done} ${unit} ${verb}` : `${p.done}/${p.total} ${unit} ${verb}`;
  const parts = [count];
  if (secs >= 0.5 && p.done > 0) parts.push(`${rate >= 10 ? Math.round(rate) : rate.toFixed(1)} ${unit}/s`);
  if (p.total !== null && rate > 0 && p.done < p.total) parts.push(`about ${formatDuration(((p.total - p.done) / rate) * 1000)} left`);
  return `${p.label}: ${parts.join(', ')}`;
}

/** The end of a phase: `LABEL: done, N files parsed in T (R files/s)`. */
export function formatDone(p: ProgressState, note = ''): string {
  const unit = p.unit ?? 'files';
  const secs = p.elapsedMs / 1000;
  const rate = secs > 0 ? ` (${Math.round(p.done / secs)} ${unit}/s)` : '';
  return `${p.label}: done, ${p.done} ${unit} ${p.verb ?? 'parsed'} in ${formatDuration(p.elapsedMs)}${rate}${note ? `; ${note}` : ''}`;
}

export interface ProgressOptions {
  write: (text: string) => void;
  isTTY: boolean;
  /** Least time between two in-place updates on a terminal (default 250 ms). */
  everyMs?: number;
  now?: () => number;
  unit?: string;
  verb?: string;
  /** Say nothing unless the phase is still running this long after it started (default 0: at once). */
  delayMs?: number;
  /**
   * Why units of the total may not be counted (a contract walk does not read again the files of
   * a folder whose contract it already knows): the end line then says `N skipped (WHY)`, so
   * "19 files to read" and "13 files parsed" add up (issue 49). Without it the line is as before.
   */
  skippedWhy?: string;
}

export class Progress {
  private label = '';
  private total: number | null = null;
  private doneCount = 0;
  private started = 0;
  private lastDraw = -Infinity;
  private drawn = false;
  private open = false;
  /** The phase was announced (its first line or draw was written). */
  private shown = false;
  private readonly now: () => number;
  private readonly everyMs: number;

  constructor(private readonly opts: ProgressOptions) {
    this.now = opts.now ?? (() => Date.now());
    this.everyMs = opts.everyMs ?? 250;
  }

  private state(): ProgressState {
    return { label: this.label, done: this.doneCount, total: this.total, elapsedMs: this.now() - this.started, ...(this.opts.unit ? { unit: this.opts.unit } : {}), ...(this.opts.verb ? { verb: this.opts.verb } : {}) };
  }

  /**
   * A new phase (ends the one before): a line of its own off a terminal. `from`: a phase
   * announced late (slowPhase) counts its time and units from when the work really began.
   */
  phase(label: string, total: number | null, from?: { startedAt: number; done: number }): void {
    if (this.open) this.end();
    this.label = label;
    this.total = total;
    this.doneCount = from?.done ?? 0;
    this.started = from?.startedAt ?? this.now();
    this.lastDraw = -Infinity;
    this.open = true;
    this.shown = false;
    if (!this.opts.delayMs) this.announce();
  }

  private announce(): void {
    this.shown = true;
    if (this.opts.isTTY) this.draw();
    else this.opts.write(`${this.label}: ${this.total === null ? 'started' : `${this.total} ${this.opts.unit ?? 'files'} to read`}\n`);
  }

  /** `n` more units done. */
  tick(n = 1): void {
    if (!this.open) return;
    this.doneCount += n;
    if (!this.shown) {
      if (this.now() - this.started >= (this.opts.delayMs ?? 0)) this.announce();
    } else if (this.opts.isTTY && this.now() - this.lastDraw >= this.everyMs) this.draw();
  }

  get done(): number {
    return this.doneCount;
  }

  get current(): ProgressState | null {
    return this.open ? this.state() : null;
  }

  private draw(): void {
    this.lastDraw = this.now();
    this.drawn = true;
    this.opts.write(`\r${formatProgress(this.state())}\x1b[K`);
  }

  /** Ends the phase: its last line (on a terminal it replaces the updating one). */
  end(note = ''): void {
    if (!this.open) return;
    this.open = false;
    if (!this.shown) return; // short enough to say nothing
    const skipped = this.total !== null && this.opts.skippedWhy && !note ? this.total - this.doneCount : 0;
    const line = formatDone(this.state(), skipped > 0 ? `${skipped} skipped (${this.opts.skippedWhy})` : note);
    this.opts.write(this.opts.isTTY && this.drawn ? `\r${line}\x1b[K\n` : `${line}\n`);
    this.drawn = false;
  }
}

/** Progress on this process's stderr: in place on a terminal, lines elsewhere. */
export function stderrProgress(): { write: (text: string) => void; isTTY: boolean } {
  return { write: (t) => void process.stderr.write(t), isTTY: !!process.stderr.isTTY };
}

export interface SlowPhaseOptions extends Pick<ProgressOptions, 'write' | 'isTTY' | 'now' | 'unit' | 'verb' | 'everyMs' | 'skippedWhy'> {
  /** Say nothing unless the work still runs this long after it started (default 2000 ms). */
  delayMs?: number;
  /**
   * Ask `total()` this long after the start even if nothing is said yet (default: at delayMs),
   * so a refusal for time within the delay still says "N of TOTAL" (src/policy/live.ts).
   */
  countAfterMs?: number;
  /** What the phase walks, for a refusal for time ("the pushed commit 1a2b3c4d5e6f"). */
  what?: string;
}

/**
 * Asynchronous work that may take long (a first push's contract parse, a PostgreSQL walk):
 * silent when it ends within `delayMs`; otherwise, once that time has passed, the phase is
 * announced (its total from `total()`, asked only then, so a short run costs nothing extra)
 * with the units and time counted from the real start, and ended with the usual done line.
 * `work` gets the tick to call per unit done. A timer, not a tick, announces it, so work that
 * ticks rarely (or never) is still reported.
 */
export async function slowPhase<T>(out: SlowPhaseOptions, label: string, total: () => Promise<number | null>, work: (tick: (n?: number) => void) => Promise<T>): Promise<T> {
  const now = out.now ?? (() => Date.now());
  const startedAt = now();
  let done = 0;
  let finished = false;
  let progress: Progress | null = null;
  let known: number | null = null;
  // The phase has run the delay: its lines show even when it ends before its count is known.
  let due = false;
  let counting: Promise<number | null> | null = null;
  const count = (): Promise<number | null> => (counting ??= total().catch(() => null).then((n) => {
    known = n;
    if (!finished) liveCount(done, known, out.unit, out.verb, out.what);
    return n;
  }));
  const begin = (): void => {
    due = true;
    void count().then((n) => {
      if (finished) return;
      progress = new Progress({ ...out, delayMs: 0 });
      progress.phase(label, n, { startedAt, done });
    });
  };
  // A delay of 0 shows the phase at once (a timer of 0 may not fire before a phase that never waits on I/O ends).
  const delay = out.delayMs ?? 2000;
  const timer = delay > 0 ? setTimeout(begin, delay) : null;
  timer?.unref?.();
  const countAfter = out.countAfterMs ?? delay;
  const countTimer = timer && countAfter < delay ? setTimeout(() => void count(), countAfter) : null;
  countTimer?.unref?.();
  if (!timer) begin();
  let note = '';
  try {
    return await work((n = 1) => {
      done += n;
      progress?.tick(n);
      // A refusal for time says how far the rule running this had come (src/policy/live.ts).
      liveCount(done, known, out.unit, out.verb, out.what);
    });
  } catch (err) {
    note = 'stopped';
    throw err;
  } finally {
    finished = true;
    if (timer) clearTimeout(timer);
    if (countTimer) clearTimeout(countTimer);
    if (due && !progress) {
      // Ended before its count came: the count is still the total said (issue 49: "N files to
      // read" must be the revision's files, not the ones this walk happened to count).
      const n = known ?? (counting ? await (counting as Promise<number | null>) : null);
      progress = new Progress({ ...out, delayMs: 0 });
      progress.phase(label, n ?? done, { startedAt, done });
    }
    (progress as Progress | null)?.end(note);
  }
}
