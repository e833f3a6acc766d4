// `patchgate check`: the whole policy on a local repository, as CI runs it. The base is the
// trusted revision: the policy and allow file are read from it, and only commits reachable
// from head and not from base are judged. Exit 0 accept, 1 reject, 2 error.

import { reasonCode } from '../policy/machine-line.js';
import { rowCode } from '../policy/decision-table.js';
import { Git } from '../git/git.js';
import { errorMessage } from '../errors.js';
import { errorDecision, judgeUpdate, renderDecision } from '../policy/engine.js';
import type { RefDecision, Role } from '../policy/types.js';
import { stderrProgress, type SlowPhaseOptions } from '../progress.js';

export interface CheckArgs {
  repo: string;
  base: string;
  head: string;
  role: Role;
  /** An agent's class of the policy (src/policy/classes.ts); absent: the default class. */
  agentClass?: string;
  ref?: string;
  /** Where a long contract parse reports (default: stderr once it has run 2 s, as `contract` does). */
  progress?: SlowPhaseOptions;
}

const ZERO = '0'.repeat(40);

export async function runCheck(args: CheckArgs, cache?: Map<string, unknown>): Promise<RefDecision> {
  const git = new Git({ dir: args.repo });
  try {
    let base: string;
    let head: string;
    let which = '--base';
    try {
      base = await git.resolveCommit(args.base);
      which = '--head';
      head = await git.resolveCommit(args.head);
    } catch (err) {
      const rev = which === '--base' ? args.base : args.head;
      const d = errorDecision({ ref: args.ref ?? 'HEAD', oldId: ZERO, newId: ZERO }, new Error(`unknown revision ${JSON.stringify(rev)} (${which}) in ${args.repo}: ${errorMessage(err).split(': ').at(-1)}`, { cause: err }), Date.now());
      return { ...d, remediation: 'pass --base and --head revisions that exist in the repository (git fetch the trusted branch first)' };
    }
    // With --ref, judge it as the move base -> head; without, the work starts at the merge-base.
    const oldId = args.ref ? base : ((await git.mergeBase(base, head)) ?? '0'.repeat(head.length));
    return await judgeUpdate(
      { git, role: args.role, ...(args.agentClass !== undefined ? { agentClass: args.agentClass } : {}), mode: 'check', trustedTip: base, exclude: [base], checkRefs: !!args.ref, cache, progress: args.progress ?? { ...stderrProgress(), delayMs: 2000 } },
      { ref: args.ref ?? (await headLabel(git, args.head)), oldId, newId: head },
    );
  } finally {
    git.close();
  }
}

/**
 * What the output calls the judged revision without --ref: the ref --head names, in full
 * (`--head agent/api` is refs/heads/agent/api, as a push of it is labelled), else --head as given.
 */
async function headLabel(git: Git, head: string): Promise<string> {
  const full = (await git.run(['rev-parse', '--symbolic-full-name', head], { okExit: [128] }).catch(() => null))?.stdout.toString('utf8').trim() ?? '';
  return full && !full.includes('\n') ? full : head;
}

/** The pinned `check --json` shape. */
export function checkJson(d: RefDecision): Record<string, unknown> {
  return {
    verdict: d.verdict,
    // `rule` is pinned to refs, write-block, contract, fixtures, ledger or error (DESIGN.md): a
    // push over the size limits is one the gate would not judge, so it reports as `error`, and
    // `limit: true` tells it apart from a gate failure; a policy file that does not validate
    // (rule `policy`) reports as `error` with `policy: true`.
    reasons: d.reasons.map((r) => ({
      rule: r.rule === 'limits' || r.rule === 'policy' ? 'error' : r.rule, message: r.message, code: reasonCode(r, d.row),
      ...(r.rule === 'limits' ? { limit: true } : {}),
      ...(r.rule === 'policy' ? { policy: true } : {}),
      ...(r.path !== undefined ? { path: r.path } : {}), ...(r.commit !== undefined ? { commit: r.commit } : {}),
    })),
    contract: d.contract,
    action: d.verdict === 'accept' ? d.action : `${d.action}. ${d.remediation}`.trim(),
    row: d.row,
    code: rowCode(d.row),
    outcomes: d.outcomes.map((o) => ({ rule: o.rule, status: o.status, findings: o.findings.length, ms: o.ms })),
  };
}

export function checkExitCode(d: RefDecision): number {
  if (d.verdict === 'accept') return 0;
  // A base whose policy does not validate is, for an agent, one the check cannot judge.
  return d.row === 'gate-error' || d.row === 'policy-broken' ? 2 : 1;
}

export { renderDecision };
