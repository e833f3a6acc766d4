// `patchgate warm (--config FILE | --data DIR) REPO_DIR...` (issue 47): seeds the contract
// cache a gate reads (`<data>/cache.db`) from a repository's own copy on disk, outside any
// push's time limit, with progress. A host whose hooks get a short budget (GitHub Enterprise:
// 5 s for all pre-receive hooks) cannot parse a real repository's first contract inside one
// push; seeded first, the next push parses only the files it changes. Only a cache: the
// daemon may run meanwhile (SQLite takes both writers), and nothing here decides anything.

import { existsSync, realpathSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Git } from '../git/git.js';
import { ContractParseError, UsageError } from '../errors.js';
import { shq } from '../policy/types.js';

export interface WarmArgs {
  /** The daemon's config (`patchgate daemon --config FILE`): its data folder, repoRoots and trusted branches. */
  config?: string;
  /** The gate's data folder (`patchgate serve --data DIR`); REPO may then be a repository name under it. */
  data?: string;
  repos: string[];
  progress?: { write: (text: string) => void; isTTY: boolean };
}

/** The command a refusal for time prints (it runs as printed on the gate's machine). */
export function warmCommand(where: { config: string } | { data: string }, repoDir: string): string {
  return 'config' in where ? `patchgate warm --config ${shq(where.config)} ${shq(repoDir)}` : `patchgate warm --data ${shq(where.data)} ${shq(repoDir)}`;
}

/** Warms each repository's trusted tip into `<data>/cache.db`; one line per repository. */
export async function runWarm(args: WarmArgs): Promise<string[]> {
  if (!!args.config === !!args.data) throw new UsageError('give --config FILE (the daemon\'s config) or --data DIR (the gate server\'s data folder), not both');
  if (!args.repos.length) throw new UsageError('name the repositories to warm: patchgate warm --config FILE REPO_DIR...');
  const { loadDaemonConfig } = await import('../host/config.js');
  const { trustedFor } = await import('../host/identity.js');
  const cfg = args.config ? loadDaemonConfig(args.config) : null;
  const data = cfg ? cfg.data : resolve(args.data!);
  const dirs = args.repos.map((r) => repoDir(r, cfg ? null : data));
  const { PersistentCache, ContentCache } = await import('../cache/content-cache.js');
  const { CONTRACT_SKIPPED_WHY, contractFileCount, contractOf } = await import('../contract/digest.js');
  const { Progress, stderrProgress } = await import('../progress.js');
  const { trustedState } = await import('../server/hook/judge.js');
  const disk = new PersistentCache(join(data, 'cache.db'), (l) => process.stderr.write(l + '\n'));
  const cache = new ContentCache(disk);
  const out: string[] = [];
  try {
    for (const dir of dirs) {
      const git = new Git({ dir, bare: true });
      try {
        const root = cfg?.repoRoots?.map((r) => (existsSync(r) ? realpathSync(r) : r)).find((r) => dir.startsWith(r.endsWith('/') ? r : `${r}/`));
        const branch = cfg ? trustedFor(cfg, { dir, name: root ? dir.slice(root.length).replace(/^\/+/, '').replace(/\.git$/, '') : null }) : undefined;
        const { trustedTip: tip, trustedBranch, policy } = await trustedState(git, branch);
        if (!tip) {
          out.push(`${dir}: no ${trustedBranch} yet, nothing to warm (its first push parses what it brings)`);
          continue;
        }
        const t0 = Date.now();
        const { roots, format, maxSourceBytes } = policy.contract;
        // Files read of the total, the rate and the time left (src/progress.ts): in place on a terminal, lines elsewhere.
        const progress = new Progress({ ...(args.progress ?? stderrProgress()), skippedWhy: CONTRACT_SKIPPED_WHY });
        const total = await contractFileCount(git, tip, roots, format);
        progress.phase(`patchgate: warming ${dir} (${trustedBranch} ${tip.slice(0, 12)})`, total);
        const c = await contractOf(git, tip, roots, format, cache, { maxSourceBytes, onFile: (n) => progress.tick(n) }).catch((err: unknown) => {
          if (err instanceof ContractParseError) return err;
          throw err;
        });
        progress.end(c instanceof ContractParseError ? 'stopped: a file does not parse' : '');
        // Written now: a daemon reading cache.db finds it on its next miss.
        cache.flush();
        out.push(c instanceof ContractParseError
          ? `${dir}: ${trustedBranch} ${tip.slice(0, 12)} does not parse (${c.message.split('\n')[0]}); the files before it are cached, and a push is judged on its own files`
          : `${dir}: contract of ${trustedBranch} ${tip.slice(0, 12)} cached in ${join(data, 'cache.db')} (${total} files, ${((Date.now() - t0) / 1000).toFixed(1)} s); a push now parses only the files it changes`);
      } finally {
        git.dispose();
      }
    }
  } finally {
    disk.close();
  }
  return out;
}

/** A repository's real folder: a path to a bare repository, or (with a data folder) a name under `<data>/repos`. */
function repoDir(r: string, data: string | null): string {
  const candidates = [resolve(r), ...(data ? [join(data, 'repos', `${r.replace(/\.git$/, '')}.git`)] : [])];
  for (const c of candidates) {
    if (existsSync(c) && statSync(c).isDirectory() && existsSync(join(c, 'objects')) && existsSync(join(c, 'HEAD'))) return realpathSync(c);
  }
  throw new UsageError(`${r} is not a repository (give the bare repository's folder on this machine${data ? `, or a name under ${join(data, 'repos')}` : ''})`);
}
