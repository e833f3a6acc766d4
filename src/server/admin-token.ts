// The one-time admin token of a first start goes to a file, never to the logs: terminal
// scroll-back and container logs (`docker logs`) are read by more people and kept longer
// than the data folder. `<data>/admin-token`, mode 0600, written whole (a temp file, then a
// rename) so no reader sees half a secret; the server prints only the file's path.

import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { PatchgateError, errorMessage } from '../errors.js';

export const ADMIN_TOKEN_FILE = 'admin-token';

/** The admin token file could not be written; the token it was for has been revoked. */
export class AdminTokenFileError extends PatchgateError {
  readonly path: string;
  constructor(path: string, options?: { cause?: unknown }) {
    super('ADMIN_TOKEN_FILE', `could not write the first admin token to ${path}: ${errorMessage(options?.cause)}; the token was revoked, fix the data folder and start again`, options);
    this.path = path;
  }
}

export function adminTokenPath(dataDir: string): string {
  return join(dataDir, ADMIN_TOKEN_FILE);
}

/**
 * Write `secret` to `<dataDir>/admin-token` (0600) and return the path. On failure `revoke`
 * runs first (a token nobody can read must not stay valid, and the next start mints a new
 * one), then AdminTokenFileError is thrown. The message never holds the secret.
 */
export function writeAdminToken(dataDir: string, secret: string, revoke: () => void): string {
  const path = adminTokenPath(dataDir);
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    // 'wx': never through a file or symlink that is already there.
    writeFileSync(tmp, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    renameSync(tmp, path);
    return path;
  } catch (err) {
    rmSync(tmp, { force: true });
    try {
      revoke();
    } catch {
      // the error below says what happened; a failed revoke leaves a token that expires with nobody knowing it
    }
    throw new AdminTokenFileError(path, { cause: err });
  }
}
