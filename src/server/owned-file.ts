// The gate reads back only files it wrote itself (issue 45, item 5). The intent journal
// (./intent-journal.ts) reads `<data>/intents/*` at every start, and a `*.json` planted there as
// a symlink to /etc/passwd had its target's first bytes printed in the server log (a JSON
// parse error quotes what it could not parse). So such a file is opened with O_NOFOLLOW (a
// symlink is not followed) and O_NONBLOCK (a FIFO does not hold the start), the OPENED file is
// checked with fstat (no race between a check and the open), and its content is read only
// when it is a regular file of the gate's own user, with one link, under a size bound.
// Anything else is skipped with a reason that names what the file is, never what is in it.

import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open as openFile, type FileHandle } from 'node:fs/promises';

export type OwnedRead = { text: string } | { absent: true } | { skipped: string };

const NOFOLLOW = constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** open(2) errors that say the path is not a plain file of ours (anything else is a real failure, thrown). */
const FOREIGN_CODES: Record<string, string> = {
  ELOOP: 'a symbolic link (not followed)',
  ENXIO: 'a FIFO or socket with nobody at the other end',
  EACCES: 'not readable by the gate',
  EPERM: 'not readable by the gate',
};

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** Why an opened file is not one the gate wrote, or null (`maxBytes`: its size bound, if any). */
export function foreignReason(st: Stats, maxBytes?: number): string | null {
  if (!st.isFile()) return kindOf(st);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) return `owned by uid ${st.uid}, not by the gate's user (uid ${uid})`;
  // A hard link planted in the folder shares another file's content; the gate's files have one link.
  if (st.nlink !== 1) return `a file with ${st.nlink} hard links`;
  if (maxBytes !== undefined && st.size > maxBytes) return `${st.size} bytes, over the ${maxBytes} read at most`;
  return null;
}

/** Why an open failed because of what is at the path (a write's permission failure is a real failure, thrown). */
function foreignOpen(err: unknown, write = false): string | null {
  const code = (err as NodeJS.ErrnoException).code ?? '';
  if (write && (code === 'EACCES' || code === 'EPERM')) return null;
  return FOREIGN_CODES[code] ?? null;
}

/**
 * The text of `path` when it is a regular file of the gate's user with one link and at most
 * `maxBytes`; `absent` when there is none; `skipped` with the reason otherwise. Throws only
 * on a failure that says nothing about the file (e.g. EMFILE).
 */
export function readOwnedFile(path: string, maxBytes: number): OwnedRead {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { absent: true };
    const why = foreignOpen(err);
    if (why) return { skipped: why };
    throw err;
  }
  try {
    const why = foreignReason(fstatSync(fd), maxBytes);
    if (why) return { skipped: why };
    // Read to the end (it may grow while read: appends), never past the bound.
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buf = Buffer.allocUnsafe(64 * 1024);
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      total += n;
      if (total > maxBytes) return { skipped: `over the ${maxBytes} bytes read at most` };
      chunks.push(buf.subarray(0, n));
    }
    return { text: Buffer.concat(chunks, total).toString('utf8') };
  } finally {
    closeSync(fd);
  }
}

/** A file the gate writes, opened (sync) never through a symlink: its fd, or why what is there is not the gate's. */
export function openOwnedSync(path: string, flags: number, mode = 0o600): { fd: number } | { skipped: string } {
  let fd: number;
  try {
    fd = openSync(path, flags | NOFOLLOW, mode);
  } catch (err) {
    const why = foreignOpen(err, true);
    if (why) return { skipped: why };
    throw err;
  }
  const why = foreignReason(fstatSync(fd));
  if (why) {
    closeSync(fd);
    return { skipped: why };
  }
  return { fd };
}

/** As openOwnedSync, for the async append handle. */
export async function openOwned(path: string, flags: number, mode = 0o600): Promise<{ fh: FileHandle } | { skipped: string }> {
  let fh: FileHandle;
  try {
    fh = await openFile(path, flags | NOFOLLOW, mode);
  } catch (err) {
    const why = foreignOpen(err, true);
    if (why) return { skipped: why };
    throw err;
  }
  const why = foreignReason(await fh.stat());
  if (why) {
    await fh.close();
    return { skipped: why };
  }
  return { fh };
}
