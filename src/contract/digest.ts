// The contract digest: the public API rows of every source file under the contract roots
// of one revision, read from git blobs (never checked out or run), and a digest over them.
// Rows are cached per blob id, v1 digests per tree id (a Merkle digest that follows git's
// trees), so an unchanged `src/` is a lookup and a one-file change rehashes one path.
// A never-seen tree is streamed (issue 24): a bounded number of files are read and parsed at
// once, each file's rows go to the cache and are dropped, and the contract keeps only keys to
// read them back by, so a 50k-file first push does not hold the whole tree's rows.

import { isFileKind, type EntryKind, type Git, type RawTreeEntry, type TreeEntry } from '../git/git.js';
import { ContractParseError, ContractSizeError } from '../errors.js';
import { cancelledBy, currentSignal, throwIfCancelled } from '../cancel.js';
import { liveParsed } from '../policy/live.js';
import { isTypeScriptPath, TS_EXTRACTOR_VERSION } from './typescript.js';
import { initPython, isPrivateModule, PY_EXTRACTOR_VERSION, seedDigest, seedOrder, type PyLinks } from './python.js';
import { parsePool } from './parse-pool.js';
import { splitLinks } from './extract.js';
import { EMPTY_INDEX, isPyIndex, isPyLinks, mergeIndex, resolveReexports, type PyIndex } from './py-reexport.js';
import { APPROX_BYTES, ContentCache } from '../cache/content-cache.js';
import { FileQueue } from './file-queue.js';
import { backgroundTurn, joinOther } from './priority.js';
import { Earlier, storedRecord, type StoredEntry } from './folder-record.js';
import { filesOf, keepLevel, lastLevel, levelOf, walkChanged, type FolderLevel, type LevelEntry } from './folder-level.js';
import { fileLineKey, isStoredTree, keepTree, lazyRows, levelTree, sha256, treeBytes, treeMemKey, treeStoredKey, type Part, type TreeContract } from './tree-contract.js';

export type ContractFormat = 'v1' | 'seed';

/** Limits from the policy (`contract.maxSourceBytes`); none when not given (the CLI on a local repo). */
export interface ContractLimits {
  maxSourceBytes?: number;
  /** Called once per contract file read (parsed or from the cache), for a warm-up's progress (src/progress.ts). */
  onFile?: (n: number) => void;
}

/** One walk's limits, its progress callback, and its file queue (FileQueue: each walk has its own). */
export type Lim = { max: number; tag: string; onFile?: (n: number) => void; files: FileQueue };

/** The byte limit as a number (Infinity: none), the tag it adds to cache keys, and a new file queue. */
export function limitOf(limits: ContractLimits): Lim {
  const max = limits.maxSourceBytes ?? Infinity;
  return { max, tag: Number.isFinite(max) ? `max${max}` : 'nomax', ...(limits.onFile ? { onFile: limits.onFile } : {}), files: new FileQueue() };
}

/** Why a contract walk's progress counts fewer files than contractFileCount: a folder whose contract is known is not read again (src/progress.ts skippedWhy). */
export const CONTRACT_SKIPPED_WHY = 'in folders whose contract was known already, from a revision read before or the cache: not read again';

/** How many contract files (TS/JS and Python, or the seed's Python files) the roots hold at `rev`: a warm-up's total. One ls-tree per root. */
export async function contractFileCount(git: ContractGit, rev: string, roots: string[], format: ContractFormat): Promise<number> {
  let n = 0;
  for (const root of format === 'seed' ? roots.slice(0, 1) : roots) {
    if (!(await rootTree(git, rev, root))) continue;
    for (const e of await rootFiles(git, rev, root)) if (format === 'seed' ? e.path.endsWith('.py') : isContractFile(e.kind, e.path)) n++;
  }
  return n;
}

export interface Contract {
  format: ContractFormat;
  digest: string;
  rows: string[];
  files: number;
}

/** Strict UTF-8 that keeps a BOM, as Python's read_text(encoding='utf-8') does; bad bytes are a parse error, not a guess. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Roots as git path prefixes without a trailing slash ("src/" -> "src"; "" or "." -> whole tree). */
export function normRoot(root: string): string {
  const r = root.replace(/\/+$/, '');
  return r === '.' ? '' : r;
}

