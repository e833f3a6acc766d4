// The loose objects of a push's quarantine, read in process (issue 24). A small push (under
// receive-pack's unpack limit, 100 objects by default) arrives as loose object files: zlib over
// "<type> <size>\0<content>", named by the hash of exactly those bytes. Its commits, trees and
// blobs (up to LOOSE_MAX_FILE on disk; git.ts readBlob) are read here, and so are object
// headers (type and size), so judging a small push does not wait for the push's own `cat-file`
// (3-5 ms of every push's judging, traced; the changed blob was the last read that needed it,
// twelfth round). Anything this module cannot answer for sure (a pack in the quarantine, a
// large or damaged file, a hash that does not match) is answered by git as before: undefined
// here means "ask cat-file".

import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { constants, inflateSync } from 'node:zlib';
import type { BatchResult } from './cat-file.js';

/** Loose files above this size on disk are left to cat-file (a push's commits, trees and source files are far smaller). */
export const LOOSE_MAX_FILE = 1024 * 1024;
/** Nor is an object that inflates to more than this. */
export const LOOSE_MAX_OBJECT = 8 * 1024 * 1024;
/** A blob is read here only up to this size inflated (source files; git inflates the rest off this thread). */
export const LOOSE_MAX_BLOB = 1024 * 1024;

const ID_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const HEADER_RE = /^(commit|tree|blob|tag) (\d+)$/;

/** The ids hash what a loose file holds: SHA-1 for 40 hex digits, SHA-256 for 64. */
function hashOf(id: string, bytes: Buffer): string {
  return createHash(id.length === 40 ? 'sha1' : 'sha256').update(bytes).digest('hex');
}

/** Where a push's view finds the objects the push brought (its quarantine's loose files, or a pack read in process). */
export interface PushObjects {
  /** The object when answered here; null when the push did not bring it; undefined when only git can tell. */
  read(id: string, kinds: readonly string[], maxObject?: number): BatchResult | null | undefined;
  header(id: string): { id: string; type: string; size: number } | null | undefined;
  /** Every object the push brought is answered here (so one it lacks is the store's, or nobody's). */
  loosesOnly(): boolean;
}

export class QuarantineObjects implements PushObjects {
  private packs: boolean | undefined;

  constructor(readonly dir: string) {}

  /** The loose file of `id`, open for reading; null when there is none; undefined for anything else (not an id, unreadable). */
  private open(id: string): number | null | undefined {
    if (!ID_RE.test(id)) return undefined;
    try {
      return openSync(join(this.dir, id.slice(0, 2), id.slice(2)), 'r');
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined;
    }
  }

  /**
   * True when the quarantine holds no pack, so every object the push brought is a loose file
   * here: an object that is not one is not the push's (it is in the repository's own store,
   * or nowhere). Read once: receive-pack has written everything before any hook runs.
   */
  loosesOnly(): boolean {
    if (this.packs === undefined) {
      try {
        this.packs = readdirSync(join(this.dir, 'pack')).some((f) => f.endsWith('.pack'));
      } catch (err) {
        // No pack folder: nothing was kept as a pack. Any other failure: not sure, so cat-file.
        this.packs = (err as NodeJS.ErrnoException).code !== 'ENOENT';
      }
    }
    return !this.packs;
  }

  /**
   * The whole object, checked against its id, when its header names one of `kinds`; null when
   * no loose file of that id is here; undefined when it is here but not answered (another kind,
   * too large, damaged, another hash). The header is read first, so an object of another kind
   * is never inflated whole. `maxObject` bounds what is inflated on this thread (more: undefined).
   */
  read(id: string, kinds: readonly string[], maxObject = LOOSE_MAX_OBJECT): BatchResult | null | undefined {
    const fd = this.open(id);
    if (fd === null || fd === undefined) return fd;
    let raw: Buffer;
    try {
      const size = fstatSync(fd).size;
      // Nothing of a large file, nor more than its header of another kind, is read.
      if (size > LOOSE_MAX_FILE) return undefined;
      raw = Buffer.alloc(size);
      const start = readSync(fd, raw, 0, Math.min(128, size), 0);
      if (!kinds.includes(headerOf(raw.subarray(0, start))?.type ?? '')) return undefined;
      for (let got = start; got < size;) {
        const n = readSync(fd, raw, got, size - got, got);
        if (n === 0) return undefined;
        got += n;
      }
    } catch {
      return undefined;
    } finally {
      closeSync(fd);
    }
    let bytes: Buffer;
    try {
      bytes = inflateSync(raw, { maxOutputLength: maxObject + 64 });
    } catch {
      return undefined;
    }
    const nul = bytes.indexOf(0);
    const m = nul > 0 ? HEADER_RE.exec(bytes.toString('latin1', 0, nul)) : null;
    if (!m || Number(m[2]) !== bytes.length - nul - 1 || hashOf(id, bytes) !== id) return undefined;
    return { id, type: m[1]!, size: Number(m[2]), data: bytes.subarray(nul + 1) };
  }

  /**
   * Type and size from the start of a loose file (nothing past the header is inflated); null
   * when no loose file of that id is here; undefined when it cannot be told here.
   */
  header(id: string): { id: string; type: string; size: number } | null | undefined {
    const fd = this.open(id);
    if (fd === null || fd === undefined) return fd;
    try {
      const head = Buffer.alloc(128);
      const h = headerOf(head.subarray(0, readSync(fd, head, 0, head.length, 0)));
      return h ? { id, ...h } : undefined;
    } catch {
      return undefined;
    } finally {
      closeSync(fd);
    }
  }
}

/** Type and size from the first bytes of a loose file (a sync flush: the header is out once its NUL is); null when they do not hold one. */
function headerOf(start: Buffer): { type: string; size: number } | null {
  let out: Buffer;
  try {
    out = inflateSync(start, { finishFlush: constants.Z_SYNC_FLUSH });
  } catch {
    return null;
  }
  const nul = out.indexOf(0);
  const m = nul > 0 ? HEADER_RE.exec(out.toString('latin1', 0, nul)) : null;
  return m ? { type: m[1]!, size: Number(m[2]) } : null;
}
