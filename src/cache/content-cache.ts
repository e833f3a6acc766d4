// The daemon's content-keyed cache, kept across restarts in `<data>/cache.db`: contract rows
// per blob id (and extractor version), digests per contract-root tree id, fixture sha256 per
// blob id. Keys name content, so an entry cannot go stale; each value carries a sha256 of
// itself, and a value that fails its checksum or does not parse is dropped and recomputed.
// A cache never decides anything: a miss only costs time. Memory is bounded by bytes, not
// entries (a never-seen 50k-file tree streams its rows through to disk; issue 24), and disk
// writes are queued and flushed in one transaction per batch.

import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, renameSync } from 'node:fs';
import { privateFile } from '../private-files.js';

// 2: tree digests from before modes were read as git's checkout reads them (src/git/modes.ts)
// could have skipped a folder stored as `40755`; such a cache is dropped, not trusted.
const SCHEMA_VERSION = 2;

function sum(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Tuning of PersistentCache's write queue (defaults in parentheses). */
export interface PersistentCacheOptions {
  /** Queued entries that trigger a flush (512). */
  batchEntries?: number;
  /** Queued JSON characters that trigger a flush (4 MiB): the queue's memory is bounded too. */
  batchChars?: number;
  /** A smaller queue is flushed this long after its first entry (25 ms), and at close(). */
  flushMs?: number;
}

/** A value read back with the length of its JSON text (ContentCache's size of it). */
export interface SizedValue {
  value: unknown;
  chars: number;
}

/**
 * The SQLite layer: JSON values with a checksum. Writes are queued and flushed in one
 * transaction per batch (one INSERT per statement, each its own transaction, cost seconds
 * of a cold 10k-file parse); reads see the queue, so a value set is readable at once. A batch
 * that fails to be written is dropped and counted in `failedWrites`: only a miss later.
 */
export class PersistentCache {
  private readonly db: Database.Database;
  private readonly getStmt: Database.Statement<[string], { value: string; sum: string }>;
  private readonly putStmt: Database.Statement<[string, string, string]>;
  private readonly delStmt: Database.Statement<[string]>;
  private readonly writeBatch: (batch: Array<[string, string]>) => void;
  private pending = new Map<string, string>();
  private pendingChars = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly batchEntries: number;
  private readonly batchChars: number;
  private readonly flushMs: number;
  dropped = 0;
  /** Entries whose batch could not be written (a full disk, a locked file). */
  failedWrites = 0;
  /** Batches written (for tests and the benchmark). */
  flushes = 0;

  constructor(path: string, private readonly log: (line: string) => void = (l) => process.stderr.write(l + '\n'), opts: PersistentCacheOptions = {}) {
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
    this.writeBatch = this.db.transaction((batch: Array<[string, string]>) => {
      for (const [k, text] of batch) this.putStmt.run(k, text, sum(text));
    });
    this.batchEntries = Math.max(1, opts.batchEntries ?? 512);
    this.batchChars = Math.max(1, opts.batchChars ?? 4 * 1024 * 1024);
    this.flushMs = Math.max(0, opts.flushMs ?? 25);
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

  /** A stored row's value, or undefined when its checksum fails or it does not parse (the row is then deleted). */
  private checked(key: string, row: { value: string; sum: string }): SizedValue | undefined {
    if (sum(row.value) === row.sum) {
      try {
        return { value: JSON.parse(row.value) as unknown, chars: row.value.length };
      } catch {
        // falls through: a value that does not parse is corrupt
      }
    }
    this.dropped++;
    this.delStmt.run(key);
    return undefined;
  }

  /** A queued value, parsed from its queued text (a fresh copy, as a read from disk would be). */
  private queued(key: string): SizedValue | undefined {
    const text = this.pending.get(key);
    return text === undefined ? undefined : { value: JSON.parse(text) as unknown, chars: text.length };
  }

  /** `get` with the value's JSON length. */
  read(key: string): SizedValue | undefined {
    const q = this.queued(key);
    if (q) return q;
    const row = this.getStmt.get(key);
    return row ? this.checked(key, row) : undefined;
  }

  get(key: string): unknown {
    return this.read(key)?.value;
  }

  /** `getMany` with each value's JSON length. */
  readMany(keys: string[]): Map<string, SizedValue> {
    const out = new Map<string, SizedValue>();
    const rest: string[] = [];
    for (const k of keys) {
      const q = this.queued(k);
      if (q) out.set(k, q);
      else rest.push(k);
    }
    for (let i = 0; i < rest.length; i += 500) {
      const chunk = rest.slice(i, i + 500);
      const rows = this.db.prepare(`SELECT key, value, sum FROM kv WHERE key IN (${chunk.map(() => '?').join(',')})`).all(...chunk) as Array<{ key: string; value: string; sum: string }>;
      for (const row of rows) {
        const v = this.checked(row.key, row);
        if (v) out.set(row.key, v);
      }
    }
    return out;
  }

  /** Many keys in few reads (chunks of 500 per SELECT); a key that is absent or fails its checksum is left out. */
  getMany(keys: string[]): Map<string, unknown> {
    const out = new Map<string, unknown>();
    for (const [k, v] of this.readMany(keys)) out.set(k, v.value);
    return out;
  }

  /** Queue a value already serialised (ContentCache serialises once, for its size too). After close(): nothing. */
  setText(key: string, text: string): void {
    if (this.closed) return;
    const old = this.pending.get(key);
    if (old !== undefined) {
      this.pendingChars -= old.length;
      this.pending.delete(key);
    }
    this.pending.set(key, text);
    this.pendingChars += text.length;
    if (this.pending.size >= this.batchEntries || this.pendingChars >= this.batchChars) this.flush();
    else if (!this.timer) this.timer = setTimeout(() => this.flush(), this.flushMs);
  }

  set(key: string, value: unknown): void {
    this.setText(key, JSON.stringify(value));
  }

  /** Many entries, queued like set(). */
  setMany(entries: Array<[string, unknown]>): void {
    for (const [k, v] of entries) this.set(k, v);
  }

  /** Entries queued and not yet written. */
  get queuedEntries(): number {
    return this.pending.size;
  }

  /** Write the queue now, in one transaction. A failure drops the batch (counted in failedWrites), never throws. */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (!this.pending.size || this.closed) return;
    const batch = [...this.pending];
    this.pending = new Map();
    this.pendingChars = 0;
    try {
      this.writeBatch(batch);
      this.flushes++;
    } catch (err) {
      if (!this.failedWrites) this.log(`patchgate: could not write ${batch.length} cache entries (${(err as Error).message}); they will be computed again when needed`);
      this.failedWrites += batch.length;
    }
  }

  /** Flush the queue and close the database; later sets are ignored. */
  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.db.close();
  }
}

