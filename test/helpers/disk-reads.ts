// Counts a PersistentCache's reads from cache.db (single reads, batched reads and the keys they
// asked for), so a test can say how a walk read the disk without mocking the database.

import type { PersistentCache } from '../../src/cache/content-cache.js';

export interface DiskReads {
  single: number;
  batches: number;
  batchedKeys: number;
}

/** Wraps `disk`'s read and readMany in place; the returned counters grow as they are called. */
export function countDiskReads(disk: PersistentCache): DiskReads {
  const n: DiskReads = { single: 0, batches: 0, batchedKeys: 0 };
  const read = disk.read.bind(disk);
  const readMany = disk.readMany.bind(disk);
  disk.read = (key: string) => (n.single++, read(key));
  disk.readMany = (keys: string[]) => (n.batches++, n.batchedKeys += keys.length, readMany(keys));
  return n;
}
