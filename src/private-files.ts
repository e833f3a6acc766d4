// The data folder holds the audit log, tokens' hashes, upstream credentials and the hook
// secret: it is the server user's alone. Folders patchgate creates are 0700 and the files it
// creates 0600, whatever the umask. SQLite makes a database's -wal and -shm files with the
// database file's own mode, so creating the database file 0600 first covers them too.
// Existing folders and files are left as the administrator set them.

import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';

/** mkdir -p with 0700 for every folder it creates. */
export function privateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

/** Create `path` empty with mode 0600 when it does not exist yet (its folder 0700), before SQLite opens it. */
export function privateFile(path: string): void {
  if (existsSync(path)) return;
  privateDir(dirnameOf(path));
  try {
    closeSync(openSync(path, 'a', 0o600));
  } catch {
    // opened by the caller next, which reports the real error
  }
}

function dirnameOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
}
