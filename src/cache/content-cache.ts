// The daemon's content-keyed cache, kept across restarts in `<data>/cache.db`: contract rows
// per blob id (and extractor version), digests per contract-root tree id, fixture sha256 per
// blob id. Keys name content, so an entry cannot go stale; each value carries a sha256 of
// itself, and a value that fails its checksum or does not parse is dropped and recomputed.
// A cache never decides anything: a miss only costs time.

import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, renameSync } from 'node:fs';
import { privateFile } from '../private-files.js';
import { LruMap } from './lru.js';

// 2: tree digests from before modes were read as git's checkout reads them (src/git/modes.ts)
// could have skipped a folder stored as `40755`; such a cache is dropped, not trusted.
const SCHEMA_VERSION = 2;

function sum(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The SQLite layer: JSON values with a checksum. */
export class PersistentCache {
  private readonly db: Database.Database;
  private readonly getStmt: Database.Statement<[string], { value: string; sum: string }>;
  private readonly putStmt: Database.Statement<[string, string, string]>;
  private readonly delStmt: Database.Statement<[string]>;
  dropped = 0;

  constructor(path: string, log: (line: string) => void = (l) => process.stderr.write(l + '\n')) {
    privateFile(path);
    // Only a cache: a file that does not open (damaged, not SQLite) is moved aside and started
    // again empty, so a bad cache.db costs a cold parse, never the server.
    try {
      this.db = PersistentCache.openDb(path);
    } catch (err) {
      const aside = `${path}.damaged-${Date.now()}`;
      for (const ext of ['', '-wal', '-shm']) {
        if (existsSync(path + ext)) renameSync(path + ext, aside + ext);
      }
      log(`patchgate: the cache ${path} could not be opened (${(err as Error).message}); moved it to ${aside} and started an empty cache`);
      privateFile(path);
      this.db = PersistentCache.openDb(path);
    }
    this.getStmt = this.db.prepare('SELECT value, sum FROM kv WHERE key = ?');
    this.putStmt = this.db.prepare('INSERT OR REPLACE INTO kv (key, value, sum) VALUES (?, ?, ?)');
    this.delStmt = this.db.prepare('DELETE FROM kv WHERE key = ?');
  }

  private static openDb(path: string): Database.Database {
    const db = new Database(path);
    try {
      PersistentCache.prepare(db);
      return db;
    } catch (err) {
      db.close();
      throw err;
    }
  }

  private static prepare(db: Database.Database): void {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    if ((db.pragma('user_version', { simple: true }) as number) !== SCHEMA_VERSION) {
      db.exec('DROP TABLE IF EXISTS kv; CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, sum TEXT NOT NULL) WITHOUT ROWID');
      db.pragma(`user_version = ${SCHEMA_VERSION}`);
    }
    db.prepare('SELECT value, sum FROM kv WHERE key = ?').get('');
  }

  get(key: string): unknown {
    const row = this.getStmt.get(key);
    if (!row) return undefined;
    if (sum(row.value) === row.sum) {
      try {
        return JSON.parse(row.value) as unknown;
      } catch {
        // falls through: a value that does not parse is corrupt
      }
    }
    this.dropped++;
    this.delStmt.run(key);
    return undefined;
  }

  /** Many keys in few reads (chunks of 500 per SELECT); a key that is absent or fails its checksum is left out. */
  getMany(keys: string[]): Map<string, unknown> {
    const out = new Map<string, unknown>();
    for (let i = 0; i < keys.length; i += 500) {
      const chunk = keys.slice(i, i + 500);
      const rows = this.db.prepare(`SELECT key, value, sum FROM kv WHERE key IN (${chunk.map(() => '?').join(',')})`).all(...chunk) as Array<{ key: string; value: string; sum: string }>;
      for (const row of rows) {
        let v: unknown;
        if (sum(row.value) === row.sum) {
          try {
            v = JSON.parse(row.value) as unknown;
          } catch {
            v = undefined;
          }
        }
        if (v === undefined) {
          this.dropped++;
          this.delStmt.run(row.key);
        } else out.set(row.key, v);
      }
    }
    return out;
  }

  set(key: string, value: unknown): void {
    const text = JSON.stringify(value);
    this.putStmt.run(key, text, sum(text));
  }

  /** Many entries in one transaction. */
  setMany(entries: Array<[string, unknown]>): void {
    this.db.transaction(() => {
      for (const [k, v] of entries) this.set(k, v);
    })();
  }

  close(): void {
    this.db.close();
  }
}

/**
 * Memory in front of SQLite, with the Map interface the rules use. Keys starting with `mem:`
 * (derived values such as rows per tree, large and cheap to rebuild) stay in memory. A cache failure is never
 * an error: the value is simply computed again.
 */
export class ContentCache extends LruMap<string, unknown> {
  /** Lookups answered from memory or disk, and lookups that had to be computed (for /metrics). */
  hits = 0;
  misses = 0;
  constructor(private readonly disk: PersistentCache | null, max = 200_000) {
    super(max);
  }

  override get(key: string): unknown {
    const hit = super.get(key);
    if (hit !== undefined || !this.disk || key.startsWith('mem:')) {
      if (hit !== undefined) this.hits++;
      else this.misses++;
      return hit;
    }
    let v: unknown;
    try {
      v = this.disk.get(key);
    } catch {
      this.misses++;
      return undefined;
    }
    if (v !== undefined) {
      this.hits++;
      super.set(key, v);
    } else this.misses++;
    return v;
  }

  /** `get` for many keys: memory first, then one batched read of the disk for the rest. A failing disk answers only what memory holds. */
  getMany(keys: string[]): Map<string, unknown> {
    const out = new Map<string, unknown>();
    const rest: string[] = [];
    for (const k of keys) {
      const hit = super.get(k);
      if (hit !== undefined) out.set(k, hit);
      else rest.push(k);
    }
    if (rest.length && this.disk) {
      try {
        for (const [k, v] of this.disk.getMany(rest.filter((k) => !k.startsWith('mem:')))) {
          out.set(k, v);
          super.set(k, v);
        }
      } catch {
        // unreadable: what is missing is computed again
      }
    }
    this.hits += out.size;
    this.misses += keys.length - out.size;
    return out;
  }

  /** `set` for many entries, written to disk in one transaction. */
  setMany(entries: Array<[string, unknown]>): void {
    for (const [k, v] of entries) super.set(k, v);
    try {
      this.disk?.setMany(entries.filter(([k]) => !k.startsWith('mem:')));
    } catch {
      // as set(): a failed write costs a recomputation later
    }
  }

  override set(key: string, value: unknown): this {
    super.set(key, value);
    if (key.startsWith('mem:')) return this;
    try {
      this.disk?.set(key, value);
    } catch {
      // a full disk or a locked file costs a recomputation later, nothing more
    }
    return this;
  }
}
