// The one module through which patchgate reads git. Everything comes from the object
// database with plumbing (rev-list, diff-tree, ls-tree, a long-lived cat-file --batch);
// nothing pushed is ever checked out, imported or executed. It honours a receive-pack
// quarantine by passing the hook's object-directory variables to every child.

import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { open, readdir, readFile, stat } from 'node:fs/promises';
import type { Dirent } from 'node:fs';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { GitError } from '../errors.js';
import { classifyMode, kindOfReportedMode, type EntryKind } from './modes.js';
import { LooseQuarantineReader, looseQuarantineIds, type ObjectReader } from './loose-reader.js';

export { classifyMode, isFileKind, type EntryKind } from './modes.js';

export type ObjectFormat = 'sha1' | 'sha256';

const EMPTY_TREE: Record<ObjectFormat, string> = {
  sha1: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
  sha256: '6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321',
};

/** Variables a pre-receive hook gets from receive-pack that point at quarantined objects. */
export const QUARANTINE_VARS = ['GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_QUARANTINE_PATH'] as const;

/** Set one key of a repository's config file, synchronously (`hook install` is synchronous); throws GitError. */
export function setConfigSync(configFile: string, key: string, value: string): void {
  const args = ['config', '--file', configFile, key, value];
  try {
    execFileSync('git', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
  } catch (err) {
    const e = err as { status?: number | null; stderr?: Buffer };
    throw new GitError(args, e.status ?? null, e.stderr?.toString('utf8') ?? String(err), { cause: err });
  }
}

export function isZeroId(id: string): boolean {
  return /^0+$/.test(id);
}

export interface CommitInfo {
  id: string;
  parents: string[];
}

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

export interface TreeEntry {
  mode: string;
  kind: EntryKind;
  type: 'blob' | 'tree' | 'commit';
  id: string;
  path: string;
}

export interface GitOptions {
  /** The repository (a bare repo's directory or a work tree's top). */
  dir: string;
  /** Extra environment, e.g. the quarantine variables from the hook. */
  env?: Record<string, string | undefined>;
  /**
   * The directory is a bare repository the gate owns (the server's repos). Only then is its
   * `HEAD` file read directly; in a work tree a file named HEAD is pushed content.
   */
  bare?: boolean;
  /**
   * The repository's long-lived store (a Git on the same repository without the quarantine).
   * With it, a push whose quarantine holds loose objects only is read in process
   * (./loose-reader.ts): no git process for the push's objects.
   */
  store?: Git;
}

/**
 * One entry of a tree object; `raw` is the name's bytes (git orders by bytes). `mode` is the
 * mode as git reports it after reading, `rawMode` the stored digits, `kind` what checkout
 * makes of it: walkers decide on `kind`, never on the digits.
 */
export interface RawTreeEntry {
  mode: string;
  rawMode: string;
  kind: EntryKind;
  name: string;
  raw: Buffer;
  id: string;
}

const SLASH = Buffer.from('/');

/** git's tree order: names compared as bytes, a tree's name as if it ended in "/". */
function compareEntries(x: RawTreeEntry, y: RawTreeEntry): number {
  const kx = x.kind === 'tree' ? Buffer.concat([x.raw, SLASH]) : x.raw;
  const ky = y.kind === 'tree' ? Buffer.concat([y.raw, SLASH]) : y.raw;
  return Buffer.compare(kx, ky);
}

/** The file-type family of a kind; a change of family is diff's T status. */
function family(kind: EntryKind): string {
  return kind === 'executable' ? 'regular' : kind;
}

/** Variables that would make git read another repository or config than the one we chose. */
const SCRUBBED_VARS = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_CONFIG_PARAMETERS', 'GIT_CONFIG_COUNT', 'GIT_NAMESPACE', 'GIT_CEILING_DIRECTORIES', 'GIT_COMMON_DIR', ...QUARANTINE_VARS];

/**
 * How a git that talks to another repository is started so that it dies with the gate: in its
 * own process group (the time limit kills the whole group), led by a bash that the kernel
 * signals when the gate dies (`setpriv --pdeathsig`, util-linux), and that then kills the
 * group: no forward or fetch outlives a gate that was killed (kill -9 included). Without
 * setpriv on PATH, git is started directly (the time limit still bounds it).
 */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv', ...(process.env.PATH ?? '').split(':').filter(Boolean).map((d) => `${d}/setpriv`)].find((p) => existsSync(p)) ?? null;
function diesWithGate(args: string[]): [string, string[]] {
  if (!SETPRIV) return ['git', args];
  return [SETPRIV, ['--pdeathsig', 'TERM', '--', 'bash', '-c', 'trap "kill -KILL 0" TERM; git "$@" & wait $!', 'patchgate-git', ...args]];
}

export class Git {
  readonly dir: string;
  private readonly bare: boolean;
  private readonly env: NodeJS.ProcessEnv;
  private batch: ObjectReader | null = null;
  private format: ObjectFormat | null = null;
  private readonly store: Git | null;

  constructor(opts: GitOptions) {
    this.dir = opts.dir;
    this.bare = opts.bare ?? false;
    this.store = opts.store ?? null;
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of SCRUBBED_VARS) delete env[k];
    env.GIT_TERMINAL_PROMPT = '0';
    env.LC_ALL = 'C';
    for (const [k, v] of Object.entries(opts.env ?? {})) if (v !== undefined) env[k] = v;
    this.env = env;
  }

  /** Run one git command and return stdout. Non-zero exit throws GitError unless listed in `okExit`. */
  run(args: string[], opts: { input?: string | Buffer; okExit?: number[] } = {}): Promise<{ stdout: Buffer; code: number }> {
    return new Promise((resolve, reject) => {
      const child = spawn('git', args, { cwd: this.dir, env: this.env, stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', (e) => reject(new GitError(args, null, String(e), { cause: e })));
      child.on('close', (code) => {
        const stdout = Buffer.concat(out);
        if (code === 0 || (code !== null && opts.okExit?.includes(code))) resolve({ stdout, code: code ?? 0 });
        else reject(new GitError(args, code, Buffer.concat(err).toString('utf8')));
      });
      child.stdin.on('error', () => {}); // a child that exits early closes its stdin; its exit code tells.
      child.stdin.end(opts.input ?? '');
    });
  }

  /**
   * A git command that talks to another repository (fetch, push, ls-remote), or a long
   * maintenance run (the daemon's idle `gc --auto`, src/server/idle-gc.ts): bounded by
   * `timeoutMs` (its whole process group is killed), with `env` added for this call only (an
   * upstream credential travels by environment, never by argument). Never throws for git's
   * own failure: the caller reads code and stderr (and must redact stderr before showing it).
   */
  remote(args: string[], opts: { env?: Record<string, string>; timeoutMs: number; signal?: AbortSignal }): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }> {
    return new Promise((resolve) => {
      const env = { ...this.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', SSH_ASKPASS: 'true', ...opts.env };
      const [cmd, argv] = diesWithGate(args);
      const child = spawn(cmd, argv, { cwd: this.dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let timedOut = false;
      const kill = () => {
        try {
          if (child.pid) process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      };
      const timer = setTimeout(() => {
        timedOut = true;
        kill();
      }, opts.timeoutMs);
      // `signal` (e.g. the daemon stopping) ends it like the time limit, without timedOut.
      opts.signal?.addEventListener('abort', kill, { once: true });
      if (opts.signal?.aborted) kill();
      const done = () => {
        clearTimeout(timer);
        opts.signal?.removeEventListener('abort', kill);
      };
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', (e) => {
        done();
        resolve({ code: null, stdout: '', stderr: String(e), timedOut });
      });
      child.on('close', (code) => {
        done();
        resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), timedOut });
      });
    });
  }

  async text(args: string[], input?: string | Buffer): Promise<string> {
    return (await this.run(args, { input })).stdout.toString('utf8');
  }

  async objectFormat(): Promise<ObjectFormat> {
    if (!this.format) {
      const f = (await this.text(['rev-parse', '--show-object-format'])).trim();
      if (f !== 'sha1' && f !== 'sha256') throw new GitError(['rev-parse', '--show-object-format'], 0, `unknown object format ${f}`);
      this.format = f;
    }
    return this.format;
  }

  async emptyTree(): Promise<string> {
    return EMPTY_TREE[await this.objectFormat()];
  }

  /** Resolve a revision to a commit id; throws GitError when it does not name a commit. */
  async resolveCommit(rev: string): Promise<string> {
    return (await this.text(['rev-parse', '--verify', '--end-of-options', `${rev}^{commit}`])).trim();
  }

  /** The branch HEAD names (a bare repo's default branch), or null when HEAD is detached. */
  async symbolicHead(): Promise<string | null> {
    if (this.bare) {
      // A bare repository's HEAD is a small file: "ref: refs/heads/main" or a detached id.
      // Reading it saves a process per push; anything unusual falls back to git.
      let text: string | null = null;
      try {
        text = await readFile(join(this.dir, 'HEAD'), 'utf8');
      } catch {
        text = null;
      }
      const m = text === null ? null : /^ref: (refs\/[^\0\n]+)\n?$/.exec(text);
      if (m) return m[1]!;
      if (text !== null && /^[0-9a-f]{40}(?:[0-9a-f]{24})?\n?$/.test(text)) return null;
    }
    const { stdout, code } = await this.run(['symbolic-ref', '-q', 'HEAD'], { okExit: [1] });
    return code === 0 ? stdout.toString('utf8').trim() : null;
  }

  /** A repository config value, or null when unset. */
  async configGet(key: string): Promise<string | null> {
    const { stdout, code } = await this.run(['config', '--get', key], { okExit: [1] });
    return code === 0 ? stdout.toString('utf8').trim() : null;
  }

  /** The commit id a ref points at, or null when the ref does not exist. */
  async refTip(ref: string): Promise<string | null> {
    // Resolved by the long-lived cat-file reader (same rules as rev-parse), not a new process.
    const r = await this.batchReader().header(`${ref}^{commit}`);
    if (!r) return null;
    if (r.type !== 'commit') throw new GitError(['cat-file', '--batch-command'], 0, `${ref} resolves to a ${r.type}, not a commit`);
    return r.id;
  }

  /** Commits reachable from `include` and not from `exclude` (or from any existing ref when exclude is 'all'), oldest first. */
  async newCommits(include: string, exclude: string[] | 'all'): Promise<CommitInfo[]> {
    const args = ['rev-list', '--parents', '--topo-order', '--reverse', include, '--not'];
    if (exclude === 'all') args.push('--all');
    else args.push(...exclude);
    const lines = (await this.text(args)).split('\n').filter(Boolean);
    return lines.map((l) => {
      const [id, ...parents] = l.split(' ');
      return { id: id!, parents };
    });
  }

  /**
   * The new commits of a push, without a rev-list, in the common case: starting at `tip`,
   * follow single parents through commits the repository's own object store does not have
   * (`mainStore` reads it without the quarantine, so they can only be the pushed objects,
   * which no ref reaches) until one of `boundaries` (current ref tips). Then this line is
   * exactly `rev-list tip --not --all`. Anything else (a merge, a root, a commit the store
   * already had, a long line) returns null and the caller asks rev-list.
   */
  async pushedLine(tip: string, boundaries: string[], mainStore: Git, max = 256): Promise<CommitInfo[] | null> {
    const line: CommitInfo[] = [];
    let id = tip;
    while (!boundaries.includes(id)) {
      if (line.length >= max) return null;
      if ((await mainStore.pathId(id, null)) !== null) return null;
      const parents = (await this.commitHeader(id))?.parents;
      if (parents?.length !== 1) return null;
      line.push({ id, parents });
      id = parents[0]!;
    }
    // The boundary must be in the store: a reader that cannot see the store (a removed
    // repository, say) would call everything new, and the line's base would be wrong.
    if ((await mainStore.pathId(id, null)) === null) return null;
    return line.reverse();
  }

  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    const { code } = await this.run(['merge-base', '--is-ancestor', ancestor, descendant], { okExit: [1] });
    return code === 0;
  }

  async mergeBase(a: string, b: string): Promise<string | null> {
    const { stdout, code } = await this.run(['merge-base', a, b], { okExit: [1] });
    return code === 0 ? stdout.toString('utf8').trim() : null;
  }

  /** Changes from tree-ish `a` to tree-ish `b`, recursive, renames off, NUL separated. */
  async diffTree(a: string, b: string): Promise<Change[]> {
    const { stdout } = await this.run(['diff-tree', '-r', '-z', '--raw', '--no-renames', '--no-commit-id', '--full-index', a, b]);
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
   * Paths a commit changes. A root commit is diffed against the empty tree, a non-merge
   * against its parent, and a merge changes a path only where its result differs from
   * every parent (so merging a trusted edit is not a write, an "evil merge" is).
   * The trees are compared here, over the cat-file reader, with the same output as
   * `diff-tree -r --no-renames`; an unchanged subtree (same id) is never opened.
   */
  async commitChanges(commit: CommitInfo): Promise<Change[]> {
    return (await this.commitDiff(commit)).changes;
  }

  /**
   * A commit's changes (as commitChanges) and the entries it wrote with a mode git never
   * writes (`oddModes`): an entry counts when it differs from the parent's entry of that name
   * (id or digits), or, for a merge, from every parent's.
   */
  async commitDiff(commit: CommitInfo): Promise<{ changes: Change[]; oddModes: OddMode[] }> {
    const tree = await this.commitTree(commit.id);
    const diff = async (parentTree: string | null): Promise<{ changes: Change[]; oddModes: OddMode[] }> => {
      const oddModes: OddMode[] = [];
      const changes: Change[] = [];
      await this.diffInto(parentTree, tree, '', changes, oddModes);
      return { changes, oddModes };
    };
    if (commit.parents.length === 0) return diff(null);
    const perParent = await Promise.all(commit.parents.map(async (p) => diff(await this.commitTree(p))));
    if (perParent.length === 1) return perParent[0]!;
    const [first, ...rest] = perParent;
    const restSets = rest.map((d) => new Set(d.changes.map((c) => c.path)));
    const restOdd = rest.map((d) => new Set(d.oddModes.map((o) => `${o.mode} ${o.path}`)));
    return {
      changes: first!.changes.filter((c) => restSets.every((s) => s.has(c.path))),
      oddModes: first!.oddModes.filter((o) => restOdd.every((s) => s.has(`${o.mode} ${o.path}`))),
    };
  }

  /**
   * The header of a commit object (tree, parents, committer time), read through the batch
   * reader; null when `id` is not a commit. Only the header is read: a message may hold lines
   * that look like header lines.
   */
  async commitHeader(id: string): Promise<{ tree: string; parents: string[]; committerTime: number } | null> {
    const r = await this.batchReader().read(id);
    if (!r || r.type !== 'commit') return null;
    const text = r.data.toString('latin1');
    const end = text.indexOf('\n\n');
    const header = end < 0 ? text : text.slice(0, end);
    const tree = /^tree ([0-9a-f]+)$/m.exec(header);
    const committer = /^committer .* (\d+) [+-]\d{4}$/m.exec(header);
    if (!tree || !committer) throw new GitError(['cat-file', '--batch-command'], 0, `commit ${id} has no ${tree ? 'committer' : 'tree'} line`);
    return { tree: tree[1]!, parents: [...header.matchAll(/^parent ([0-9a-f]+)$/gm)].map((m) => m[1]!), committerTime: Number(committer[1]) };
  }

  /** The root tree id of a commit. */
  async commitTree(id: string): Promise<string> {
    const h = await this.commitHeader(id);
    if (!h) throw new GitError(['cat-file', '--batch-command'], 0, `${id} is not a commit`);
    return h.tree;
  }

  /**
   * Recursive changes from tree `a` to tree `b` (null = no tree), as `diff-tree -r -z --raw
   * --no-renames --full-index` reports them and in its order: a path whose kind (tree or
   * not) changes is a deletion plus additions, a mode family change (file, symlink,
   * submodule) is T, submodules are not entered.
   */
  async diffTrees(a: string | null, b: string | null, prefix = ''): Promise<Change[]> {
    const out: Change[] = [];
    await this.diffInto(a, b, prefix, out);
    return out;
  }

  /** Changes from `a` to `b` into `out`; entries of `b` with odd digits that `a` did not have into `odd`. */
  private async diffInto(a: string | null, b: string | null, prefix: string, out: Change[], odd?: OddMode[]): Promise<void> {
    if (a === b) return;
    const [ea, eb] = await Promise.all([a ? this.readTree(a) : [], b ? this.readTree(b) : []]);
    let i = 0;
    let j = 0;
    while (i < ea.length || j < eb.length) {
      const x = ea[i];
      const y = eb[j];
      const c = !x ? 1 : !y ? -1 : compareEntries(x, y);
      if (c < 0) {
        await this.emitSide(x!, 'D', prefix, out);
        i++;
      } else if (c > 0) {
        await this.emitSide(y!, 'A', prefix, out, odd);
        j++;
      } else {
        i++;
        j++;
        const path = prefix + y!.name;
        if (x!.id === y!.id && x!.rawMode === y!.rawMode) continue;
        if (odd && !classifyMode(y!.rawMode).canonical) odd.push({ path, mode: y!.rawMode, kind: y!.kind });
        if (x!.id === y!.id && x!.mode === y!.mode) continue; // other digits, same meaning: git sees no change
        if (x!.kind === 'tree') await this.diffInto(x!.id, y!.id, `${path}/`, out, odd);
        else out.push({ status: family(x!.kind) === family(y!.kind) ? 'M' : 'T', oldMode: x!.mode, newMode: y!.mode, oldKind: x!.kind, newKind: y!.kind, oldId: x!.id, newId: y!.id, path });
      }
    }
  }

  private async emitSide(e: RawTreeEntry, status: 'A' | 'D', prefix: string, out: Change[], odd?: OddMode[]): Promise<void> {
    const path = prefix + e.name;
    if (odd && status === 'A' && !classifyMode(e.rawMode).canonical) odd.push({ path, mode: e.rawMode, kind: e.kind });
    if (e.kind === 'tree') {
      await this.diffInto(status === 'D' ? e.id : null, status === 'A' ? e.id : null, `${path}/`, out, odd);
      return;
    }
    const zeroId = '0'.repeat(e.id.length);
    out.push(status === 'A'
      ? { status, oldMode: '000000', newMode: e.mode, oldKind: null, newKind: e.kind, oldId: zeroId, newId: e.id, path }
      : { status, oldMode: e.mode, newMode: '000000', oldKind: e.kind, newKind: null, oldId: e.id, newId: zeroId, path });
  }

  /** Entries of a tree-ish, recursive when asked; `path` limits to one folder. */
  async lsTree(treeish: string, opts: { recursive?: boolean; path?: string } = {}): Promise<TreeEntry[]> {
    const args = ['ls-tree', '-z', '--full-tree'];
    if (opts.recursive) args.push('-r');
    args.push(treeish);
    if (opts.path !== undefined) args.push('--', opts.path);
    const { stdout } = await this.run(args);
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

  /**
   * Write the tree of `rev` into `dir` (which must exist) from git objects: no checkout, no
   * index, no hooks, no filters. Regular and executable files and symlinks are written;
   * gitlinks are skipped. Used by `patchgate ci` for its sealed copy of a pushed tree.
   */
  async exportTree(rev: string, dir: string): Promise<string[]> {
    const { mkdir, writeFile, symlink } = await import('node:fs/promises');
    const { join, dirname, resolve, sep } = await import('node:path');
    const root = resolve(dir);
    const written: string[] = [];
    for (const e of await this.lsTree(rev, { recursive: true })) {
      if (e.kind === 'gitlink' || e.type !== 'blob') continue;
      const target = resolve(join(root, e.path));
      if (!target.startsWith(root + sep)) throw new GitError(['ls-tree', rev], 0, `tree entry ${JSON.stringify(e.path)} leaves the folder`);
      await mkdir(dirname(target), { recursive: true });
      const data = await this.readBlob(e.id);
      if (!data) throw new GitError(['cat-file', '--batch'], 0, `blob ${e.id} of ${e.path} is missing`);
      if (e.kind === 'symlink') await symlink(data.toString('utf8'), target);
      else await writeFile(target, data, { mode: e.kind === 'executable' ? 0o755 : 0o644 });
      written.push(e.path);
    }
    return written;
  }

  /** The object id (and type and size in bytes) at `rev:path`, or of `rev` itself when path is null; null when absent. */
  async pathId(rev: string, path: string | null): Promise<{ id: string; type: string; size: number } | null> {
    const r = await this.batchReader().header(path === null ? rev : `${rev}:${path}`);
    return r ? { id: r.id, type: r.type, size: r.size } : null;
  }

  /** The contents of a blob by id, or of `rev:path`; null when it does not exist. */
  async readBlob(spec: string): Promise<Buffer | null> {
    const r = await this.batchReader().read(spec);
    if (!r) return null;
    if (r.type !== 'blob') throw new GitError(['cat-file', '--batch'], 0, `${spec} is a ${r.type}, not a blob`);
    return r.data;
  }

  /**
   * The entries of one tree object (not recursive), in git's order, read through the batch
   * reader: no process per call. Names are bytes in git; they are decoded as UTF-8.
   */
  async readTree(id: string): Promise<RawTreeEntry[]> {
    const r = await this.batchReader().read(id);
    if (!r || r.type !== 'tree') throw new GitError(['cat-file', '--batch'], 0, `${id} is not a tree`);
    const idLen = id.length / 2;
    const out: RawTreeEntry[] = [];
    const d = r.data;
    let i = 0;
    while (i < d.length) {
      const sp = d.indexOf(0x20, i);
      const nul = d.indexOf(0, sp);
      if (sp < 0 || nul < 0 || nul + 1 + idLen > d.length || nul === sp + 1) throw new GitError(['cat-file', '--batch'], 0, `tree ${id} is malformed`);
      const rawMode = d.toString('latin1', i, sp);
      const cls = classifyMode(rawMode, `tree ${id}`);
      out.push({ mode: cls.mode, rawMode, kind: cls.kind, name: d.toString('utf8', sp + 1, nul), raw: d.subarray(sp + 1, nul), id: d.toString('hex', nul + 1, nul + 1 + idLen) });
      i = nul + 1 + idLen;
    }
    return out;
  }

  /** Committer time of a commit. */
  async commitDate(id: string): Promise<Date> {
    const h = await this.commitHeader(id);
    if (!h) throw new GitError(['cat-file', '--batch-command'], 0, `${id} is not a commit`);
    return new Date(h.committerTime * 1000);
  }

  /** Commits touching `path`, reachable from `rev`, newest first, with their committer dates. */
  async pathHistory(rev: string, path: string): Promise<Array<CommitInfo & { date: Date }>> {
    const lines = (await this.text(['rev-list', '--parents', '--timestamp', rev, '--', path])).split('\n').filter(Boolean);
    return lines.map((l) => {
      const [ts, id, ...parents] = l.split(' ');
      return { id: id!, parents, date: new Date(Number(ts) * 1000) };
    });
  }

  /**
   * The inflated size of an object (a blob by id, or `rev:path`) from its header alone,
   * through the batch reader's `info`: nothing is inflated, however large it is. Null when absent.
   */
  async objectSize(spec: string): Promise<number | null> {
    return (await this.batchReader().header(spec))?.size ?? null;
  }

  private quarantine: Promise<QuarantineStats | null> | null = null;

  /**
   * What a push brought, read from receive-pack's quarantine folder (GIT_QUARANTINE_PATH)
   * without a git process: loose objects are counted and their files sized, each pack is
   * sized and counted by its index's fan-out table (whose last entry is the object count).
   * Nothing is inflated. Null outside a quarantine (e.g. `patchgate check`). A layout it
   * does not know throws GitError, so the caller refuses.
   */
  quarantineStats(): Promise<QuarantineStats | null> {
    this.quarantine ??= readQuarantine(this.env.GIT_QUARANTINE_PATH);
    return this.quarantine;
  }

  private pushedObjects: Promise<PushedObject[] | null> | null = null;

  /**
   * Every object in receive-pack's quarantine, referenced by a commit or not, with its kind
   * and inflated size from its header: one `cat-file --batch-check --batch-all-objects` whose
   * object directory is the quarantine alone (no alternates), so the repository's own objects
   * are not listed and nothing is inflated (a delta's size is read from the delta's header).
   * Null outside a quarantine. An object of a kind git does not write throws GitError.
   */
  quarantineObjects(): Promise<PushedObject[] | null> {
    this.pushedObjects ??= (async () => {
      const dir = this.env.GIT_QUARANTINE_PATH;
      if (!dir) return null;
      // A small push (the usual one): the ids from the pack indexes' name tables and the loose
      // objects' file names, the kinds and sizes from headers through this push's reader
      // (`info`, nothing inflated): no process. An index of a form not read here, or more
      // objects than QUARANTINE_HEADER_MAX: the one cat-file below.
      const ids = await quarantineIds(dir, QUARANTINE_HEADER_MAX).catch(() => null);
      if (ids) return this.headersOf(ids);
      const env: NodeJS.ProcessEnv = { ...this.env, GIT_OBJECT_DIRECTORY: dir };
      delete env.GIT_ALTERNATE_OBJECT_DIRECTORIES;
      const args = ['cat-file', '--batch-check=%(objectname) %(objecttype) %(objectsize)', '--batch-all-objects', '--unordered'];
      const out = (await new Git({ dir: this.dir, env }).run(args)).stdout.toString('latin1');
      const objects: PushedObject[] = [];
      for (const line of out.split('\n')) {
        if (!line) continue;
        const m = /^([0-9a-f]{40}|[0-9a-f]{64}) (commit|tree|blob|tag) (\d+)$/.exec(line);
        if (!m) throw new GitError(args, null, `unexpected object in the push's quarantine: ${JSON.stringify(line.slice(0, 120))}`);
        objects.push({ id: m[1]!, type: m[2] as PushedObject['type'], size: Number(m[3]) });
      }
      return objects;
    })();
    return this.pushedObjects;
  }

  /** Kind and size of each listed quarantine object, from its header (the push's reader). */
  private async headersOf(ids: string[]): Promise<PushedObject[]> {
    const reader = this.batchReader();
    const heads = await Promise.all(ids.map((id) => reader.header(id)));
    return heads.map((h, i) => {
      const id = ids[i]!;
      if (!h || h.id !== id) throw new GitError(['cat-file', '--batch-command'], null, `object ${id} of the push's quarantine cannot be read`);
      if (!/^(?:commit|tree|blob|tag)$/.test(h.type)) throw new GitError(['cat-file', '--batch-command'], null, `unexpected object in the push's quarantine: ${JSON.stringify(`${id} ${h.type} ${h.size}`.slice(0, 120))}`);
      return { id, type: h.type as PushedObject['type'], size: h.size };
    });
  }

  /**
   * Which of `ids` the repository had before this push (its object store without the
   * quarantine): a thin pack's bases, which index-pack copies into the quarantine, are not
   * something the push brought.
   */
  async storedBeforePush(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    if (this.store) {
      // The long-lived store answers without the quarantine: no process.
      const reader = this.store.batchReader();
      const heads = await Promise.all(ids.map((id) => reader.header(id)));
      return new Set(ids.filter((id, i) => heads[i]?.id === id));
    }
    const env: NodeJS.ProcessEnv = { ...this.env };
    for (const k of QUARANTINE_VARS) delete env[k];
    const out = await new Git({ dir: this.dir, env }).text(['cat-file', '--batch-check=%(objectname) ok'], ids.map((id) => `${id}\n`).join(''));
    return new Set(out.split('\n').filter((l) => l.endsWith(' ok')).map((l) => l.slice(0, -3)));
  }

  // ---- writing a small ref of our own (the audit checkpoint log, src/audit/checkpoint-publish.ts)

  /** `git init --bare` at `dir` (which may exist and be empty). */
  static async initBare(dir: string): Promise<Git> {
    await new Git({ dir: '/' }).run(['init', '--bare', '-q', dir]);
    return new Git({ dir, bare: true });
  }

  /** Stores a blob and returns its id. */
  async writeBlob(data: string | Buffer): Promise<string> {
    return (await this.text(['hash-object', '-w', '--stdin'], data)).trim();
  }

  /** Stores a tree of regular files (name -> blob id) and returns its id. */
  async writeFileTree(files: Readonly<Record<string, string>>): Promise<string> {
    const lines = Object.keys(files).sort().map((name) => {
      if (!/^[^/\0\n]+$/.test(name)) throw new GitError(['mktree'], null, `bad file name ${JSON.stringify(name)}`);
      return `100644 blob ${files[name]}\t${name}\n`;
    });
    return (await this.text(['mktree'], lines.join(''))).trim();
  }

  /** Stores a commit (author and committer are this Git's environment) and returns its id. */
  async writeCommit(tree: string, parents: readonly string[], message: string): Promise<string> {
    const args = ['commit-tree', tree];
    for (const p of parents) args.push('-p', p);
    return (await this.text(args, message)).trim();
  }

  /** Moves `ref` to `id` only if it still points at `old` (null: only if it does not exist). */
  async updateRef(ref: string, id: string, old: string | null): Promise<void> {
    await this.run(['update-ref', ref, id, old ?? '0'.repeat(id.length)]);
  }

  /** Every commit reachable from `ref` with its parents, oldest first (topological); [] when the ref is absent. */
  async commitGraph(ref: string): Promise<Array<{ id: string; parents: string[] }>> {
    if ((await this.refTip(ref)) === null) return [];
    return (await this.text(['rev-list', '--parents', '--topo-order', '--reverse', ref])).split('\n').filter(Boolean).map((l) => {
      const [id, ...parents] = l.split(' ');
      return { id: id!, parents };
    });
  }

  /**
   * Copies `ref` of the repository at `remote` (a path or URL) into `localRef` here (forced:
   * the local copy mirrors the remote). False when the remote has no such ref. A credential
   * travels as in fetchDefaultBranch (environment, never argv); credentials in `remote`
   * never reach the error message.
   */
  async fetchRef(remote: string, ref: string, localRef: string, cred: { user?: string | null; secret?: string | null } = {}): Promise<boolean> {
    const { pre, env } = credentialArgs(cred.user, cred.secret, remote);
    const opts = { env, timeoutMs: REMOTE_REF_TIMEOUT_MS };
    const ls = await this.remoteOk(remote, [...pre, 'ls-remote', '--end-of-options', remote, ref], opts);
    if (!ls.split('\n').some((l) => l.endsWith(`\t${ref}`))) return false;
    await this.remoteOk(remote, [...pre, 'fetch', '-q', '--no-tags', '--no-write-fetch-head', '--end-of-options', remote, `+${ref}:${localRef}`], opts);
    return true;
  }

  /** Pushes `id` to `ref` of `remote` as a fast-forward (never forced). Credential and redaction as fetchRef. */
  async pushRef(remote: string, id: string, ref: string, cred: { user?: string | null; secret?: string | null } = {}): Promise<void> {
    const { pre, env } = credentialArgs(cred.user, cred.secret, remote);
    await this.remoteOk(remote, [...pre, 'push', '-q', '--no-verify', '--end-of-options', remote, `${id}:${ref}`], { env, timeoutMs: REMOTE_REF_TIMEOUT_MS });
  }

  /** remote() that throws a redacted GitError unless git exits 0. */
  private async remoteOk(remote: string, args: string[], opts: { env: Record<string, string>; timeoutMs: number }): Promise<string> {
    const r = await this.remote(args, opts);
    if (r.code === 0 && !r.timedOut) return r.stdout;
    const clean = (x: string): string => redactUrl(x.split(remote).join(redactUrl(remote)));
    throw new GitError(args.map(clean), r.code, r.timedOut ? `timed out after ${opts.timeoutMs} ms` : clean(r.stderr));
  }

  /**
   * Whether `dir` itself is a bare repository (asked with --git-dir, so git never looks in a
   * parent folder): how `patchgate ci --holdout` tells a bare repo from a plain folder.
   */
  static async isBareRepository(dir: string): Promise<boolean> {
    const g = new Git({ dir: '/' });
    const r = await g.remote(['--git-dir', dir, 'rev-parse', '--is-bare-repository'], { timeoutMs: 30_000 });
    return r.code === 0 && r.stdout.trim() === 'true';
  }

  /**
   * Fetch the default branch (HEAD) of the repository at `url` into `localRef` here, bounded by
   * `timeoutMs`. A credential travels to git through a credential helper that reads it from the
   * child's environment, never in an argument or the URL. Never throws for git's own failure:
   * the caller reads code and stderr, and must redact stderr before showing it.
   */
  fetchDefaultBranch(url: string, localRef: string, opts: { user?: string; secret?: string; timeoutMs: number }): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }> {
    const { pre, env } = credentialArgs(opts.user, opts.secret, url);
    return this.remote([...pre, 'fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--no-recurse-submodules', '--end-of-options', url, `+HEAD:${localRef}`], { env, timeoutMs: opts.timeoutMs });
  }

  /** Start the object reader process now rather than at the first read. */
  start(): void {
    this.batchReader();
  }

  private batchReader(): ObjectReader {
    if (!this.batch || this.batch.dead) {
      const q = this.env.GIT_QUARANTINE_PATH;
      const store = this.store;
      const loose = q && store ? looseQuarantineIds(q) : null;
      this.batch = q && store && loose
        ? new LooseQuarantineReader(q, loose, () => store.batchReader(), () => new CatFileBatch(this.dir, this.env))
        : new CatFileBatch(this.dir, this.env);
    }
    return this.batch;
  }

  close(): void {
    this.batch?.close();
    this.batch = null;
  }
}

