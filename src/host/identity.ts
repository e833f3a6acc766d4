// Who is pushing, inside a git host: the host's own variables (read by the shim, sent as
// `id` lines) mapped to a role by the daemon's config. Unknown pusher = agent (the strict
// path); no pusher at all, an unknown host, or a repository outside the configured roots
// refuses. One place for the per-host variable names, used by the shims and the docs.

import { hostRepoPath } from '../policy/push-target.js';
import { realpathSync } from 'node:fs';
import { basename, sep } from 'node:path';
import picomatch from 'picomatch';
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

function inside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * The one-push session of a host hook request, or a line saying the repository is not gated.
 * Throws HostIdentityError (the push is refused with its message) when it cannot say who pushes.
 */
export function hostSession(hr: HookRequest, cfg: DaemonConfig): PushSession | string {
  const host = hr.id.host ?? '';
  if (!isHost(host)) throw new HostIdentityError(`the hook did not name a known git host (${JSON.stringify(host.slice(0, 40))}); reinstall it with: patchgate hook install --host gitlab|gitea|ghes|gitolite|generic --config FILE REPO_DIR`);
  const vars = HOST_VARS[host];
  const user = (hr.id.user ?? '').trim();
  if (!user) throw new HostIdentityError(`no pusher identity: ${vars.user.join('/')} is not set, so ${vars.label} did not say who pushes; nothing was accepted`);
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
  if (roots && !roots.some((r) => inside(r, repoDir))) throw new HostIdentityError(`repository ${repoDir} is outside the daemon's repoRoots; nothing was accepted`);
  const repo = (hr.id.repo ?? '').trim() || basename(repoDir).replace(/\.git$/, '');
  if (!picomatch(cfg.repos, { dot: true })(repo)) return `patchgate: ${repo} is not gated by this daemon's config (repos): accepted without judgement`;
  const role = roleOf(user, cfg);
  const budget = Number(hr.id['budget-ms']);
  const limited = host === 'ghes' && Number.isFinite(budget) && budget > 0;
  const timeoutMs = limited ? Math.max(100, Math.min(cfg.hookTimeout * 1000, budget - cfg.ghesReserveMs)) : undefined;
  const via = (hr.id.via ?? '').trim();
  const path = hostRepoPath(repo);
  return {
    pid: hr.ppid, pushId: newPushId(), repo, repoDir, actor: user, role,
    remoteAddr: null, userAgent: `${host}${via ? ` via ${via}` : ''}${hr.id.userid ? ` (${host} user id ${hr.id.userid})` : ''}`.slice(0, 300),
    decisions: new Map(), confirmed: new Set(), auditAtJudge: true,
    ...(path ? { pushTarget: { path } } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs, timeoutMessage: 'gate did not finish in time: ' } : {}),
  };
}
