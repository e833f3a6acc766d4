// Remediation text an agent can act on alone. A remediation is lines: an explanation, then
// commands, each on its own line after `$ `, that run as printed in the agent's clone, one
// per shell. A step that talks to the gate (fetch, push) names the remote `patchgate-fix`,
// which the command before it sets up from the agent's own remotes (src/policy/push-target.ts):
// the hook never sees the remote name or the token, and must never print a URL with a token.

import { isZeroId } from '../git/git.js';
import { FIX_REMOTE, fixRemoteCommand, type PushTarget } from './push-target.js';
import type { RuleContext } from './types.js';
import { short, shq } from './types.js';

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

/** The command that sets up `patchgate-fix` in the agent's clone (null: the gate does not know its address). */
export function fixRemoteSetup(ctx: RuleContext): string | null {
  return ctx.mode === 'push' ? fixRemoteCommand(ctx.pushTarget) : null;
}

/** The lines of one step that talks to the gate: the remote's set-up, then `git VERB patchgate-fix SPEC`. */
export function gateStep(ctx: RuleContext, intro: string, verb: 'push' | 'fetch', spec: string): string {
  const setup = fixRemoteSetup(ctx);
  if (!setup) return `${intro}, to the same remote name or URL you pushed to: git ${verb} <the same remote or URL> ${shq(spec)}`;
  const how = ctx.pushTarget?.host
    ? `the first command points it at your remote for this repository on ${ctx.pushTarget.host}, or at origin; no key or password is printed`
    : "the first command points it at your remote for this gate, or at the gate's URL; no token is printed";
  return remedy(`${intro}, through the remote ${FIX_REMOTE} (${how}):`, [setup, `git ${verb} ${FIX_REMOTE} ${shq(spec)}`]);
}

/**
 * The closing lines: push the fixed work again (in check mode: run the check again). `rebuilt`:
 * the fix rebuilt the commits from startingPoint; when that lies below the gate's tip of the
 * branch (a person's commits the agent carried there), the branch cannot take the rebuilt
 * work as a fast-forward, so it goes to a new branch beside it.
 */
export function pushAgain(ctx: RuleContext, rebuilt = false): string {
  if (ctx.mode !== 'push') return 'then re-run the check';
  if (rebuilt && rebuildsBelowTip(ctx)) {
    const ref = `${pushRefspec(ctx).slice('HEAD:'.length)}-rebuilt`;
    return gateStep(ctx, `then push it as a new branch (the gate's ${pushedBranch(ctx)} holds the commits you rebuilt, and agents may not rewrite a branch)`, 'push', `HEAD:${ref}`);
  }
  return gateStep(ctx, 'then push again', 'push', pushRefspec(ctx));
}

/** The rebuild starts below the ref's old tip: the old tip is itself among the commits judged. */
export function rebuildsBelowTip(ctx: RuleContext): boolean {
  return ctx.kind === 'update' && ctx.newCommits.some((c) => c.id === ctx.update.oldId);
}

/**
 * Drop a repeated remote set-up line: two gate steps in one remediation (a fetch, later the
 * push) each carry it so that each reads whole, but the agent needs to run it once.
 */
export function dedupeSetup(text: string): string {
  const seen = new Set<string>();
  return text
    .split('\n')
    .filter((l) => {
      if (!l.startsWith(`${RUN}git config remote.${FIX_REMOTE}.url `)) return true;
      if (seen.has(l)) return false;
      seen.add(l);
      return true;
    })
    .join('\n');
}

/** Assemble a remediation: explanation, commands to run as printed, the closing line. */
export function remedy(intro: string, commands: string[], closing?: string): string {
  return [intro, ...commands.map((c) => RUN + c), ...(closing ? [closing] : [])].join('\n');
}

/**
 * Where the agent's new work begins: the ref's old tip (unless it is itself among the judged
 * commits: a person's commits the agent carries on that branch), else the first judged
 * commit's parent, else the trusted tip.
 */
export function startingPoint(ctx: RuleContext): string | null {
  if (!isZeroId(ctx.update.oldId) && !ctx.newCommits.some((c) => c.id === ctx.update.oldId)) return ctx.update.oldId;
  const first = ctx.newCommits[0];
  return first?.parents[0] ?? ctx.trustedTip ?? null;
}

