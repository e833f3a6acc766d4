// Where checkpoints live outside the database: a git ref (`refs/patchgate/audit`, one commit
// per checkpoint holding the signed note as the file `checkpoint`, in a repository the
// operator names: a path or a URL, e.g. the upstream remote, so the line leaves the machine)
// and/or a JSONL file (`{"checkpoint": NOTE}` per line). Publishing appends every checkpoint
// the target lacks (a fast-forward push, never forced), so a target that missed one catches
// up and its line stays whole. Reading returns the target's line oldest first; a git ref is
// read as its whole commit graph (not only first parents), and a merge is refused naming it.
// All git I/O goes through src/git/git.ts.
//
// Targets are written `git:REPO` (path or URL; `git:REPO#refs/heads/NAME` for another ref,
// e.g. a branch a host's branch protection covers) or `file:PATH`; a bare argument is a git
// repository when it is a directory or looks like a URL, else a file. The anchor's
// credential never travels in argv: a URL holding a password on the command line is refused
// (ConfigError); it comes from a credential file or PATCHGATE_CHECKPOINT_CREDENTIAL, and
// reaches git through src/git's credential helper (environment, not arguments).

import { appendFileSync, closeSync, existsSync, fstatSync, mkdtempSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Git, redactUrl } from '../git/git.js';
import { CheckpointError, ConfigError, errorMessage } from '../errors.js';
import { parseCheckpoint, type Checkpoint } from './checkpoint.js';

export const CHECKPOINT_REF = 'refs/patchgate/audit';
export const NOTE_FILE = 'checkpoint';
/** The variable that holds the anchor's credential (token, or user:token). */
export const CREDENTIAL_ENV = 'PATCHGATE_CHECKPOINT_CREDENTIAL';
/** In the data folder: the commit this gate last published to each git target. */
export const PUBLISHED_FILE = 'checkpoint-published.json';
const COMMITTER = {
  GIT_AUTHOR_NAME: 'patchgate', GIT_AUTHOR_EMAIL: 'patchgate@localhost',
  GIT_COMMITTER_NAME: 'patchgate', GIT_COMMITTER_EMAIL: 'patchgate@localhost',
};

/** The checkpoint history is not one line (a merge, two roots): evidence of tampering, not unreadable input. */
export class CheckpointLineError extends CheckpointError {
  constructor(readonly where: string, message: string) {
    super(message);
  }
}

export interface Credential { user: string | null; secret: string }
export type Target = { kind: 'git'; repo: string; ref: string; cred: Credential | null } | { kind: 'file'; path: string };

export interface NamedCheckpoint {
  cp: Checkpoint;
  /** Where it was read: `file.jsonl line 3`, `refs/patchgate/audit commit 1a2b3c4d5e6f`. */
  where: string;
  /** The git commit holding it (git sources only). */
  commit?: string;
}

/** `token` or `user:token` (a file's first line, or the variable's value). */
export function parseCredential(text: string, from: string): Credential {
  const line = text.split(/\r?\n/)[0]!.trim();
  if (!line) throw new ConfigError(from, 'is empty (its first line is the token, or user:token)');
  const i = line.indexOf(':');
  return i > 0 ? { user: line.slice(0, i), secret: line.slice(i + 1) } : { user: null, secret: line };
}

