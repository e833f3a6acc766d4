// A wide folder's record for the contract digest (issue 24): each file's Merkle line and
// Python re-exports by name and blob id, in memory and in cache.db, so a one-file change in a
// folder of thousands of files does not look up every sibling's line on its own. Split out of
// src/contract/digest.ts, which owns the keys and decides when a record is read and written.

import { APPROX_BYTES } from '../cache/content-cache.js';

/**
 * What a folder record knows of one file, by name and blob id: its Merkle line ('' for no rows)
 * and, for a public Python module, what it re-exports (PyLinks.exports).
 */
export type Recorded = { line: string; exports: Array<[string, string, string]> };

/** One file as stored: [name, blob id, line, re-exports]. */
export type StoredEntry = [string, string, string, Array<[string, string, string]>];

function isStoredEntry(v: unknown): v is StoredEntry {
  return Array.isArray(v) && v.length === 4 && typeof v[0] === 'string' && typeof v[1] === 'string' && typeof v[2] === 'string'
    && (v[2] === '' || v[2].startsWith(`F ${v[0]} `)) && Array.isArray(v[3])
    && v[3].every((x: unknown) => Array.isArray(x) && x.length === 3 && x.every((s) => typeof s === 'string'));
}

/** The record under `key` (memory first, then disk), or null; a stored value of the wrong shape counts as none. */
export function folderRecord(cache: Map<string, unknown>, key: string): Map<string, Recorded> | null {
  const mem = cache.get(`mem:${key}`);
  if (mem instanceof Map) return mem as Map<string, Recorded>;
  const stored = cache.get(key);
  if (!Array.isArray(stored) || !stored.every(isStoredEntry)) return null;
  return keep(cache, key, stored);
}

/** The record of `stored` entries, kept in memory (`mem:`) with its approximate size. */
function keep(cache: Map<string, unknown>, key: string, stored: StoredEntry[]): Map<string, Recorded> {
  const record = new Map<string, Recorded>();
  let bytes = 0;
  for (const [name, id, line, exports] of stored) {
    record.set(`${name}\0${id}`, { line, exports });
    bytes += 2 * (name.length + id.length + line.length) + exports.length * 160 + 64;
  }
  Object.defineProperty(record, APPROX_BYTES, { value: bytes });
  cache.set(`mem:${key}`, record);
  return record;
}

/**
 * Keeps a folder's record: in memory always, on disk only when `persist` (the walk looked up a
 * quarter of the folder's files or more: a cold walk, or the first after a restart), so a
 * one-file push does not rewrite a record of thousands of files; the few files a stored record
 * lacks are looked up one by one.
 */
export function saveFolderRecord(cache: Map<string, unknown>, key: string, stored: StoredEntry[], persist: boolean): void {
  if (persist) cache.set(key, stored);
  keep(cache, key, stored);
}
