// From failing rule outcomes to a decision: every finding fires its own decision-table row
// (src/policy/decision-table.ts), the first fired row in table order decides, and the
// remediation is that row's rule's. An agent push to a repository whose trusted branch does
// not exist yet is decided by the `no-trusted-branch` row: no command of the agent's can fix
// it, a person must push that branch first. Kept out of engine.ts so the engine stays small.

import { decidingRow, rowForFinding, tableRow, type TableRow } from './decision-table.js';
import { dedupeSetup, escalateStep, noTrustedBranch, type RefDecisionEscalate } from './remedy.js';
import type { Reason, RuleContext, RuleOutcome } from './types.js';

export interface Decided {
  reasons: Reason[];
  row: TableRow;
  remediation: string;
  escalate?: RefDecisionEscalate;
}

export function decide(ctx: RuleContext, failing: RuleOutcome[]): Decided {
  const reasons: Reason[] = failing.flatMap((o) => o.findings.map((f) => ({
    rule: o.rule, message: f.message, messageId: f.messageId, ref: ctx.update.ref,
    row: rowForFinding(o.rule, f.messageId, typeof f.data.category === 'string' ? f.data.category : undefined).id,
    ...(f.path !== undefined ? { path: f.path } : {}), ...(f.commit !== undefined ? { commit: f.commit } : {}),
  })));
  if (!failing.length) return { reasons, row: tableRow('accept'), remediation: '' };
  if (ctx.role === 'agent' && ctx.mode === 'push' && !ctx.trustedTip) {
    return { reasons, row: tableRow('no-trusted-branch'), remediation: noTrustedBranch(ctx.policy.trustedBranch, ctx.mode, ctx.pushTarget) };
  }
  const row = decidingRow(reasons.map((r) => r.row!));
  // The remediation of the rule whose finding decided (rules run in table order, so it is
  // normally the first failing rule; a rule failing without findings falls back to that).
  const decidingRule = reasons.find((r) => r.row === row.id)?.rule ?? failing[0]!.rule;
  const outcome = failing.find((o) => o.rule === decidingRule) ?? failing[0]!;
  const remediation = dedupeSetup(outcome.remediation ?? '');
  const escalate = escalateStep(ctx, row.id, remediation);
  return { reasons, row, remediation, ...(escalate ? { escalate } : {}) };
}
