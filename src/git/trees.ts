// Trees and the changes between them: parsing tree objects and ls-tree / diff-tree output,
// and the in-process tree diff (git's `diff-tree -r --no-renames` over tree objects read
// through the cat-file reader) that every commit's changes come from. Pure functions over a
// reader; the Git facade's tree and diff methods call them.

import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { GitError } from '../errors.js';
import type { CommitInfo } from './commits.js';
import { classifyMode, kindOfReportedMode, type EntryKind } from './modes.js';
import { orderKey, treeProblems } from './object-format.js';
import type { RawTreeEntry } from './tree-parse.js';

export type { RawTreeEntry } from './tree-parse.js';

/** One changed path between two trees, from `diff-tree -r -z --raw --no-renames`. */
export interface Change {
  status: string; // A, D, M, T
  oldMode: string;
  newMode: string;
  /** What each side is, as git's checkout sees it (src/git/modes.ts); null for the absent side. */
  oldKind: EntryKind | null;
  newKind: EntryKind | null;
  oldId: string;
  newId: string;
  path: string;
}

/** A tree entry a commit wrote with mode digits git itself never writes (e.g. `40755`, `120777`). */
export interface OddMode {
  path: string;
  /** The stored digits. */
  mode: string;
  /** What git's checkout makes of it. */
  kind: EntryKind;
}

/** A tree a commit brought in a form git never writes (object-format.ts treeProblems): the entry's path, the tree, what is wrong. */
export interface FormProblem {
  path: string;
  tree: string;
  problem: string;
}

/** What a commit's diff found besides its changes: odd mode digits and trees in a form git never writes. */
export interface CommitDiff {
  changes: Change[];
  oddModes: OddMode[];
  forms: FormProblem[];
}

export interface TreeEntry {
  mode: string;
  kind: EntryKind;
  type: 'blob' | 'tree' | 'commit';
  id: string;
  path: string;
}

/** git's tree order: names compared as bytes, a tree's name as if it ended in "/". */
function compareEntries(x: RawTreeEntry, y: RawTreeEntry): number {
  // Two trees of one folder share nearly every name: equal names compare without a buffer.
  if (x.name === y.name && !x.raw && !y.raw) {
    const xt = x.kind === 'tree';
    return xt === (y.kind === 'tree') ? 0 : xt ? 1 : -1;
  }
  return Buffer.compare(orderKey(x), orderKey(y));
}

/** The file-type family of a kind; a change of family is diff's T status. */
function family(kind: EntryKind): string {
  return kind === 'executable' ? 'regular' : kind;
}

/** What the tree walks need: one tree object's entries by id (Git.readTree). */
export interface TreeReader {
  readTree(id: string): Promise<RawTreeEntry[]>;
}

export { parseTree } from './tree-parse.js';

/** `ls-tree -z --full-tree` arguments for Git.lsTree. */
export function lsTreeArgs(treeish: string, opts: { recursive?: boolean; path?: string }): string[] {
  const args = ['ls-tree', '-z', '--full-tree'];
  if (opts.recursive) args.push('-r');
  args.push(treeish);
  if (opts.path !== undefined) args.push('--', opts.path);
  return args;
}

/** The entries of `ls-tree -z` output. */
export function parseLsTree(stdout: Buffer, treeish: string): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (const rec of stdout.toString('utf8').split('\0')) {
    if (!rec) continue;
    const tab = rec.indexOf('\t');
    const [mode, type, id] = rec.slice(0, tab).split(' ');
    const cls = classifyMode(mode!, `ls-tree ${treeish}`);
    entries.push({ mode: cls.mode, kind: cls.kind, type: type as TreeEntry['type'], id: id!, path: rec.slice(tab + 1) });
  }
  return entries;
}

