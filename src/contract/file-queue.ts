// The contract walk's file queue (issue 24): a bounded number of one walk's files are read and
// parsed at once, the rest wait as small closures. Split out of src/contract/digest.ts; each
// walk (limitOf there) has its own queue, so a push's few files never wait behind a warm-up's.

/**
 * Files of one walk worked on at once (cache lookups, size header, read, parse): each holds its
 * blob, its decoded text and its parse. The rest wait as small closures, not as suspended calls:
 * a 50k-file tree walked with one Promise.all over every file held about 2.5 KB per file
 * before the first was parsed. Per walk, so a push's few files never queue behind a warm-up's.
 */
const FILES_IN_FLIGHT = 32;

export class FileQueue {
  private jobs: Array<(() => Promise<void>) | undefined> = [];
  private head = 0;
  private running = 0;

  /** Runs `jobs` (at most FILES_IN_FLIGHT of this queue's at once); the first failure rejects, and the batch's jobs not yet started are skipped. */
  all(jobs: Array<() => Promise<void>>): Promise<void> {
    if (!jobs.length) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let left = jobs.length;
      let failed = false;
      for (const job of jobs) {
        this.jobs.push(async () => {
          if (failed) return;
          try {
            await job();
          } catch (err) {
            if (!failed) {
              failed = true;
              reject(err);
            }
            return;
          }
          if (--left === 0) resolve();
        });
      }
      this.pump();
    });
  }

  /** One job through the queue, with its result. */
  async one<T>(fn: () => Promise<T>): Promise<T> {
    let out: T | undefined;
    await this.all([async () => void (out = await fn())]);
    return out as T;
  }

  private pump(): void {
    while (this.running < FILES_IN_FLIGHT && this.head < this.jobs.length) {
      const job = this.jobs[this.head]!;
      this.jobs[this.head++] = undefined;
      if (this.head >= 1024 && this.head * 2 >= this.jobs.length) {
        this.jobs = this.jobs.slice(this.head);
        this.head = 0;
      }
      this.running++;
      void job().finally(() => {
        this.running--;
        this.pump();
      });
    }
  }
}