/**
 * The trusted branch is missing on the gate: there is nothing to judge against and nothing
 * to rebuild on, so no command of the agent's own can help. A person pushes it first.
 */
export function noTrustedBranch(branch: string, mode: 'push' | 'check', target?: PushTarget): string {
  if (target?.host) {
    // Inside a git host the trusted branch is the repository's HEAD (gitolite, for one, makes
    // repositories with HEAD at master) unless the daemon's config names it.
    return [
      `the trusted branch ${branch} does not exist in this repository yet, so nothing can be judged against it and no command of yours can fix this push`,
      `a person, with a person's key or account on ${target.host}, must push it first, from a clone of the project: git push <the remote of this repository> ${shq(`HEAD:refs/heads/${branch}`)}`,
      `if the project's trusted branch is not ${branch}, the host's admin sets it in the daemon's config: "trusted": {"${target.path ?? 'REPO'}": "main"} (or points the repository's HEAD at it)`,
      mode === 'push' ? 'then push again exactly as you did; the gate will judge your commits against it' : 'then re-run the check',
    ].join('\n');
  }
  const where = target?.url ?? "<the gate's remote or URL>";
  return [
    `the trusted branch ${branch} does not exist on the gate yet, so nothing can be judged against it and no command of yours can fix this push`,
    `a person (a human token) must push it first, from a clone of the project: git push ${where} ${shq(`HEAD:refs/heads/${branch}`)}`,
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

/** The trusted commit a rebuild starts from: what the fetch step leaves in FETCH_HEAD; in check mode, --base itself. */
export function trustedRev(ctx: RuleContext): string {
  return ctx.mode === 'push' ? 'FETCH_HEAD' : (ctx.trustedTip ?? 'FETCH_HEAD');
}

/** The step that brings the trusted branch into the agent's clone (FETCH_HEAD); in check mode it is already there. */
export function fetchTrusted(ctx: RuleContext): string {
  const intro = `your commits do not start from the trusted branch ${ctx.policy.trustedBranch}`;
  if (ctx.mode !== 'push' && ctx.trustedTip) return `${intro} (${short(ctx.trustedTip)}); rebuild them on it:`;
  return gateStep(ctx, `${intro}; fetch it first`, 'fetch', `refs/heads/${ctx.policy.trustedBranch}`);
}

/** The push option of an escalation (src/audit/escalation.ts reads it). */
export const ESCALATE_OPTION = 'patchgate.escalate';

/** Rows a wrong oracle could cause: when the honest exit applies, and what the agent's note explains. */
export const ESCALATE_ROWS: Readonly<Record<string, { when: string; why: string }>> = {
  'test-tree-write': { when: 'if the test itself is wrong, do not edit it', why: 'why the test is wrong' },
  'contract-moved': { when: 'if the contract itself must change (the public API the tests pin), do not work around it', why: 'why the contract must change' },
  'fixture-drift': { when: 'if the fixtures or their lock are wrong, do not edit them', why: 'why the fixtures are wrong' },
};

export type RefDecisionEscalate = { when: string; command: string; setup: string | null };

/**
 * The honest exit for an agent refused on `rowId`: push the same commits with a note for a
 * person (`-o patchgate.escalate="…"`, judged as usual and recorded) instead of editing the
 * oracle. Through `patchgate-fix` as every printed push is (`setup` makes it; null when the
 * remediation above already printed that line). Null: not such a row, or not an agent's push.
 */
export function escalateStep(ctx: RuleContext, rowId: string, remediation: string): RefDecisionEscalate | null {
  const row = ESCALATE_ROWS[rowId];
  if (!row || ctx.role !== 'agent' || ctx.mode !== 'push') return null;
  const setup = fixRemoteSetup(ctx);
  const remote = setup ? FIX_REMOTE : '<the same remote or URL>';
  const command = `git push -o ${ESCALATE_OPTION}="<${row.why}>" ${remote} ${shq(pushRefspec(ctx))}`;
  return { when: row.when, command, setup: setup && !remediation.split('\n').includes(RUN + setup) ? setup : null };
}
