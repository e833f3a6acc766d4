// Remediation text an agent can act on alone. A remediation is lines: an explanation, then
// commands, each on its own line after `$ `, that run as printed in the agent's clone (they
// name no remote), then how to push again. The hook never knows which remote name or URL the
// agent pushed to (and must never echo a URL that carries a token), so the one push step
// says: the same push as before, to the same remote name or URL, with the refspec spelled out.

import { isZeroId } from '../git/git.js';
import type { RuleContext } from './types.js';
import { shq } from './types.js';

/** The prefix of a line that is a command to run as printed. */
export const RUN = '$ ';

/** The branch (or full ref) the agent pushed, as it would write it in a refspec. */
export function pushedBranch(ctx: RuleContext): string {
  return ctx.update.ref.replace(/^refs\/heads\//, '');
}

/** The refspec of the push, spelled in full so it works from any branch or a detached HEAD. */
export function pushRefspec(ctx: RuleContext): string {
  return `HEAD:${ctx.update.ref.startsWith('refs/') ? ctx.update.ref : `refs/heads/${ctx.update.ref}`}`;
}

/** The closing line: push again exactly as before (no remote is printed: the gate does not know it, and a URL may hold a token). */
export function pushAgain(ctx: RuleContext): string {
  if (ctx.mode !== 'push') return 'then re-run the check';
  return `then push again exactly as you did, to the same remote name or URL: git push <the same remote or URL> ${shq(pushRefspec(ctx))}`;
}

/** Assemble a remediation: explanation, commands to run as printed, the closing line. */
export function remedy(intro: string, commands: string[], closing?: string): string {
  return [intro, ...commands.map((c) => RUN + c), ...(closing ? [closing] : [])].join('\n');
}

/** Where the agent's new work begins: the ref's old tip, else the first new commit's parent, else the trusted tip. */
export function startingPoint(ctx: RuleContext): string | null {
  if (!isZeroId(ctx.update.oldId)) return ctx.update.oldId;
  const first = ctx.newCommits[0];
  return first?.parents[0] ?? ctx.trustedTip ?? null;
}

/**
 * The trusted branch is missing on the gate: there is nothing to judge against and nothing
 * to rebuild on, so no command of the agent's own can help. A person pushes it first.
 */
export function noTrustedBranch(branch: string, mode: 'push' | 'check'): string {
  return [
    `the trusted branch ${branch} does not exist on the gate yet, so nothing can be judged against it and no command of yours can fix this push`,
    `a person (a human token) must push it first, from a clone of the project: git push <the gate's remote or URL> ${shq(`HEAD:refs/heads/${branch}`)}`,
    mode === 'push' ? 'then push again exactly as you did; the gate will judge your commits against it' : 'then re-run the check',
  ].join('\n');
}

/**
 * The new commits do not grow from anything the agent is known to have (a root commit on a
 * new branch while the trusted branch exists): the fix starts from the trusted branch, which
 * the agent fetches first. The fetch is the one step that must name the remote.
 */
export function unrelatedStart(ctx: RuleContext): boolean {
  return isZeroId(ctx.update.oldId) && !!ctx.trustedTip && ctx.newCommits.length > 0 && ctx.newCommits[0]!.parents.length === 0;
}

export function fetchTrusted(ctx: RuleContext): string {
  return `your commits do not start from the trusted branch ${ctx.policy.trustedBranch}; fetch it first, from the same remote name or URL you pushed to: git fetch <the same remote or URL> ${shq(`refs/heads/${ctx.policy.trustedBranch}`)}`;
}
