// The one reading of git's object formats in patchgate (issue 45). Whatever the gate reads of a
// commit, a tree or a tag in process (the hook through the cat-file reader, the push judged
// ahead through its pack, src/git/pack-read.ts) is read here, the way git itself reads it:
//
// - a commit as commit.c's parse_commit_buffer does: the tree on the first line and only
//   there, the parents on the lines right after it, hex in either case; the committer date as
//   parse_commit_date finds it. A `tree` line later in the header means nothing to git, so it
//   means nothing here;
// - a tag as tag.c's parse_tag_buffer does: `object` first, `type` second;
// - a tree's entries in stored order (tree-parse.ts parses the bytes, modes.ts the digits).
//
// And beside each reading, what makes the object differ from the form stock git writes
// (`problems`): upper-case hex, a header out of git's order or twice, a header hidden in a
// continuation line, a NUL or a CR in a header, a malformed identity; tree entries out of
// order or twice, names git refuses to check out (`.`, `..`, `.git` and the case, HFS and NTFS
// spellings of it). git reads such objects without complaint, but any second reader (a host's
// web view, an older git, a tool) may read them otherwise, so an agent may not push them
// (src/policy/rules/write-block.ts) and a person's push of old history only has them audited.

import { LRUCache } from 'lru-cache';
import { GitError } from '../errors.js';
import { parsedFrom, type RawTreeEntry } from './tree-parse.js';

export interface CommitHeader {
  /** The tree git checks out: the first line's id, in lower case. */
  tree: string;
  /** The parents git walks: the `parent` lines right after the tree line, in lower case. */
  parents: string[];
  /** The committer time as parse_commit_date reads it (0 where git finds none). */
  committerTime: number;
  /** How the object departs from what stock git writes; empty for a canonical commit. */
  problems: string[];
}

export interface TagHeader {
  object: string;
  type: string;
  problems: string[];
}

const HEX = /^[0-9a-fA-F]+$/;
const LOWER_HEX = /^[0-9a-f]+$/;

/** Headers stock git (commit-tree, commit, merge, commit -S) writes after the committer line. */
const EXTRA_HEADERS = new Set(['encoding', 'gpgsig', 'gpgsig-sha256', 'mergetag']);
/** Extra headers whose value runs over continuation lines. */
const MULTILINE = new Set(['gpgsig', 'gpgsig-sha256', 'mergetag']);
/** A continuation line that reads like one of git's own commit headers (outside a mergetag, where a tag's headers belong). */
const HEADER_LIKE = /^(?:tree|parent|author|committer|encoding|object|type|tag|tagger) /;

/**
 * An identity as stock git writes it (fsck.c fsck_ident, with its WARN-level checks strict):
 * `Name <email> seconds ±hhmm`, one space before `<`, no `<` or `>` in the name or email, no
 * zero-padded seconds.
 */
const IDENT = /^([^<>\n]*) <([^<>\n]*)> (0|[1-9][0-9]{0,17}) [+-][0-9]{4}$/;

function bogus(id: string, what: string): GitError {
  return new GitError(['cat-file', '--batch-command'], 0, `commit ${id} ${what}`);
}

/** hexsz of an object id: 40 for SHA-1, 64 for SHA-256 (the format of the object's own id). */
function hexLength(id: string): number {
  return id.length === 64 ? 64 : 40;
}

/**
 * Commit `id`'s header from the object's bytes, read as git reads it, with its departures from
 * git's own form. Throws GitError where git itself fails to parse the commit (no tree on the
 * first line, a bad parent line).
 */
