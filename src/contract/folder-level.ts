// A wide folder's last tree, walked (issue 24): every entry and the part it gave, with the
// Merkle text those parts hash to. A one-file push into a folder of thousands of entries gives
// a tree that differs from the folder's last one in an entry or two; the entries before and
// after those are the same (src/git/tree-parse.ts even hands back the same objects), and so is
// what each gave, since a part depends only on the entry and the folder's path. So only the
// entries between are looked at, and the folder's digest is hashed from the last text with
// the new lines spliced in, instead of a pass over every sibling (2.7 ms a push into the
// bench's 4,705-entry folder, measured). Used by src/contract/digest.ts, which owns the parts.

import { APPROX_BYTES } from '../cache/content-cache.js';
import type { EntryKind } from '../git/git.js';
import { EMPTY_INDEX, mergeIndex, type PyIndex } from './py-reexport.js';

/** What digest.ts's parts have that this needs: the Merkle line ('' for none), the files it counts, its Python index. */
export interface LevelPart {
  line: string;
  files: number;
  py: PyIndex;
}

/** An entry as a tree gives it; two are the same entry when name, id and mode agree. */
export interface LevelEntry {
  name: string;
  id: string;
  mode: string;
  kind: EntryKind;
}

/** Entries that change between two trees of a folder beyond which every entry is walked again. */
const MAX_CHANGED = 64;

/**
 * The level of `entries` from the folder's `last` one, walking only the entries between what
 * they share at both ends (`walk` gives their parts, in order); null when more than
 * MAX_CHANGED entries differ or the folder no longer has `minFiles` contract files (then the
 * caller walks every entry). `reused` gets the files the shared entries count.
 */
export async function walkChanged<P extends LevelPart>(last: FolderLevel<P>, entries: readonly LevelEntry[], isContract: (e: LevelEntry) => boolean, minFiles: number, walk: (changed: readonly LevelEntry[]) => Promise<Array<P | null>>, reused?: (files: number) => void): Promise<FolderLevel<P> | null> {
  const { head, tail } = sharedEnds(last.entries, entries);
  const changed = entries.slice(head, entries.length - tail);
  const was = last.entries.slice(head, last.entries.length - tail);
  const count = (es: readonly LevelEntry[]) => es.reduce((n, e) => n + (isContract(e) ? 1 : 0), 0);
  const now = count(changed);
  const before = count(was);
  if (changed.length + was.length > MAX_CHANGED || last.contractFiles - before + now < minFiles) return null;
  const middle = await walk(changed);
  let gone = 0;
  for (let k = 0; k < was.length; k++) gone += last.parts[head + k]?.files ?? 0;
  reused?.(last.files - gone);
  return splice(last, entries, head, tail, middle, now, before);
}

export interface FolderLevel<P extends LevelPart> {
  entries: readonly LevelEntry[];
  parts: ReadonlyArray<P | null>;
  /** Each lined part's line and a '\n', in entry order: the digest is sha256 of it less its last '\n'. */
  text: string;
  /** at[i]: where entry i's line starts in `text`; at[n] = text.length. */
  at: Int32Array;
  files: number;
  lined: number;
  /** Entries that are contract files (the folder keeps this memory while they are many). */
  contractFiles: number;
  py: PyIndex;
}

/** The level's files (entries `isFile` says are), in order: their names, blob ids and parts, for a walk over every entry to find them in. */
export function filesOf<P extends LevelPart>(level: FolderLevel<P>, isFile: (e: LevelEntry) => boolean): { names: string[]; ids: string[]; parts: Array<P | null> } {
  const out = { names: [] as string[], ids: [] as string[], parts: [] as Array<P | null> };
  level.entries.forEach((e, i) => {
    if (!isFile(e)) return;
    out.names.push(e.name);
    out.ids.push(e.id);
    out.parts.push(level.parts[i] ?? null);
  });
  return out;
}