/** The tree id of a root at `rev` (null when absent or not a folder). One batch-check lookup. */
export async function rootTree(git: ContractGit, rev: string, root: string): Promise<string | null> {
  const t = await git.pathId(rev, normRoot(root));
  return t && t.type === 'tree' ? t.id : null;
}

async function rootFiles(git: ContractGit, rev: string, root: string): Promise<TreeEntry[]> {
  const r = normRoot(root);
  const entries = await git.lsTree(rev, { recursive: true, path: r ? `${r}/` : undefined });
  return entries.filter((e) => e.type === 'blob' && isFileKind(e.kind));
}

/** What a file's rows are read through: a repository's Git, or a push's pack over it (src/git/pack-read.ts PackView). */
export type BlobReader = Pick<Git, 'pathId' | 'readBlob'>;
/** What a contract's walk reads through: the same two, or a repository's Git. */
export type ContractGit = BlobReader & Pick<Git, 'readTree' | 'lsTree'>;

/**
 * Rows of one file, cached by blob id (the path is part of every row, so it is in the key).
 * A file over the byte limit is refused from its size alone (one header read), before it is
 * read or parsed, and whether or not its rows are cached: the verdict never depends on the cache.
 */
export async function fileRows(git: BlobReader, cache: Map<string, unknown>, e: TreeEntry, format: ContractFormat, max: number): Promise<string[]> {
  throwIfCancelled();
  if (Number.isFinite(max)) {
    const info = await git.pathId(e.id, null);
    if (!info) throw new Error(`blob ${e.id} for ${e.path} is missing`);
    if (info.size > max) throw new ContractSizeError(e.path, info.size, max);
  }
  const hit = cache.get(rowsKey(format, e.id, e.path)) as string[] | undefined;
  if (hit) return hit;
  return (await parseFile(git, cache, e, format)).rows;
}

/** The cache key of one file's rows. */
function rowsKey(format: ContractFormat, blob: string, path: string): string {
  const version = format === 'seed' || path.endsWith('.py') ? PY_EXTRACTOR_VERSION : TS_EXTRACTOR_VERSION;
  return `rows:${format}:${version}:${blob}:${path}`;
}

/** A v1 file's rows read back from the cache (memory or disk); RowsNotLoaded when the cache no longer has them. */
function cachedRows(cache: Map<string, unknown>, key: string, path: string): string[] {
  const v = cache.get(key);
  if (Array.isArray(v) && v.every((r) => typeof r === 'string')) return v as string[];
  throw new RowsNotLoaded(`rows of ${path} are not in the cache`);
}

/** Where the rows of a TS/JS file with this signature key are cached: the rows key of one such file. */
function sigKey(sig: string): string {
  return `tssig:${TS_EXTRACTOR_VERSION}:${sig}`;
}

/** The cache key of a v1 .py file's re-export links (python.ts PyLinks). */
function linksKey(blob: string, path: string): string {
  return `pylinks:${PY_EXTRACTOR_VERSION}:${blob}:${path}`;
}

/** Reads, decodes and parses one file; caches its rows (and, v1 .py, its links). */
function parseFile(git: BlobReader, cache: Map<string, unknown>, e: TreeEntry, format: ContractFormat): Promise<{ rows: string[]; links: PyLinks | null }> {
  // A file in two folders being walked at once (the changed folder of a push and of its base) is parsed once.
  return shared(filesInflight, cache, rowsKey(format, e.id, e.path), () => parseFileNow(git, cache, e, format));
}

const filesInflight: Inflight<{ rows: string[]; links: PyLinks | null }> = new WeakMap();

