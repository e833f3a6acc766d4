// Where checkpoints live outside the database: a git ref (`refs/patchgate/audit`, one
// commit per checkpoint holding `checkpoint.json`, in a repository the operator names — a
// path or a URL, e.g. the upstream remote, so the head leaves the machine) and/or a JSONL
// file. Publishing appends (a fast-forward push, never forced); reading returns them in
// publishing order for verifyAgainst() in ./checkpoint.ts. All git I/O goes through src/git/git.ts.
//
// Targets are written `git:REPO` (path or URL) or `file:PATH`; a bare argument is a
// git repository when it is a directory or looks like a URL, else a file.

import { appendFileSync, closeSync, existsSync, fstatSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Git, redactUrl } from '../git/git.js';
import { CheckpointError, errorMessage } from '../errors.js';
import { canonicalJson } from './store.js';
import { parseCheckpoint, type Checkpoint, type NamedCheckpoint } from './checkpoint.js';

export const CHECKPOINT_REF = 'refs/patchgate/audit';
const FILE_NAME = 'checkpoint.json';
const COMMITTER = {
  GIT_AUTHOR_NAME: 'patchgate', GIT_AUTHOR_EMAIL: 'patchgate@localhost',
  GIT_COMMITTER_NAME: 'patchgate', GIT_COMMITTER_EMAIL: 'patchgate@localhost',
};

export type Target = { kind: 'git'; repo: string } | { kind: 'file'; path: string };

export function parseTarget(spec: string): Target {
  if (typeof spec !== 'string' || spec.trim() === '') throw new CheckpointError('a checkpoint target must be git:REPO or file:PATH');
  if (spec.startsWith('git:')) return { kind: 'git', repo: spec.slice(4) };
  if (spec.startsWith('file:')) return { kind: 'file', path: resolve(spec.slice(5)) };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec) || /^[^/]+@[^/:]+:/.test(spec)) return { kind: 'git', repo: spec };
  if (existsSync(spec) && statSync(spec).isDirectory()) return { kind: 'git', repo: resolve(spec) };
  return { kind: 'file', path: resolve(spec) };
}

export function describeTarget(t: Target): string {
  return t.kind === 'git' ? `${CHECKPOINT_REF} in ${redactUrl(t.repo)}` : t.path;
}

/** A scratch bare repository for one operation (removed by the returned cleanup). */
async function scratch(): Promise<{ git: Git; done: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'patchgate-cp-'));
  const git = await Git.initBare(dir);
  const withId = new Git({ dir, bare: true, env: COMMITTER });
  return { git: withId, done: () => { git.close(); withId.close(); rmSync(dir, { recursive: true, force: true }); } };
}

/** Appends one checkpoint to a target. Throws CheckpointError (credentials redacted) on any failure. */
export async function publish(cp: Checkpoint, target: Target): Promise<void> {
  const line = canonicalJson(cp);
  if (target.kind === 'file') {
    try {
      appendFileSync(target.path, line + '\n', { mode: 0o644 });
    } catch (err) {
      throw new CheckpointError(`cannot append the checkpoint to ${target.path}: ${errorMessage(err)}`, { cause: err });
    }
    return;
  }
  const s = await scratch();
  try {
    // Two tries: another gate node may have appended between our fetch and our push.
    for (let attempt = 0; ; attempt++) {
      const have = await s.git.fetchRef(target.repo, CHECKPOINT_REF, 'refs/remote-audit');
      const parent = have ? await s.git.refTip('refs/remote-audit') : null;
      const tree = await s.git.writeFileTree({ [FILE_NAME]: await s.git.writeBlob(line + '\n') });
      const msg = `patchgate audit checkpoint: ${cp.rows} row(s), head ${cp.head}\n\n${line}\n`;
      const commit = await s.git.writeCommit(tree, parent ? [parent] : [], msg);
      try {
        await s.git.pushRef(target.repo, commit, CHECKPOINT_REF);
        return;
      } catch (err) {
        if (attempt >= 1) throw err;
      }
    }
  } catch (err) {
    throw new CheckpointError(`cannot publish the checkpoint to ${describeTarget(target)}: ${redactUrl(errorMessage(err))}`, { cause: err });
  } finally {
    s.done();
  }
}

/** Every checkpoint of a source, oldest first. An unreadable entry is a CheckpointError naming it. */
export async function readCheckpoints(target: Target): Promise<NamedCheckpoint[]> {
  if (target.kind === 'file') {
    let text: string;
    try {
      text = readFileSync(target.path, 'utf8');
    } catch (err) {
      throw new CheckpointError(`cannot read checkpoints from ${target.path}: ${errorMessage(err)}`, { cause: err });
    }
    const out: NamedCheckpoint[] = [];
    text.split('\n').forEach((l, i) => {
      if (l.trim() === '') return;
      const where = `${target.path} line ${i + 1}`;
      out.push({ cp: parseCheckpoint(l, where), where });
    });
    return out;
  }
  const s = await scratch();
  try {
    if (!(await s.git.fetchRef(target.repo, CHECKPOINT_REF, 'refs/remote-audit'))) return [];
    const out: NamedCheckpoint[] = [];
    for (const id of await s.git.firstParentLine('refs/remote-audit')) {
      const where = `${CHECKPOINT_REF} commit ${id.slice(0, 12)}`;
      const blob = await s.git.readBlob(`${id}:${FILE_NAME}`);
      if (!blob) throw new CheckpointError(`${where}: has no ${FILE_NAME}`);
      out.push({ cp: parseCheckpoint(blob.toString('utf8'), where), where });
    }
    return out;
  } catch (err) {
    if (err instanceof CheckpointError) throw err;
    throw new CheckpointError(`cannot read checkpoints from ${describeTarget(target)}: ${redactUrl(errorMessage(err))}`, { cause: err });
  } finally {
    s.done();
  }
}

/** The last checkpoint of a JSONL file (its last 4 KiB are read), or null when there is none or it does not parse. */
export function lastCheckpointInFile(file: string): Checkpoint | null {
  if (!existsSync(file)) return null;
  let fd: number | null = null;
  try {
    fd = openSync(file, 'r');
    const size = fstatSync(fd).size;
    const len = Math.min(size, 4096);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    const line = buf.toString('utf8').trim().split('\n').pop() ?? '';
    return line ? parseCheckpoint(line, file) : null;
  } catch {
    return null;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
