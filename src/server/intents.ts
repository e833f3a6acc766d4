// Intent before effect. An accepting decision is written to the audit log before anything
// outside the gate changes (the forward to upstream, git's ref update), and a push whose
// effects are not settled yet has an entry in `<data>/intents/journal.jsonl` (an append-only
// 0600 file, fdatasync'd before its decision row is written: ./intent-journal.ts). The entry
// is settled only once every row that follows the decision (the forward's outcome, the
// confirms of what moved) is in the log. So
// a crash, a kill -9 or a store that went down leaves the entry behind, and the next start
// compares the decision rows with the real refs and records what happened
// (src/upstream/recover.ts).
//
// Rows after the decision never refuse anything (the effect already happened): a write that
// fails is kept in order in `RowQueue` and retried with back-off until the store answers;
// what is still unwritten at stop is named on stderr, and its entry stays for the next start.

import { errorMessage } from '../errors.js';

export { IntentJournal, type IntentEntry } from './intent-journal.js';

interface QueuedRow {
  pushId: string;
  what: string;
  run: () => unknown;
  failures: number;
}

/**
 * Audit rows that follow a decision, written in the order they were asked for. A row is tried
 * at once when nothing waits before it; a failure keeps it (and everything after it) queued
 * and retried with back-off (0.5 s doubling to 30 s). Nothing is dropped: `flush` at stop
 * names what is left.
 */
export class RowQueue {
  private readonly items: QueuedRow[] = [];
  private draining: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private delay = 500;
  private stopped = false;

  constructor(private readonly log: (line: string) => void = (l) => process.stderr.write(l + '\n')) {}

  /** Rows not written yet (for /healthz and tests). */
  get pending(): number {
    return this.items.length;
  }

  /** Queue `run`; resolves once it was tried (true: written now; false: queued for a retry). */
  async write(pushId: string, what: string, run: () => unknown): Promise<boolean> {
    const item: QueuedRow = { pushId, what, run, failures: 0 };
    this.items.push(item);
    if (!this.timer && !this.stopped) await this.drain();
    else if (this.draining) await this.draining;
    return !this.items.includes(item);
  }

  /** Settles when the queue is empty or waiting for a retry. */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private drain(): Promise<void> {
    if (this.draining) return this.draining;
    this.draining = (async () => {
      while (this.items.length) {
        const item = this.items[0]!;
        try {
          await item.run();
          this.items.shift();
          this.delay = 500;
        } catch (err) {
          item.failures++;
          if (item.failures === 1 || item.failures % 10 === 0) {
            this.log(`patchgate: audit: ${item.what} (push ${item.pushId}) could not be written (${errorMessage(err).split('\n')[0]}); kept and retried, ${this.items.length} row(s) waiting`);
          }
          if (!this.stopped) this.schedule();
          return;
        }
      }
    })().finally(() => {
      this.draining = null;
    });
    return this.draining;
  }

  private schedule(): void {
    if (this.timer) return;
    const wait = this.delay;
    this.delay = Math.min(this.delay * 2, 30_000);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.drain();
    }, wait);
    this.timer.unref();
  }

  /** At stop: one last try; what is still unwritten is named (its intent entry stays for the next start). */
  async flush(): Promise<number> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.idle();
    await this.drain();
    for (const it of this.items) this.log(`patchgate: audit: NOT written at stop: ${it.what} (push ${it.pushId}); its entry in the intent journal stays, and the next start records what happened`);
    return this.items.length;
  }
}