/** Set on a `mem:` value: its approximate size in bytes, for ContentCache's bound (see approxBytes). */
export const APPROX_BYTES = Symbol.for('patchgate.approxBytes');

/** What a `mem:` value without a size of its own is taken to hold. */
const MEM_VALUE_BYTES = 1024;
/** Per entry: the key's Map slot, the size record. */
const ENTRY_OVERHEAD = 64;

/**
 * The approximate size of a value kept only in memory: a string's length, an array of
 * strings' total, a value's own APPROX_BYTES, else MEM_VALUE_BYTES. Never serialises it (a
 * `mem:` value may be large, or have getters that must not run).
 */
export function approxBytes(value: unknown): number {
  if (typeof value === 'string') return value.length + 2;
  if (value === null || typeof value !== 'object') return 8;
  const own = (value as { [APPROX_BYTES]?: unknown })[APPROX_BYTES];
  if (typeof own === 'number' && Number.isFinite(own) && own >= 0) return own;
  if (Array.isArray(value) && value.length <= 100_000 && value.every((x) => typeof x === 'string')) {
    return value.reduce((n: number, x: string) => n + x.length + 3, 2);
  }
  return MEM_VALUE_BYTES;
}

/**
 * The heap a stored value holds, from its JSON length: parsed rows take about twice their JSON
 * (measured: 17 MB of heap for 8.5 MB of row JSON), so the bound is on the heap, not on the text.
 */
function heapBytes(jsonChars: number): number {
  return 2 * jsonChars;
}

/** The memory bound's default: PATCHGATE_CACHE_MEM_MB (MiB, at least 1) or 32 MiB. */
function defaultMaxBytes(): number {
  const env = process.env.PATCHGATE_CACHE_MEM_MB;
  return env !== undefined && /^\d+$/.test(env) && Number(env) >= 1 ? Number(env) * 1024 * 1024 : 32 * 1024 * 1024;
}

export interface ContentCacheOptions {
  /** Approximate heap bytes kept in memory (twice the JSON length of stored values; approxBytes of `mem:` ones). */
  maxBytes?: number;
}

/**
 * Memory in front of SQLite, with the Map interface the rules use. Keys starting with `mem:`
 * (derived values such as rows per tree, large and cheap to rebuild) stay in memory. Memory is
 * an LRU bounded by approximate bytes (`maxBytes`): what it drops is read back from disk, or
 * (`mem:`) computed again. A value larger than the whole bound is not kept in memory at all. A
 * cache failure is never an error: the value is simply computed again.
 */
export class ContentCache extends Map<string, unknown> {
  /** Lookups answered from memory or disk, and lookups that had to be computed (for /metrics). */
  hits = 0;
  misses = 0;
  /** Entries dropped from memory to stay under maxBytes. */
  evicted = 0;
  readonly maxBytes: number;
  private bytes = 0;
  private readonly sizes = new Map<string, number>();