/** One object a push brought, as its header says. */
export interface PushedObject {
  id: string;
  type: 'commit' | 'tree' | 'blob' | 'tag';
  /** Inflated size in bytes. */
  size: number;
}

export interface QuarantineStats {
  objects: number;
  /** Bytes on disk: pack files plus loose object files (compressed, as received). */
  bytes: number;
  packs: number;
  loose: number;
}

const LOOSE_DIR = /^[0-9a-f]{2}$/;
const LOOSE_NAME = /^(?:[0-9a-f]{38}|[0-9a-f]{62})$/;
const IDX_V2_MAGIC = Buffer.from([0xff, 0x74, 0x4f, 0x63]);

async function readQuarantine(dir: string | undefined): Promise<QuarantineStats | null> {
  if (!dir) return null;
  const fail = (why: string, cause?: unknown) => new GitError(['(quarantine)', dir], null, why, { cause });
  const stats: QuarantineStats = { objects: 0, bytes: 0, packs: 0, loose: 0 };
  let top: Dirent[];
  try {
    top = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    throw fail(`cannot list the push's quarantine: ${(err as Error).message}`, err);
  }
  for (const e of top) {
    if (e.isDirectory() && LOOSE_DIR.test(e.name)) {
      for (const f of await readdir(join(dir, e.name))) {
        if (!LOOSE_NAME.test(f)) continue;
        stats.loose++;
        stats.bytes += (await stat(join(dir, e.name, f))).size;
      }
    } else if (e.isDirectory() && e.name === 'pack') {
      for (const f of await readdir(join(dir, 'pack'))) {
        if (f.endsWith('.pack')) {
          stats.packs++;
          stats.bytes += (await stat(join(dir, 'pack', f))).size;
        } else if (f.endsWith('.idx')) {
          stats.objects += await idxObjectCount(join(dir, 'pack', f)).catch((err: unknown) => {
            throw fail(`cannot read pack index ${f}: ${(err as Error).message}`, err);
          });
        }
      }
    }
  }
  stats.objects += stats.loose;
  return stats;
}

