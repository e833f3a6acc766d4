// Evaluate mode (issue 20): a team tries the gate on its real work without being blocked by
// the content rules, but the gate's ownership rules never relax. So, for a refusal the
// engine made:
// - still REFUSED in evaluate mode: the `refs` rule (the trusted branch, protected branches,
//   deletes, force-pushes, tags), a write to the gate's own files (policy, allow file,
//   fixture lock, ledger: a relaxed policy read from the trusted branch would govern after the
//   switch back to enforce), the size limits, gate errors and upstream refusals;
// - accepted and audited as `would-reject`: write-block outside those files, contract,
//   fixtures, ledger and tamper-scan findings. Such an accept prints no fix commands (running
//   a `git reset --hard` for a push that landed destroys the work): it says why enforce mode
//   would refuse it, and that there is nothing to do now.
// The same mapping serves every repository in evaluate mode, with or without an upstream.

import { isZeroId } from '../git/git.js';
import { renderDecision } from '../policy/engine.js';
import type { RefDecision, RuleId } from '../policy/types.js';
import { short } from '../policy/types.js';

/** Rules whose findings evaluate mode reports instead of refusing. */
const EVALUATED: ReadonlySet<RuleId> = new Set<RuleId>(['write-block', 'contract', 'fixtures', 'ledger', 'tamper-scan']);

/**
 * True when every reason the engine refused `d` for is one evaluate mode only reports. A
 * refusal with any enforced reason (or none the gate can name) stays a refusal.
 */
export function wouldRejectOnly(d: RefDecision): boolean {
  if (d.verdict !== 'reject' || d.row === 'gate-error' || d.row === 'upstream-refused') return false;
  const failing = d.outcomes.filter((o) => o.status === 'fail');
  if (!failing.length) return false;
  return failing.every((o) => EVALUATED.has(o.rule) && o.findings.length > 0 && !o.findings.some((f) => f.data.policyFile === 1));
}

/** The remote: lines of a ref accepted in evaluate mode that enforce mode would refuse: the reasons, no fix. */
export function renderWouldReject(d: RefDecision, actor: string): string[] {
  const range = `${isZeroId(d.oldId) ? '(new)' : short(d.oldId)}..${isZeroId(d.newId) ? '(delete)' : short(d.newId)}`;
  const lines = [`patchgate: ACCEPT (evaluate mode, would be refused) ${d.ref} ${range} for ${actor}`];
  const shown = d.reasons.slice(0, 40);
  for (const r of shown) lines.push(`  [${r.rule}] ${r.message}`);
  if (d.reasons.length > shown.length) lines.push(`  ... and ${d.reasons.length - shown.length} more`);
  const first = d.reasons[0];
  const why = first ? `[${first.rule}] ${first.message}${d.reasons.length > 1 ? ` (and ${d.reasons.length - 1} more reason(s) above)` : ''}` : `decision ${d.row}`;
  lines.push(`patchgate: evaluate mode: this push would be refused in enforce mode because ${why}; nothing to do now`);
  return lines;
}

/** The remote: lines of a refusal that evaluate mode does not relax: the usual rendering and why it stays. */
export function renderEnforced(d: RefDecision, actor: string, repo: string): string[] {
  return [
    ...renderDecision(d, actor),
    `  (repository ${repo} is in evaluate mode, which never relaxes the refs rule, the gate's policy files, the size limits or errors: this push is refused)`,
  ];
}
