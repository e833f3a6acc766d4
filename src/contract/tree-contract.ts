// A walked tree's contract as the digest keeps it (issue 24): its shape, its keys in memory and
// on disk, and how a walk's result is kept. Split out of ./digest.ts, which walks the trees.

import { createHash } from 'node:crypto';
import { APPROX_BYTES } from '../cache/content-cache.js';
import { isPyIndex, type PyIndex } from './py-reexport.js';
import { PY_EXTRACTOR_VERSION } from './python.js';
import { TS_EXTRACTOR_VERSION } from './typescript.js';
import type { FolderLevel } from './folder-level.js';

/** sha256 of a string's UTF-8, in hex: the digests' one hash. */
export function sha256(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

/** What a walk's limits add to the keys (./digest.ts Lim). */
type Tagged = { tag: string };

/** One entry's part of its tree: its Merkle line ('' for none), its rows, the files it counts, its Python index. */
export type Part = { line: string; rows: () => string[]; files: number; py: PyIndex };

export interface TreeContract {
  /** sha256 over the tree's entries that carry rows: `F name sha256(file rows)` or `T name digest`. */
  digest: string;
  /**
   * The rows, in path order, built on each read from the per-file rows in the cache (only a
   * refusal's diff needs them, and a cold 50k-file tree's rows are not held in memory);
   * RowsNotLoaded when the cache no longer has some (contractRows then walks the trees again).
   */
  readonly rows: string[];
  /** Files under the tree that carry rows. */
  files: number;
  /** Python re-exports and private modules under the tree (py-reexport.ts). */
  py: PyIndex;
}

/** Rows built on each read: a contract does not keep them (see TreeContract.rows). */
export function lazyRows(build: () => string[]): { readonly rows: string[] } {
  return { get rows() { return build(); } };
}

/** Approximate memory of one in-memory tree contract (ContentCache's bound): its digest, its parts' row thunks, its Python index. */
export function treeBytes(parts: number, py: PyIndex): number {
  return 256 + parts * 200 + (py.x.length + py.p.length) * 160;
}

/** A tree contract's key in memory (the whole object). */
export function treeMemKey(treeId: string, prefix: string, lim: Tagged): string {
  return `mem:tree-contract:v1:${TS_EXTRACTOR_VERSION}:${PY_EXTRACTOR_VERSION}:${lim.tag}:${treeId}:${prefix}`;
}

/** A tree contract's key on disk (digest, file count, Python index). */
export function treeStoredKey(treeId: string, prefix: string, lim: Tagged): string {
  return `tree-digest:v1:${TS_EXTRACTOR_VERSION}:${PY_EXTRACTOR_VERSION}:${lim.tag}:${treeId}:${prefix}`;
}

/** A tree contract as stored on disk (digest, file count, Python index); anything else is computed again. */
export function isStoredTree(v: unknown): v is { digest: string; files: number; py: PyIndex } {
  const o = v as { digest?: unknown; files?: unknown; py?: unknown } | undefined;
  return !!o && typeof o.digest === 'string' && /^[0-9a-f]{64}$/.test(o.digest) && Number.isInteger(o.files) && isPyIndex(o.py);
}

/** A file's Merkle line's key ('' for a file without rows). */
export function fileLineKey(blob: string, path: string, lim: Tagged): string {
  return `file-line:${TS_EXTRACTOR_VERSION}:${PY_EXTRACTOR_VERSION}:${lim.tag}:${blob}:${path}`;
}

/** A wide folder's tree contract from its level (whose parts its memory holds already): the digest is sha256 of its text less the last '\n'. */
export function levelTree(cache: Map<string, unknown>, key: string, storedKey: string, level: FolderLevel<Part>): TreeContract {
  const parts = level.parts;
  return keepTree(cache, key, storedKey, sha256(level.text.slice(0, -1)), level.files, level.py, () => parts.flatMap((p) => (p?.line ? p.rows() : [])), level.lined);
}

/** The tree contract of a walked tree, kept in memory (whole) and on disk (its digest, files and Python index). */
export function keepTree(cache: Map<string, unknown>, key: string, storedKey: string, digest: string, files: number, py: PyIndex, rows: () => string[], lined: number): TreeContract {
  const tc: TreeContract = Object.assign(lazyRows(rows), { digest, files, py });
  Object.defineProperty(tc, APPROX_BYTES, { value: treeBytes(lined, py) });
  cache.set(key, tc);
  cache.set(storedKey, { digest, files, py });
  return tc;
}