/** Above this many objects a push's object list comes from one cat-file, not a header per object. */
const QUARANTINE_HEADER_MAX = 2000;

/**
 * The distinct object ids in a quarantine: loose objects' paths, and the name table of each
 * v2 pack index whose size shows no large-offset table (SHA-1 or SHA-256 names, told apart by
 * the size). Null when there are more than `max`, or an index is of another form.
 */
async function quarantineIds(dir: string, max: number): Promise<string[] | null> {
  const ids = new Set<string>();
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory() && LOOSE_DIR.test(e.name)) {
      for (const f of await readdir(join(dir, e.name))) if (LOOSE_NAME.test(f)) ids.add(e.name + f);
    } else if (e.isDirectory() && e.name === 'pack') {
      for (const f of await readdir(join(dir, 'pack'))) {
        if (!f.endsWith('.idx')) continue;
        const names = await idxNames(join(dir, 'pack', f), max - ids.size);
        if (!names) return null;
        for (const n of names) ids.add(n);
      }
    }
    if (ids.size > max) return null;
  }
  return [...ids];
}

/** The object names of a v2 pack index without large offsets; null for another form or more than `max`. */
async function idxNames(path: string, max: number): Promise<string[] | null> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    const head = Buffer.alloc(8 + 256 * 4);
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    if (bytesRead < head.length || !head.subarray(0, 4).equals(IDX_V2_MAGIC) || head.readUInt32BE(4) !== 2) return null;
    const n = head.readUInt32BE(8 + 255 * 4);
    if (n > max) return null;
    // names, crc32s, 4-byte offsets, then the pack's and the index's checksums
    const hashLen = [20, 32].find((h) => size === head.length + n * (h + 8) + 2 * h);
    if (!hashLen) return null;
    const names = Buffer.alloc(n * hashLen);
    const got = await fh.read(names, 0, names.length, head.length);
    if (got.bytesRead !== names.length) return null;
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(names.subarray(i * hashLen, (i + 1) * hashLen).toString('hex'));
    return out;
  } finally {
    await fh.close();
  }
}

