// The hook service's long-lived readers of each repository's own object store (no push's
// quarantine), kept open across pushes: one cat-file per repository, the 32 most recently used.
// A push's quarantine reader, the judge, the moved-ref check and the intent recovery read
// through them.

import { Git } from '../../git/git.js';
import type { CatFileBatch } from '../../git/cat-file.js';
import { SpareReaders } from '../../git/spare-reader.js';

export class MainStores {
  /** One long-lived reader per repository of its own object store (no quarantine), most recent last. */
  private readonly stores = new Map<string, Git>();

  private closed = false;

  /** The repository's object store without any push's quarantine; kept open across pushes. */
  get(repoDir: string): Git {
    if (this.closed) {
      // After stop: a view whose reads fail rather than start a reader nothing would close.
      const gone = new Git({ dir: repoDir, bare: true });
      gone.dispose();
      return gone;
    }
    let g = this.stores.get(repoDir);
    if (g) this.stores.delete(repoDir);
    else g = new Git({ dir: repoDir, bare: true });
    this.stores.set(repoDir, g);
    while (this.stores.size > 32) {
      const [oldest, og] = this.stores.entries().next().value as [string, Git];
      og.close();
      this.stores.delete(oldest);
    }
    return g;
  }

  /** Each repository's reader started ahead of its next push (src/git/spare-reader.ts). */
  private readonly spares = new SpareReaders();

  /** The repository's spare reader, now reading this push's quarantine; null: the push starts its own. */
  spare(repoDir: string, env: Record<string, string | undefined>): CatFileBatch | null {
    return this.spares.take(repoDir, env);
  }

  /** Starts the repository's spare for its next push (when a push's receive-pack has ended). */
  prime(repoDir: string): void {
    this.spares.prime(repoDir);
  }

  /** At stop: every reader closed for good (work still on its way, a push's warm-up say, gets an error, not a new reader). */
  closeAll(): void {
    this.closed = true;
    this.spares.closeAll();
    for (const g of this.stores.values()) g.dispose();
    this.stores.clear();
  }
}