export function parseCommit(id: string, data: Buffer): CommitHeader {
  const hexsz = hexLength(id);
  // git's reading (parse_commit_buffer): byte offsets, no line splitting.
  const treeLen = hexsz + 5;
  const parentLen = hexsz + 7;
  if (data.length <= treeLen + 1 || data.toString('latin1', 0, 5) !== 'tree ' || data[treeLen] !== 0x0a) throw bogus(id, 'is bogus: it does not start with a tree line');
  const treeHex = data.toString('latin1', 5, treeLen);
  if (!HEX.test(treeHex)) throw bogus(id, 'has a bad tree pointer');
  let at = treeLen + 1;
  const parentHex: string[] = [];
  while (at + parentLen < data.length && data.toString('latin1', at, at + 7) === 'parent ') {
    const hex = data.toString('latin1', at + 7, at + parentLen);
    if (data.length <= at + parentLen + 1 || !HEX.test(hex) || data[at + parentLen] !== 0x0a) throw bogus(id, 'has bad parents');
    parentHex.push(hex);
    at += parentLen + 1;
  }
  const problems = commitProblems(data, hexsz);
  return { tree: treeHex.toLowerCase(), parents: parentHex.map((h) => h.toLowerCase()), committerTime: commitDate(data, at, problems), problems };
}

/**
 * commit.c parse_commit_date from byte `at` (just past the parents): 0 where git finds no date.
 * git changed it in 2.42: before, the date follows the committer line's first `>` (searched
 * past the line's end if need be) and a committer line that ends the object has no date; since,
 * it follows the line's last `>`. Both are read; where they differ the commit says so, and the
 * older reading (this server's git 2.39) is the one kept.
 */
function commitDate(data: Buffer, at: number, problems: string[]): number {
  const tail = data.length;
  if (at + 6 >= tail || data.toString('latin1', at, at + 6) !== 'author') return 0;
  const nl = data.indexOf(0x0a, at);
  if (nl < 0) return 0;
  const buf = nl + 1;
  if (buf + 9 >= tail || data.toString('latin1', buf, buf + 9) !== 'committer') return 0;
  // Before 2.42: from just past the first '>', and only when a newline follows before the end.
  const gt = data.indexOf(0x3e, buf);
  let older = 0;
  if (gt >= 0 && gt + 1 < tail) {
    const eolOld = data.indexOf(0x0a, gt + 1);
    if (eolOld >= 0 && eolOld + 1 < tail) older = timestampAt(data, gt + 1);
  }
  // Since 2.42: back from the line's end to its last '>'.
  let newer = 0;
  const eol = data.indexOf(0x0a, buf);
  if (eol >= 0) {
    let p = eol;
    while (p > buf && data[p - 1] !== 0x3e) p--;
    if (p !== buf) newer = timestampAt(data, p);
  }
  if (older !== newer) problems.push(`has a committer date that git versions read differently (${older} or ${newer})`);
  return older;
}

/** parse_timestamp (strtoumax, base 10) at byte `p`: leading white space, an optional sign, digits; 0 for none or one too large here. */
function timestampAt(data: Buffer, p: number): number {
  const m = /^[ \t\n\v\f\r]*([+-]?)([0-9]+)/.exec(data.toString('latin1', p, Math.min(data.length, p + 64)));
  if (!m || m[1] === '-') return 0;
  const n = Number(m[2]);
  return Number.isSafeInteger(n) ? n : 0;
}

/** The lines of an object's header (before the first empty line), or null when it has no end. */
function headerLines(data: Buffer): { lines: string[]; problems: string[] } {
  const problems: string[] = [];
  const end = data.indexOf('\n\n');
  if (end < 0) problems.push('has no empty line between its header and its message');
  const header = data.subarray(0, end < 0 ? data.length : end);
  if (header.includes(0)) problems.push('has a NUL byte in its header');
  if (header.includes(0x0d)) problems.push('has a carriage return in its header');
  if (end > 0 && data.indexOf(0, end) >= 0) problems.push('has a NUL byte in its message');
  return { lines: header.toString('utf8').split('\n'), problems };
}

function idProblem(what: string, hex: string, hexsz: number): string | null {
  if (hex.length !== hexsz || !HEX.test(hex)) return `has a malformed ${what} id ${JSON.stringify(hex.slice(0, 80))}`;
  if (!LOWER_HEX.test(hex)) return `writes its ${what} id in upper-case hex (${hex})`;
  if (/^0+$/.test(hex)) return `has a null ${what} id`;
  return null;
}

