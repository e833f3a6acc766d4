// Repositories under `<data>/repos`: name checks (no `..`, no absolute paths, no symlink
// escapes), creation with our hook and `receive.fsckObjects`, and the start-up check that
// every repository's hooks are byte-for-byte ours. A repo with a missing or foreign hook is
// never served. A served repository has hooks/pre-receive; hooks/update is there only while a
// push of several refs is in flight (src/server/hook/update-hook.ts), and there is no
// post-receive (what moved is read from git's report to the client: ./report-status.ts).
// Each repository also gets git's own push limits and `receive.autogc=false`
// (REPO_GIT_CONFIG), at creation, on `repo hooks NAME` and at server start.

import { existsSync, readFileSync, realpathSync, readdirSync, copyFileSync, chmodSync, statSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { privateDir } from '../private-files.js';
import { fileURLToPath } from 'node:url';
import { Git } from '../git/git.js';
import { UsageError } from '../errors.js';

/** The hooks a served repository always has. */
export const HOOK_NAMES = ['pre-receive'] as const;
/** Ours, present only while a push needs it (src/server/hook/update-hook.ts). */
const HOOKS_AT_TIMES = ['update'] as const;
/** Hooks of earlier versions that a served repository must not have any more. */
const HOOKS_RETIRED = ['post-receive'] as const;
export const REPO_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** The package's own hooks/ folder (dist/server/repos.js -> ../../hooks). */
export const PACKAGE_HOOKS = fileURLToPath(new URL('../../hooks/', import.meta.url));

export function reposDir(dataDir: string): string {
  return join(dataDir, 'repos');
}

/** "app" or "app.git" -> "app"; throws UsageError for anything that is not a plain name. */
export function normalizeRepoName(raw: string): string {
  const name = raw.endsWith('.git') ? raw.slice(0, -4) : raw;
  if (!REPO_NAME_RE.test(name) || name.includes('..') || name.endsWith('.lock')) {
    throw new UsageError(`repository name ${JSON.stringify(raw)} is not allowed: use letters, digits, '.', '_' and '-' (no slashes, no '..')`);
  }
  return name;
}

/** The repo's directory if it exists inside <data>/repos after resolving symlinks, else null. */
export function resolveRepo(dataDir: string, name: string): string | null {
  const dir = join(reposDir(dataDir), `${name}.git`);
  if (!existsSync(dir)) return null;
  const real = realpathSync(dir);
  const root = realpathSync(reposDir(dataDir));
  if (!real.startsWith(root + sep)) return null;
  return real;
}

/**
 * git settings every served repository carries. `receive.maxInputSize` makes index-pack
 * refuse a pack past 1 GiB as it arrives (git's hard cap, above the policy's
 * limits.maxPushBytes, which refuses with a clearer message); `core.bigFileThreshold` makes
 * index-pack and unpack-objects stream any blob over 32 MiB instead of inflating it in
 * memory, so a 1 GB blob of zeros packed into 1 MB costs the server a few MB of memory.
 * `enforced` keys are reset to our value at every check; the others are set only when unset,
 * so an operator may change them with `git config` in the repository. `receive.advertisePushOptions`
 * lets an agent escalate (`git push -o patchgate.escalate=…`).
 */
export const REPO_GIT_CONFIG: ReadonlyArray<{ key: string; value: string; enforced: boolean }> = [
  { key: 'receive.fsckobjects', value: 'true', enforced: true },
  { key: 'receive.denynonfastforwards', value: 'false', enforced: false },
  { key: 'http.receivepack', value: 'true', enforced: false },
  { key: 'receive.maxinputsize', value: String(1024 * 1024 * 1024), enforced: false },
  { key: 'core.bigfilethreshold', value: String(32 * 1024 * 1024), enforced: false },
  // `git push -o patchgate.escalate="…"` (issue 21): git refuses push options a server does not advertise.
  { key: 'receive.advertisepushoptions', value: 'true', enforced: true },
  // No `git gc --auto` inside every receive-pack: the daemon runs it once the repository is
  // quiet (src/server/idle-gc.ts). An operator who sets it back to true gets git's own.
  { key: 'receive.autogc', value: 'false', enforced: false },
  // Partial clones (`git clone --filter=blob:none`), which agents in large monorepos use: without
  // it git serves a full clone with a warning. Pushes from them are judged as any other. A
  // partial clone fetches a missing blob later by its id, which git serves only for an object
  // some ref reaches (not any object the repository holds).
  { key: 'uploadpack.allowfilter', value: 'true', enforced: false },
  { key: 'uploadpack.allowreachablesha1inwant', value: 'true', enforced: false },
  // An escalated push's commits, kept for a person's review (src/server/escalation-ref.ts):
  // advertised to nobody, and pushed to by nobody; a person's fetch un-hides them (src/git/reader-env.ts).
  { key: 'uploadpack.hiderefs', value: 'refs/patchgate/escalations', enforced: false },
  { key: 'receive.hiderefs', value: 'refs/patchgate/escalations', enforced: false },
];

/** Bring a repository's config up to REPO_GIT_CONFIG; returns the keys it set. */
export async function ensureRepoConfig(repoDir: string): Promise<string[]> {
  const git = new Git({ dir: repoDir });
  try {
    const { stdout } = await git.run(['config', '--local', '--list', '-z']);
    const have = new Map<string, string>();
    for (const rec of stdout.toString('utf8').split('\0')) {
      const nl = rec.indexOf('\n');
      if (rec) have.set((nl < 0 ? rec : rec.slice(0, nl)).toLowerCase(), nl < 0 ? '' : rec.slice(nl + 1));
    }
    const set: string[] = [];
    for (const c of REPO_GIT_CONFIG) {
      const cur = have.get(c.key);
      if (cur === undefined || (c.enforced && cur !== c.value)) {
        await git.run(['config', '--local', c.key, c.value]);
        set.push(c.key);
      }
    }
    return set;
  } finally {
    git.close();
  }
}

export async function createRepo(dataDir: string, rawName: string, trustedBranch = 'main'): Promise<string> {
  const name = normalizeRepoName(rawName);
  const dir = join(reposDir(dataDir), `${name}.git`);
  if (existsSync(dir)) throw new UsageError(`repository ${name} already exists at ${dir}`);
  privateDir(reposDir(dataDir)); // a new data folder is 0700
  mkdirSync(dir, { recursive: true });
  const git = new Git({ dir });
  try {
    await git.run(['init', '-q', '--bare', `--initial-branch=${trustedBranch}`, '.']);
  } finally {
    git.close();
  }
  await ensureRepoConfig(dir);
  installHooks(dir);
  return dir;
}

/** The marker of a held-out repository (issue 11): agent tokens can neither read nor list it. */
export const HOLDOUT_MARKER = 'patchgate-holdout-of';

/** The repository whose held-out tests `repoDir` keeps, or null when it is an ordinary one. */
export function holdoutOf(repoDir: string): string | null {
  try {
    return readFileSync(join(repoDir, HOLDOUT_MARKER), 'utf8').trim() || null;
  } catch {
    return null;
  }
}

export function markHoldout(repoDir: string, of: string): void {
  writeFileSync(join(repoDir, HOLDOUT_MARKER), `${of}\n`);
}

/**
 * Our hooks in place: pre-receive written, a retired hook (post-receive) removed, and an update
 * hook that is there (a push of several refs may be in flight) replaced by ours, not removed.
 */
export function installHooks(repoDir: string): void {
  const write = (h: string): void => {
    const target = join(repoDir, 'hooks', h);
    copyFileSync(join(PACKAGE_HOOKS, h), target);
    chmodSync(target, 0o755);
  };
  for (const h of HOOK_NAMES) write(h);
  for (const h of HOOKS_AT_TIMES) if (existsSync(join(repoDir, 'hooks', h))) write(h);
  for (const h of HOOKS_RETIRED) rmSync(join(repoDir, 'hooks', h), { force: true });
}

const packageHooks = new Map<string, Buffer>();
function packageHook(name: string): Buffer {
  let b = packageHooks.get(name);
  if (!b) packageHooks.set(name, (b = readFileSync(join(PACKAGE_HOOKS, name))));
  return b;
}

export type HookState = { ok: true } | { ok: false; reason: string };

/**
 * Every hook a served repository has is present, executable and identical to the package's
 * copy; hooks/update may also be absent; a retired hook (post-receive) must be gone.
 */
export function checkHooks(repoDir: string): HookState {
  const check = (h: string, optional: boolean): HookState | null => {
    const p = join(repoDir, 'hooks', h);
    if (!existsSync(p)) return optional ? null : { ok: false, reason: `hook ${h} is missing` };
    if ((statSync(p).mode & 0o111) === 0) return { ok: false, reason: `hook ${h} is not executable` };
    if (!readFileSync(p).equals(packageHook(h))) return { ok: false, reason: `hook ${h} is not patchgate's` };
    return null;
  };
  for (const h of HOOK_NAMES) {
    const bad = check(h, false);
    if (bad) return bad;
  }
  for (const h of HOOKS_AT_TIMES) {
    const bad = check(h, true);
    if (bad) return bad;
  }
  for (const h of HOOKS_RETIRED) {
    if (existsSync(join(repoDir, 'hooks', h))) return { ok: false, reason: `hook ${h} is from an earlier patchgate (it is no longer used)` };
  }
  return { ok: true };
}

export function listRepos(dataDir: string): string[] {
  const root = reposDir(dataDir);
  if (!existsSync(root)) return [];
  return readdirSync(root).filter((n) => n.endsWith('.git')).map((n) => n.slice(0, -4)).sort();
}
