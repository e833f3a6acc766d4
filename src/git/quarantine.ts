// Reading what a push brought from receive-pack's quarantine folder without a git process
// where that can be done: loose object files and pack indexes are counted, sized and named
// straight from disk, and a cat-file listing (run by the Git facade) is parsed here.

import { closeSync, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import type { Dirent } from 'node:fs';
import { join } from 'node:path';
import { GitError } from '../errors.js';
import type { BatchResult } from './cat-file.js';

/** Variables a pre-receive hook gets from receive-pack that point at quarantined objects. */
export const QUARANTINE_VARS = ['GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_QUARANTINE_PATH'] as const;

/** One object a push brought, as its header says. */
export interface PushedObject {
  id: string;
  type: 'commit' | 'tree' | 'blob' | 'tag';
  /** Inflated size in bytes. */
  size: number;
}

export interface QuarantineStats {
  objects: number;
  /** Bytes on disk: pack files plus loose object files (compressed, as received). */
  bytes: number;
  packs: number;
  loose: number;
}

const LOOSE_DIR = /^[0-9a-f]{2}$/;
const LOOSE_NAME = /^(?:[0-9a-f]{38}|[0-9a-f]{62})$/;
const IDX_V2_MAGIC = Buffer.from([0xff, 0x74, 0x4f, 0x63]);

/**
 * Object count and bytes on disk of the quarantine at `dir` (see Git.quarantineStats); null without one.
 *
 * Read with synchronous calls: a quarantine holds at most receive-pack's unpack limit of loose
 * objects (100 by default; above it the push stays one pack) and a pack or two, so the walk is a
 * few dozen system calls, well under a millisecond, where each awaited call used to cost a
 * round trip through libuv's thread pool (1-1.5 ms for the walk on a push's critical path).
 */
export async function readQuarantine(dir: string | undefined): Promise<QuarantineStats | null> {
  if (!dir) return null;
  const fail = (why: string, cause?: unknown) => new GitError(['(quarantine)', dir], null, why, { cause });
  const stats: QuarantineStats = { objects: 0, bytes: 0, packs: 0, loose: 0 };
  let top: Dirent[];
  try {
    top = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    throw fail(`cannot list the push's quarantine: ${(err as Error).message}`, err);
  }
  for (const e of top) {
    if (e.isDirectory() && LOOSE_DIR.test(e.name)) {
      for (const f of readdirSync(join(dir, e.name))) {
        if (!LOOSE_NAME.test(f)) continue;
        stats.loose++;
        stats.bytes += statSync(join(dir, e.name, f)).size;
      }
    } else if (e.isDirectory() && e.name === 'pack') {
      for (const f of readdirSync(join(dir, 'pack'))) {
        if (f.endsWith('.pack')) {
          stats.packs++;
          stats.bytes += statSync(join(dir, 'pack', f)).size;
        } else if (f.endsWith('.idx')) {
          try {
            stats.objects += idxObjectCount(join(dir, 'pack', f));
          } catch (err) {
            throw fail(`cannot read pack index ${f}: ${(err as Error).message}`, err);
          }
        }
      }
    }
  }
  stats.objects += stats.loose;
  return stats;
}

/** Above this many objects a push's object list comes from one cat-file, not a header per object. */
export const QUARANTINE_HEADER_MAX = 2000;


/**
 * The distinct object ids in a quarantine: loose objects' paths, and the name table of each
 * v2 pack index whose size shows no large-offset table (SHA-1 or SHA-256 names, told apart by
 * the size). Null when there are more than `max`, or an index is of another form. Synchronous
 * reads, as readQuarantine: at most `max` names are read.
 */
export async function quarantineIds(dir: string, max: number): Promise<string[] | null> {
  const ids = new Set<string>();
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory() && LOOSE_DIR.test(e.name)) {
      for (const f of readdirSync(join(dir, e.name))) if (LOOSE_NAME.test(f)) ids.add(e.name + f);
    } else if (e.isDirectory() && e.name === 'pack') {
      for (const f of readdirSync(join(dir, 'pack'))) {
        if (!f.endsWith('.idx')) continue;
        const names = idxNames(join(dir, 'pack', f), max - ids.size);
        if (!names) return null;
        for (const n of names) ids.add(n);
      }
    }
    if (ids.size > max) return null;
  }
  return [...ids];
}