/** How a commit object departs from the form `git commit-tree` writes. */
function commitProblems(data: Buffer, hexsz: number): string[] {
  const { lines, problems } = headerLines(data);
  let i = 0;
  const take = (key: string): string | null => {
    const line = lines[i];
    if (line === undefined || !line.startsWith(`${key} `)) return null;
    i++;
    return line.slice(key.length + 1);
  };
  const tree = take('tree');
  if (tree === null) problems.push('does not start with its tree line');
  else {
    const p = idProblem('tree', tree, hexsz);
    if (p) problems.push(p);
  }
  const parents = new Set<string>();
  for (let p = take('parent'); p !== null; p = take('parent')) {
    const bad = idProblem('parent', p, hexsz);
    if (bad) problems.push(bad);
    else if (parents.has(p)) problems.push(`names parent ${p} twice`);
    parents.add(p);
  }
  for (const key of ['author', 'committer']) {
    const v = take(key);
    if (v === null) problems.push(`has no ${key} line where git writes it (after the tree and parents)`);
    else if (!IDENT.test(v)) problems.push(`has a malformed ${key} line ${JSON.stringify(v.slice(0, 120))}`);
  }
  const seen = new Set<string>();
  let current: string | null = null;
  for (; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith(' ')) {
      if (current === null || !MULTILINE.has(current)) problems.push(`has a continuation line ${JSON.stringify(line.slice(0, 80))} under a header that has none`);
      else if (current !== 'mergetag' && HEADER_LIKE.test(line.slice(1))) problems.push(`hides a header in a continuation line: ${JSON.stringify(line.slice(0, 80))}`);
      continue;
    }
    const sp = line.indexOf(' ');
    const key = sp < 0 ? line : line.slice(0, sp);
    current = key;
    if (key === 'tree' || key === 'parent' || key === 'author' || key === 'committer') problems.push(`has a second or out-of-order ${key} header: ${JSON.stringify(line.slice(0, 80))}`);
    else if (!EXTRA_HEADERS.has(key)) problems.push(`has a header git does not write: ${JSON.stringify(line.slice(0, 80))}`);
    else if (seen.has(key) && key !== 'mergetag') problems.push(`has its ${key} header twice`);
    seen.add(key);
  }
  return problems;
}

/**
 * Tag `id`'s target from the object's bytes, read as tag.c parse_tag_buffer reads it, with its
 * departures from the form `git tag -a` writes. Throws GitError where git fails to parse it.
 */
export function parseTag(id: string, data: Buffer): TagHeader {
  const hexsz = hexLength(id);
  const bad = (what: string): GitError => new GitError(['cat-file', '--batch-command'], 0, `tag ${id} ${what}`);
  if (data.length < hexsz + 24 || data.toString('latin1', 0, 7) !== 'object ' || data[7 + hexsz] !== 0x0a) throw bad('has no object line');
  const objectHex = data.toString('latin1', 7, 7 + hexsz);
  if (!HEX.test(objectHex)) throw bad('has a bad object id');
  const typeAt = 8 + hexsz;
  if (data.toString('latin1', typeAt, typeAt + 5) !== 'type ') throw bad('has no type line');
  const nl = data.indexOf(0x0a, typeAt);
  if (nl < 0) throw bad('has no end to its type line');
  const type = data.toString('latin1', typeAt + 5, nl);
  if (!['commit', 'tree', 'blob', 'tag'].includes(type)) throw bad(`has an unknown type ${JSON.stringify(type.slice(0, 40))}`);
  return { object: objectHex.toLowerCase(), type, problems: tagProblems(data, hexsz) };
}

/** How a tag object departs from the form `git tag -a` (git mktag's checks, strict) writes. */
function tagProblems(data: Buffer, hexsz: number): string[] {
  const { lines, problems } = headerLines(data);
  const expect = ['object', 'type', 'tag', 'tagger'];
  let i = 0;
  for (const key of expect) {
    const line = lines[i];
    if (line === undefined || !line.startsWith(`${key} `)) {
      problems.push(`has no ${key} line where git writes it`);
      continue;
    }
    i++;
    const v = line.slice(key.length + 1);
    if (key === 'object') {
      const p = idProblem('object', v, hexsz);
      if (p) problems.push(p);
    } else if (key === 'tag' && (v === '' || /[\x00-\x20\x7f~^:?*[\\]/.test(v))) problems.push(`has a tag name git would refuse: ${JSON.stringify(v.slice(0, 80))}`);
    else if (key === 'tagger' && !IDENT.test(v)) problems.push(`has a malformed tagger line ${JSON.stringify(v.slice(0, 120))}`);
  }
  for (; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith(' ')) problems.push(`has a continuation line ${JSON.stringify(line.slice(0, 80))}`);
    else problems.push(`has a header git does not write: ${JSON.stringify(line.slice(0, 80))}`);
  }
  return problems;
}

