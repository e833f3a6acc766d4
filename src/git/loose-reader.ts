// Why this exists: a one-file agent push brings a handful of objects, and receive-pack's
// `unpack-objects` writes them to the push's quarantine folder as loose objects (zlib files).
// Starting a `git cat-file` per push only to read those cost the daemon a process start (a
// fork of a process of some hundred MB) before any rule could run. This reader answers the
// same requests as the cat-file reader: an object in the quarantine is read from its loose file
// here (inflated, its id checked against its content); any other object comes from the
// repository's long-lived reader, which sees the repository as it was before the push.
// Anything it does not read itself (a quarantine holding a pack, an object name other than a
// full id or `id:path`, a path through a submodule) goes to a cat-file started for this push
// only then, so its answers are git's own. Nothing read is executed.

import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { constants as zc, inflate, inflateSync } from 'node:zlib';
import { GitError } from '../errors.js';

/** One object as the cat-file reader reports it (`data` empty for a header). */
export interface ObjectRecord {
  id: string;
  type: string;
  size: number;
  data: Buffer;
}

/** What the Git facade asks of an object reader (the cat-file reader or this one). */
export interface ObjectReader {
  readonly dead: boolean;
  read(spec: string): Promise<ObjectRecord | null>;
  header(spec: string): Promise<ObjectRecord | null>;
  close(): void;
}

const FULL_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const ID_PATH = /^([0-9a-f]{40}|[0-9a-f]{64}):(.*)$/s;
/** A header's worth of compressed bytes: `<type> <size>\0` inflates from the first few. */
const HEADER_BYTES = 512;
const inflateAsync = promisify(inflate);

/**
 * The ids of the quarantine's loose objects when it holds loose objects only (no pack): the
 * case read in process. Null when it holds a pack or cannot be listed (git reads it then).
 */
export function looseQuarantineIds(dir: string): Set<string> | null {
  const ids = new Set<string>();
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      if (e.name === 'pack') {
        if (readdirSync(join(dir, 'pack')).some((f) => f.endsWith('.pack') || f.endsWith('.idx'))) return null;
      } else if (/^[0-9a-f]{2}$/.test(e.name)) {
        for (const f of readdirSync(join(dir, e.name))) if (/^(?:[0-9a-f]{38}|[0-9a-f]{62})$/.test(f)) ids.add(e.name + f);
      }
    }
    return ids;
  } catch {
    return null;
  }
}

export class LooseQuarantineReader implements ObjectReader {
  private fallbackReader: ObjectReader | null = null;
  private closed = false;
  /** Full reads of this push's loose objects (a handful, small ones only). */
  private readonly kept = new Map<string, Promise<ObjectRecord>>();

  /**
   * @param dir the quarantine folder (GIT_QUARANTINE_PATH), holding loose objects only
   * @param store the repository's long-lived reader, without the quarantine
   * @param fallback starts a cat-file over quarantine and repository (this push's environment)
   */
  constructor(private readonly dir: string, private readonly loose: ReadonlySet<string>, private readonly store: () => ObjectReader, private readonly fallback: () => ObjectReader) {}

  get dead(): boolean {
    return this.closed;
  }

  read(spec: string): Promise<ObjectRecord | null> {
    return this.lookup(spec, false);
  }

  header(spec: string): Promise<ObjectRecord | null> {
    return this.lookup(spec, true);
  }

  close(): void {
    this.closed = true;
    this.fallbackReader?.close();
    this.fallbackReader = null;
  }

  private viaGit(): ObjectReader {
    if (!this.fallbackReader || this.fallbackReader.dead) this.fallbackReader = this.fallback();
    return this.fallbackReader;
  }

  private async lookup(spec: string, headerOnly: boolean): Promise<ObjectRecord | null> {
    if (this.closed) throw new GitError(['cat-file', '--batch-command'], null, 'the reader of this push is closed');
    if (FULL_ID.test(spec)) return this.byId(spec, headerOnly);
    const m = ID_PATH.exec(spec);
    if (m && plainPath(m[2]!)) {
      const found = await this.resolve(m[1]!, m[2]!, headerOnly);
      if (found !== 'git') return found;
    }
    return headerOnly ? this.viaGit().header(spec) : this.viaGit().read(spec);
  }

  /** An object by full id: the quarantine's loose file, else the repository's store. */
  private async byId(id: string, headerOnly: boolean): Promise<ObjectRecord | null> {
    if (this.loose.has(id)) {
      const loose = await this.readLoose(id, headerOnly);
      if (loose) return loose;
    }
    const s = this.store();
    return headerOnly ? s.header(id) : s.read(id);
  }

  /**
   * `id:path` as git resolves it: tags and commits peeled to a tree, then one entry per
   * component. Only objects of the quarantine are opened here: as soon as the walk reaches an
   * object the repository had before the push, the rest (`object:rest/of/path`) is one request
   * to the repository's reader, which resolves it as git does.
   */
  private async resolve(id: string, path: string, headerOnly: boolean): Promise<ObjectRecord | null | 'git'> {
    const store = (spec: string) => (headerOnly ? this.store().header(spec) : this.store().read(spec));
    let cur: ObjectRecord | null;
    for (let depth = 0; ; depth++) {
      if (!this.loose.has(id)) return store(`${id}:${path}`);
      cur = await this.readLoose(id, false);
      if (!cur) return null;
      const next = cur.type === 'tag' ? /^object ([0-9a-f]+)\n/.exec(cur.data.toString('latin1')) : cur.type === 'commit' ? /^tree ([0-9a-f]+)\n/.exec(cur.data.toString('latin1')) : null;
      if (cur.type === 'tree') break;
      if (!next || depth > 16) return 'git';
      id = next[1]!;
    }
    if (path === '') return headerOnly ? { ...cur, data: Buffer.alloc(0) } : cur;
    const parts = path.split('/');
    for (let i = 0; i < parts.length; i++) {
      const entry = findEntry(cur.data, parts[i]!, cur.id.length / 2);
      if (!entry) return null;
      const fmt = parseInt(entry.mode, 8) & 0o170000;
      if (fmt === 0o160000) return 'git'; // a submodule's commit: git's own answer
      if (i === parts.length - 1) return this.byId(entry.id, headerOnly);
      if (fmt !== 0o040000) return null;
      if (!this.loose.has(entry.id)) return store(`${entry.id}:${parts.slice(i + 1).join('/')}`);
      cur = await this.readLoose(entry.id, false);
      if (!cur || cur.type !== 'tree') return 'git';
    }
    return null;
  }

