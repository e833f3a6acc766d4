// `patchgate hook install --host H --config FILE REPO_DIR...`: writes the shim where each host
// looks for a pre-receive hook, and says what the operator still has to do on that host.
//   gitlab   REPO_DIR/custom_hooks/pre-receive (pack it for `gitaly hooks set`, or copy it
//            into the server-hooks directory of every Gitaly node as pre-receive.d/patchgate)
//   gitea    REPO_DIR/hooks/pre-receive.d/patchgate (Gitea's own pre-receive runs every file there)
//   ghes     REPO_DIR/patchgate-pre-receive.sh + PATCHGATE-GHES.md (REPO_DIR = the hook repository)
//   gitolite REPO_DIR/hooks/repo-specific/patchgate (REPO_DIR = gitolite's LOCAL_CODE), enabled
//            with `option hook.pre-receive = patchgate`; or a bare repo's hooks/pre-receive
//   generic  REPO_DIR/hooks/pre-receive

import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { setConfigSync } from '../git/git.js';
import type { DaemonConfig } from './config.js';
import { HOST_VARS, type HostKind } from './identity.js';
import { shimText } from './shim.js';

function writeExec(path: string, text: string): void {
  mkdirSync(resolve(path, '..'), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o755 });
  chmodSync(tmp, 0o755);
  renameSync(tmp, path);
}

const isBare = (dir: string) => existsSync(join(dir, 'objects')) && existsSync(join(dir, 'HEAD'));

/** Where the shim goes for one REPO_DIR of this host. */
export function shimPath(host: HostKind, dir: string): string {
  switch (host) {
    case 'gitlab': return join(dir, 'custom_hooks', 'pre-receive');
    case 'gitea': return join(dir, 'hooks', 'pre-receive.d', 'patchgate');
    case 'ghes': return join(dir, 'patchgate-pre-receive.sh');
    case 'gitolite': return isBare(dir) ? join(dir, 'hooks', 'pre-receive') : join(dir, 'hooks', 'repo-specific', 'patchgate');
    case 'generic': return join(dir, 'hooks', 'pre-receive');
  }
}

export async function installHostHooks(host: HostKind, cfg: DaemonConfig, dirs: readonly string[]): Promise<string[]> {
  if (!dirs.length) throw new UsageError('name at least one REPO_DIR');
  const endpoint = join(cfg.data, 'hook.endpoint');
  const text = shimText(host, endpoint, cfg.ghesBudgetMs);
  const out: string[] = [];
  for (const d of dirs) {
    const dir = resolve(d);
    // gitolite's LOCAL_CODE and a GHES hook repository are folders of ours: made when missing.
    // For the other hosts REPO_DIR is an existing repository (a missing one is a typo).
    if (host === 'gitolite' || host === 'ghes') {
      try {
        mkdirSync(dir, { recursive: true });
      } catch (err) {
        throw new UsageError(`cannot create ${dir}: ${(err as { code?: string }).code ?? String(err)}`, { cause: err });
      }
    }
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`${dir} is not a directory${host === 'gitolite' || host === 'ghes' ? '' : ' (give the repository folder the host keeps)'}`);
    const path = shimPath(host, dir);
    writeExec(path, text);
    out.push(`wrote ${path} (${HOST_VARS[host].label} pre-receive shim; daemon endpoint ${endpoint})`);
    const opts = advertisePushOptions(host, dir);
    if (opts) out.push(opts);
    // gitolite's LOCAL_CODE is not a repository: the repositories agents push to are the
    // host user's (repoRoots, else gitolite's default ~/repositories beside LOCAL_CODE).
    if (host === 'gitolite' && !isBare(dir)) out.push(...advertiseInGitolite(cfg, dir));
    // A bare repository whose receive-pack runs the shim directly (generic, gitolite's
    // per-repo hook): no `git gc --auto` in every push, the daemon runs it when the repository
    // is quiet (src/server/idle-gc.ts). GitLab, Gitea and GHES keep their own housekeeping.
    if ((host === 'generic' || host === 'gitolite') && isBare(dir)) {
      // --file, not --local: root installing into the host user's repository would fail git's
      // safe.directory check; the file keeps its owner (setConfigSync).
      setConfigSync(join(dir, 'config'), 'receive.autogc', 'false');
      out.push(`set receive.autogc=false in ${dir} (the daemon runs git gc --auto when the repository is quiet)`);
    }
    if (host === 'ghes') {
      const notes = join(dir, 'PATCHGATE-GHES.md');
      writeFileSync(notes, ghesNotes(cfg));
      out.push(`wrote ${notes}`);
    }
  }
  out.push(...nextSteps(host, cfg, dirs.map((d) => resolve(d))));
  return out;
}