async function parseFileNow(git: BlobReader, cache: Map<string, unknown>, e: TreeEntry, format: ContractFormat): Promise<{ rows: string[]; links: PyLinks | null }> {
  const key = rowsKey(format, e.id, e.path);
  const blob = await git.readBlob(e.id);
  if (!blob) throw new Error(`blob ${e.id} for ${e.path} is missing`);
  throwIfCancelled();
  let source: string;
  try {
    source = UTF8.decode(blob);
  } catch (err) {
    throw new ContractParseError(e.path, 1, 1, 'not valid UTF-8', { cause: err });
  }
  // A warm-up's parse waits while a push is judged (./priority.ts); a push's never does.
  await backgroundTurn();
  throwIfCancelled();
  // A TS/JS file whose signature key was seen before has that file's rows (typescript/parse.ts).
  const known = (sig: string): string[] | undefined => {
    const at = cache.get(sigKey(sig));
    // The pointer is a rows key of this same path (the key holds the path): anything else is not used.
    const rows = typeof at === 'string' && at.startsWith('rows:v1:') && at.endsWith(`:${e.path}`) ? cache.get(at) : undefined;
    return Array.isArray(rows) && rows.every((r) => typeof r === 'string') ? (rows as string[]) : undefined;
  };
  const { rows: parsed, links, sig } = splitLinks(await parsePool.rows(format, e.path, source, currentSignal(), format === 'v1' ? known : undefined));
  // v1: a file's rows are a set. A declaration written twice (a duplicate `declare module`
  // augmentation, an overload repeated) counts once, and order never counts, so two trees
  // have equal digests exactly when their row sets are equal, and a digest that moved always
  // has a `+`, `-` or `~` row to show. The seed format keeps the seed's rows as they are.
  const rows = format === 'v1' ? [...new Set(parsed)].sort() : parsed;
  if (links) cache.set(linksKey(e.id, e.path), links);
  cache.set(key, rows);
  if (sig !== null && format === 'v1') cache.set(sigKey(sig), key);
  // Kept as soon as parsed: a walk the time limit stops leaves this file to the next try (issue 47).
  liveParsed();
  return { rows, links };
}

/** A v1 .py file's re-export links, from the cache or parsed again (size limit checked as for rows). */
export async function fileLinks(git: ContractGit, cache: Map<string, unknown>, path: string, blob: string, max: number): Promise<PyLinks> {
  const hit = cache.get(linksKey(blob, path));
  if (isPyLinks(hit)) return hit;
  const e: TreeEntry = { mode: '100644', kind: 'regular', type: 'blob', id: blob, path };
  if (Number.isFinite(max)) {
    const info = await git.pathId(blob, null);
    if (!info) throw new Error(`blob ${blob} for ${path} is missing`);
    if (info.size > max) throw new ContractSizeError(path, info.size, max);
  }
  return (await parseFile(git, cache, e, 'v1')).links ?? {};
}

/**
 * The contract of `rev`. v1: TS/JS and Python files under every root, rows per file in path
 * order, a Merkle digest over each root's trees (see treeContract). seed: the seed article's
 * digest over the Python files of the first root, byte for byte.
 */
export async function contractOf(git: ContractGit, rev: string, roots: string[], format: ContractFormat, cache: Map<string, unknown> = new Map(), limits: ContractLimits = {}): Promise<Contract> {
  await initPython();
  const lim = limitOf(limits);
  const useRoots = format === 'seed' ? roots.slice(0, 1) : roots;
  // git trees are Merkle trees: the same root tree ids mean the same contract, so look them up first.
  const trees = await Promise.all(useRoots.map((r) => rootTree(git, rev, r)));
  const treeKey = `mem:digest:${format}:${TS_EXTRACTOR_VERSION}:${PY_EXTRACTOR_VERSION}:${lim.tag}:${useRoots.join('|')}:${trees.map((t) => t ?? '-').join('|')}`;
  const hit = cache.get(treeKey) as Contract | undefined;
  if (hit) return hit;
  // Concurrent pushes of one repo ask for the same contract: compute it once.
  return shared(inflight, cache, treeKey, async () => {
    const contract = await computeContract(git, rev, useRoots, trees, format, cache, lim);
    cache.set(treeKey, contract);
    return contract;
  });
}

const inflight: Inflight<Contract> = new WeakMap();

/** Work being done per cache and key (contracts, tree contracts, file parses). */
type Inflight<T> = WeakMap<Map<string, unknown>, Map<string, Promise<T>>>;

/**
 * One computation per cache and key at a time: a walk that asks for what another walk is
 * computing (concurrent pushes of one repository, a push and the warm-up of its base) awaits
 * that one, and gives up when its own judgement is cancelled. A verdict on the content (a
 * parse or size refusal) is the same for every walk; any other failure of the first walk (its
 * push was cancelled, its git went away, a worker overran) is computed again with ours.
 */