/** The object count of a pack index (v1 or v2): the last entry of its 256-entry fan-out table. */
async function idxObjectCount(path: string): Promise<number> {
  const fh = await open(path, 'r');
  try {
    const head = Buffer.alloc(8 + 256 * 4);
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    const v2 = head.subarray(0, 4).equals(IDX_V2_MAGIC);
    if (v2 && head.readUInt32BE(4) !== 2) throw new Error(`unknown index version ${head.readUInt32BE(4)}`);
    const fanout = v2 ? 8 : 0;
    if (bytesRead < fanout + 256 * 4) throw new Error('index too short');
    return head.readUInt32BE(fanout + 255 * 4);
  } finally {
    await fh.close();
  }
}

interface BatchResult {
  id: string;
  type: string;
  size: number;
  data: Buffer;
}

interface Pending {
  spec: string;
  headerOnly: boolean;
  resolve: (r: BatchResult | null) => void;
  reject: (e: unknown) => void;
}

/**
 * A long-lived `git cat-file --batch-command` reader: `contents` for object data and `info`
 * for headers, over one process (git 2.36+). Requests are answered in order; the parser is a
 * small state machine over the stdout byte stream.
 */
class CatFileBatch {
  dead = false;
  private readonly proc: ChildProcessWithoutNullStreams;
  private readonly queue: Pending[] = [];
  private buf: Buffer = Buffer.alloc(0);
  private stderr = '';

