// Where `patchgate ci --holdout SOURCE` gets its held-out tests (issue 11). SOURCE is one of:
// - a git URL (e.g. the gate's NAME-holdout repository, http://ci:TOKEN@host/NAME-holdout.git):
//   its default branch is fetched with the real git client into a fresh bare repository in the
//   job's temp folder; the credential goes to git through a helper, never in an argument;
// - a local bare repository (e.g. data/repos/NAME-holdout.git), read in place;
// - a plain folder, copied as it is (without a .git folder).
// Git sources are written out from git objects (Git.exportTree) into the temp folder, never into
// the agent's checkout. Anything that cannot give a non-empty set of files is a HoldoutError
// with a one-line reason from which every credential is removed: the run is red, never green.

import { cp, mkdir, readdir, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { HoldoutError } from '../errors.js';
import { Git, redactUrl } from '../git/git.js';
import { redactor } from '../upstream/settings.js';

/** Longest a fetch of the held-out repository may take. */
export const HOLDOUT_FETCH_TIMEOUT_MS = 60_000;

export type HoldoutSource =
  | { kind: 'url'; url: string; user: string; secret: string; shown: string }
  | { kind: 'bare'; dir: string; shown: string }
  | { kind: 'folder'; dir: string; shown: string };

export interface Holdout {
  /** A folder in the job's temp folder holding the held-out files. */
  dir: string;
  source: HoldoutSource['kind'];
  /** What to print: the URL without its credential, or the path. */
  shown: string;
  /** The commit the files came from (git sources). */
  commit: string | null;
  files: number;
}

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
/** A token for an http(s) URL that carries none: kept off the command line, where `ps` shows it. */
export const HOLDOUT_TOKEN_ENV = 'PATCHGATE_HOLDOUT_TOKEN';
const envToken = (): string => process.env[HOLDOUT_TOKEN_ENV] ?? '';
/** scp-like `user@host:path` (git's own short form for ssh). */
const SCP = /^[^/\s@]+@[^/\s:]+:/;

/** A redactor for everything said about `spec`: its password, user name and URL credential forms. */
export function holdoutRedactor(spec: string): (text: string) => string {
  let user = '';
  let secret = '';
  if (SCHEME.test(spec)) {
    try {
      const u = new URL(spec);
      user = decodeURIComponent(u.username);
      secret = decodeURIComponent(u.password);
    } catch { /* not a WHATWG URL: the URL pattern below still strips user:password@ */ }
  }
  if (!secret && /^https?:\/\//i.test(spec)) secret = envToken();
  const base = redactor({ url: '', user: user || null, secret: secret || null });
  const userOnly = !secret && user ? [user, encodeURIComponent(user)] : [];
  return (text: string) => {
    let out = redactUrl(base(text));
    for (const f of userOnly) if (f.length >= 4) out = out.split(f).join('***');
    return out;
  };
}

/** Tell a URL, a bare repository and a plain folder apart. Throws HoldoutError for a path that is neither. */
export async function classifyHoldout(spec: string): Promise<HoldoutSource> {
  if (!spec.trim()) throw new HoldoutError('--holdout is empty: give a git URL, a bare repository or a folder');
  if (SCHEME.test(spec)) {
    let u: URL;
    try {
      u = new URL(spec);
    } catch {
      throw new HoldoutError(`--holdout ${redactUrl(spec)} is not a valid URL`);
    }
    let user = decodeURIComponent(u.username);
    let secret = decodeURIComponent(u.password);
    if (!secret && /^https?:$/.test(u.protocol) && envToken()) {
      secret = envToken();
      user ||= 'ci';
    }
    // http(s): the credential leaves the URL and reaches git through a helper. Other schemes
    // (ssh://, file://) keep their form; a user name there is not a secret.
    if (secret && /^https?:$/.test(u.protocol)) {
      u.username = '';
      u.password = '';
    }
    return { kind: 'url', url: u.toString(), user, secret: /^https?:$/.test(u.protocol) ? secret : '', shown: redactUrl(spec) };
  }
  if (SCP.test(spec)) return { kind: 'url', url: spec, user: '', secret: '', shown: spec };
  const dir = resolve(spec);
  const st = await stat(dir).catch(() => null);
  if (!st) throw new HoldoutError(`--holdout ${spec}: no such folder or repository (give a git URL, a bare repository such as data/repos/NAME-holdout.git, or a folder of tests)`);
  if (!st.isDirectory()) throw new HoldoutError(`--holdout ${spec}: not a folder or a bare repository`);
  if (await Git.isBareRepository(dir)) return { kind: 'bare', dir, shown: dir };
  return { kind: 'folder', dir, shown: dir };
}

async function countFiles(dir: string): Promise<number> {
  const all = await readdir(dir, { recursive: true, withFileTypes: true });
  return all.filter((e) => e.isFile()).length;
}

/** Write the tip of `git`'s `rev` into `out` from git objects. */
async function exportCommit(git: Git, rev: string, out: string, what: string): Promise<string> {
  let commit: string;
  try {
    commit = await git.resolveCommit(rev);
  } catch (e) {
    throw new HoldoutError(`${what} has no commit on its default branch (HEAD): it is empty, so no held-out test can vouch for the patch; push the held-out tests to it first`, { cause: e });
  }
  await git.exportTree(commit, out);
  return commit;
}

/**
 * Bring the held-out files of `spec` into `<tmp>/holdout-src`. Throws HoldoutError (one line,
 * credential-free) when the source is unreachable, refuses the credential, is empty or holds no files.
 */
export async function materialiseHoldout(spec: string, tmp: string, opts: { timeoutMs?: number } = {}): Promise<Holdout> {
  const redact = holdoutRedactor(spec);
  const src = await classifyHoldout(spec).catch((e: unknown) => {
    throw e instanceof HoldoutError ? new HoldoutError(redact(e.message), { cause: e }) : e;
  });
  const out = join(tmp, 'holdout-src');
  await mkdir(out, { recursive: true });
  let commit: string | null = null;
  if (src.kind === 'url') {
    const bare = join(tmp, 'holdout.git');
    const git = await Git.initBare(bare);
    try {
      const timeoutMs = opts.timeoutMs ?? HOLDOUT_FETCH_TIMEOUT_MS;
      const r = await git.fetchDefaultBranch(src.url, 'refs/patchgate/holdout', { user: src.user, secret: src.secret, timeoutMs });
      if (r.timedOut) throw new HoldoutError(`the held-out repository ${src.shown} did not answer within ${Math.round(timeoutMs / 1000)} s`);
      if (r.code !== 0) {
        const lines = redact(r.stderr).split('\n').map((l) => l.trim()).filter(Boolean);
        const why = (lines.find((l) => /^fatal:/i.test(l)) ?? lines[0] ?? `git exit ${r.code}`).replace(/^fatal:\s*/i, '');
        if (/couldn't find remote ref HEAD/i.test(why)) throw new HoldoutError(`the held-out repository ${src.shown} is empty (no default branch): push the held-out tests to it first`);
        const hint = /authentication|\b40[134]\b|not found/i.test(why) ? ' (is the token a person\'s or CI\'s with access to it? agent tokens cannot read held-out repositories)' : '';
        throw new HoldoutError(`the held-out repository ${src.shown} could not be fetched: ${why}${hint}`);
      }
      commit = await exportCommit(git, 'refs/patchgate/holdout', out, `the held-out repository ${src.shown}`);
    } finally {
      git.close();
    }
  } else if (src.kind === 'bare') {
    // GIT_DIR pins the repository: git never falls back to a repository above the folder.
    const git = new Git({ dir: src.dir, bare: true, env: { GIT_DIR: src.dir } });
    try {
      commit = await exportCommit(git, 'HEAD', out, `the held-out repository ${src.shown}`);
    } finally {
      git.close();
    }
  } else {
    await cp(src.dir, out, { recursive: true, filter: (p) => basename(p) !== '.git' });
  }
  const files = await countFiles(out);
  if (!files) throw new HoldoutError(`the held-out source ${src.shown}${commit ? ` (commit ${commit.slice(0, 12)})` : ''} holds no files: no held-out test can vouch for the patch`);
  return { dir: out, source: src.kind, shown: src.shown, commit, files };
}