/** The anchor credential: the file named (`--…-credential-file`), else PATCHGATE_CHECKPOINT_CREDENTIAL, else none. */
export function loadCredential(file: string | undefined, env: NodeJS.ProcessEnv = process.env): Credential | null {
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError('checkpoint credential file', `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, { cause: err });
    }
    return parseCredential(text, `checkpoint credential file ${file}`);
  }
  const v = env[CREDENTIAL_ENV];
  return v ? parseCredential(v, CREDENTIAL_ENV) : null;
}

/**
 * A target from its spec. `from` names where the spec came from (`--publish`, a variable, a
 * config file): a URL with a password is refused when it came from the command line (argv is
 * visible in `ps`), and otherwise its credential is taken out of the URL, so git's argv never
 * holds it either.
 */
export function parseTarget(spec: string, opts: { from?: string; cred?: Credential | null } = {}): Target {
  if (typeof spec !== 'string' || spec.trim() === '') throw new CheckpointError('a checkpoint target must be git:REPO or file:PATH');
  let repo: string;
  let ref = CHECKPOINT_REF;
  if (spec.startsWith('git:')) {
    repo = spec.slice(4);
    // git:REPO#refs/heads/NAME: another ref, e.g. a branch a host's branch protection covers.
    const hash = repo.lastIndexOf('#');
    if (hash > 0) {
      ref = repo.slice(hash + 1);
      repo = repo.slice(0, hash);
      if (!/^refs\/[A-Za-z0-9._/-]+$/.test(ref) || /\.\.|\/\/|\/\.|\.lock(\/|$)|\/$|\.$/.test(ref)) throw new CheckpointError(`${JSON.stringify(ref)} is not a ref name (write git:REPO#refs/heads/NAME)`);
    }
  }
  else if (spec.startsWith('file:')) return { kind: 'file', path: resolve(spec.slice(5)) };
  else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec) || /^[^/]+@[^/:]+:/.test(spec)) repo = spec;
  else if (existsSync(spec) && statSync(spec).isDirectory()) repo = resolve(spec);
  else return { kind: 'file', path: resolve(spec) };
  const from = opts.from ?? '--publish';
  const m = /^([a-z][a-z0-9+.-]*:\/\/)([^/@\s]*)@(.*)$/i.exec(repo);
  // A password is a secret anywhere; over http(s) a user name alone can be one too (a token as user).
  const secretInUrl = m && (m[2]!.includes(':') || /^https?:\/\//i.test(m[1]!));
  if (!m || !secretInUrl) return { kind: 'git', repo, ref, cred: opts.cred ?? null };
  if (from.startsWith('--')) {
    throw new ConfigError(from, `${redactUrl(repo)}: a credential in a URL on the command line shows in \`ps\`; give the URL without it and put the token (or user:token) in a file named by --checkpoint-credential-file (mode 0600), or in ${CREDENTIAL_ENV}`);
  }
  const [user, ...rest] = m[2]!.split(':');
  const dec = (x: string): string => { try { return decodeURIComponent(x); } catch { return x; } };
  const cred = rest.length ? { user: dec(user!), secret: dec(rest.join(':')) } : { user: null, secret: dec(user!) };
  return { kind: 'git', repo: m[1]! + m[3]!, ref, cred: opts.cred ?? cred };
}

export function describeTarget(t: Target): string {
  return t.kind === 'git' ? `${t.ref} in ${redactUrl(t.repo)}` : t.path;
}

/** A scratch bare repository for one operation (removed by the returned cleanup). */
async function scratch(): Promise<{ git: Git; done: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'patchgate-cp-'));
  const git = await Git.initBare(dir);
  const withId = new Git({ dir, bare: true, env: COMMITTER });
  return { git: withId, done: () => { git.close(); withId.close(); rmSync(dir, { recursive: true, force: true }); } };
}

const fileLine = (cp: Checkpoint): string => JSON.stringify({ checkpoint: cp.note }) + '\n';

/** What of `line` (oldest first) comes after `tipHash`; the whole line when the target is empty. */
function missing(line: readonly Checkpoint[], tipHash: string | null, where: string): Checkpoint[] {
  if (tipHash === null) return [...line];
  const i = line.findIndex((c) => c.hash === tipHash);
  if (i < 0) {
    throw new CheckpointError(`${where} ends with a checkpoint this gate's line does not hold: another gate (or someone) publishes there, or it was rewritten; give each gate node its own anchor, and check it with \`patchgate audit verify --checkpoints\``);
  }
  return line.slice(i + 1);
}

/**
 * Brings a target up to `line` (this gate's checkpoints, oldest first, the newest last).
 * Returns the git commit of the newest for git targets. Throws CheckpointError (credentials
 * redacted) on any failure.
 */