/** The level of a walk over every entry. */
export function levelOf<P extends LevelPart>(entries: readonly LevelEntry[], parts: ReadonlyArray<P | null>, contractFiles: number): FolderLevel<P> {
  const at = new Int32Array(entries.length + 1);
  const lines: string[] = [];
  let pos = 0;
  let files = 0;
  for (let i = 0; i < parts.length; i++) {
    at[i] = pos;
    const p = parts[i];
    if (p?.line) {
      lines.push(p.line, '\n');
      pos += p.line.length + 1;
      files += p.files;
    }
  }
  at[parts.length] = pos;
  return { entries, parts, text: lines.join(''), at, files, lined: lines.length / 2, contractFiles, py: mergeIndex(parts.filter((p): p is P => p !== null).map((p) => p.py)) };
}

/** How many entries `a` and `b` share at their start and at their end (never overlapping). */
export function sharedEnds(a: readonly LevelEntry[], b: readonly LevelEntry[]): { head: number; tail: number } {
  const same = (x: LevelEntry, y: LevelEntry) => x === y || (x.name === y.name && x.id === y.id && x.mode === y.mode);
  const max = Math.min(a.length, b.length);
  let head = 0;
  while (head < max && same(a[head]!, b[head]!)) head++;
  let tail = 0;
  while (tail < max - head && same(a[a.length - 1 - tail]!, b[b.length - 1 - tail]!)) tail++;
  return { head, tail };
}

/**
 * The level of `entries`, which share `head` entries at the start and `tail` at the end with
 * `last`'s, given the parts of the entries between (`middle`, in order) and how many of those
 * are contract files. Same text, files, lined and Python index as levelOf over every entry.
 */
export function splice<P extends LevelPart>(last: FolderLevel<P>, entries: readonly LevelEntry[], head: number, tail: number, middle: ReadonlyArray<P | null>, middleContractFiles: number, lastMiddleContractFiles: number): FolderLevel<P> {
  const n = entries.length;
  const m = last.entries.length;
  const oldFrom = last.at[head]!;
  const oldTo = last.at[m - tail]!;
  const mid: string[] = [];
  let files = last.files;
  let lined = last.lined;
  for (let i = head; i < m - tail; i++) {
    const p = last.parts[i];
    if (p?.line) {
      files -= p.files;
      lined--;
    }
  }
  const at = new Int32Array(n + 1);
  at.set(last.at.subarray(0, head + 1));
  let pos = oldFrom;
  for (let k = 0; k < middle.length; k++) {
    at[head + k] = pos;
    const p = middle[k];
    if (p?.line) {
      mid.push(p.line, '\n');
      pos += p.line.length + 1;
      files += p.files;
      lined++;
    }
  }
  const shift = pos - oldTo;
  for (let i = 0; i <= tail; i++) at[n - tail + i] = last.at[m - tail + i]! + shift;
  const parts = [...last.parts.slice(0, head), ...middle, ...last.parts.slice(m - tail)];
  const text = last.text.slice(0, oldFrom) + mid.join('') + last.text.slice(oldTo);
  // A folder without Python re-exports (most) stays EMPTY_INDEX without a pass over its parts.
  const plain = (ps: ReadonlyArray<P | null>) => ps.every((p) => !p || p.py === EMPTY_INDEX || (!p.py.x.length && !p.py.p.length));
  const py = last.py === EMPTY_INDEX && plain(middle) ? EMPTY_INDEX : mergeIndex(parts.filter((p): p is P => p !== null).map((p) => p.py));
  return { entries, parts, text, at, files, lined, contractFiles: last.contractFiles - lastMiddleContractFiles + middleContractFiles, py };
}

/** Keeps a wide folder's level in memory (a `mem:` key: the cache's byte bound may drop it). */
export function keepLevel<P extends LevelPart>(cache: Map<string, unknown>, key: string, level: FolderLevel<P>): void {
  // The parts are shared with the tree contract (which counts them); the text, the offsets and
  // the entries (which the tree parser's memory may drop before this) are counted here.
  Object.defineProperty(level, APPROX_BYTES, { value: 256 + level.text.length * 2 + level.at.byteLength + level.parts.length * 8 + level.entries.length * 120 });
  cache.set(`mem:level:${key}`, level);
}

/** The folder's last level, or null when memory no longer has it. */
export function lastLevel<P extends LevelPart>(cache: Map<string, unknown>, key: string): FolderLevel<P> | null {
  const l = cache.get(`mem:level:${key}`) as FolderLevel<P> | undefined;
  return l && Array.isArray(l.entries) && l.at instanceof Int32Array && typeof l.text === 'string' ? l : null;
}
