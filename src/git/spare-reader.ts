// A push's cat-file started before the push (issue 24). Starting the reader of a push's
// quarantine when its hook request arrives put git's start (through the spawn helper: 4-10 ms,
// traced) on the path of every judgement that reads a pushed blob. A spare reader is started
// for a repository ahead of its next push instead, with one alternate object folder of its own
// (a private, empty folder). git reads alternates at its first object lookup, not at start, and
// follows an alternate's own `info/alternates`: when a push comes, that file is made to name the
// push's quarantine, and the spare, which has read nothing yet, sees exactly what receive-pack's
// view holds (the repository's objects and the quarantine). It answers that one push and ends
// with it; the next spare is started when that push's receive-pack has ended.

import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CatFileBatch } from './cat-file.js';
import { gitEnv } from './exec.js';

interface Spare {
  batch: CatFileBatch;
  slot: string;
}

/** Repositories with a spare at once, the most recently pushed kept. */
const MAX_SPARES = 16;

export class SpareReaders {
  private dir: string | null = null;
  private readonly spares = new Map<string, Spare>();
  private n = 0;
  private closed = false;

  /** The slot folders' parent: private (mkdtemp makes it 0700), made at the first spare. */
  private root(): string {
    this.dir ??= mkdtempSync(join(tmpdir(), 'pg-readers-'));
    return this.dir;
  }

  /** Starts a spare reader for the repository unless it has a live one. */
  prime(repoDir: string): void {
    if (this.closed) return;
    const had = this.spares.get(repoDir);
    if (had && !had.batch.dead) return;
    if (had) this.drop(repoDir, had);
    const slot = join(this.root(), String(this.n++));
    try {
      mkdirSync(join(slot, 'objects', 'info'), { recursive: true });
      const batch = new CatFileBatch(repoDir, gitEnv({ GIT_ALTERNATE_OBJECT_DIRECTORIES: join(slot, 'objects') }));
      // Removed in the background: its reader's exit arrives while a push may be answered.
      batch.whenClosed(() => void rm(slot, { recursive: true, force: true }).catch(() => {}));
      this.spares.set(repoDir, { batch, slot });
    } catch {
      rmSync(slot, { recursive: true, force: true });
      return; // no spare: the next push starts its own reader, as before
    }
    for (const [dir, s] of this.spares) {
      if (this.spares.size <= MAX_SPARES) break;
      this.drop(dir, s);
    }
  }

  /**
   * The repository's spare, now reading the push's quarantine as well; null when there is no
   * live spare or the variables are not receive-pack's plain quarantine of this repository
   * (objects written to GIT_QUARANTINE_PATH, the repository's own objects as the only
   * alternate): then the push starts its own reader with its own variables.
   */
  take(repoDir: string, env: Record<string, string | undefined>): CatFileBatch | null {
    const s = this.spares.get(repoDir);
    if (!s) return null;
    const q = env.GIT_QUARANTINE_PATH;
    if (!q || env.GIT_OBJECT_DIRECTORY !== q || !q.startsWith('/') || /[\n\r"]/.test(q) || !sameDir(env.GIT_ALTERNATE_OBJECT_DIRECTORIES, join(repoDir, 'objects'))) return null;
    this.spares.delete(repoDir);
    if (s.batch.dead) {
      rmSync(s.slot, { recursive: true, force: true });
      return null;
    }
    try {
      writeFileSync(join(s.slot, 'objects', 'info', 'alternates'), `${q}\n`);
    } catch {
      s.batch.close();
      return null;
    }
    return s.batch;
  }

  private drop(repoDir: string, s: Spare): void {
    this.spares.delete(repoDir);
    s.batch.close();
  }

  /** At stop: every spare ended, the slots removed. */
  closeAll(): void {
    this.closed = true;
    for (const [dir, s] of this.spares) this.drop(dir, s);
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** True when `value` is exactly one folder and it is `dir` (after symbolic links). */
function sameDir(value: string | undefined, dir: string): boolean {
  if (!value || value.includes(':')) return false;
  try {
    return realpathSync(value) === realpathSync(dir);
  } catch {
    return false;
  }
}