// ---- trees

/** One way a tree object departs from the form git writes: the entry's name and what is wrong. */
export interface TreeProblem {
  name: string;
  problem: string;
}

/** Characters HFS+ ignores in a name (git's utf8.c is_hfs_dotgit). */
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/gu;

/**
 * A name git's fsck refuses in a tree (hasDot, hasDotdot, hasDotgit, fullPathname, emptyName)
 * or that a case-insensitive, HFS+ or NTFS checkout would read as `.git`: why, or null.
 */
export function badEntryName(name: string): string | null {
  // Nearly every name: not empty, no leading dot, no slash, no g (so no spelling of .git).
  if (name.length > 0 && name.charCodeAt(0) !== 0x2e && !/[gG/]/.test(name)) return null;
  if (name === '') return 'has an empty name';
  if (name.includes('/')) return 'has a slash in its name';
  if (name === '.' || name === '..') return `is named ${name}`;
  // Only names that could spell .git are looked at further (nearly all are plain).
  if (!/[gG]/.test(name)) return null;
  const folded = name.replace(HFS_IGNORED, '').toLowerCase();
  if (folded === '.git') return 'is named .git (or a case or HFS+ spelling of it)';
  // NTFS: trailing dots and spaces are dropped, an alternate data stream (`:…`) names the same file, and GIT~1 is .git's short name.
  const ntfs = folded.replace(/:.*$/s, '').replace(/[. ]+$/, '');
  if (ntfs === '.git' || ntfs === 'git~1') return 'is named as NTFS reads .git';
  return null;
}

const SLASH = Buffer.from('/');

/** An entry's name as git orders it (tree.c base_name_compare): its bytes, a folder's as if they ended in "/". The tree diff (trees.ts) orders by it too. */
export function orderKey(e: RawTreeEntry): Buffer {
  const raw = e.raw ?? Buffer.from(e.name, 'utf8');
  return e.kind === 'tree' ? Buffer.concat([raw, SLASH]) : raw;
}

/** Tree ids already checked (their problems, usually none): a tree id names the same bytes forever. */
const checked = new LRUCache<string, TreeProblem[]>({ max: 65_536 });

/**
 * git's order of two entries' keys (a folder's name with "/" after it): -1, 0 or 1. Strings
 * compare as UTF-8 bytes do, except where the first difference is a surrogate (UTF-16 puts
 * those below U+E000, UTF-8 above): there, and for names that are not UTF-8, the bytes decide.
 */
function compareKeys(a: RawTreeEntry, ak: string, b: RawTreeEntry, bk: string): number {
  if (a.raw || b.raw) return Buffer.compare(orderKey(a), orderKey(b));
  const n = Math.min(ak.length, bk.length);
  let i = 0;
  while (i < n && ak.charCodeAt(i) === bk.charCodeAt(i)) i++;
  if (i === n) return Math.sign(ak.length - bk.length);
  const ca = ak.charCodeAt(i);
  const cb = bk.charCodeAt(i);
  if (ca >= 0xd800 || cb >= 0xd800) return Buffer.compare(orderKey(a), orderKey(b));
  return ca < cb ? -1 : 1;
}

/**
 * How tree `id` (its `entries` in stored order) departs from the form git writes: entries out
 * of git's order or twice (a file and a folder of one name included), names fsck refuses, null
 * object ids. Mode digits are modes.ts's (OddMode). Remembered by id. It runs on every new tree
 * a push brings (a 4,705-entry folder on every bench push), so the usual case is kept cheap:
 * strictly increasing names cannot repeat, except a file and a folder of one name, which are
 * looked for only when the tree has folders.
 */