  constructor(dir: string, env: NodeJS.ProcessEnv) {
    this.proc = spawn('git', ['cat-file', '--batch-command'], { cwd: dir, env });
    this.proc.stderr.on('data', (b: Buffer) => (this.stderr += b.toString('utf8')));
    this.proc.on('error', (e) => this.fail(e));
    this.proc.on('close', () => this.fail(new Error('git cat-file exited')));
    this.proc.stdin.on('error', (e) => this.fail(e));
    this.proc.stdout.on('data', (b: Buffer) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, b]) : b;
      this.drain();
    });
  }

  private fail(e: unknown): void {
    if (this.dead) return;
    this.dead = true;
    const err = new GitError(['cat-file', '--batch-command'], null, this.stderr || String(e), { cause: e });
    for (const p of this.queue.splice(0)) p.reject(err);
  }

  private send(spec: string, headerOnly: boolean): Promise<BatchResult | null> {
    if (this.dead) return Promise.reject(new GitError(['cat-file', '--batch-command'], null, this.stderr || 'cat-file is not running'));
    if (/[\n\r]/.test(spec)) return Promise.reject(new GitError(['cat-file', '--batch-command'], null, `object name with a newline: ${JSON.stringify(spec)}`));
    return new Promise((resolve, reject) => {
      this.queue.push({ spec, headerOnly, resolve, reject });
      this.proc.stdin.write(`${headerOnly ? 'info' : 'contents'} ${spec}\n`);
    });
  }

  read(spec: string): Promise<BatchResult | null> {
    return this.send(spec, false);
  }

  header(spec: string): Promise<BatchResult | null> {
    return this.send(spec, true);
  }

  private drain(): void {
    for (;;) {
      const nl = this.buf.indexOf(10);
      if (nl < 0) return;
      const p = this.queue[0];
      if (!p) return this.fail(new Error('unexpected cat-file output'));
      const head = parseHeader(this.buf.subarray(0, nl).toString('utf8'), Buffer.alloc(0));
      if (!head || p.headerOnly) {
        this.buf = this.buf.subarray(nl + 1);
        this.queue.shift();
        p.resolve(head);
        continue;
      }
      const end = nl + 1 + head.size;
      if (this.buf.length < end + 1) return; // wait for body and its trailing LF
      head.data = Buffer.from(this.buf.subarray(nl + 1, end));
      this.buf = this.buf.subarray(end + 1);
      this.queue.shift();
      p.resolve(head);
    }
  }

  close(): void {
    this.dead = true;
    this.proc.stdin.end();
  }
}