async function shared<T>(table: Inflight<T>, cache: Map<string, unknown>, key: string, run: () => Promise<T>, onJoined?: (v: T) => void): Promise<T> {
  let pending = table.get(cache);
  if (!pending) table.set(cache, (pending = new Map()));
  const running = pending.get(key);
  if (running) {
    try {
      const v = await joinOther(cancellable(running));
      onJoined?.(v);
      return v;
    } catch (err) {
      if (err instanceof ContractParseError || err instanceof ContractSizeError) throw err;
      throwIfCancelled();
    }
  }
  const work = run();
  pending.set(key, work);
  try {
    return await work;
  } finally {
    if (pending.get(key) === work) pending.delete(key);
  }
}

/** Another walk's promise, given up (CancelledError) when the current judgement is cancelled: its own checks are not ours. */
function cancellable<T>(work: Promise<T>): Promise<T> {
  const signal = currentSignal();
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(cancelledBy(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(cancelledBy(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (e: unknown) => (signal.removeEventListener('abort', onAbort), reject(e)),
    );
  });
}

/** Whether the v1 contract of `rev` is in the cache for every root, in memory or on disk as treeContract reads it (a lookup per root, no parse). */
export async function contractCached(git: ContractGit, rev: string, roots: string[], cache: Map<string, unknown>, limits: ContractLimits = {}): Promise<boolean> {
  const lim = limitOf(limits);
  for (const root of roots) {
    const tree = await rootTree(git, rev, root);
    if (!tree) continue;
    const r = normRoot(root);
    const prefix = r ? `${r}/` : '';
    if (cache.get(treeMemKey(tree, prefix, lim)) === undefined && !isStoredTree(cache.get(treeStoredKey(tree, prefix, lim)))) return false;
  }
  return true;
}

/** Tree contracts being computed, per cache: a tree shared by two revisions (a push and a warm-up of its base) is walked once. */
const treesInflight: Inflight<TreeContract> = new WeakMap();

/** A regular file in a language the v1 contract reads. */
export function isContractFile(kind: EntryKind, path: string): boolean {
  return isFileKind(kind) && (path.endsWith('.py') || isTypeScriptPath(path));
}

/** Thrown by `rows` of a contract that was read back as a digest only; see contractRows. */
export class RowsNotLoaded extends Error {}

/**
 * v1 contract of one tree, cached per tree id: the whole object in memory (`mem:` key), and
 * its digest and file count in the persistent cache, so a restarted daemon opens only the
 * trees on a change's path. The digest is a Merkle digest, so a one-file change rehashes only
 * the trees on that file's path instead of every row; entries without rows (files with no
 * exports, empty folders) do not count.
 */
async function treeContract(git: ContractGit, treeId: string, prefix: string, cache: Map<string, unknown>, lim: Lim): Promise<TreeContract> {
  throwIfCancelled();
  // The byte limit is in every key: a tree digested under another limit is digested again.
  const key = treeMemKey(treeId, prefix, lim);
  const hit = cache.get(key) as TreeContract | undefined;
  if (hit) return hit;
  const storedKey = treeStoredKey(treeId, prefix, lim);
  const stored = cache.get(storedKey);
  if (isStoredTree(stored)) {
    const known: TreeContract = {
      digest: stored.digest,
      files: stored.files,
      py: stored.py,
      get rows(): string[] {
        throw new RowsNotLoaded(`rows of tree ${treeId} (${prefix || '/'}) are not in memory`);
      },
    };
    Object.defineProperty(known, APPROX_BYTES, { value: treeBytes(0, known.py) });
    cache.set(key, known);
    lim.onFile?.(known.files);
    return known;
  }
  // Walked by another walk: its files were counted in that walk's progress, so ours counts them here.
  return shared(treesInflight, cache, key, () => walkTree(git, treeId, prefix, cache, lim, key, storedKey), (tc) => lim.onFile?.(tc.files));
}

async function walkTree(git: ContractGit, treeId: string, prefix: string, cache: Map<string, unknown>, lim: Lim, key: string, storedKey: string): Promise<TreeContract> {
  const entries = await git.readTree(treeId);
  const spliced = await walkChangedTree(git, entries, prefix, cache, lim);
  if (spliced) return levelTree(cache, key, storedKey, spliced);
  // Subtrees are walked at once (their own files join this walk's queue); files go through the queue.
  const parts: Array<Part | null> = entries.map(() => null);
  const subtrees: Array<Promise<void>> = [];
  const files: Array<() => Promise<void>> = [];
  const fileIndexes: number[] = [];
  const treeIndexes: number[] = [];
  entries.forEach((e, i) => {
    if (e.kind === 'tree') treeIndexes.push(i);
    else if (isContractFile(e.kind, e.name)) fileIndexes.push(i);
  });
  // A wide folder's files are answered from its last level (in memory) or its record (on disk)
  // where their name and blob are the same; nothing is built per unchanged file.
  const wide = fileIndexes.length >= FOLDER_RECORD_MIN_FILES;
  const recordKey = wide ? folderRecordKey(prefix, lim) : '';
  const lastLevelHere = wide ? lastLevel<Part>(cache, recordKey) : null;
  const last = lastLevelHere ? filesOf(lastLevelHere, isContractEntry) : null;
  const stored = wide && !last ? storedRecord(cache, recordKey) : null;
  const earlier = last ? new Earlier(last.names, last.ids) : stored ? new Earlier(stored.map((s) => s[0]), stored.map((s) => s[1])) : null;
  const unknown: number[] = [];
  for (let j = 0; j < fileIndexes.length; j++) {
    const i = fileIndexes[j]!;
    const e = entries[i]!;
    const k = earlier ? earlier.indexOf(j, e.name, e.id) : -1;
    if (k >= 0) {
      lim.onFile?.(1);
      parts[i] = last ? last.parts[k]! : recordedPart(cache, e.id, prefix + e.name, stored![k]!);
    } else unknown.push(i);
  }
  if (treeIndexes.length + unknown.length >= 2) {
    const keys: string[] = [];
    for (const i of treeIndexes) {
      const e = entries[i]!;
      if (!cache.has(treeMemKey(e.id, `${prefix}${e.name}/`, lim))) keys.push(treeStoredKey(e.id, `${prefix}${e.name}/`, lim));
    }
    for (const i of unknown) keys.push(fileLineKey(entries[i]!.id, prefix + entries[i]!.name, lim));
    // After a restart each push opens a part of the tree memory has not seen: its siblings come
    // from cache.db in one batched read, not one read each. A plain Map (the CLI, tests) has no disk.
    if (cache instanceof ContentCache) cache.prefetch(keys);
  }
  for (const i of treeIndexes) {
    const e = entries[i]!;
    subtrees.push(treeContract(git, e.id, `${prefix}${e.name}/`, cache, lim).then((sub) => void (parts[i] = subtreePart(e.name, sub))));
  }
  for (const i of unknown) {
    const e = entries[i]!;
    files.push(async () => void (parts[i] = await filePart(git, cache, e, prefix + e.name, lim)));
  }
  await Promise.all([...subtrees, lim.files.all(files)]);
  if (wide) {
    // On disk only after a walk that looked up a quarter of the folder's files or more (a cold
    // walk, or a folder that grew wide), so a one-file push does not rewrite thousands of lines.
    if (files.length * 4 >= fileIndexes.length) recordFolder(cache, recordKey, fileIndexes.map((i) => [entries[i]!, parts[i] ?? null]));
    // The whole level, for the next push into this folder (walkChangedTree).
    const level = levelOf(entries, parts, fileIndexes.length);
    keepLevel(cache, recordKey, level);
    return levelTree(cache, key, storedKey, level);
  }
  const kept = parts.filter((p): p is Part => p !== null);
  const lined = kept.filter((p) => p.line);
  // Only the row thunks are kept (not the Merkle lines, not the parts).
  const thunks = lined.map((p) => p.rows);
  return keepTree(cache, key, storedKey, sha256(lined.map((p) => p.line).join('\n')), lined.reduce((n, p) => n + p.files, 0), mergeIndex(kept.map((p) => p.py)), () => thunks.flatMap((rows) => rows()), thunks.length);
}

/** A wide folder's tree walked from its last one (./folder-level.ts): only the entries that changed are looked at. Null: walk every entry. */
async function walkChangedTree(git: ContractGit, entries: readonly RawTreeEntry[], prefix: string, cache: Map<string, unknown>, lim: Lim): Promise<FolderLevel<Part> | null> {
  const recordKey = folderRecordKey(prefix, lim);
  const last = lastLevel<Part>(cache, recordKey);
  const level = last && await walkChanged(last, entries, isContractEntry, FOLDER_RECORD_MIN_FILES, async (changed) => {
    // As walkTree does for every entry: subtrees at once, files through the walk's queue.
    const parts: Array<Part | null> = changed.map(() => null);
    const subtrees: Array<Promise<void>> = [];
    const files: Array<() => Promise<void>> = [];
    changed.forEach((e, k) => {
      if (e.kind === 'tree') subtrees.push(treeContract(git, e.id, `${prefix}${e.name}/`, cache, lim).then((sub) => void (parts[k] = subtreePart(e.name, sub))));
      else if (isContractFile(e.kind, e.name)) files.push(async () => void (parts[k] = await filePart(git, cache, e, prefix + e.name, lim)));
    });
    await Promise.all([...subtrees, lim.files.all(files)]);
    return parts;
  }, lim.onFile);
  if (level) keepLevel(cache, recordKey, level);
  return level;
}

/** A folder's entry that is a contract file (what makes a folder wide). */
function isContractEntry(e: LevelEntry): boolean {
  return e.kind !== 'tree' && isContractFile(e.kind, e.name);
}

/** A subtree's part of its folder: its Merkle line, or only its Python index when it has no rows. */
function subtreePart(name: string, sub: TreeContract): Part | null {
  if (sub.files) return { line: `T ${name} ${sub.digest}`, rows: () => sub.rows, files: sub.files, py: sub.py };
  return sub.py.p.length || sub.py.x.length ? { line: '', rows: () => [], files: 0, py: sub.py } : null;
}

/**
 * Folders with at least this many contract files keep a folder record. A one-file change in a
 * folder of 4,705 files (the bench's 50k tree) otherwise looked up every sibling's Merkle line
 * on its own, from disk once memory had dropped them: about 10 ms of every push there.
 */
const FOLDER_RECORD_MIN_FILES = 64;

/**
 * The key of a wide folder's last walk (in memory) and record (on disk), by path: what each
 * file gave, by name and blob id. Both are functions of the blob and the path only, as the
 * per-file `file-line:` entries are, so what was kept for any tree of that folder answers the
 * files another tree shares with it; the others are looked up as usual.
 */
function folderRecordKey(prefix: string, lim: Lim): string {
  return `folder-record:v1:${TS_EXTRACTOR_VERSION}:${PY_EXTRACTOR_VERSION}:${lim.tag}:${prefix}`;
}

/** Writes the folder's record (to cache.db) from the parts of its files (null: a file without rows or re-exports); read back by storedRecord. */
function recordFolder(cache: Map<string, unknown>, key: string, files: Array<[{ name: string; id: string }, Part | null]>): void {
  cache.set(key, files.map(([e, part]): StoredEntry =>
    [e.name, e.id, part?.line ?? '', (part?.py.x ?? []).map(([, n, spec, orig]): [string, string, string] => [n, spec, orig])]));
}

/** A file's part from its folder's stored record: what filePart gives for the same blob and path. */
function recordedPart(cache: Map<string, unknown>, id: string, path: string, [, , line, exports]: StoredEntry): Part | null {
  let py = EMPTY_INDEX;
  if (path.endsWith('.py')) {
    if (isPrivateModule(path)) py = { x: [], p: [[path, id]] };
    else if (exports.length) py = { x: exports.map(([n, spec, orig]): [string, string, string, string] => [path, n, spec, orig]), p: [] };
  }
  if (line) return { line, rows: () => cachedRows(cache, rowsKey('v1', id, path), path), files: 1, py };
  return py === EMPTY_INDEX ? null : { line: '', rows: () => [], files: 0, py };
}

/** One contract file's part of its tree: its Merkle line and, for Python, its re-export index entries. */
async function filePart(git: ContractGit, cache: Map<string, unknown>, e: { mode: string; kind: EntryKind; id: string; name: string }, path: string, lim: Lim): Promise<Part | null> {
  const part = await fileLine(git, cache, e, path, lim);
  if (!path.endsWith('.py')) return part;
  // Python: a private module is indexed by blob id (its links are read only if a public
  // module re-exports from it); a public module by what it re-exports from where.
  let py = EMPTY_INDEX;
  if (isPrivateModule(path)) py = { x: [], p: [[path, e.id]] };
  else {
    const exports = (await fileLinks(git, cache, path, e.id, lim.max)).exports ?? [];
    if (exports.length) py = { x: exports.map(([n, spec, orig]) => [path, n, spec, orig]), p: [] };
  }
  if (part) return { ...part, py };
  return py === EMPTY_INDEX ? null : { line: '', rows: () => [], files: 0, py };
}

/** One file's Merkle line (`F name sha256(rows)`), cached per blob; null for a file without rows. */
async function fileLine(git: ContractGit, cache: Map<string, unknown>, e: { mode: string; kind: EntryKind; id: string; name: string }, path: string, lim: Lim): Promise<{ line: string; rows: () => string[]; files: number; py: PyIndex } | null> {
    // Each file's Merkle line is kept as well ("" for a file without rows): a change in a folder
    // of 200 files would otherwise load and hash every sibling's rows again (about 1 MB per push
    // on the bench's 10k repository), and a restarted daemon would read all of them from disk.
    const lineKey = fileLineKey(e.id, path, lim);
    const known = cache.get(lineKey);
    if (typeof known === 'string' && (known === '' || known.startsWith(`F ${e.name} `))) {
      lim.onFile?.(1);
      if (!known) return null;
      const rk = rowsKey('v1', e.id, path);
      return { line: known, rows: () => cachedRows(cache, rk, path), files: 1, py: EMPTY_INDEX };
    }
    const rows = await fileRows(git, cache, { mode: e.mode, kind: e.kind, type: 'blob', id: e.id, path }, 'v1', lim.max);
    const line = rows.length ? `F ${e.name} ${sha256(rows.join('\n'))}` : '';
    cache.set(lineKey, line);
    lim.onFile?.(1);
    // The rows themselves are not kept here: they are in the cache (memory, or its disk).
    const rk = rowsKey('v1', e.id, path);
    return line ? { line, rows: () => cachedRows(cache, rk, path), files: 1, py: EMPTY_INDEX } : null;
}

/**
 * The re-export rows of one contract root (py-reexport.ts), cached per root tree id in
 * memory and in the persistent cache: they depend only on the blobs under that tree.
 */
async function rootReexports(git: ContractGit, treeId: string, prefix: string, cache: Map<string, unknown>, lim: Lim): Promise<string[]> {
  const key = `pyres:${PY_EXTRACTOR_VERSION}:${lim.tag}:${treeId}:${prefix}`;
  const hit = cache.get(key);
  if (Array.isArray(hit) && hit.every((r) => typeof r === 'string')) return hit as string[];
  const tc = await treeContract(git, treeId, prefix, cache, lim);
  const rows = await resolveReexports(tc.py, prefix, (path, blob) => lim.files.one(() => fileLinks(git, cache, path, blob, lim.max)));
  cache.set(key, rows);
  return rows;
}

/** Re-export rows of every root, each once, sorted; and the digest line they add ("" for none). */
async function reexportsOf(git: ContractGit, trees: Array<string | null>, roots: string[], cache: Map<string, unknown>, lim: Lim): Promise<{ rows: string[]; line: string }> {
  const per = await Promise.all(roots.map((root, i) => {
    const r = normRoot(root);
    return trees[i] ? rootReexports(git, trees[i]!, r ? `${r}/` : '', cache, lim) : Promise.resolve([]);
  }));
  const rows = [...new Set(per.flat())].sort();
  // A root without re-exports leaves the digest as it was before they were resolved.
  return { rows, line: rows.length ? `\nR ${sha256(rows.join('\n'))}` : '' };
}

/** Rows of every contract file under a tree, in path order, from the per-file cache. */
async function collectRows(git: ContractGit, treeId: string, prefix: string, cache: Map<string, unknown>, lim: Lim): Promise<string[]> {
  const entries = await git.readTree(treeId);
  const parts: string[][] = entries.map(() => []);
  const subtrees: Array<Promise<void>> = [];
  const files: Array<() => Promise<void>> = [];
  entries.forEach((e, i) => {
    const path = prefix + e.name;
    if (e.kind === 'tree') subtrees.push(collectRows(git, e.id, `${path}/`, cache, lim).then((rows) => void (parts[i] = rows)));
    else if (isContractFile(e.kind, path)) files.push(async () => void (parts[i] = await fileRows(git, cache, { mode: e.mode, kind: e.kind, type: 'blob', id: e.id, path }, 'v1', lim.max)));
  });
  await Promise.all([...subtrees, lim.files.all(files)]);
  return parts.flat();
}

/**
 * The rows of a contract (a refusal's diff needs them). A contract computed in this process
 * has them; one whose trees were known only by their stored digests is walked again here,
 * with the rows of each file from the cache.
 */
export async function contractRows(git: ContractGit, c: Contract, rev: string, roots: string[], cache: Map<string, unknown> = new Map(), limits: ContractLimits = {}): Promise<string[]> {
  try {
    return c.rows;
  } catch (err) {
    if (!(err instanceof RowsNotLoaded)) throw err;
  }
  const lim = limitOf(limits);
  const per: string[][] = [];
  const trees: Array<string | null> = [];
  for (const root of roots) {
    const tree = await rootTree(git, rev, root);
    trees.push(tree);
    const r = normRoot(root);
    per.push(tree ? await collectRows(git, tree, r ? `${r}/` : '', cache, lim) : []);
  }
  per.push((await reexportsOf(git, trees, roots, cache, lim)).rows);
  const seen = new Set<string>();
  return per.flat().filter((x) => (seen.has(x) ? false : (seen.add(x), true)));
}

async function computeContract(git: ContractGit, rev: string, useRoots: string[], trees: Array<string | null>, format: ContractFormat, cache: Map<string, unknown>, lim: Lim): Promise<Contract> {
  if (format === 'v1') {
    // Each root's tree contract; the digest covers every root's Merkle digest in order.
    const per = await Promise.all(useRoots.map((root, i) => {
      const r = normRoot(root);
      return trees[i] ? treeContract(git, trees[i]!, r ? `${r}/` : '', cache, lim) : Promise.resolve<TreeContract>({ digest: '-', rows: [], files: 0, py: EMPTY_INDEX });
    }));
    // Python re-exports of private definitions: rows that depend on several files, resolved
    // over each root after the per-file step, and one more line of the digest.
    const re = await reexportsOf(git, trees, useRoots, cache, lim);
    const digest = sha256(`patchgate-contract-v1\n${useRoots.map((r, i) => `${normRoot(r)} ${per[i]!.digest}`).join('\n')}${re.line}`);
    const c: Contract = Object.assign(lazyRows(() => {
      if (per.length === 1 && !re.rows.length) return per[0]!.rows;
      const seen = new Set<string>();
      return [...per.flatMap((p) => p.rows), ...re.rows].filter((x) => (seen.has(x) ? false : (seen.add(x), true)));
    }), { format, digest, files: per.reduce((n, p) => n + p.files, 0) });
    // Its trees are counted under their own keys; its re-export rows are its own.
    Object.defineProperty(c, APPROX_BYTES, { value: 512 + re.rows.reduce((n, r) => n + r.length + 3, 0) });
    return c;
  }
  // seed: the Python files of the first root, in the order Python 3.11's sorted(rglob) gives.
  const files = trees[0] ? (await rootFiles(git, rev, useRoots[0]!)).filter((e) => e.path.endsWith('.py')) : [];
  const byPath = new Map(files.map((e) => [e.path, e]));
  const ordered = seedOrder(files.map((e) => e.path)).map((p) => byPath.get(p)!);
  const rows: string[] = [];
  for (const e of ordered) {
    rows.push(...(await fileRows(git, cache, e, 'seed', lim.max)));
    lim.onFile?.(1);
  }
  const c: Contract = { format, rows, digest: seedDigest(rows), files: ordered.length };
  Object.defineProperty(c, APPROX_BYTES, { value: 512 + rows.reduce((n, r) => n + r.length + 3, 0) });
  return c;
}

// A refusal's row diff and the allow file live in ./diff.ts; re-exported for the callers of this module.
export { diffContracts, parseAllowFile, type ContractDiff } from './diff.js';