export function treeProblems(id: string, entries: RawTreeEntry[]): TreeProblem[] {
  const known = checked.get(id);
  if (known) return known;
  const from = parsedFrom(entries);
  const out = from && clean.has(from.earlier) ? checkNew(entries, from.lo, from.hi) : checkAll(entries);
  if (out.length === 0) clean.add(entries);
  checked.set(id, out);
  return out;
}

/** Entry lists found in git's form: a wide tree parsed by difference from one of them is checked only where it differs. */
const clean = new WeakSet<RawTreeEntry[]>();

const keyOf = (e: RawTreeEntry): string => (e.kind === 'tree' ? `${e.name}/` : e.name);
const nameKey = (e: RawTreeEntry): string => (e.raw ? `raw:${e.raw.toString('hex')}` : e.name);

function entryProblems(e: RawTreeEntry, zero: string, out: TreeProblem[]): void {
  const bad = badEntryName(e.name);
  if (bad) out.push({ name: e.name, problem: bad });
  if (e.id === zero) out.push({ name: e.name, problem: 'points at the null object id' });
}

function pairProblem(prev: RawTreeEntry, e: RawTreeEntry, out: TreeProblem[]): void {
  const cmp = compareKeys(prev, keyOf(prev), e, keyOf(e));
  if (cmp === 0) out.push({ name: e.name, problem: 'is in the tree twice' });
  else if (cmp > 0) out.push({ name: e.name, problem: `is out of git's order (after ${JSON.stringify(prev.name)})` });
}

/** Every entry and every neighbouring pair; then a file and a folder of one name (not neighbours in git's order). */
function checkAll(entries: RawTreeEntry[]): TreeProblem[] {
  const out: TreeProblem[] = [];
  const zero = '0'.repeat(entries[0]?.id.length ?? 40);
  let folders: Set<string> | null = null;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    entryProblems(e, zero, out);
    if (i > 0) pairProblem(entries[i - 1]!, e, out);
    if (e.kind === 'tree') (folders ??= new Set()).add(nameKey(e));
  }
  if (folders) for (const e of entries) if (e.kind !== 'tree' && folders.has(nameKey(e))) out.push({ name: e.name, problem: 'is in the tree twice (as a file and as a folder)' });
  return out;
}

/**
 * A list whose entries outside [lo, hi) are an earlier clean list's, in its order: the entries
 * parsed anew, the pairs at both edges of them, and, for each new entry, the other kind of the
 * same name looked up in the (now known sorted) list.
 */
function checkNew(entries: RawTreeEntry[], lo: number, hi: number): TreeProblem[] {
  const out: TreeProblem[] = [];
  const zero = '0'.repeat(entries[0]?.id.length ?? 40);
  for (let i = Math.max(1, lo); i <= Math.min(hi, entries.length - 1); i++) pairProblem(entries[i - 1]!, entries[i]!, out);
  // Out of order at an edge: the reused entries prove nothing any more, so the whole list is checked.
  if (out.length) return checkAll(entries);
  for (let i = lo; i < hi; i++) {
    const e = entries[i]!;
    entryProblems(e, zero, out);
    const other = findKind(entries, e, e.kind === 'tree' ? 'file' : 'tree');
    if (other) out.push({ name: e.name, problem: 'is in the tree twice (as a file and as a folder)' });
  }
  return out;
}

/** The entry named as `e` but of the other kind in sorted `entries` (binary search on git's order), or null. */
function findKind(entries: RawTreeEntry[], e: RawTreeEntry, kind: 'file' | 'tree'): RawTreeEntry | null {
  const probe: RawTreeEntry = { ...e, kind: kind === 'tree' ? 'tree' : 'regular' };
  const pk = keyOf(probe);
  let a = 0;
  let b = entries.length - 1;
  while (a <= b) {
    const mid = (a + b) >>> 1;
    const m = entries[mid]!;
    const c = compareKeys(m, keyOf(m), probe, pk);
    if (c === 0) return (m.kind === 'tree') === (kind === 'tree') ? m : null;
    if (c < 0) a = mid + 1;
    else b = mid - 1;
  }
  return null;
}
