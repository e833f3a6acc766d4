// How many pushes are judged at once. Judging is mostly CPU on one thread (parses, digests)
// plus waits on git: 32 pushes judged side by side on 2 cores each hold their trees, rows and
// parse trees at the same time (the daemon's peak memory under the bench's 32 agents) and all
// finish late together. With a few slots the others wait their turn in arrival order; a wait
// counts against the push's own hook time limit, and a push whose hook hung up or whose limit
// passed while it waited leaves the line without having started anything.

import { availableParallelism } from 'node:os';

/** The default: two per core, at least 2 (PATCHGATE_JUDGE_SLOTS=N sets it; 0 means no bound). */
export function defaultJudgeSlots(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.PATCHGATE_JUDGE_SLOTS;
  if (raw !== undefined && /^\d+$/.test(raw.trim())) return Number(raw.trim());
  return Math.max(2, availableParallelism() * 2);
}

/** A counting semaphore with a FIFO line; `acquire` rejects with the signal's reason when cancelled while waiting. */
export class Slots {
  private running = 0;
  private readonly line: Array<{ grant: () => void }> = [];

  /** `size` 0: unbounded. */
  constructor(readonly size: number) {}

  /** Pushes waiting for a slot (for /healthz and tests). */
  get waiting(): number {
    return this.line.length;
  }

  get busy(): number {
    return this.running;
  }

  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.size === 0 || this.running < this.size) {
      this.running++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          this.running++;
          resolve(this.releaser());
        },
      };
      const onAbort = () => {
        const i = this.line.indexOf(entry);
        if (i >= 0) this.line.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.line.push(entry);
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.running--;
      this.line.shift()?.grant();
    };
  }
}
