// Rate limit and coalescing for the `auth` rows the hook endpoint writes. Any local process
// can call the endpoint, and every call without the secret or from an unknown pid used to add
// one audit row: a loop could grow patchgate.db without bound and bury real events. Now each
// kind of failure writes its first row at once, repeats within the window are only counted,
// and when the window ends one row says how many were folded into it. A global cap bounds the
// rows per window whatever the mix of kinds. Nothing here decides a push: a rate-limited
// request is refused all the same, only not logged one by one.

import { errorMessage } from '../errors.js';
import type { AuthFailureInput } from '../audit/store.js';
import type { AuditSink } from '../audit/sink.js';

export interface AuthRowLimits {
  /** Length of one window (ms). */
  windowMs: number;
  /** Rows of one kind written at once per window; later repeats are counted. */
  perKind: number;
  /** Rows of all kinds written at once per window. */
  total: number;
}

export const DEFAULT_AUTH_ROW_LIMITS: AuthRowLimits = { windowMs: 60_000, perKind: 3, total: 20 };

interface Bucket {
  written: number;
  folded: number;
  /** The last folded failure, as an example for the summary row. */
  last: AuthFailureInput | null;
}

export class AuthRowLimiter {
  private buckets = new Map<string, Bucket>();
  private writtenTotal = 0;
  private windowStart = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly audit: AuditSink, private readonly limits: AuthRowLimits = DEFAULT_AUTH_ROW_LIMITS, private readonly now: () => number = Date.now) {}

  /**
   * Record one failure of kind `kind` (a fixed word, never client input: the number of kinds
   * bounds the memory). Returns true when a row was written now, false when it was folded.
   * Throws what the audit store throws (the caller refuses the request anyway).
   */
  record(kind: string, input: AuthFailureInput): boolean {
    const t = this.now();
    if (t - this.windowStart >= this.limits.windowMs) this.flush(t);
    let b = this.buckets.get(kind);
    if (!b) this.buckets.set(kind, (b = { written: 0, folded: 0, last: null }));
    if (b.written < this.limits.perKind && this.writtenTotal < this.limits.total) {
      b.written++;
      this.writtenTotal++;
      this.write(input);
      return true;
    }
    b.folded++;
    b.last = input;
    this.arm();
    return false;
  }

  /** Write one summary row per kind that had repeats folded, and start a new window. */
  flush(t = this.now()): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const since = new Date(this.windowStart).toISOString();
    for (const [kind, b] of this.buckets) {
      if (!b.folded || !b.last) continue;
      try {
        this.write({
          ...b.last,
          reason: `${b.last.reason} (and ${b.folded} more ${kind} failure(s) since ${since}, coalesced: the hook endpoint logs at most ${this.limits.perKind} per ${Math.round(this.limits.windowMs / 1000)} s one by one)`,
        });
      } catch (err) {
        process.stderr.write(`patchgate: audit: could not write the summary of ${b.folded} ${kind} failure(s): ${errorMessage(err)}\n`);
      }
    }
    this.buckets = new Map();
    this.writtenTotal = 0;
    this.windowStart = t;
  }

  /** A synchronous store throws here (to the caller); an async one's failure is logged, the request is refused anyway. */
  private write(input: AuthFailureInput): void {
    const r = this.audit.appendAuthFailure(input);
    if (r instanceof Promise) r.catch((err: unknown) => process.stderr.write(`patchgate: audit: could not write an auth row: ${errorMessage(err)}\n`));
  }

  private arm(): void {
    if (this.timer) return;
    const wait = Math.max(0, this.windowStart + this.limits.windowMs - this.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush();
    }, wait);
    this.timer.unref();
  }

  /** Write what is folded and stop the timer (at shutdown). */
  close(): void {
    this.flush();
  }
}
