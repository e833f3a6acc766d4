// Who is pushing, inside a git host: the host's own variables (read by the shim, sent as
// `id` lines) mapped to a role by the daemon's config. Unknown pusher = agent (the strict
// path); no pusher at all, an unknown host, or a repository outside the configured roots
// refuses. The repository is the folder git runs in (the real path of GIT_DIR): whether it is
// gated is decided from that path, never from a host variable, which only names it. One place for the per-host variable names, used by the shims and the docs.

import { hostRepoPath } from '../policy/push-target.js';
import { realpathSync } from 'node:fs';
import { basename, isAbsolute, sep } from 'node:path';
import picomatch from 'picomatch';
import { foldName, protectedMatcher } from '../policy/match.js';
import { HostIdentityError } from '../errors.js';
import { newPushId } from '../audit/store.js';
import type { HookRequest, PushSession } from '../server/hook-service.js';
import type { Role } from '../policy/types.js';
import type { DaemonConfig } from './config.js';

export const HOSTS = ['gitlab', 'gitea', 'ghes', 'gitolite', 'generic'] as const;
export type HostKind = (typeof HOSTS)[number];

/**
 * The host's variables, in the order tried: the pusher's name, the repository's name, how it
 * came (protocol), and the host's own user id. The shim takes the first that is set.
 */
export interface HostVars {
  user: readonly string[];
  repo: readonly string[];
  via: readonly string[];
  userId: readonly string[];
  /** A repository name made of two variables (Gitea: owner/name). */
  repoPair?: readonly [string, string];
  label: string;
}

export const HOST_VARS: Readonly<Record<HostKind, HostVars>> = {
  // https://docs.gitlab.com/administration/server_hooks (GL_ID, GL_PROTOCOL, GL_REPOSITORY, GL_USERNAME;
  // GL_PROJECT_PATH is the group/project path on current Gitaly)
  gitlab: { label: 'GitLab', user: ['GL_USERNAME'], repo: ['GL_PROJECT_PATH', 'GL_REPOSITORY'], via: ['GL_PROTOCOL'], userId: ['GL_ID'] },
  // Gitea/Forgejo modules/repository/env.go: GITEA_PUSHER_NAME, GITEA_REPO_USER_NAME, GITEA_REPO_NAME
  gitea: { label: 'Gitea/Forgejo', user: ['GITEA_PUSHER_NAME'], repo: [], repoPair: ['GITEA_REPO_USER_NAME', 'GITEA_REPO_NAME'], via: [], userId: ['GITEA_PUSHER_ID'] },
  // GHES "Creating a pre-receive hook script": GITHUB_USER_LOGIN, GITHUB_REPO_NAME, GITHUB_VIA, GITHUB_USER_ID
  ghes: { label: 'GitHub Enterprise Server', user: ['GITHUB_USER_LOGIN'], repo: ['GITHUB_REPO_NAME'], via: ['GITHUB_VIA'], userId: ['GITHUB_USER_ID'] },
  // gitolite: GL_USER, GL_REPO (set by gitolite-shell for every hook and VREF)
  gitolite: { label: 'gitolite', user: ['GL_USER'], repo: ['GL_REPO'], via: [], userId: [] },
  // Any host: PATCHGATE_USER and PATCHGATE_REPO, set by whatever runs receive-pack.
  generic: { label: 'generic host', user: ['PATCHGATE_USER'], repo: ['PATCHGATE_REPO'], via: ['PATCHGATE_VIA'], userId: [] },
};

export function isHost(h: string): h is HostKind {
  return (HOSTS as readonly string[]).includes(h);
}

/** humans, then admins, then agents; a name matching none is an agent. */
export function roleOf(name: string, cfg: Pick<DaemonConfig, 'humans' | 'agents' | 'admins'>): Role {
  if (cfg.humans.length && picomatch(cfg.humans, { dot: true })(name)) return 'human';
  if (cfg.admins.length && picomatch(cfg.admins, { dot: true })(name)) return 'admin';
  return 'agent';
}

/** An agent's class by the config's `classes` (globs over the host's user name, the first that matches); undefined: the default class. */
export function classOf(name: string, cfg: Pick<DaemonConfig, 'classes'>): string | undefined {
  return Object.entries(cfg.classes ?? {}).find(([glob]) => picomatch(glob, { dot: true })(name))?.[1];
}

/** Folded as policy paths are (src/policy/match.ts): NFC, then lower case. */
const fold = (p: string) => foldName(p);

function inside(root: string, p: string): boolean {
  const r = fold(root);
  const q = fold(p);
  return q === r || q.startsWith(r.endsWith(sep) ? r : r + sep);
}

/** A repository name as compared: folded, without leading or trailing slashes or `.git`. */
const sameRepo = (a: string, b: string) => fold(a).replace(/^\/+|\/+$/g, '').replace(/\.git$/, '') === fold(b).replace(/^\/+|\/+$/g, '').replace(/\.git$/, '');

/** C0 and C1 controls, DEL, and the Unicode line and paragraph separators. */
const CONTROL = /[\x00-\x1f\x7f-\x9f\u2028\u2029]/;

/**
 * Where the repository is, from the real path of GIT_DIR: its path below the repoRoot it
 * sits in (`team/app` for ROOT/team/app.git), or with no roots its whole real path.
 */
