// One `patchgate serve` per data folder. A second server on the same folder used to
// overwrite `hook.endpoint` and delete it on exit, after which every push to the first was
// refused. The lock is an exclusive SQLite transaction held on `<data>/serve.lock` for the
// life of the server: SQLite takes it with POSIX file locks, which the kernel drops when the
// process dies (kill -9 included), so a lock is never left stale, and a second start gets
// SQLITE_BUSY at once. `serve.pid` beside it only names the holder in the refusal.

import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { privateFile } from '../private-files.js';
import Database from 'better-sqlite3';
import { StartupError, errorMessage } from '../errors.js';

export interface DataDirLock {
  release(): void;
}

export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, 'serve.lock');
  const pidPath = join(dataDir, 'serve.pid');
  let opened: Database.Database | undefined;
  try {
    privateFile(path);
    opened = new Database(path, { timeout: 0 });
    opened.pragma('locking_mode = EXCLUSIVE');
    opened.exec('BEGIN EXCLUSIVE');
  } catch (err) {
    if (opened?.open) opened.close();
    if ((err as { code?: string }).code === 'SQLITE_BUSY') {
      let holder = '';
      try {
        holder = ` (pid ${readFileSync(pidPath, 'utf8').trim()})`;
      } catch {
        // the holder's pid file is informational only
      }
      throw new StartupError('LOCKED', `data folder ${dataDir} is in use by another patchgate serve${holder}; stop it first, or start this one with another --data`, { cause: err });
    }
    throw new StartupError('LOCKED', `cannot lock data folder ${dataDir} (${path}): ${errorMessage(err)}`, { cause: err });
  }
  const db = opened;
  writeFileSync(pidPath, `${process.pid}\n`, { mode: 0o600 });
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      try {
        if (readFileSync(pidPath, 'utf8').trim() === String(process.pid)) rmSync(pidPath, { force: true });
      } catch {
        // already gone
      }
      db.close(); // ends the transaction and drops the file lock
    },
  };
}