export async function publish(line: readonly Checkpoint[], target: Target): Promise<string | null> {
  if (line.length === 0) return null;
  if (target.kind === 'file') {
    try {
      const have = existsSync(target.path) ? readFileLine(target.path) : [];
      const add = missing(line, have.length ? have[have.length - 1]!.cp.hash : null, target.path);
      if (add.length) appendFileSync(target.path, add.map(fileLine).join(''), { mode: 0o644 });
    } catch (err) {
      if (err instanceof CheckpointError) throw err;
      throw new CheckpointError(`cannot append the checkpoint to ${target.path}: ${errorMessage(err)}`, { cause: err });
    }
    return null;
  }
  const s = await scratch();
  try {
    // Two tries: another process may have appended between our fetch and our push.
    for (let attempt = 0; ; attempt++) {
      const have = await s.git.fetchRef(target.repo, target.ref, 'refs/remote-audit', target.cred ?? {});
      let parent = have ? await s.git.refTip('refs/remote-audit') : null;
      const tipNote = parent ? await s.git.readBlob(`${parent}:${NOTE_FILE}`) : null;
      if (parent && !tipNote) throw new CheckpointError(`${describeTarget(target)}: its tip ${parent.slice(0, 12)} holds no ${NOTE_FILE} file (an older patchgate's format?); publish to a new ref or repository`);
      const tip = tipNote ? parseCheckpoint(tipNote.toString('utf8'), `${describeTarget(target)} commit ${parent!.slice(0, 12)}`) : null;
      for (const cp of missing(line, tip ? tip.hash : null, describeTarget(target))) {
        const tree = await s.git.writeFileTree({ [NOTE_FILE]: await s.git.writeBlob(cp.note) });
        parent = await s.git.writeCommit(tree, parent ? [parent] : [], `patchgate audit checkpoint: ${cp.size} row(s)\n\n${cp.note}`);
      }
      try {
        await s.git.pushRef(target.repo, parent!, target.ref, target.cred ?? {});
        return parent!;
      } catch (err) {
        if (attempt >= 1) throw err;
      }
    }
  } catch (err) {
    if (err instanceof CheckpointError) throw err;
    throw new CheckpointError(`cannot publish the checkpoint to ${describeTarget(target)}: ${redactUrl(errorMessage(err))}`, { cause: err });
  } finally {
    s.done();
  }
}

function readFileLine(path: string): NamedCheckpoint[] {
  const text = readFileSync(path, 'utf8');
  const out: NamedCheckpoint[] = [];
  text.split('\n').forEach((l, i) => {
    if (l.trim() === '') return;
    const where = `${path} line ${i + 1}`;
    let v: unknown;
    try {
      v = JSON.parse(l);
    } catch (err) {
      throw new CheckpointError(`${where}: not JSON: ${errorMessage(err)}`, { cause: err });
    }
    const note = (v as { checkpoint?: unknown } | null)?.checkpoint;
    if ((v as { format?: unknown } | null)?.format === 'patchgate-checkpoint/1') {
      throw new CheckpointError(`${where}: a checkpoint of an older patchgate (patchgate-checkpoint/1, no longer read); move ${path} aside (e.g. to ${path}.v1) to start a new line of signed notes`);
    }
    if (typeof note !== 'string') throw new CheckpointError(`${where}: not a patchgate checkpoint: expected {"checkpoint": NOTE}`);
    // Nothing beside the note: a field there is not covered by its signature, so it is refused rather than ignored.
    const beside = Object.keys(v as object).filter((k) => k !== 'checkpoint');
    if (beside.length) throw new CheckpointError(`${where}: a checkpoint line is {"checkpoint": NOTE} and nothing else; it also holds ${beside.slice(0, 3).map((k) => JSON.stringify(k.slice(0, 40))).join(', ')}, which no signature covers`);
    out.push({ cp: parseCheckpoint(note, where), where });
  });
  return out;
}

/**
 * Every checkpoint of a source, oldest first. A git ref is read as every commit reachable
 * from it; a merge (or any commit with more than one parent) is a CheckpointError naming it,
 * since the history must be one line. An unreadable entry is a CheckpointError naming it.
 */
