// Why this exists (issue 24): git's receive-pack runs `git gc --auto` after every push, a
// process (and its children) on the push's own path. Gated repositories carry
// `receive.autogc=false` (src/server/repos.ts), and the daemon runs `git gc --auto` itself once
// a repository has been quiet for a while after a push:
//   - never started while a push to that repository is in flight (pushes mark themselves with
//     `enter`, which returns the release);
//   - a push that arrives while a gc runs waits for it at most `waitMs`, then goes ahead (git
//     itself runs its auto gc detached, beside later pushes, so that is safe, only slower);
//   - one gc at a time for the whole daemon, each bounded by `timeoutMs` (its process group
//     is killed), all stopped at `stop()`;
//   - only on repositories whose `receive.autogc` is false: on any other, git does its own.
// A failed or timed-out gc only logs: it changes nothing but disk use and read speed.

import { Git } from '../git/git.js';
import { errorMessage } from '../errors.js';

export interface IdleGcOptions {
  /** How long a repository must have had no push before its gc starts (ms). */
  quietMs?: number;
  /** Longest one gc may run (ms); then its process group is killed. */
  timeoutMs?: number;
  /** Longest a push waits for a running gc of its repository before it goes ahead (ms). */
  waitMs?: number;
  log?: (line: string) => void;
}

export const IDLE_GC_DEFAULTS = { quietMs: 30_000, timeoutMs: 10 * 60_000, waitMs: 10_000 } as const;

interface RepoState {
  active: number;
  timer: NodeJS.Timeout | null;
  running: Promise<void> | null;
}

export interface GcRun {
  repoDir: string;
  outcome: 'done' | 'skipped' | 'failed';
  detail?: string;
}

export class IdleGc {
  private readonly repos = new Map<string, RepoState>();
  /** One gc at a time, daemon-wide. */
  private chain: Promise<void> = Promise.resolve();
  private readonly stopping = new AbortController();
  private readonly quietMs: number;
  private readonly timeoutMs: number;
  private readonly waitMs: number;
  private readonly log: (line: string) => void;
  /** What each finished gc did, newest last (bounded; for tests and /metrics-like reading). */
  readonly runs: GcRun[] = [];

  constructor(opts: IdleGcOptions = {}) {
    this.quietMs = opts.quietMs ?? IDLE_GC_DEFAULTS.quietMs;
    this.timeoutMs = opts.timeoutMs ?? IDLE_GC_DEFAULTS.timeoutMs;
    this.waitMs = opts.waitMs ?? IDLE_GC_DEFAULTS.waitMs;
    this.log = opts.log ?? ((l) => void process.stderr.write(l + '\n'));
  }

  private state(repoDir: string): RepoState {
    let s = this.repos.get(repoDir);
    if (!s) this.repos.set(repoDir, (s = { active: 0, timer: null, running: null }));
    return s;
  }

  /**
   * A push to `repoDir` begins: waits (at most waitMs) for a gc of it that is running, cancels
   * a pending one, and returns the release (idempotent) to call when the push has ended.
   */
  async enter(repoDir: string): Promise<() => void> {
    const s = this.state(repoDir);
    s.active++;
    if (s.timer) clearTimeout(s.timer);
    s.timer = null;
    if (s.running) {
      let t: NodeJS.Timeout | undefined;
      await Promise.race([s.running, new Promise<void>((r) => (t = setTimeout(r, this.waitMs)))]);
      clearTimeout(t);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      s.active--;
      if (s.active === 0) this.schedule(repoDir, s);
    };
  }

  /** Pushes in flight to `repoDir` (for tests). */
  inFlight(repoDir: string): number {
    return this.repos.get(repoDir)?.active ?? 0;
  }

  private schedule(repoDir: string, s: RepoState): void {
    if (this.stopping.signal.aborted) return;
    if (s.timer) clearTimeout(s.timer);
    s.timer = setTimeout(() => {
      s.timer = null;
      if (s.active > 0 || s.running || this.stopping.signal.aborted) return;
      const run = this.chain.then(() => this.runOne(repoDir, s));
      s.running = run;
      this.chain = run;
      void run.finally(() => {
        if (s.running === run) s.running = null;
        if (s.active === 0 && !s.timer && !s.running) this.repos.delete(repoDir);
      });
    }, this.quietMs);
    s.timer.unref();
  }

  private record(r: GcRun): void {
    this.runs.push(r);
    if (this.runs.length > 100) this.runs.shift();
  }

  private async runOne(repoDir: string, s: RepoState): Promise<void> {
    // A push that came in while this gc waited for the one before it: not now.
    if (s.active > 0 || this.stopping.signal.aborted) return this.record({ repoDir, outcome: 'skipped', detail: 'busy or stopping' });
    const git = new Git({ dir: repoDir, bare: true });
    try {
      if ((await git.configGet('receive.autogc'))?.toLowerCase() !== 'false') {
        return this.record({ repoDir, outcome: 'skipped', detail: 'receive.autogc is not false: git runs its own' });
      }
      if (s.active > 0) return this.record({ repoDir, outcome: 'skipped', detail: 'busy' });
      const r = await git.remote(['-c', 'gc.autoDetach=false', 'gc', '--auto', '--quiet'], { timeoutMs: this.timeoutMs, signal: this.stopping.signal });
      if (r.code === 0) return this.record({ repoDir, outcome: 'done' });
      const why = r.timedOut ? `timed out after ${this.timeoutMs} ms` : this.stopping.signal.aborted ? 'stopped with the daemon' : (r.stderr.trim().split('\n')[0] ?? `exit ${r.code}`);
      this.record({ repoDir, outcome: 'failed', detail: why });
      if (!this.stopping.signal.aborted) this.log(`patchgate: git gc --auto in ${repoDir} failed: ${why}`);
    } catch (err) {
      this.record({ repoDir, outcome: 'failed', detail: errorMessage(err) });
      this.log(`patchgate: git gc --auto in ${repoDir} failed: ${errorMessage(err).split('\n')[0]}`);
    } finally {
      git.close();
    }
  }

  /** Settles when no gc is pending or running (for tests). */
  async settled(): Promise<void> {
    for (;;) {
      const pending = [...this.repos.values()].filter((s) => s.timer || s.running);
      if (!pending.length) return;
      await Promise.all(pending.map((s) => s.running ?? new Promise((r) => setTimeout(r, Math.min(this.quietMs, 50)))));
    }
  }

  /** Cancels pending gcs and stops (kills) a running one. */
  async stop(): Promise<void> {
    this.stopping.abort();
    for (const s of this.repos.values()) {
      if (s.timer) clearTimeout(s.timer);
      s.timer = null;
    }
    await this.chain.catch(() => {});
  }
}