  /**
   * A loose object of the quarantine, or null when it has no file there. A push's loose
   * objects are small: read and inflated synchronously (no thread-pool round trips), and each
   * read kept for the rest of the push, since several rules open the same commit and trees.
   * A file over SYNC_MAX is read and inflated asynchronously, and not kept.
   */
  private readLoose(id: string, headerOnly: boolean): Promise<ObjectRecord | null> {
    const kept = this.kept.get(id);
    if (kept) return headerOnly ? kept.then((r) => r && { ...r, data: Buffer.alloc(0) }) : kept;
    const file = join(this.dir, id.slice(0, 2), id.slice(2));
    const bad = (why: string, cause?: unknown) => new GitError(['(quarantine)', file], null, `loose object ${id} ${why}`, { cause });
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Promise.resolve(null);
      return Promise.reject(new GitError(['(quarantine)', file], null, `cannot open loose object ${id}: ${(err as Error).message}`, { cause: err }));
    }
    try {
      const size = fstatSync(fd).size;
      if (headerOnly) {
        const buf = Buffer.alloc(Math.min(HEADER_BYTES, size));
        const n = readSync(fd, buf, 0, buf.length, 0);
        let raw: Buffer;
        try {
          raw = inflateSync(buf.subarray(0, n), { finishFlush: zc.Z_SYNC_FLUSH });
        } catch (err) {
          return Promise.reject(bad(`does not inflate: ${(err as Error).message}`, err));
        }
        const head = parseLooseHeader(raw);
        return head ? Promise.resolve({ id, type: head.type, size: head.size, data: Buffer.alloc(0) }) : Promise.reject(bad('has no valid header'));
      }
      if (size > SYNC_MAX) {
        return readFile(file).then((z) => inflateAsync(z)).then((raw) => checked(id, raw, bad), (err: unknown) => {
          throw err instanceof GitError ? err : bad(`does not inflate: ${(err as Error).message}`, err);
        });
      }
      const z = Buffer.alloc(size);
      readSync(fd, z, 0, size, 0);
      let raw: Buffer;
      try {
        raw = inflateSync(z);
      } catch (err) {
        return Promise.reject(bad(`does not inflate: ${(err as Error).message}`, err));
      }
      let result: Promise<ObjectRecord>;
      try {
        result = Promise.resolve(checked(id, raw, bad));
      } catch (err) {
        return Promise.reject(err);
      }
      this.kept.set(id, result);
      return result;
    } finally {
      closeSync(fd);
    }
  }
}

/** Above this many compressed bytes a loose object is read and inflated off the event loop. */
const SYNC_MAX = 1024 * 1024;

function parseLooseHeader(raw: Buffer): { type: string; size: number; nul: number } | null {
  const nul = raw.indexOf(0);
  const m = nul > 0 && nul < 32 ? /^(commit|tree|blob|tag) (\d+)$/.exec(raw.toString('latin1', 0, nul)) : null;
  return m ? { type: m[1]!, size: Number(m[2]), nul } : null;
}

/** The object in an inflated loose file, after its length and its id are checked against the content. */
function checked(id: string, raw: Buffer, bad: (why: string) => GitError): ObjectRecord {
  const head = parseLooseHeader(raw);
  if (!head) throw bad('has no valid header');
  if (raw.length - head.nul - 1 !== head.size) throw bad(`is ${raw.length - head.nul - 1} bytes, its header says ${head.size}`);
  const sum = createHash(id.length === 64 ? 'sha256' : 'sha1').update(raw).digest('hex');
  if (sum !== id) throw bad(`hashes to ${sum}`);
  return { id, type: head.type, size: head.size, data: raw.subarray(head.nul + 1) };
}

/** A path this reader resolves itself: components without `.`/`..`, no empty one, no leading `./` (git's relative form). */
function plainPath(path: string): boolean {
  if (path === '') return true;
  return path.split('/').every((p) => p !== '' && p !== '.' && p !== '..');
}

/** The entry named `name` in a raw tree object, by byte comparison of names. */
function findEntry(tree: Buffer, name: string, idLen: number): { mode: string; id: string } | null {
  const want = Buffer.from(name, 'utf8');
  let i = 0;
  while (i < tree.length) {
    const sp = tree.indexOf(0x20, i);
    const nul = sp < 0 ? -1 : tree.indexOf(0, sp);
    if (sp < 0 || nul < 0 || nul + 1 + idLen > tree.length) throw new GitError(['cat-file', '--batch'], 0, 'a tree of the push is malformed');
    if (nul - sp - 1 === want.length && tree.compare(want, 0, want.length, sp + 1, nul) === 0) {
      return { mode: tree.toString('latin1', i, sp), id: tree.toString('hex', nul + 1, nul + 1 + idLen) };
    }
    i = nul + 1 + idLen;
  }
  return null;
}
