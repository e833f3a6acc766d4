// Tree objects' bytes into entries, and wide ones by difference (issue 24). A one-file change in
// a folder of thousands of files gives a tree object that differs from the folder's previous
// version in one entry, yet parsing it again made two strings and a mode lookup for every
// entry: about 1.3 ms for the bench's 4,705-entry folders, on every push into one. So the bytes
// a wide tree shares at its start and at its end with the last wide tree parsed that began with
// the same entry are found by comparing memory, the entries there are the earlier parse's own
// objects, and only the entries between are parsed. The answer is what a full parse gives: the
// reused entries are made of the same bytes at the same entry boundaries.

import { GitError } from '../errors.js';
import { classifyMode } from './modes.js';
import type { EntryKind } from './modes.js';

/**
 * One entry of a tree object. `mode` is the mode as git reports it after reading, `rawMode`
 * the stored digits, `kind` what checkout makes of it: walkers decide on `kind`, never on the
 * digits. `raw` holds the name's bytes (git orders by bytes) only when decoding them as UTF-8
 * replaced some (the name holds U+FFFD); otherwise the name encodes back to exactly its bytes.
 */
export interface RawTreeEntry {
  mode: string;
  rawMode: string;
  kind: EntryKind;
  name: string;
  raw?: Buffer;
  id: string;
}

/** A tree object at least this large is kept for, and parsed by, difference. */
export const WIDE_TREE_BYTES = 16 * 1024;

/** How many bytes of wide trees are kept to compare with (about 35 of the bench's widest). */
const KEPT_BYTES = 8 * 1024 * 1024;

/** Memory is compared in runs of this many bytes before the byte that differs is looked for. */
const RUN = 4096;

interface Parsed {
  data: Buffer;
  entries: RawTreeEntry[];
  /** Where each entry starts, and the data's length last. */
  starts: Uint32Array;
}

/**
 * A wide tree parsed by difference: the earlier parse's entries it reused, and the indexes
 * [lo, hi) of the entries parsed anew (object-format.ts checks only those against git's form
 * when the earlier tree's were all checked).
 */
export interface ParsedFrom {
  earlier: RawTreeEntry[];
  lo: number;
  hi: number;
}

const derived = new WeakMap<RawTreeEntry[], ParsedFrom>();

/** How `entries` (a parseTree result) was made from an earlier parse, when it was. */
export function parsedFrom(entries: RawTreeEntry[]): ParsedFrom | undefined {
  return derived.get(entries);
}

/** The last wide tree parsed per first entry (its mode and name) and id length, oldest first. */
const recent = new Map<string, Parsed>();
let keptBytes = 0;

function malformed(id: string): GitError {
  return new GitError(['cat-file', '--batch'], 0, `tree ${id} is malformed`);
}

/** Parses the entry starting at byte `i` of `d` onto `out`; the offset after it. */
function entryAt(id: string, d: Buffer, i: number, idLen: number, out: RawTreeEntry[]): number {
  const sp = d.indexOf(0x20, i);
  const nul = d.indexOf(0, sp);
  if (sp < 0 || nul < 0 || nul + 1 + idLen > d.length || nul === sp + 1) throw malformed(id);
  const rawMode = d.toString('latin1', i, sp);
  const cls = classifyMode(rawMode, `tree ${id}`);
  const name = d.toString('utf8', sp + 1, nul);
  const entry: RawTreeEntry = { mode: cls.mode, rawMode, kind: cls.kind, name, id: d.toString('hex', nul + 1, nul + 1 + idLen) };
  if (name.includes('\uFFFD')) entry.raw = Buffer.from(d.subarray(sp + 1, nul));
  out.push(entry);
  return nul + 1 + idLen;
}

