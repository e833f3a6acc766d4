// The one module through which patchgate reads git. Everything comes from the object
// database with plumbing (rev-list, diff-tree, ls-tree, a long-lived cat-file --batch);
// nothing pushed is ever checked out, imported or executed. It honours a receive-pack
// quarantine by passing the hook's object-directory variables to every child.
//
// This file is the facade callers use (the Git class, and every name they import); the
// work is in its neighbours: exec.ts (starting git children), cat-file.ts (the object
// reader), trees.ts (tree parsing and diffs), commits.ts (commit headers, rev-list, HEAD),
// quarantine.ts (what a push brought) and credentials.ts (credentials, URL redaction).

import { GitError } from '../errors.js';
import { CatFileBatch } from './cat-file.js';
import { parseCommitHeader, parseRevList, parseTimestampedRevList, pushedLine, readHeadFile, type CommitHeader, type CommitInfo } from './commits.js';
import { credentialArgs, redactUrl } from './credentials.js';
import { gitEnv, runGit, runRemote, type RemoteOptions, type RemoteResult, type RunOptions } from './exec.js';
import { LOOSE_MAX_BLOB, QuarantineObjects, type PushObjects } from './loose.js';
import { ObjectMemo } from './object-memo.js';
import type { BatchResult } from './cat-file.js';
import { headersOf, parseObjectList, QUARANTINE_HEADER_MAX, QUARANTINE_LIST_ARGS, QUARANTINE_VARS, quarantineIds, readQuarantine, type PushedObject, type QuarantineStats } from './quarantine.js';
import { commitDiff, diffInto, findTreeEntry, lsTreeArgs, parseDiffTree, parseLsTree, parseTree, writeTreeFiles, type Change, type CommitDiff, type OddMode, type RawTreeEntry, type TreeEntry } from './trees.js';

export { classifyMode, isFileKind, type EntryKind } from './modes.js';
export { isZeroId, type CommitInfo } from './commits.js';
export { credentialArgs, credentialOrigin, REDIRECT_REFUSED, redactUrl } from './credentials.js';
export { setConfigSync } from './exec.js';
export { ObjectMemo } from './object-memo.js';
export { QUARANTINE_VARS, type PushedObject, type QuarantineStats } from './quarantine.js';
export type { Change, CommitDiff, FormProblem, OddMode, RawTreeEntry, TreeEntry } from './trees.js';

export type ObjectFormat = 'sha1' | 'sha256';

const EMPTY_TREE: Record<ObjectFormat, string> = {
  sha1: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
  sha256: '6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321',
};

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
   * A cat-file already started for this view (spare-reader.ts): used until it ends. A function
   * is called at the first read that needs a reader (a small push may need none).
   */
  reader?: CatFileBatch | null | (() => CatFileBatch | null);
  /**
   * The repository's long-lived store (a Git on the same repository without the quarantine):
   * what the repository had before a push is asked of its reader, not of a new process.
   */
  store?: Git;
  /** The push's objects read elsewhere than its quarantine (a pack read in process: pack-read.ts). */
  pushObjects?: PushObjects;
  /** No process and no reader of its own: what the push's objects and the store cannot answer is an error, never a guess. */
  sealed?: boolean;
}

/** How long one fetch or push of the checkpoint ref may take. */
const REMOTE_REF_TIMEOUT_MS = 60_000;

const EMPTY_DATA = Buffer.alloc(0);
const COMMIT_OR_TREE = ['commit', 'tree'] as const;
const BLOB = ['blob'] as const;
/** A path pathInPush walks itself: no empty, `.` or `..` part, no slash at either end. */
const PLAIN_PATH = /^(?!\.\.?(?:\/|$))(?:[^/]+)(?:\/(?!\.\.?(?:\/|$))[^/]+)*$/;