/**
 * `git push -o patchgate.escalate=…` needs receive.advertisePushOptions in the repository
 * (git refuses push options otherwise). Set in a bare REPO_DIR of the hosts whose repositories
 * we are given (gitea, gitolite, generic); GitLab and GitHub Enterprise advertise push options
 * themselves. A failure is said, never fatal: only escalation needs it.
 */
function advertisePushOptions(host: HostKind, dir: string): string | null {
  if (host === 'gitlab' || host === 'ghes' || !isBare(dir)) return null;
  try {
    setConfigSync(join(dir, 'config'), 'receive.advertisePushOptions', 'true');
    return `set receive.advertisePushOptions in ${dir} (agents escalate with git push -o patchgate.escalate="…")`;
  } catch (err) {
    return `could not set receive.advertisePushOptions in ${dir} (${(err as Error).message.split('\n')[0]}); set it there so agents can escalate with git push -o patchgate.escalate="…"`;
  }
}

/** The bare repositories below `root` (not inside one), at most `depth` folders down. */
function bareRepos(root: string, depth = 4): string[] {
  if (isBare(root)) return [root];
  if (depth === 0) return [];
  let names: string[];
  try {
    names = readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  } catch {
    return [];
  }
  return names.flatMap((n) => bareRepos(join(root, n), depth - 1));
}

/**
 * `hook install --host gitolite LOCAL_CODE`: receive.advertisePushOptions in each existing
 * repository of the host user (the config's repoRoots, else ~/repositories beside LOCAL_CODE,
 * gitolite's default GL_REPO_BASE), so `git push -o patchgate.escalate=…` works through
 * gitolite-shell. Repositories made later get it from gitolite.conf (nextSteps).
 */
function advertiseInGitolite(cfg: DaemonConfig, localCode: string): string[] {
  const roots = cfg.repoRoots?.length ? cfg.repoRoots : [join(dirname(localCode), 'repositories')];
  const out: string[] = [];
  for (const root of roots) {
    if (!existsSync(root)) {
      out.push(`no repositories at ${root} yet: set receive.advertisePushOptions for new ones in gitolite.conf (next steps)`);
      continue;
    }
    const repos = bareRepos(root);
    let set = 0;
    for (const repo of repos) {
      try {
        setConfigSync(join(repo, 'config'), 'receive.advertisePushOptions', 'true');
        set++;
      } catch (err) {
        out.push(`could not set receive.advertisePushOptions in ${repo} (${(err as Error).message.split('\n')[0]}); set it there so agents can escalate with git push -o patchgate.escalate="…"`);
      }
    }
    out.push(`set receive.advertisePushOptions in ${set} of ${repos.length} repositories under ${root} (agents escalate with git push -o patchgate.escalate="…")`);
  }
  return out;
}

/** A repository's path below the host's storage (repoRoots), as Gitaly names it; null when outside them. */
function storagePath(cfg: DaemonConfig, dir: string): string | null {
  for (const root of cfg.repoRoots ?? []) {
    const rel = relative(root, dir);
    if (rel && !rel.startsWith('..') && !isAbsolute(rel)) return rel;
  }
  return null;
}

