// Intent before effect. An accepting decision is written to the audit log before anything
// outside the gate changes (the forward to upstream, git's ref update), and a push whose
// effects are not settled yet has an entry in `<data>/intents/` (one small 0600 file per push,
// fsync'd, made before its decision row). The entry goes away only once every row that
// follows the decision (the forward's outcome, the confirms of what moved) is in the log. So
// a crash, a kill -9 or a store that went down leaves the entry behind, and the next start
// compares the decision rows with the real refs and records what happened
// (src/upstream/recover.ts).
//
// Rows after the decision never refuse anything (the effect already happened): a write that
// fails is kept in order in `RowQueue` and retried with back-off until the store answers;
// what is still unwritten at stop is named on stderr, and its entry stays for the next start.

import { closeSync, existsSync, fsyncSync, openSync, readFileSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../errors.js';
import { privateDir } from '../private-files.js';

export interface IntentEntry {
  pushId: string;
  repo: string;
  repoDir: string;
  /** The push is forwarded to an upstream remote (its refs there are compared at recovery). */
  upstream: boolean;
  time: string;
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\.json$/;

/** The folder of unsettled pushes; every write is fsync'd (file and folder) before it returns. */
export class IntentJournal {
  constructor(readonly dir: string) {}

  /** Before the decision row: throws when the entry cannot be made durable (the push is refused). */
  open(e: Omit<IntentEntry, 'time'>): void {
    privateDir(this.dir);
    const path = join(this.dir, `${e.pushId}.json`);
    const fd = openSync(path, 'w', 0o600);
    try {
      writeSync(fd, JSON.stringify({ ...e, time: new Date().toISOString() }) + '\n');
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.syncDir();
  }

  settle(pushId: string): void {
    rmSync(join(this.dir, `${pushId}.json`), { force: true });
    this.syncDir();
  }

  has(pushId: string): boolean {
    return existsSync(join(this.dir, `${pushId}.json`));
  }

  /** Every unsettled push, oldest first; an unreadable entry is named in `bad`. */
  list(): { entries: IntentEntry[]; bad: string[] } {
    if (!existsSync(this.dir)) return { entries: [], bad: [] };
    const entries: IntentEntry[] = [];
    const bad: string[] = [];
    for (const f of readdirSync(this.dir).filter((n) => NAME_RE.test(n))) {
      try {
        const e = JSON.parse(readFileSync(join(this.dir, f), 'utf8')) as IntentEntry;
        if (typeof e.pushId !== 'string' || typeof e.repoDir !== 'string' || typeof e.repo !== 'string') throw new Error('missing fields');
        entries.push(e);
      } catch (err) {
        bad.push(`${f}: ${errorMessage(err)}`);
      }
    }
    return { entries: entries.sort((a, b) => a.time.localeCompare(b.time)), bad };
  }

  private syncDir(): void {
    try {
      const fd = openSync(this.dir, 'r');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch {
      // a folder fsync is not supported everywhere; the file itself was synced
    }
  }
}

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