/** A full object id: only those are kept (a ref name or `rev:path` names different objects over time). */
const OBJECT_ID_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export class Git {
  readonly dir: string;
  private readonly bare: boolean;
  private readonly env: NodeJS.ProcessEnv;
  private batch: CatFileBatch | null = null;
  /** dispose() ran: no reader is started any more. */
  private disposed = false;
  /** Where the first reader comes from when it was given as a function (taken once). */
  private pendingReader: (() => CatFileBatch | null) | null = null;
  private format: ObjectFormat | null = null;
  private readonly store: Git | null;
  private readonly sealed: boolean;
  /** Trees and commit headers read lately, shared with the store's Git (so with every push to its repository). */
  readonly objects: ObjectMemo;

  constructor(opts: GitOptions) {
    this.dir = opts.dir;
    this.bare = opts.bare ?? false;
    this.store = opts.store ?? null;
    this.objects = this.store?.objects ?? new ObjectMemo();
    this.sealed = !!opts.sealed;
    if (opts.pushObjects) this.loose = opts.pushObjects;
    this.env = gitEnv(opts.env);
    if (typeof opts.reader === 'function') this.pendingReader = opts.reader;
    else this.batch = opts.reader ?? null;
  }

  /** Run one git command and return stdout. Non-zero exit throws GitError unless listed in `okExit`. */
  run(args: string[], opts: RunOptions = {}): Promise<{ stdout: Buffer; code: number }> {
    if (this.sealed) return Promise.reject(this.sealedError(`git ${args[0] ?? ''}`));
    return runGit(this.dir, this.env, args, opts);
  }

  /**
   * A git command that talks to another repository (fetch, push, ls-remote), or a long
   * maintenance run (the daemon's idle `gc --auto`, src/server/idle-gc.ts): bounded by
   * `timeoutMs` (its whole process group is killed), with `env` added for this call only (an
   * upstream credential travels by environment, never by argument). Never throws for git's
   * own failure: the caller reads code and stderr (and must redact stderr before showing it).
   */
  remote(args: string[], opts: RemoteOptions): Promise<RemoteResult> {
    if (this.sealed) return Promise.reject(this.sealedError(`git ${args[0] ?? ''}`));
    return runRemote(this.dir, this.env, args, opts);
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

  // ---- refs and commits (parsing in commits.ts)

  /** Resolve a revision to a commit id; throws GitError when it does not name a commit. */
  async resolveCommit(rev: string): Promise<string> {
    return (await this.text(['rev-parse', '--verify', '--end-of-options', `${rev}^{commit}`])).trim();
  }

  /** The branch HEAD names (a bare repo's default branch), or null when HEAD is detached. */
  async symbolicHead(): Promise<string | null> {
    if (this.bare) {
      const head = await readHeadFile(this.dir);
      if (head !== undefined) return head;
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
    return parseRevList(await this.text(args));
  }

  /**
   * The new commits of a push, without a rev-list, in the common case: starting at `tip`,
   * follow single parents through commits the repository's own object store does not have
   * (`mainStore` reads it without the quarantine, so they can only be the pushed objects,
   * which no ref reaches) until one of `boundaries` (current ref tips). Then this line is
   * exactly `rev-list tip --not --all`. Anything else (a merge, a root, a commit the store
   * already had, a long line) returns null and the caller asks rev-list.
   */
  pushedLine(tip: string, boundaries: string[], mainStore: Git, max = 256): Promise<CommitInfo[] | null> {
    return pushedLine(this, tip, boundaries, mainStore, max);
  }

  async isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    const { code } = await this.run(['merge-base', '--is-ancestor', ancestor, descendant], { okExit: [1] });
    return code === 0;
  }

  async mergeBase(a: string, b: string): Promise<string | null> {
    const { stdout, code } = await this.run(['merge-base', a, b], { okExit: [1] });
    return code === 0 ? stdout.toString('utf8').trim() : null;
  }

  /**
   * The header of a commit object (tree, parents, committer time), read through the batch
   * reader; null when `id` is not a commit. Only the header is read: a message may hold lines
   * that look like header lines.
   */
  async commitHeader(id: string): Promise<CommitHeader | null> {
    const read = async (): Promise<CommitHeader | null> => {
      const r = await this.objectById(id);
      if (!r || r.type !== 'commit') return null;
      return parseCommitHeader(id, r.data);
    };
    return OBJECT_ID_RE.test(id) ? this.objects.get(`commit ${id}`, read, () => 1) : read();
  }

  /** The root tree id of a commit. */
  async commitTree(id: string): Promise<string> {
    const h = await this.commitHeader(id);
    if (!h) throw new GitError(['cat-file', '--batch-command'], 0, `${id} is not a commit`);
    return h.tree;
  }

  /** Committer time of a commit. */
  async commitDate(id: string): Promise<Date> {
    const h = await this.commitHeader(id);
    if (!h) throw new GitError(['cat-file', '--batch-command'], 0, `${id} is not a commit`);
    return new Date(h.committerTime * 1000);
  }

  /** Commits touching `path`, reachable from `rev`, newest first, with their committer dates. */
  async pathHistory(rev: string, path: string): Promise<Array<CommitInfo & { date: Date }>> {
    return parseTimestampedRevList(await this.text(['rev-list', '--parents', '--timestamp', rev, '--', path]));
  }

  // ---- trees and diffs (trees.ts)

  /** Changes from tree-ish `a` to tree-ish `b`, recursive, renames off, NUL separated. */
  async diffTree(a: string, b: string): Promise<Change[]> {
    const { stdout } = await this.run(['diff-tree', '-r', '-z', '--raw', '--no-renames', '--no-commit-id', '--full-index', a, b]);
    return parseDiffTree(stdout, a, b);
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
  commitDiff(commit: CommitInfo): Promise<CommitDiff> {
    return commitDiff(this, commit);
  }

  /**
   * Recursive changes from tree `a` to tree `b` (null = no tree), as `diff-tree -r -z --raw
   * --no-renames --full-index` reports them and in its order: a path whose kind (tree or
   * not) changes is a deletion plus additions, a mode family change (file, symlink,
   * submodule) is T, submodules are not entered.
   */
  async diffTrees(a: string | null, b: string | null, prefix = ''): Promise<Change[]> {
    const out: Change[] = [];
    await diffInto(this, a, b, prefix, out);
    return out;
  }

  /** Entries of a tree-ish, recursive when asked; `path` limits to one folder. */
  async lsTree(treeish: string, opts: { recursive?: boolean; path?: string } = {}): Promise<TreeEntry[]> {
    const { stdout } = await this.run(lsTreeArgs(treeish, opts));
    return parseLsTree(stdout, treeish);
  }

  /**
   * Write the tree of `rev` into `dir` (which must exist) from git objects: no checkout, no
   * index, no hooks, no filters. Regular and executable files and symlinks are written;
   * gitlinks are skipped. Used by `patchgate ci` for its sealed copy of a pushed tree.
   */
  async exportTree(rev: string, dir: string): Promise<string[]> {
    return writeTreeFiles(await this.lsTree(rev, { recursive: true }), (id) => this.readBlob(id), rev, dir);
  }

  /**
   * The entries of one tree object (not recursive), in git's order, read through the batch
   * reader: no process per call. Names are bytes in git; they are decoded as UTF-8.
   */
  async readTree(id: string): Promise<RawTreeEntry[]> {
    const read = async (): Promise<RawTreeEntry[]> => {
      const r = await this.objectById(id);
      if (!r || r.type !== 'tree') throw new GitError(['cat-file', '--batch'], 0, `${id} is not a tree`);
      return parseTree(id, r.data);
    };
    return OBJECT_ID_RE.test(id) ? this.objects.get(`tree ${id}`, read, (es) => es.length + 1) : read();
  }

  // ---- objects (through the cat-file reader, cat-file.ts)

  /** The object id (and type and size in bytes) at `rev:path`, or of `rev` itself when path is null; null when absent. */
  async pathId(rev: string, path: string | null): Promise<{ id: string; type: string; size: number } | null> {
    if (path !== null && this.quarantineLoose() && OBJECT_ID_RE.test(rev) && PLAIN_PATH.test(path)) {
      const found = await this.pathInPush(rev, path);
      if (found !== undefined) return found;
    }
    const r = path === null ? await this.headerById(rev) : await this.batchReader().header(`${rev}:${path}`);
    return r ? { id: r.id, type: r.type, size: r.size } : null;
  }

  /** The contents of a blob by id, or of `rev:path`; null when it does not exist. */
  async readBlob(spec: string): Promise<Buffer | null> {
    // A blob the push brought as a loose file is read here (loose.ts: at most LOOSE_MAX_FILE on
    // disk and LOOSE_MAX_BLOB inflated); larger ones, packs and `rev:path` by cat-file.
    const r = await this.objectById(spec, BLOB, LOOSE_MAX_BLOB);
    if (!r) return null;
    if (r.type !== 'blob') throw new GitError(['cat-file', '--batch'], 0, `${spec} is a ${r.type}, not a blob`);
    return r.data;
  }

  /** Any object's type and bytes by id (a thin pack's delta base, pack-read.ts); null when absent. */
  async readObject(id: string): Promise<{ type: string; data: Buffer } | null> {
    const r = await this.objectById(id);
    return r ? { type: r.type, data: r.data } : null;
  }

  /**
   * The inflated size of an object (a blob by id, or `rev:path`) from its header alone,
   * through the batch reader's `info`: nothing is inflated, however large it is. Null when absent.
   */
  async objectSize(spec: string): Promise<number | null> {
    return (await this.headerById(spec))?.size ?? null;
  }

  // ---- the push's quarantine (quarantine.ts)

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
      if (ids) return headersOf({ header: (id) => this.headerById(id) }, ids);
      const env: NodeJS.ProcessEnv = { ...this.env, GIT_OBJECT_DIRECTORY: dir };
      delete env.GIT_ALTERNATE_OBJECT_DIRECTORIES;
      const args = [...QUARANTINE_LIST_ARGS];
      const out = (await new Git({ dir: this.dir, env }).run(args)).stdout.toString('latin1');
      return parseObjectList(out, args);
    })();
    return this.pushedObjects;
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
    return parseRevList(await this.text(['rev-list', '--parents', '--topo-order', '--reverse', ref]));
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

  // ---- where an object is read: the push's loose objects (loose.ts), the store, or cat-file

  private loose: PushObjects | null | undefined;

  /** The push's quarantine as loose files, when this Git is a push's view of a served repository. */
  private quarantineLoose(): PushObjects | null {
    if (this.loose === undefined) {
      const dir = this.env.GIT_QUARANTINE_PATH;
      this.loose = dir && this.store ? new QuarantineObjects(dir) : null;
    }
    return this.loose;
  }

  /**
   * True when `spec` is an object id the push did not bring (no loose file of it in the
   * quarantine, and no pack there): the repository's own store has it or nobody does, so the
   * store's long-lived reader answers and the push's reader is not waited for.
   */
  private pushLacks(spec: string): boolean {
    const q = this.quarantineLoose();
    return !!q && OBJECT_ID_RE.test(spec) && q.loosesOnly() && q.header(spec) === null;
  }

  /**
   * An object of one of `kinds` by id (or any spec): the push's loose file, the store, or this
   * view's cat-file. A loose file is read whole only once its header names one of `kinds` and
   * it inflates to at most `maxObject`: anything else the push brought goes to cat-file.
   */
  private async objectById(spec: string, kinds: readonly string[] = COMMIT_OR_TREE, maxObject?: number): Promise<BatchResult | null> {
    if (this.sealed && !OBJECT_ID_RE.test(spec)) {
      const at = await this.sealedPath(spec);
      return at && this.objectById(at.id, kinds, maxObject);
    }
    const q = this.quarantineLoose();
    if (q && OBJECT_ID_RE.test(spec)) {
      const r = q.read(spec, kinds, maxObject);
      if (r) return Promise.resolve(r);
      if (r === null && q.loosesOnly()) return this.store!.batchReader().read(spec);
    }
    return this.batchReader().read(spec);
  }

  /**
   * `rev:path` for a commit or tree id in a push's view, walked over the trees in process
   * (findTreeEntry: git's own lookup) with the object's header from headerById; undefined
   * when `rev` is neither, so cat-file answers.
   */
  private async pathInPush(rev: string, path: string): Promise<{ id: string; type: string; size: number } | null | undefined> {
    const h = await this.headerById(rev);
    const tree = h?.type === 'tree' ? rev : h?.type === 'commit' ? (await this.commitHeader(rev))?.tree : undefined;
    if (!tree) return undefined;
    const e = await findTreeEntry(this, tree, path);
    const head = e ? await this.headerById(e.id) : null;
    return head ? { id: head.id, type: head.type, size: head.size } : null;
  }

  /** An object's header by id (or any spec), from the same places as objectById. */
  private async headerById(spec: string): Promise<BatchResult | null> {
    if (this.sealed && !OBJECT_ID_RE.test(spec)) {
      const at = await this.sealedPath(spec);
      return at && this.headerById(at.id);
    }
    const q = this.quarantineLoose();
    if (q && OBJECT_ID_RE.test(spec)) {
      const h = q.header(spec);
      if (h) return Promise.resolve({ ...h, data: EMPTY_DATA });
      if (h === null && q.loosesOnly()) return this.store!.storedHeader(spec);
    }
    return this.batchReader().header(spec);
  }

  /**
   * The header of an object by id, asked of this store's reader and kept in the shared memo: an
   * id's type and size never change, and a push's walks ask for the same few (the trusted tip,
   * its `src` tree, the ledger's and the fixtures' blobs) on every push. Not found is not kept.
   */
  private storedHeader(id: string): Promise<BatchResult | null> {
    return this.objects.get(`header ${id}`, () => this.batchReader().header(id), () => 1);
  }

  /** A sealed view's `id:path`, walked in process; any other spec is refused (it would need a reader). */
  private async sealedPath(spec: string): Promise<{ id: string } | null> {
    const m = /^([0-9a-f]{40}|[0-9a-f]{64}):(.+)$/.exec(spec);
    if (!m || !PLAIN_PATH.test(m[2]!)) throw this.sealedError(`cat-file ${spec}`);
    const found = await this.pathInPush(m[1]!, m[2]!);
    if (found === undefined) throw this.sealedError(`cat-file ${spec}`);
    return found;
  }

  private sealedError = (what: string): GitError => new GitError([what], 0, `a view of a push read ahead from its pack answers from the pack and the store only (${what} is neither)`);

  /** Start the object reader process now rather than at the first read. */
  start(): void {
    this.batchReader();
  }

  /**
   * start(), unless this is a push's view whose objects are all loose files (read in process:
   * loose.ts), which may never need its own reader.
   */
  startUnlessLoose(): void {
    if (!this.quarantineLoose()?.loosesOnly()) this.start();
  }

  private batchReader(): CatFileBatch {
    // A walk still on its way after its owner is done (a cancelled judgement, a stopped
    // warm-up) gets an error here, not a new reader that nothing would close.
    if (this.disposed) throw new GitError(['cat-file', '--batch-command'], 0, `the reader of ${this.dir} was closed for good: the work that used it is over`);
    if (this.sealed) throw this.sealedError('cat-file --batch-command');
    if (!this.batch && this.pendingReader) {
      const take = this.pendingReader;
      this.pendingReader = null;
      this.batch = take();
    }
    if (!this.batch || this.batch.dead) this.batch = new CatFileBatch(this.dir, this.env);
    return this.batch;
  }

  close(): void {
    this.pendingReader = null;
    this.batch?.close();
    this.batch = null;
  }

  /** close(), for good: a later read that needs cat-file fails instead of starting one (a push's view, a warm-up's). */
  dispose(): void {
    this.disposed = true;
    this.close();
  }
}
