// The server's two uses of an upstream outside a push: a clone or fetch from the gate first
// refreshes the trusted branch (so agents see what a person merged upstream), and at start
// each repository with an upstream is fetched and then its contract cache warmed in the
// background, so the first push after a restart does not parse the whole tree.

import { errorMessage } from '../errors.js';
import { Git } from '../git/git.js';
import type { HookService } from '../server/hook-service.js';
import { upstreamBudget } from './gate.js';
import { readSettings } from './settings.js';

async function trustedRefOf(repoDir: string): Promise<string> {
  const git = new Git({ dir: repoDir, bare: true });
  try {
    return (await git.symbolicHead()) ?? 'refs/heads/main';
  } finally {
    git.close();
  }
}

/**
 * Before the ref advertisement of a clone or fetch: refresh from upstream. A failure serves
 * what the gate has (reading is not accepting) and logs why, redacted.
 */
export async function refreshForClone(hooks: HookService, dataDir: string, name: string, repoDir: string, log: (l: string) => void): Promise<void> {
  try {
    const { upstream } = readSettings(dataDir, name);
    if (!upstream) return;
    const r = await hooks.upstream.refresh(repoDir, upstream, await trustedRefOf(repoDir), { timeoutMs: upstreamBudget(hooks.shimWaitSeconds * 1000) });
    if (r.changed) hooks.warmRepo(repoDir);
  } catch (err) {
    log(`patchgate: repository ${name}: serving the gate's copy, upstream refresh failed: ${errorMessage(err).split('\n')[0]}`);
  }
}

/** At start: fetch from upstream (when there is one), then warm the contract cache, in the background. */
export function warmWithUpstream(hooks: HookService, dataDir: string, name: string, repoDir: string, log: (l: string) => void): void {
  let upstream;
  try {
    upstream = readSettings(dataDir, name).upstream;
  } catch (err) {
    log(`patchgate: repository ${name}: ${errorMessage(err)}`);
  }
  if (!upstream) return hooks.warmRepo(repoDir);
  const u = upstream;
  hooks.warmRepo(repoDir, () => trustedRefOf(repoDir)
    .then((ref) => hooks.upstream.refresh(repoDir, u, ref, { timeoutMs: upstreamBudget(hooks.shimWaitSeconds * 1000) }))
    .catch((err: unknown) => log(`patchgate: repository ${name}: upstream fetch at start failed (pushes are refused until it answers): ${errorMessage(err).split('\n')[0]}`)));
}