/** Reads up to `buf.length` bytes at `pos` of an open file; the count read. */
function readAt(fd: number, buf: Buffer, pos: number): number {
  let got = 0;
  while (got < buf.length) {
    const n = readSync(fd, buf, got, buf.length - got, pos + got);
    if (n === 0) break;
    got += n;
  }
  return got;
}

/** The object names of a v2 pack index without large offsets; null for another form or more than `max`. */
function idxNames(path: string, max: number): string[] | null {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const head = Buffer.alloc(8 + 256 * 4);
    if (readAt(fd, head, 0) < head.length || !head.subarray(0, 4).equals(IDX_V2_MAGIC) || head.readUInt32BE(4) !== 2) return null;
    const n = head.readUInt32BE(8 + 255 * 4);
    if (n > max) return null;
    // names, crc32s, 4-byte offsets, then the pack's and the index's checksums
    const hashLen = [20, 32].find((h) => size === head.length + n * (h + 8) + 2 * h);
    if (!hashLen) return null;
    const names = Buffer.alloc(n * hashLen);
    if (readAt(fd, names, head.length) !== names.length) return null;
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(names.subarray(i * hashLen, (i + 1) * hashLen).toString('hex'));
    return out;
  } finally {
    closeSync(fd);
  }
}

/** The object count of a pack index (v1 or v2): the last entry of its 256-entry fan-out table. */
function idxObjectCount(path: string): number {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(8 + 256 * 4);
    const bytesRead = readAt(fd, head, 0);
    const v2 = head.subarray(0, 4).equals(IDX_V2_MAGIC);
    if (v2 && head.readUInt32BE(4) !== 2) throw new Error(`unknown index version ${head.readUInt32BE(4)}`);
    const fanout = v2 ? 8 : 0;
    if (bytesRead < fanout + 256 * 4) throw new Error('index too short');
    return head.readUInt32BE(fanout + 255 * 4);
  } finally {
    closeSync(fd);
  }
}

/**
 * The one cat-file that lists every object of a quarantine when `quarantineIds` cannot: run
 * with the quarantine as the object directory and no alternates.
 */
export const QUARANTINE_LIST_ARGS = ['cat-file', '--batch-check=%(objectname) %(objecttype) %(objectsize)', '--batch-all-objects', '--unordered'];

/** The objects of QUARANTINE_LIST_ARGS's output; an object of a kind git does not write throws GitError. */
export function parseObjectList(out: string, args: string[]): PushedObject[] {
  const objects: PushedObject[] = [];
  for (const line of out.split('\n')) {
    if (!line) continue;
    const m = /^([0-9a-f]{40}|[0-9a-f]{64}) (commit|tree|blob|tag) (\d+)$/.exec(line);
    if (!m) throw new GitError(args, null, `unexpected object in the push's quarantine: ${JSON.stringify(line.slice(0, 120))}`);
    objects.push({ id: m[1]!, type: m[2] as PushedObject['type'], size: Number(m[3]) });
  }
  return objects;
}

/** Kind and size of each listed quarantine object, from its header (the push's reader). */
export async function headersOf(reader: { header(spec: string): Promise<BatchResult | null> }, ids: string[]): Promise<PushedObject[]> {
  const heads = await Promise.all(ids.map((id) => reader.header(id)));
  return heads.map((h, i) => {
    const id = ids[i]!;
    if (!h || h.id !== id) throw new GitError(['cat-file', '--batch-command'], null, `object ${id} of the push's quarantine cannot be read`);
    if (!/^(?:commit|tree|blob|tag)$/.test(h.type)) throw new GitError(['cat-file', '--batch-command'], null, `unexpected object in the push's quarantine: ${JSON.stringify(`${id} ${h.type} ${h.size}`.slice(0, 120))}`);
    return { id, type: h.type as PushedObject['type'], size: h.size };
  });
}