function parseHeader(line: string, data: Buffer): BatchResult | null {
  // "<id> <type> <size>" or "<spec> missing" / "<spec> ambiguous"
  const m = /^([0-9a-f]+) (\S+) (\d+)$/.exec(line);
  if (!m) return null;
  return { id: m[1]!, type: m[2]!, size: Number(m[3]), data };
}

/** How long one fetch or push of the checkpoint ref may take. */
const REMOTE_REF_TIMEOUT_MS = 60_000;

/**
 * A credential helper that answers `get` from the child's environment, so a secret is never an
 * argument or in a URL, and only for the one origin it was given: git tells a helper the
 * protocol and host (with any port) it wants a credential for on stdin, and a redirect or a
 * submodule elsewhere gets nothing.
 */
const CREDENTIAL_HELPER = '!f() { test "$1" = get || return 0; p=; h=; while IFS= read -r l; do case "$l" in protocol=*) p=${l#protocol=} ;; host=*) h=${l#host=} ;; esac; done; ' +
  'test -n "$PATCHGATE_GIT_HOST" && test "$p" = "$PATCHGATE_GIT_PROTOCOL" && test "$h" = "$PATCHGATE_GIT_HOST" || return 0; ' +
  'printf \'username=%s\\npassword=%s\\n\' "$PATCHGATE_GIT_USER" "$PATCHGATE_GIT_SECRET"; }; f';