export async function readCheckpoints(target: Target): Promise<NamedCheckpoint[]> {
  if (target.kind === 'file') {
    try {
      return readFileLine(target.path);
    } catch (err) {
      if (err instanceof CheckpointError) throw err;
      throw new CheckpointError(`cannot read checkpoints from ${target.path}: ${errorMessage(err)}`, { cause: err });
    }
  }
  const s = await scratch();
  try {
    if (!(await s.git.fetchRef(target.repo, target.ref, 'refs/remote-audit', target.cred ?? {}))) return [];
    const out: NamedCheckpoint[] = [];
    const graph = await s.git.commitGraph('refs/remote-audit');
    for (const { id, parents } of graph) {
      const where = `${target.ref} commit ${id.slice(0, 12)}`;
      if (parents.length > 1) {
        throw new CheckpointLineError(where, `${where} is a merge (parents ${parents.map((p) => p.slice(0, 12)).join(', ')}): the checkpoint history must be one line; a merge can hide checkpoints`);
      }
      const blob = await s.git.readBlob(`${id}:${NOTE_FILE}`);
      if (!blob) throw new CheckpointError(`${where}: has no ${NOTE_FILE} file${(await s.git.readBlob(`${id}:checkpoint.json`)) ? ' (it holds an older patchgate\'s checkpoint.json, no longer read; publish to a new ref: git:REPO#refs/patchgate/audit-v2)' : ''}`);
      out.push({ cp: parseCheckpoint(blob.toString('utf8'), where), where, commit: id });
    }
    // No merges: the reachable commits are one line, and topological order is its order.
    for (let i = 1; i < graph.length; i++) {
      if (graph[i]!.parents[0] !== graph[i - 1]!.id) throw new CheckpointLineError(out[i]!.where, `${out[i]!.where}: the checkpoint history is not one line (it has more than one root)`);
    }
    return out;
  } catch (err) {
    if (err instanceof CheckpointError) throw err;
    throw new CheckpointError(`cannot read checkpoints from ${describeTarget(target)}: ${redactUrl(errorMessage(err))}`, { cause: err });
  } finally {
    s.done();
  }
}

/** The data folder's own line (its checkpoints.jsonl), oldest first; [] when there is none yet. */
export function readLocalLine(file: string): Checkpoint[] {
  return existsSync(file) ? readFileLine(file).map((n) => n.cp) : [];
}

/** The last checkpoint of a JSONL file (its last 16 KiB are read), or null when there is none or it does not parse. */
export function lastCheckpointInFile(file: string): Checkpoint | null {
  if (!existsSync(file)) return null;
  let fd: number | null = null;
  try {
    fd = openSync(file, 'r');
    const size = fstatSync(fd).size;
    const len = Math.min(size, 16384);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    const line = buf.toString('utf8').trim().split('\n').pop() ?? '';
    if (!line) return null;
    const v = JSON.parse(line) as { checkpoint?: unknown };
    if (Object.keys(v).some((k) => k !== 'checkpoint')) return null; // refused by readFileLine too
    return typeof v.checkpoint === 'string' ? parseCheckpoint(v.checkpoint, file) : null;
  } catch {
    return null;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

export type PublishedRecord = Record<string, { commit: string; size: number; hash: string; time: string }>;

/** What this gate last published to each git target (keyed by describeTarget). */
export function readPublished(dataDir: string): PublishedRecord {
  try {
    return JSON.parse(readFileSync(join(dataDir, PUBLISHED_FILE), 'utf8')) as PublishedRecord;
  } catch {
    return {};
  }
}

export function recordPublished(dataDir: string, target: Target, commit: string, cp: Checkpoint): void {
  const all = readPublished(dataDir);
  all[describeTarget(target)] = { commit, size: cp.size, hash: cp.hash, time: cp.time };
  const file = join(dataDir, PUBLISHED_FILE);
  writeFileSync(`${file}.tmp`, JSON.stringify(all, null, 2) + '\n', { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}