/** The changes of `diff-tree -r -z --raw --no-renames --no-commit-id --full-index a b` output. */
export function parseDiffTree(stdout: Buffer, a: string, b: string): Change[] {
  const parts = stdout.toString('utf8').split('\0');
  const changes: Change[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const meta = parts[i]!;
    const path = parts[i + 1]!;
    const m = /^:(\d{6}) (\d{6}) ([0-9a-f]+) ([0-9a-f]+) ([A-Z])\d*$/.exec(meta);
    if (!m) throw new GitError(['diff-tree', a, b], 0, `unparsable diff-tree line ${JSON.stringify(meta)}`);
    const status = m[5]!;
    changes.push({
      status, oldMode: m[1]!, newMode: m[2]!,
      oldKind: status === 'A' ? null : kindOfReportedMode(m[1]!), newKind: status === 'D' ? null : kindOfReportedMode(m[2]!),
      oldId: m[3]!, newId: m[4]!, path,
    });
  }
  return changes;
}

/**
 * A commit's changes and the entries it wrote with odd mode digits (Git.commitDiff): a root
 * commit against no tree, a non-merge against its parent, a merge only where its result
 * differs from every parent.
 */
export async function commitDiff(reader: TreeReader & { commitTree(id: string): Promise<string> }, commit: CommitInfo): Promise<CommitDiff> {
  const tree = await reader.commitTree(commit.id);
  const diff = async (parentTree: string | null): Promise<CommitDiff> => {
    const oddModes: OddMode[] = [];
    const forms: FormProblem[] = [];
    const changes: Change[] = [];
    await diffInto(reader, parentTree, tree, '', changes, oddModes, forms);
    return { changes, oddModes, forms };
  };
  if (commit.parents.length === 0) return diff(null);
  const perParent = await Promise.all(commit.parents.map(async (p) => diff(await reader.commitTree(p))));
  if (perParent.length === 1) return perParent[0]!;
  const [first, ...rest] = perParent;
  const restSets = rest.map((d) => new Set(d.changes.map((c) => c.path)));
  const restOdd = rest.map((d) => new Set(d.oddModes.map((o) => `${o.mode} ${o.path}`)));
  const restForms = rest.map((d) => new Set(d.forms.map((f) => `${f.tree} ${f.path} ${f.problem}`)));
  return {
    changes: first!.changes.filter((c) => restSets.every((s) => s.has(c.path))),
    oddModes: first!.oddModes.filter((o) => restOdd.every((s) => s.has(`${o.mode} ${o.path}`))),
    forms: first!.forms.filter((f) => restForms.every((s) => s.has(`${f.tree} ${f.path} ${f.problem}`))),
  };
}

/**
 * Changes from tree `a` to tree `b` (null = no tree) into `out`, as Git.diffTrees describes;
 * entries of `b` with odd digits that `a` did not have into `odd`.
 */
export async function diffInto(reader: TreeReader, a: string | null, b: string | null, prefix: string, out: Change[], odd?: OddMode[], forms?: FormProblem[]): Promise<void> {
  if (a === b) return;
  const [ea, eb] = await Promise.all([a ? reader.readTree(a) : [], b ? reader.readTree(b) : []]);
  // A tree new to this commit is read as git reads it only when it is in git's own form.
  if (forms && b) for (const p of treeProblems(b, eb)) forms.push({ path: prefix + p.name, tree: b, problem: p.problem });
  let i = 0;
  let j = 0;
  while (i < ea.length || j < eb.length) {
    const x = ea[i];
    const y = eb[j];
    // Two versions of a wide folder share their unchanged entries' objects (tree-parse.ts).
    if (x === y) {
      i++;
      j++;
      continue;
    }
    const c = !x ? 1 : !y ? -1 : compareEntries(x, y);
    if (c < 0) {
      await emitSide(reader, x!, 'D', prefix, out);
      i++;
    } else if (c > 0) {
      await emitSide(reader, y!, 'A', prefix, out, odd, forms);
      j++;
    } else {
      i++;
      j++;
      const path = prefix + y!.name;
      if (x!.id === y!.id && x!.rawMode === y!.rawMode) continue;
      if (odd && !classifyMode(y!.rawMode).canonical) odd.push({ path, mode: y!.rawMode, kind: y!.kind });
      if (x!.id === y!.id && x!.mode === y!.mode) continue; // other digits, same meaning: git sees no change
      if (x!.kind === 'tree') await diffInto(reader, x!.id, y!.id, `${path}/`, out, odd, forms);
      else out.push({ status: family(x!.kind) === family(y!.kind) ? 'M' : 'T', oldMode: x!.mode, newMode: y!.mode, oldKind: x!.kind, newKind: y!.kind, oldId: x!.id, newId: y!.id, path });
    }
  }
}

