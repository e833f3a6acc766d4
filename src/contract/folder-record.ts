// A wide folder's memory for the contract digest (issue 24): what its files gave last time,
// by name and blob id, so a one-file change in a folder of thousands of files neither looks up
// every sibling's line on its own nor rebuilds anything per sibling. Two forms: the folder's
// last level, in memory (./folder-level.ts: its parts, reused as they are), and a record of
// each file's Merkle line and Python re-exports in cache.db (for the first walk after a
// restart, read here). Split out of src/contract/digest.ts, which owns the keys and decides
// when each is read and written.

/** One file as stored: [name, blob id, Merkle line ('' for no rows), re-exports (PyLinks.exports)]. */
export type StoredEntry = [string, string, string, Array<[string, string, string]>];

function isStoredEntry(v: unknown): v is StoredEntry {
  return Array.isArray(v) && v.length === 4 && typeof v[0] === 'string' && typeof v[1] === 'string' && typeof v[2] === 'string'
    && (v[2] === '' || v[2].startsWith(`F ${v[0]} `)) && Array.isArray(v[3])
    && v[3].every((x: unknown) => Array.isArray(x) && x.length === 3 && x.every((s) => typeof s === 'string'));
}

/** The stored record under `key`, or null; a stored value of the wrong shape counts as none. */
export function storedRecord(cache: Map<string, unknown>, key: string): StoredEntry[] | null {
  const stored = cache.get(key);
  return Array.isArray(stored) && stored.every(isStoredEntry) ? stored : null;
}

/**
 * Finds a file of a new walk in an earlier one (a last level or a stored record) by name and
 * blob id. Trees are sorted and a push changes few entries, so the same position is tried
 * first, which costs two string compares and allocates nothing; a map by name is built only
 * when a position disagrees (a file was added or removed before it).
 */
export class Earlier {
  private byName: Map<string, number> | null = null;

  constructor(private readonly names: readonly string[], private readonly ids: readonly string[]) {}

  /** The index in the earlier walk of file `j` of this one (named `name`, blob `id`), or -1 when it is not there with that blob. */
  indexOf(j: number, name: string, id: string): number {
    let k = this.names[j] === name ? j : -1;
    if (k < 0) {
      this.byName ??= new Map(this.names.map((n, i) => [n, i]));
      k = this.byName.get(name) ?? -1;
    }
    return k >= 0 && this.ids[k] === id ? k : -1;
  }
}
