// The cache warm-ups at start: the contract of each repository's trusted tip, computed in the
// background one repository at a time, so an agent's first push differs from a cached tree
// by a few files. Only a cache (a failure changes nothing but speed); its progress shows on
// the terminal or the log and in /healthz (src/server/health.ts).

import { Git } from '../../git/git.js';
import { ContractParseError, errorMessage } from '../../errors.js';
import { CONTRACT_SKIPPED_WHY, contractFileCount, contractOf } from '../../contract/digest.js';
import { Progress } from '../../progress.js';
import { runCancellable } from '../../cancel.js';
import { runInBackground } from '../../contract/priority.js';
import type { HookContext } from './context.js';
import { trustedState } from './judge.js';

/** Writes a cache's queued entries to disk, when it has a disk (ContentCache); a plain Map has nothing to write. */
function flushCache(cache: Map<string, unknown>): void {
  const f = (cache as { flush?: unknown }).flush;
  if (typeof f === 'function') (f as () => void).call(cache);
}

export class Warmer {
  private warming: Promise<void> = Promise.resolve();
  /** Warm-ups queued or running, and the running one's progress (for /healthz). */
  private warmQueued = 0;
  private warmProgress: Progress | null = null;

  /** `stopping` fires at stop() and ends the warm-ups; `listening` is false before start and after stop. */
  constructor(private readonly ctx: HookContext, private readonly stopping: AbortSignal, private readonly listening: () => boolean) {}

  /**
   * Fill the cache with the contract of the repository's trusted tip, in the background, at
   * start. An agent's first push then differs from a cached tree by a few files instead of
   * parsing the whole repository inside its hook time limit. (A push through the gate needs
   * no warm-up afterwards: judging it computed the new tip's contract.) Only a cache: a
   * failure here changes nothing but speed, and it reads through its own cat-file so pushes
   * never queue behind it.
   */
  warmRepo(repoDir: string, before?: () => Promise<unknown>): void {
    // `before`: what must happen first, in the same queue (an upstream fetch); its failure only logs.
    const first = (): Promise<unknown> => (before ? before().catch((err: unknown) => process.stderr.write(`patchgate: ${errorMessage(err).split('\n')[0]}\n`)) : Promise.resolve());
    this.warmQueued++;
    // Background work: its parses give way to pushes being judged (src/contract/priority.ts).
    this.warming = this.warming.then(() => runCancellable(this.stopping, () => runInBackground(async () => (await first(), this.warm(repoDir))))).catch((err: unknown) => {
      if (!this.listening()) return; // stopped on the way: nothing to report
      process.stderr.write(`patchgate: cache warm-up of ${repoDir} stopped: ${errorMessage(err).split('\n')[0]}\n`);
    }).finally(() => {
      this.warmQueued--;
    });
  }

  /** While warm-ups are queued or running: how many, and the running one's files done of its total (null: none). */
  warmingStatus(): { repositories: number; done: number; total: number | null } | null {
    if (this.warmQueued <= 0) return null;
    const cur = this.warmProgress?.current;
    return { repositories: this.warmQueued, done: cur?.done ?? 0, total: cur?.total ?? null };
  }

  /** Settles when the warm-ups queued so far are done (for tests and the benchmark). */
  get warmed(): Promise<void> {
    return this.warming;
  }

  private async warm(repoDir: string): Promise<void> {
    if (!this.listening()) return;
    const git = new Git({ dir: repoDir, bare: true });
    try {
      const { trustedTip: tip, policy } = await trustedState(git);
      if (!tip) return;
      const { roots, format, maxSourceBytes } = policy.contract;
      const out = this.ctx.opts.progress ?? { write: (t: string) => this.ctx.log(t.replace(/\n$/, '')), isTTY: false };
      const progress = new Progress({ ...out, skippedWhy: CONTRACT_SKIPPED_WHY });
      this.warmProgress = progress;
      progress.phase(`patchgate: warming ${repoDir}`, await contractFileCount(git, tip, roots, format));
      let note = '';
      await contractOf(git, tip, roots, format, this.ctx.opts.cache, { maxSourceBytes, onFile: (n) => progress.tick(n) }).catch((err: unknown) => {
        if (!(err instanceof ContractParseError)) throw err; // a trusted tree that does not parse: nothing to warm
        note = 'the trusted tip does not parse (nothing more cached)';
      });
      // The cache queues its disk writes (src/cache/content-cache.ts): a finished warm-up is on disk now.
      flushCache(this.ctx.opts.cache);
      progress.end(note);
    } finally {
      this.warmProgress = null;
      // For good: a file of the walk still on its way (a stopped warm-up) reads nothing more.
      git.dispose();
    }
  }
}
