// One changed file's tamper scan, cached by its blob ids: what rules/tamper-scan.ts finds for a
// file, and what a push's cache warm-up (src/server/hook/prewarm.ts) computes ahead of the
// judgement from the pushed pack. Both go through this one function, so the warm-up can only
// ever store what the rule itself would have found; a scan already under way for the same key
// is joined, not run twice.

import { ContractParseError } from '../../errors.js';
import { parsePool } from '../../contract/parse-pool.js';
import { isZeroId, type Change } from '../../git/git.js';
import type { TamperHit } from './checks.js';
import { addedLines } from './added-lines.js';
import { scanPython } from './scan-python.js';
import { scanTypeScript } from './scan-typescript.js';

/** What the scan reads: object sizes from headers, and blobs. */
export interface BlobSource {
  pathId(rev: string, path: null): Promise<{ size: number } | null>;
  readBlob(id: string): Promise<Buffer | null>;
}

/** Files up to this many characters are scanned on the calling thread (as parse-pool's inline parses). */
const INLINE_SCAN_CHARS = 16 * 1024;

/**
 * The cache key of one file's hits. The daemon keeps this cache across restarts
 * (src/cache/content-cache.ts): bump the version whenever a check changes what it finds (2: raise
 * SystemExit, corpus narrowings; 3: caller frames' f_globals, f_code/f_lineno, frame source
 * lookups, settrace; 4: JS Error stacks, captureStackTrace, CallSite methods, inspector/v8,
 * getBuiltinModule). A .tsx/.jsx file is parsed with JSX, so it has its own key.
 */
export function tamperKey(oldId: string | null, newId: string, path: string): string {
  const lang = path.endsWith('.py') ? 'py' : /\.(tsx|jsx)$/.test(path) ? 'tsx' : 'ts';
  return `tamper:4:${oldId}:${newId}:${lang}`;
}

/** Whether `path` lies under one of the contract roots (the files this scan looks at). */
export function underRoots(path: string, roots: readonly string[]): boolean {
  return roots.some((r) => {
    const root = r.endsWith('/') ? r : `${r}/`;
    return root === './' || path.startsWith(root);
  });
}

/**
 * The blob a changed file is scanned against (its added lines are those not in it), or null
 * when every line counts as new: an added file, or one that was a symlink before. The rule and
 * the warm-up must agree on it, since it is part of the cache key.
 */
export function scanBase(ch: Pick<Change, 'status' | 'oldKind' | 'oldId'>): string | null {
  return ch.status === 'A' || ch.oldKind === 'symlink' || !ch.oldId || isZeroId(ch.oldId) ? null : ch.oldId;
}

const inflight = new WeakMap<Map<string, unknown>, Map<string, Promise<TamperHit[] | null>>>();

/**
 * The hits of one new or changed file (`oldId` null: every line is new), from `memo` or
 * scanned and kept there; null when the new blob is over `maxBytes` (never read or parsed: the
 * contract rule, on the same roots, refuses it from its size). `scanned` says it was scanned now.
 */
export async function tamperHitsOf(git: BlobSource, memo: Map<string, unknown>, path: string, oldId: string | null, newId: string, maxBytes: number): Promise<{ hits: TamperHit[] | null; scanned: boolean }> {
  const key = tamperKey(oldId, newId, path);
  const hit = memo.get(key) as TamperHit[] | undefined;
  if (hit) return { hits: hit, scanned: false };
  let running = inflight.get(memo);
  if (!running) inflight.set(memo, (running = new Map()));
  const joined = running.get(key);
  if (joined) {
    // Another caller's scan (a push's warm-up, reading through the pack): its result, or, when
    // it failed (its own reads, say), ours computed again: a warm-up's failure is never a verdict.
    const hits = await joined.then((h) => ({ h }), () => null);
    if (hits) return { hits: hits.h, scanned: false };
  }
  const work = scan(git, memo, key, path, oldId, newId, maxBytes);
  running.set(key, work);
  try {
    return { hits: await work, scanned: true };
  } finally {
    if (running.get(key) === work) running.delete(key);
  }
}

async function scan(git: BlobSource, memo: Map<string, unknown>, key: string, path: string, oldId: string | null, newId: string, maxBytes: number): Promise<TamperHit[] | null> {
  const size = (await git.pathId(newId, null))?.size ?? Infinity;
  if (size > maxBytes) return null;
  const blob = await git.readBlob(newId);
  const text = blob ? blob.toString('utf8') : '';
  // A new file is new on every line; a changed one is diffed against its old blob, in
  // process (./added-lines.ts: the lines `git diff` reports, no process per file).
  let lines: Set<number>;
  if (oldId === null) lines = new Set(text.split('\n').map((_, i) => i + 1));
  else {
    // An old blob over the size limit is not read: every line of the new one is scanned.
    const oldSize = (await git.pathId(oldId, null))?.size ?? Infinity;
    const old = oldSize > maxBytes ? null : await git.readBlob(oldId);
    lines = old ? addedLines(old.toString('utf8'), text) : new Set(text.split('\n').map((_, i) => i + 1));
  }
  let hits: TamperHit[];
  try {
    // In the daemon a file above the inline size is scanned on a parse worker, which the
    // hook time limit can stop: a large file never holds the event loop.
    const onWorker = parsePool.isolated && text.length > INLINE_SCAN_CHARS;
    hits = lines.size === 0 ? []
      : onWorker ? (await parsePool.tamperScan(path, text, lines)).map((r: string) => JSON.parse(r) as TamperHit)
        : path.endsWith('.py') ? await scanPython(text, path, lines) : scanTypeScript(text, path, lines);
  } catch (e) {
    // Source that does not parse is the contract rule's refusal (same roots, same grammars).
    // typescript-estree's syntax errors are TSError; the contract rule refuses that file with its line.
    if (e instanceof ContractParseError || (e as Error)?.name === 'TSError') hits = [];
    else throw new Error(`${path} could not be scanned: ${(e as Error).message}`, { cause: e });
  }
  memo.set(key, hits);
  return hits;
}