/** The entries of tree object `id` from its bytes, in stored order. Names are bytes in git; they are decoded as UTF-8. */
export function parseTree(id: string, d: Buffer): RawTreeEntry[] {
  const idLen = id.length / 2;
  if (d.length < WIDE_TREE_BYTES) {
    const out: RawTreeEntry[] = [];
    for (let i = 0; i < d.length; ) i = entryAt(id, d, i, idLen, out);
    return out;
  }
  const first = d.indexOf(0);
  const key = first < 0 || first > 1024 ? null : `${idLen}:${d.toString('latin1', 0, first)}`;
  const earlier = key === null ? undefined : recent.get(key);
  const parsed = parseAgainst(id, d, idLen, earlier);
  if (key !== null) keep(key, parsed);
  return parsed.entries;
}

/** Forgets the kept wide trees (tests compare a parse by difference with a full one). */
export function forgetWideTrees(): void {
  recent.clear();
  keptBytes = 0;
}

function keep(key: string, p: Parsed): void {
  const old = recent.get(key);
  if (old) {
    recent.delete(key);
    keptBytes -= old.data.length;
  }
  if (p.data.length > KEPT_BYTES) return;
  recent.set(key, p);
  keptBytes += p.data.length;
  for (const [k, v] of recent) {
    if (keptBytes <= KEPT_BYTES) break;
    recent.delete(k);
    keptBytes -= v.data.length;
  }
}

/**
 * `d` parsed, reusing the entries of `earlier` that lie in the bytes both share at the start and
 * at the end. Without `earlier` (or sharing nothing) every entry is parsed.
 */
function parseAgainst(id: string, d: Buffer, idLen: number, earlier: Parsed | undefined): Parsed {
  const entries: RawTreeEntry[] = [];
  const starts: number[] = [];
  let i = 0;
  let tail: { delta: number; a: Parsed } | null = null;
  let suffixFrom = d.length + 1;
  let lo = 0;
  let hi = -1;
  if (earlier) {
    const a = earlier.data;
    const pre = commonPrefix(a, d);
    const suf = commonSuffix(a, d, Math.min(a.length, d.length) - pre);
    // The earlier entries that end inside the shared start are the same bytes at the same places.
    const n = earlier.entries.length;
    let c = 0;
    while (c < n && earlier.starts[c + 1]! <= pre) c++;
    for (let k = 0; k < c; k++) {
      entries.push(earlier.entries[k]!);
      starts.push(earlier.starts[k]!);
    }
    i = earlier.starts[c]!;
    lo = c;
    suffixFrom = d.length - suf;
    tail = { delta: d.length - a.length, a: earlier };
  }
  while (i < d.length) {
    if (tail && i >= suffixFrom) {
      // From here on the bytes are the earlier tree's own, shifted: once this parse stands at one
      // of its entry starts, the rest are its entries.
      const j = indexOfStart(tail.a.starts, i - tail.delta, tail.a.entries.length);
      if (j >= 0) {
        hi = entries.length;
        for (let k = j; k < tail.a.entries.length; k++) {
          entries.push(tail.a.entries[k]!);
          starts.push(tail.a.starts[k]! + tail.delta);
        }
        break;
      }
    }
    starts.push(i);
    i = entryAt(id, d, i, idLen, entries);
  }
  starts.push(d.length);
  if (earlier) derived.set(entries, { earlier: earlier.entries, lo, hi: hi < 0 ? entries.length : hi });
  return { data: d, entries, starts: Uint32Array.from(starts) };
}

/** How many bytes `a` and `b` share at their start. */
function commonPrefix(a: Buffer, b: Buffer): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i + RUN <= n && a.subarray(i, i + RUN).equals(b.subarray(i, i + RUN))) i += RUN;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** How many bytes `a` and `b` share at their end, at most `max`. */
function commonSuffix(a: Buffer, b: Buffer, max: number): number {
  let s = 0;
  while (s + RUN <= max && a.subarray(a.length - s - RUN, a.length - s).equals(b.subarray(b.length - s - RUN, b.length - s))) s += RUN;
  while (s < max && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  return s;
}

/** The index of the entry starting at byte `at` (binary search over the first `n` starts), or -1. */
function indexOfStart(starts: Uint32Array, at: number, n: number): number {
  let lo = 0;
  let hi = n - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = starts[mid]!;
    if (v === at) return mid;
    if (v < at) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