export interface RepoPlace {
  dir: string;
  /** Below its root, without `.git`; null when no repoRoots are configured. */
  name: string | null;
}

/** Whether a repository at `place` matches one of the globs (as `repos` and `trusted` keys are matched). */
export function placeMatches(globs: readonly string[], place: RepoPlace): boolean {
  if (globs.includes('**')) return true;
  const abs = globs.filter((g) => isAbsolute(g));
  const rel = globs.filter((g) => !isAbsolute(g));
  const whole = place.dir.replace(/\.git$/, '');
  if (abs.length && (protectedMatcher(abs)(whole) || protectedMatcher(abs)(place.dir))) return true;
  return place.name !== null && rel.length > 0 && protectedMatcher(rel)(place.name);
}

/** The trusted branch the config names for this repository, if any. */
export function trustedFor(cfg: Pick<DaemonConfig, 'trusted'>, place: RepoPlace): string | undefined {
  const t = cfg.trusted;
  if (t === undefined || typeof t === 'string') return t;
  return Object.entries(t).find(([glob]) => placeMatches([glob], place))?.[1];
}

/**
 * The one-push session of a host hook request, or a line saying the repository is not gated.
 * Throws HostIdentityError (the push is refused with its message) when it cannot say who pushes.
 */
export function hostSession(hr: HookRequest, cfg: DaemonConfig): PushSession | string {
  const host = hr.id.host ?? '';
  if (!isHost(host)) throw new HostIdentityError(`the hook did not name a known git host (${JSON.stringify(host.slice(0, 40))}); reinstall it with: patchgate hook install --host gitlab|gitea|ghes|gitolite|generic --config FILE REPO_DIR`);
  const vars = HOST_VARS[host];
  // Taken as the host set them: " alice" is not alice (it is an unknown name, so an agent).
  for (const [k, v] of Object.entries(hr.id)) {
    if (CONTROL.test(v)) throw new HostIdentityError(`the host's identity variable for ${k.slice(0, 20)} holds a control character, so ${vars.label} did not say plainly who pushes where; nothing was accepted; ask the host's admin to check the account and repository names`);
  }
  const user = hr.id.user ?? '';
  // Spaces only name nobody: refused as missing, never judged as an agent called "   ".
  if (/^\s*$/.test(user)) throw new HostIdentityError(`no pusher identity: ${vars.user.join('/')} is not set (or holds only spaces), so ${vars.label} did not say who pushes; nothing was accepted`);
  if (hr.hook !== 'pre-receive') throw new HostIdentityError(`only the pre-receive hook talks to the daemon inside ${vars.label} (got ${hr.hook.slice(0, 40)})`);
  let repoDir: string;
  try {
    repoDir = realpathSync(hr.dir);
  } catch (err) {
    throw new HostIdentityError(`the hook's repository ${hr.dir.slice(0, 300)} cannot be read`, { cause: err });
  }
  const roots = cfg.repoRoots?.map((r) => {
    try {
      return realpathSync(r);
    } catch {
      return r;
    }
  });
  const root = roots?.find((r) => inside(r, repoDir));
  if (roots && root === undefined) throw new HostIdentityError(`repository ${repoDir} is outside the daemon's repoRoots; nothing was accepted`);
  const place: RepoPlace = { dir: repoDir, name: root === undefined ? null : repoDir.slice(root.length).replace(/^\/+/, '').replace(/\.git$/, '') || basename(repoDir) };
  // The folder decides whether the push is gated. The host's variable only names it, and a
  // push passes unjudged only when the variable is there and names the same repository.
  const named = hr.id.repo;
  const pathName = place.name ?? repoDir.replace(/\.git$/, '');
  if (!placeMatches(cfg.repos, place) && named !== undefined && named !== '' && sameRepo(named, pathName)) {
    return `patchgate: ${pathName} is not gated by this daemon's config (repos): accepted without judgement`;
  }
  const repo = named || place.name || basename(repoDir).replace(/\.git$/, '');
  const role = roleOf(user, cfg);
  const agentClass = role === 'agent' ? classOf(user, cfg) : undefined;
  const budget = Number(hr.id['budget-ms']);
  const limited = host === 'ghes' && Number.isFinite(budget) && budget > 0;
  const timeoutMs = limited ? Math.max(100, Math.min(cfg.hookTimeout * 1000, budget - cfg.ghesReserveMs)) : undefined;
  const via = hr.id.via ?? '';
  const path = hostRepoPath(repo);
  const trustedBranch = trustedFor(cfg, place);
  return {
    pid: hr.ppid, pushId: newPushId(), repo, repoDir, actor: user, role, ...(agentClass ? { agentClass } : {}),
    remoteAddr: null, userAgent: `${host}${via ? ` via ${via}` : ''}${hr.id.userid ? ` (${host} user id ${hr.id.userid})` : ''}`.slice(0, 300),
    decisions: new Map(), confirmed: new Set(), auditAtJudge: true,
    ...(trustedBranch ? { trustedBranch } : {}),
    pushTarget: { host: vars.label, ...(path ? { path } : {}) },
    ...(timeoutMs !== undefined ? { timeoutMs, timeoutMessage: 'gate did not finish in time: ' } : {}),
  };
}