function nextSteps(host: HostKind, cfg: DaemonConfig, dirs: readonly string[]): string[] {
  const daemon = `  patchgate daemon --config ${cfg.configPath ?? 'FILE'}   (as the user the host runs hooks as; keep it running)`;
  switch (host) {
    case 'gitlab': return ['next steps:', daemon, '  on the Gitaly node, for each repository (STORAGE is its storage name in gitaly\'s config.toml, "default" on a single node):', ...dirs.map((d) => {
      const rel = storagePath(cfg, d);
      return `    cd ${shq(d)} && tar -cf custom_hooks.tar custom_hooks && gitaly hooks set --storage STORAGE --repository ${rel ? shq(rel) : 'RELATIVE_PATH'} --config /var/opt/gitlab/gitaly/config.toml < custom_hooks.tar${rel ? '' : '   (RELATIVE_PATH: the folder below the storage root, e.g. @hashed/ab/cd/abcd….git; set repoRoots to have it filled in)'}`;
    }), '  or for every repository: copy the shim to <gitaly custom_hooks_dir>/pre-receive.d/patchgate on every Gitaly node'];
    case 'gitea': return ['next steps:', daemon, '  Gitea runs every file in hooks/pre-receive.d/ after its own check; keep [git] DISABLE_GIT_HOOKS off only for administrators'];
    case 'ghes': return ['next steps:', '  commit the script to the hook repository, add it as a pre-receive hook (Site admin > Hooks), and read PATCHGATE-GHES.md'];
    case 'gitolite': return ['next steps:', daemon, "  in ~/.gitolite.rc: LOCAL_CODE => \"$ENV{HOME}/local\" and 'repo-specific-hooks' in ENABLE", '  in gitolite.conf, per gated repo: option hook.pre-receive = patchgate; then push gitolite-admin (or run gitolite setup)', ...GITOLITE_PUSH_OPTIONS, ...(cfg.trusted ? [] : ['  gitolite makes repositories with HEAD at master: if your trusted branch is another, add "trusted": "main" (or {"REPO": "main"}) to the config'])];
    case 'generic': return ['next steps:', daemon, '  set PATCHGATE_USER (and PATCHGATE_REPO) in the environment of git receive-pack'];
  }
}

/**
 * Push options in repositories gitolite makes later: gitolite writes a repository's git config
 * from `config` lines only for keys GIT_CONFIG_KEYS allows.
 */
export const GITOLITE_PUSH_OPTIONS = [
  '  for repositories made later (escalation needs push options), in ~/.gitolite.rc: GIT_CONFIG_KEYS => \'receive\\.advertisePushOptions\',',
  '  and in gitolite.conf: repo @all',
  '                            config receive.advertisePushOptions = true',
];

/** A shell word, quoted only when it needs it. */
const shq = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

function ghesNotes(cfg: DaemonConfig): string {
  return `# patchgate on GitHub Enterprise Server

- The script reads GITHUB_USER_LOGIN (the pusher), GITHUB_REPO_NAME (owner/name), GITHUB_VIA
  and GITHUB_USER_ID, which GHES sets for every pre-receive hook.
- GitHub Enterprise gives all pre-receive hooks of a push 5 seconds together and refuses the
  push past it. This script answers within ${cfg.ghesBudgetMs} ms (config \`ghesBudgetMs\`): the daemon
  stops judging ${cfg.ghesReserveMs} ms before (\`ghesReserveMs\`) and the script itself gives up at the
  budget with "gate did not finish in time". Either way the push is refused, never let through.
- The script talks to \`patchgate daemon\` over 127.0.0.1 with the secret in ${join(cfg.data, 'hook.endpoint')}.
  That file and the repository's objects must be visible inside the pre-receive hook
  environment (the chroot GHES runs hooks in): the daemon must run on the appliance node that
  holds the repository, with the endpoint file in a folder the hook environment can read.
- Keep other hooks short: their time counts against the same 5 seconds.
`;
}
