// A small push's pack, read in the daemon from the POST body (issue 24), so the parse of what
// it changed can start while receive-pack is still unpacking it. The judgement itself never
// reads these objects: it reads the quarantine, as before, and finds the rows and scans made
// from them in caches keyed by blob id (src/server/hook/prewarm.ts). An object's id is the
// hash of what was read here, so nothing can be cached under an id whose content differs.
//
// The pack format (git's Documentation/gitformat-pack.txt): "PACK", version 2 or 3, an object
// count, then per object a type-and-size header and zlib data (a delta names its base by offset
// or by id; a thin pack's id bases are in the repository), then the checksum of all before it.
// Everything is bounded: PACK_MAX bytes of pack, MAX_OBJECTS objects, OBJECT_MAX bytes per
// object inflated and TOTAL_MAX for all of them. Any departure throws PackReadError; the caller then warms nothing.

import { createHash } from 'node:crypto';
import { inflateSync } from 'node:zlib';
import { PackReadError } from '../errors.js';
import { parseCommitHeader, type CommitHeader } from './commits.js';
import { findTreeEntry, parseTree, type RawTreeEntry, type TreeEntry, type TreeReader } from './trees.js';
import type { PushObjects } from './loose.js';

/** Largest pack read (the POST body after its command section). */
export const PACK_MAX = 1 << 20;
/** Most objects read from one pack. */
const MAX_OBJECTS = 256;
/** Largest object, inflated (a delta's result included). */
const OBJECT_MAX = 1 << 20;
/** All of one pack's objects and deltas together, inflated (zlib makes a MiB of pack into a GiB). */
const TOTAL_MAX = 8 << 20;

const TYPES: Record<number, string> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };

export interface PackObject {
  type: string;
  data: Buffer;
}

/** Where a thin pack's bases come from: the repository's objects by id. */
export type BaseReader = (id: string) => Promise<PackObject | null>;

function objectId(type: string, data: Buffer): string {
  return createHash('sha1').update(`${type} ${data.length}\0`).update(data).digest('hex');
}

/** One object's zlib data at `at`, inflated to exactly `size` bytes; returns it and where it ended. */
function inflateAt(pack: Buffer, at: number, end: number, size: number): { data: Buffer; next: number } {
  if (size > OBJECT_MAX) throw new PackReadError(`an object of ${size} bytes (more than ${OBJECT_MAX} are not read here)`);
  let r: { buffer: Buffer; engine: { bytesWritten: number } };
  try {
    r = inflateSync(pack.subarray(at, end), { info: true, maxOutputLength: Math.max(size, 1) }) as unknown as typeof r;
  } catch (e) {
    throw new PackReadError(`object data at offset ${at} does not inflate`, { cause: e });
  }
  if (r.buffer.length !== size) throw new PackReadError(`object at offset ${at} inflates to ${r.buffer.length} bytes, its header says ${size}`);
  return { data: r.buffer, next: at + r.engine.bytesWritten };
}