  constructor(private readonly disk: PersistentCache | null, opts: ContentCacheOptions = {}) {
    super();
    const max = opts.maxBytes ?? defaultMaxBytes();
    if (!Number.isFinite(max) || max < 1) throw new RangeError(`ContentCache maxBytes must be positive, got ${max}`);
    this.maxBytes = max;
  }

  /** Approximate bytes held in memory now (always <= maxBytes). */
  get memBytes(): number {
    return this.bytes;
  }

  /** Write the disk's queue now (tests, and before a copy of cache.db is taken). */
  flush(): void {
    try {
      this.disk?.flush();
    } catch {
      // as set(): a failed write costs a recomputation later
    }
  }

  /** Keep a value in memory as most recently used, then drop the least recently used until under the bound. */
  private remember(key: string, value: unknown, bytes: number): void {
    this.forget(key);
    const size = bytes + key.length + ENTRY_OVERHEAD;
    if (size > this.maxBytes) return;
    super.set(key, value);
    this.sizes.set(key, size);
    this.bytes += size;
    while (this.bytes > this.maxBytes) {
      const oldest = super.keys().next().value as string;
      this.forget(oldest);
      this.evicted++;
    }
  }

  private forget(key: string): boolean {
    const size = this.sizes.get(key);
    if (size === undefined) return false;
    this.sizes.delete(key);
    this.bytes -= size;
    return super.delete(key);
  }

  /** The value in memory, now most recently used. */
  private touch(key: string): unknown {
    if (!super.has(key)) return undefined;
    const v = super.get(key);
    super.delete(key);
    super.set(key, v);
    return v;
  }

  override get(key: string): unknown {
    const hit = this.touch(key);
    if (hit !== undefined || !this.disk || key.startsWith('mem:')) {
      if (hit !== undefined) this.hits++;
      else this.misses++;
      return hit;
    }
    let v: SizedValue | undefined;
    try {
      v = this.disk.read(key);
    } catch {
      this.misses++;
      return undefined;
    }
    if (v !== undefined) {
      this.hits++;
      this.remember(key, v.value, heapBytes(v.chars));
      return v.value;
    }
    this.misses++;
    return undefined;
  }

  /** `get` for many keys: memory first, then one batched read of the disk for the rest. A failing disk answers only what memory holds. */
  getMany(keys: string[]): Map<string, unknown> {
    const out = new Map<string, unknown>();
    const rest: string[] = [];
    for (const k of keys) {
      const hit = this.touch(k);
      if (hit !== undefined) out.set(k, hit);
      else if (!k.startsWith('mem:')) rest.push(k);
    }
    if (rest.length && this.disk) {
      try {
        for (const [k, v] of this.disk.readMany(rest)) {
          out.set(k, v.value);
          this.remember(k, v.value, heapBytes(v.chars));
        }
      } catch {
        // unreadable: what is missing is computed again
      }
    }
    this.hits += out.size;
    this.misses += keys.length - out.size;
    return out;
  }

  /**
   * Reads into memory, in one batched read of the disk, those of `keys` that memory lacks, so
   * the gets that follow are memory hits (a contract walk after a restart: src/contract/digest.ts).
   * Not counted as lookups, since those gets are; a failing disk leaves memory as it was.
   */
  prefetch(keys: string[]): void {
    if (!this.disk) return;
    const rest = keys.filter((k) => !super.has(k) && !k.startsWith('mem:'));
    // One key gains nothing from a batch: its get reads it.
    if (rest.length < 2) return;
    try {
      for (const [k, v] of this.disk.readMany(rest)) this.remember(k, v.value, heapBytes(v.chars));
    } catch {
      // unreadable: each get tries again, and what is missing is computed again
    }
  }

  /** `set` for many entries (queued to disk together). */
  setMany(entries: Array<[string, unknown]>): void {
    for (const [k, v] of entries) this.set(k, v);
  }

  override set(key: string, value: unknown): this {
    if (key.startsWith('mem:') || !this.disk) {
      this.remember(key, value, approxBytes(value));
      return this;
    }
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch {
      // not serialisable (a cycle, a BigInt): kept in memory only
    }
    if (text === undefined) {
      this.remember(key, value, approxBytes(value));
      return this;
    }
    this.remember(key, value, heapBytes(text.length));
    try {
      this.disk.setText(key, text);
    } catch {
      // a full disk or a locked file costs a recomputation later, nothing more
    }
    return this;
  }

  override delete(key: string): boolean {
    return this.forget(key);
  }

  override clear(): void {
    super.clear();
    this.sizes.clear();
    this.bytes = 0;
  }
}