/** The protocol and host[:port] git names a URL's credential by (as it parses the URL: case and port as written). */
export function credentialOrigin(url: string): { protocol: string; host: string } | null {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(?:[^@/?#]*@)?([^/?#]+)/.exec(url);
  return m ? { protocol: m[1]!, host: m[2]! } : null;
}

/**
 * git options and environment that give a git child exactly this credential, for `url`'s
 * scheme, host and port only: every configured helper and prompt is switched off, redirects
 * are not followed (git would otherwise send the credential on to wherever upstream points
 * it), and with a secret the one helper above answers from the child's environment (the
 * held-out fetch, upstream fetch and forward).
 */
export function credentialArgs(user: string | null | undefined, secret: string | null | undefined, url: string): { pre: string[]; env: Record<string, string> } {
  const pre = ['-c', 'credential.helper=', '-c', 'core.askPass=true', '-c', 'http.followRedirects=false'];
  const origin = credentialOrigin(url);
  if (!secret || !origin) return { pre, env: {} };
  return {
    pre: [...pre, '-c', `credential.helper=${CREDENTIAL_HELPER}`],
    env: { PATCHGATE_GIT_USER: user || 'x-access-token', PATCHGATE_GIT_SECRET: secret, PATCHGATE_GIT_PROTOCOL: origin.protocol, PATCHGATE_GIT_HOST: origin.host },
  };
}

/** git's line for an HTTP redirect it did not follow (http.followRedirects=false). */
export const REDIRECT_REFUSED = /The requested URL returned error: (30[12378])/;

/** `user:password@` taken out of a URL, for messages. */
export function redactUrl(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, '$1***@');
}

