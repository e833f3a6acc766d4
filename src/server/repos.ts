// Repositories under `<data>/repos`: name checks (no `..`, no absolute paths, no symlink
// escapes), creation with our hooks and `receive.fsckObjects`, and the start-up check that
// every repository's hooks are byte-for-byte ours. A repo with a missing or foreign hook is
// never served.

import { existsSync, readFileSync, realpathSync, readdirSync, copyFileSync, chmodSync, statSync, mkdirSync } from 'node:fs';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Git } from '../git/git.js';
import { UsageError } from '../errors.js';

export const HOOK_NAMES = ['pre-receive', 'update', 'post-receive'] as const;
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

export async function createRepo(dataDir: string, rawName: string, trustedBranch = 'main'): Promise<string> {
  const name = normalizeRepoName(rawName);
  const dir = join(reposDir(dataDir), `${name}.git`);
  if (existsSync(dir)) throw new UsageError(`repository ${name} already exists at ${dir}`);
  mkdirSync(dir, { recursive: true });
  const git = new Git({ dir });
  try {
    await git.run(['init', '-q', '--bare', `--initial-branch=${trustedBranch}`, '.']);
    await git.run(['config', 'receive.fsckObjects', 'true']);
    await git.run(['config', 'receive.denyNonFastForwards', 'false']);
    await git.run(['config', 'http.receivepack', 'true']);
  } finally {
    git.close();
  }
  installHooks(dir);
  return dir;
}

export function installHooks(repoDir: string): void {
  for (const h of HOOK_NAMES) {
    const target = join(repoDir, 'hooks', h);
    copyFileSync(join(PACKAGE_HOOKS, h), target);
    chmodSync(target, 0o755);
  }
}

const packageHooks = new Map<string, Buffer>();
function packageHook(name: string): Buffer {
  let b = packageHooks.get(name);
  if (!b) packageHooks.set(name, (b = readFileSync(join(PACKAGE_HOOKS, name))));
  return b;
}

export type HookState = { ok: true } | { ok: false; reason: string };

/** Every hook present, executable and identical to the package's copy. */
export function checkHooks(repoDir: string): HookState {
  for (const h of HOOK_NAMES) {
    const p = join(repoDir, 'hooks', h);
    if (!existsSync(p)) return { ok: false, reason: `hook ${h} is missing` };
    if ((statSync(p).mode & 0o111) === 0) return { ok: false, reason: `hook ${h} is not executable` };
    if (!readFileSync(p).equals(packageHook(h))) return { ok: false, reason: `hook ${h} is not patchgate's` };
  }
  return { ok: true };
}

export function listRepos(dataDir: string): string[] {
  const root = reposDir(dataDir);
  if (!existsSync(root)) return [];
  return readdirSync(root).filter((n) => n.endsWith('.git')).map((n) => n.slice(0, -4)).sort();
}
