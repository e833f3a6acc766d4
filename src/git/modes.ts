// The one place that decides what a tree entry's mode means. git stores a mode as octal
// digits and, on every read (checkout, ls-tree, diff), folds it into one of five kinds with
// `canon_mode`: any mode whose type bits say "regular" is a file (executable when the owner's
// x bit is set), "symlink" bits are a symlink, "directory" bits a folder, and everything else
// a submodule. fsck only notes an odd mode (`40755`, `120777`) as INFO, so such trees are
// stored; a walker that compared mode strings literally would not open `40755 hidden/`, which
// checkout turns into a normal folder. Every walker in patchgate classifies through here, and
// an agent may not write a mode that git itself never writes.

import { GitError } from '../errors.js';

export type EntryKind = 'tree' | 'regular' | 'executable' | 'symlink' | 'gitlink';

export interface ModeClass {
  readonly kind: EntryKind;
  /** The mode as git reports it after reading (ls-tree's six digits): 040000, 100644, 100755, 120000, 160000. */
  readonly mode: string;
  /** True when the stored digits are exactly what git writes for this kind. */
  readonly canonical: boolean;
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;
const S_IFDIR = 0o040000;

/** The stored digits git writes for each kind (note: a tree is `40000`, no leading zero). */
export const WRITTEN_MODE: Record<EntryKind, string> = {
  tree: '40000',
  regular: '100644',
  executable: '100755',
  symlink: '120000',
  gitlink: '160000',
};

const REPORTED_MODE: Record<EntryKind, string> = {
  tree: '040000',
  regular: '100644',
  executable: '100755',
  symlink: '120000',
  gitlink: '160000',
};

const WRITTEN = new Set(Object.values(WRITTEN_MODE));

/**
 * git's tree-walk parse of the mode digits (`get_mode`): octal digits only, at least one, the
 * value kept in an unsigned 32-bit int (it wraps, as git's does). Null where git calls the
 * tree entry malformed.
 */
export function parseModeDigits(digits: string): number | null {
  if (digits.length === 0) return null;
  let mode = 0;
  for (let i = 0; i < digits.length; i++) {
    const d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 7) return null;
    mode = ((mode << 3) + d) >>> 0;
  }
  return mode;
}

/** git's `canon_mode` of a parsed mode value. */
export function kindOfModeValue(mode: number): EntryKind {
  const type = (mode & S_IFMT) >>> 0;
  if (type === S_IFREG) return mode & 0o100 ? 'executable' : 'regular';
  if (type === S_IFLNK) return 'symlink';
  if (type === S_IFDIR) return 'tree';
  return 'gitlink';
}

/** Classify the mode digits of a tree entry exactly as git's checkout does. Throws GitError for digits git cannot parse. */
export function classifyMode(digits: string, where = 'tree entry'): ModeClass {
  // Nearly every entry has one of git's five written modes: one shared answer each (a tree
  // of 4,705 files is parsed on every push to that folder; issue 24).
  return WRITTEN_CLASS.get(digits) ?? classifyDigits(digits, where);
}

function classifyDigits(digits: string, where: string): ModeClass {
  const value = parseModeDigits(digits);
  if (value === null) throw new GitError(['cat-file', '--batch-command'], 0, `${where}: malformed mode ${JSON.stringify(digits)}`);
  const kind = kindOfModeValue(value);
  return { kind, mode: REPORTED_MODE[kind], canonical: WRITTEN.has(digits) };
}

/** The kind of a mode as ls-tree or diff-tree report it (already folded by git). */
export function kindOfReportedMode(mode: string): EntryKind {
  return classifyMode(mode).kind;
}

/** Regular or executable: a file whose bytes a walker reads. */
export function isFileKind(kind: EntryKind): boolean {
  return kind === 'regular' || kind === 'executable';
}

const WRITTEN_CLASS = new Map<string, ModeClass>([...WRITTEN].map((d) => [d, Object.freeze(classifyDigits(d, 'mode'))]));