/** A delta applied to its base (git's patch-delta.c). */
export function applyDelta(base: Buffer, delta: Buffer): Buffer {
  let i = 0;
  const varint = (): number => {
    let v = 0;
    let shift = 0;
    let b: number;
    do {
      if (i >= delta.length || shift > 28) throw new PackReadError('a delta header is cut short');
      b = delta[i++]!;
      v += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    return v;
  };
  if (varint() !== base.length) throw new PackReadError('a delta does not fit its base');
  const size = varint();
  if (size > OBJECT_MAX) throw new PackReadError(`a delta makes ${size} bytes (more than ${OBJECT_MAX} are not read here)`);
  const out = Buffer.allocUnsafe(size);
  let o = 0;
  while (i < delta.length) {
    const op = delta[i++]!;
    if (op & 0x80) {
      let off = 0;
      let len = 0;
      for (let k = 0; k < 4; k++) if (op & (1 << k)) off += (delta[i++] ?? 0) * 2 ** (8 * k);
      for (let k = 0; k < 3; k++) if (op & (0x10 << k)) len += (delta[i++] ?? 0) * 2 ** (8 * k);
      if (len === 0) len = 0x10000;
      if (i > delta.length || off + len > base.length || o + len > size) throw new PackReadError('a delta copies from outside its base');
      base.copy(out, o, off, off + len);
      o += len;
    } else if (op) {
      if (i + op > delta.length || o + op > size) throw new PackReadError('a delta inserts past its end');
      delta.copy(out, o, i, i + op);
      i += op;
      o += op;
    } else throw new PackReadError('a delta holds the reserved opcode 0');
  }
  if (o !== size) throw new PackReadError('a delta makes fewer bytes than it says');
  return out;
}

/** Every object of a (SHA-1) pack by id, deltas resolved; throws PackReadError for anything else. */
export async function readPack(pack: Buffer, base: BaseReader): Promise<Map<string, PackObject>> {
  if (pack.length > PACK_MAX) throw new PackReadError(`a pack of ${pack.length} bytes (more than ${PACK_MAX} are not read here)`);
  if (pack.length < 32 || pack.toString('latin1', 0, 4) !== 'PACK') throw new PackReadError('no pack signature');
  const version = pack.readUInt32BE(4);
  if (version !== 2 && version !== 3) throw new PackReadError(`pack version ${version}`);
  const count = pack.readUInt32BE(8);
  if (count > MAX_OBJECTS) throw new PackReadError(`${count} objects (more than ${MAX_OBJECTS} are not read here)`);
  const end = pack.length - 20;
  if (!createHash('sha1').update(pack.subarray(0, end)).digest().equals(pack.subarray(end))) throw new PackReadError('the pack checksum does not match');

  type Entry = { type: string; data: Buffer } | { delta: Buffer; baseAt?: number; baseId?: string };
  const byOffset = new Map<number, Entry>();
  let total = 0;
  const countBytes = (n: number): void => {
    total += n;
    if (total > TOTAL_MAX) throw new PackReadError(`more than ${TOTAL_MAX} bytes inflated`);
  };
  let at = 12;
  for (let n = 0; n < count; n++) {
    const start = at;
    if (at >= end) throw new PackReadError('the pack ends before its objects do');
    let c = pack[at++]!;
    const kind = (c >> 4) & 7;
    let size = c & 15;
    let shift = 4;
    while (c & 0x80) {
      if (at >= end || shift > 28) throw new PackReadError('an object header is cut short');
      c = pack[at++]!;
      size += (c & 0x7f) * 2 ** shift;
      shift += 7;
    }
    if (kind === 6) {
      c = pack[at++]!;
      let off = c & 0x7f;
      while (c & 0x80) {
        if (at >= end || off > 2 ** 32) throw new PackReadError('a delta offset is cut short');
        c = pack[at++]!;
        off = (off + 1) * 128 + (c & 0x7f);
      }
      if (off <= 0 || off > start) throw new PackReadError('a delta names a base outside the pack');
      countBytes(size);
      const r = inflateAt(pack, at, end, size);
      byOffset.set(start, { delta: r.data, baseAt: start - off });
      at = r.next;
    } else if (kind === 7) {
      if (at + 20 > end) throw new PackReadError('a delta base id is cut short');
      const baseId = pack.toString('hex', at, at + 20);
      countBytes(size);
      const r = inflateAt(pack, at + 20, end, size);
      byOffset.set(start, { delta: r.data, baseId });
      at = r.next;
    } else if (TYPES[kind]) {
      countBytes(size);
      const r = inflateAt(pack, at, end, size);
      byOffset.set(start, { type: TYPES[kind]!, data: r.data });
      at = r.next;
    } else throw new PackReadError(`object type ${kind}`);
  }
  if (at !== end) throw new PackReadError('bytes between the last object and the checksum');

  // Deltas resolved in passes: each pass takes every entry whose base is there by now; when a
  // pass takes none, the id bases not in the pack are read from the repository (a thin pack).
  const out = new Map<string, PackObject>();
  const done = new Map<number, PackObject>();
  const outside = new Map<string, PackObject>();
  const unresolved = new Set(byOffset.keys());
  const finish = (off: number, obj: PackObject): void => {
    done.set(off, obj);
    out.set(objectId(obj.type, obj.data), obj);
    unresolved.delete(off);
  };
  while (unresolved.size) {
    let moved = false;
    for (const off of [...unresolved]) {
      const e = byOffset.get(off)!;
      if ('type' in e) {
        finish(off, e);
        moved = true;
        continue;
      }
      const b = e.baseAt !== undefined ? done.get(e.baseAt) : out.get(e.baseId!) ?? outside.get(e.baseId!);
      if (!b) continue;
      const data = applyDelta(b.data, e.delta);
      countBytes(data.length);
      finish(off, { type: b.type, data });
      moved = true;
    }
    if (moved) continue;
    const wanted = [...new Set([...unresolved].map((o) => byOffset.get(o) as { baseId?: string }).map((e) => e.baseId).filter((id): id is string => !!id && !outside.has(id)))];
    const got = await Promise.all(wanted.map((id) => base(id)));
    wanted.forEach((id, k) => void (got[k] && outside.set(id, got[k]!)));
    if (!got.some(Boolean)) throw new PackReadError('deltas whose bases are neither in the pack nor in the repository');
  }
  return out;
}

/**
 * The objects of one pack over the repository's own: what a tree walk (src/git/trees.ts
 * commitDiff), a file's rows (src/contract/digest.ts fileRows) and the tamper scan read.
 */
export class PackView implements TreeReader {
  constructor(readonly objects: Map<string, PackObject>, private readonly store: TreeReader & {
    commitHeader(id: string): Promise<CommitHeader | null>;
    readBlob(id: string): Promise<Buffer | null>;
    pathId(rev: string, path: string | null): Promise<{ id: string; type: string; size: number } | null>;
  }) {}

  async readTree(id: string): Promise<RawTreeEntry[]> {
    const o = this.objects.get(id);
    if (!o) return this.store.readTree(id);
    if (o.type !== 'tree') throw new PackReadError(`${id} is a ${o.type}, not a tree`);
    return parseTree(id, o.data);
  }

  async commitTree(id: string): Promise<string> {
    const o = this.objects.get(id);
    const h = o ? (o.type === 'commit' ? parseCommitHeader(id, o.data) : null) : await this.store.commitHeader(id);
    if (!h) throw new PackReadError(`${id} is not a commit`);
    return h.tree;
  }

  async readBlob(id: string): Promise<Buffer | null> {
    const o = this.objects.get(id);
    if (!o) return this.store.readBlob(id);
    return o.type === 'blob' ? o.data : null;
  }

  /**
   * An object's header by id (`path` null), or of `rev:path` for a commit or tree of the pack,
   * found as git's own lookup finds it (trees.ts findTreeEntry); anything else is the repository's.
   */
  async pathId(rev: string, path: string | null): Promise<{ id: string; type: string; size: number } | null> {
    const o = this.objects.get(rev);
    if (!o) return this.store.pathId(rev, path);
    if (path === null) return { id: rev, type: o.type, size: o.data.length };
    const tree = o.type === 'tree' ? rev : o.type === 'commit' ? parseCommitHeader(rev, o.data).tree : null;
    if (!tree) return null;
    if (path === '') return this.pathId(tree, null);
    const e = await findTreeEntry(this, tree, path);
    return e ? this.pathId(e.id, null) : null;
  }

  /** Not read from a pack: only the seed format's walk lists a tree recursively, and it is not warmed ahead. */
  lsTree(): Promise<TreeEntry[]> {
    return Promise.reject(new PackReadError('a recursive tree listing is not read from a pack'));
  }

  /** The pack's objects as a push's view reads them (git.ts `pushObjects`): all of them are here, already checked against their ids. */
  pushObjects(): PushObjects {
    const header = (id: string) => {
      const o = this.objects.get(id);
      return o ? { id, type: o.type, size: o.data.length } : null;
    };
    return {
      read: (id) => {
        const o = this.objects.get(id);
        return o ? { id, type: o.type, size: o.data.length, data: o.data } : null;
      },
      header,
      loosesOnly: () => true,
    };
  }

  /** The pack's commits with their parents. */
  commits(): Array<{ id: string; parents: string[] }> {
    const out: Array<{ id: string; parents: string[] }> = [];
    for (const [id, o] of this.objects) if (o.type === 'commit') out.push({ id, parents: parseCommitHeader(id, o.data).parents });
    return out;
  }
}