async function emitSide(reader: TreeReader, e: RawTreeEntry, status: 'A' | 'D', prefix: string, out: Change[], odd?: OddMode[], forms?: FormProblem[]): Promise<void> {
  const path = prefix + e.name;
  if (odd && status === 'A' && !classifyMode(e.rawMode).canonical) odd.push({ path, mode: e.rawMode, kind: e.kind });
  if (e.kind === 'tree') {
    await diffInto(reader, status === 'D' ? e.id : null, status === 'A' ? e.id : null, `${path}/`, out, odd, forms);
    return;
  }
  const zeroId = '0'.repeat(e.id.length);
  out.push(status === 'A'
    ? { status, oldMode: '000000', newMode: e.mode, oldKind: null, newKind: e.kind, oldId: zeroId, newId: e.id, path }
    : { status, oldMode: e.mode, newMode: '000000', oldKind: e.kind, newKind: null, oldId: e.id, newId: zeroId, path });
}

/**
 * The id and mode bits' kind of `path` under tree `tree`, found the way git's own lookup of
 * `<tree>:<path>` finds it (tree-walk.c find_tree_entry: names compared as bytes, the walk of
 * a folder stopped at the first name past the one sought, so a tree git would not search the
 * same way answers the same); null when git finds nothing there. `path` is a plain relative
 * path: no empty, `.` or `..` part, no leading or trailing slash.
 */
export async function findTreeEntry(reader: TreeReader, tree: string, path: string): Promise<{ id: string; kind: EntryKind } | null> {
  let name: Buffer = Buffer.from(path, 'utf8');
  let at = tree;
  for (;;) {
    let next: { id: string; kind: EntryKind; rest: Buffer | null } | null = null;
    for (const e of await reader.readTree(at)) {
      const entry = e.raw ?? Buffer.from(e.name, 'utf8');
      if (entry.length > name.length) continue;
      const cmp = Buffer.compare(name.subarray(0, entry.length), entry);
      if (cmp > 0) continue;
      if (cmp < 0) break;
      if (entry.length === name.length) {
        next = { id: e.id, kind: e.kind, rest: null };
        break;
      }
      if (name[entry.length] !== 0x2f) continue;
      if (e.kind !== 'tree') break;
      next = { id: e.id, kind: e.kind, rest: name.subarray(entry.length + 1) };
      break;
    }
    if (!next) return null;
    if (next.rest === null || next.rest.length === 0) return { id: next.id, kind: next.kind };
    name = next.rest;
    at = next.id;
  }
}

/**
 * Write the recursive `entries` of `rev` into `dir` (Git.exportTree): regular and executable
 * files and symlinks, blobs from `readBlob`; gitlinks are skipped, and an entry that would
 * land outside `dir` throws GitError.
 */
export async function writeTreeFiles(entries: TreeEntry[], readBlob: (id: string) => Promise<Buffer | null>, rev: string, dir: string): Promise<string[]> {
  const root = resolve(dir);
  const written: string[] = [];
  for (const e of entries) {
    if (e.kind === 'gitlink' || e.type !== 'blob') continue;
    const target = resolve(join(root, e.path));
    if (!target.startsWith(root + sep)) throw new GitError(['ls-tree', rev], 0, `tree entry ${JSON.stringify(e.path)} leaves the folder`);
    await mkdir(dirname(target), { recursive: true });
    const data = await readBlob(e.id);
    if (!data) throw new GitError(['cat-file', '--batch'], 0, `blob ${e.id} of ${e.path} is missing`);
    if (e.kind === 'symlink') await symlink(data.toString('utf8'), target);
    else await writeFile(target, data, { mode: e.kind === 'executable' ? 0o755 : 0o644 });
    written.push(e.path);
  }
  return written;
}
