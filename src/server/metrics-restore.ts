// At start, /metrics' push counters (and the judge-time histogram) are filled from the audit
// log the server writes to, by outcome (a push upstream refused counts as refused, issue 48), so a restart does not reset them to zero and they keep equalling
// the log's own counts: from then on ./metrics.ts counts each decision where it becomes a row.
// The log read is the configured one (SQLite or PostgreSQL, through AuditSink.select), in
// id-ordered pages, so memory stays flat on a long log. On a log shared by several nodes each
// node starts from the whole log's totals (see docs/server.md, "Metrics").

import type { AuditSink } from '../audit/sink.js';
import type { RecordPushInput, RefDecisionInput, Verdict } from '../audit/store.js';
import { decidingRule, outcomeLabels, type GateMetrics } from './metrics.js';
import { OUTCOME_SQL } from '../audit/queries.js';

const PAGE = 5000;

/** The rows one push wrote (its push row and the ref rows after it), as the counter sees them. */
interface Pending {
  verdict: Verdict;
  /** Its outcome is a refusal: its own verdict, or an `upstream-refusal` row (issue 48); outcomeLabels reads which. */
  outcomeReject: boolean;
  pushId: string | null;
  ms: number;
  refs: RefDecisionInput[];
}

function parse(text: unknown): unknown {
  if (typeof text !== 'string') return null;
  try {
    return JSON.parse(text);
  } catch {
    return null; // a damaged row: `audit verify` reports it
  }
}

export async function restorePushCounts(sink: Pick<AuditSink, 'select'>, metrics: GateMetrics): Promise<number> {
  let after = 0;
  let pending: Pending | null = null;
  let pushes = 0;
  const flush = (): void => {
    if (!pending) return;
    const input = { verdict: pending.verdict, refs: pending.refs } as unknown as RecordPushInput;
    metrics.pushes.inc(outcomeLabels(pending.verdict, decidingRule(input), pending.outcomeReject));
    metrics.judgeSeconds.observe(pending.ms / 1000);
    pushes++;
    pending = null;
  };
  for (;;) {
    // Only what decidingRule reads: the trace of refused refs, the timings of push rows.
    const rows = await sink.select(
      `SELECT e.id, e.kind, e.push_id, e.verdict, e.decision,
              CASE WHEN e.kind = 'ref' AND e.verdict <> 'accept' THEN e.rules END AS rules,
              CASE WHEN e.kind = 'push' THEN e.timings END AS timings,
              CASE WHEN e.kind = 'push' THEN ${OUTCOME_SQL} END AS outcome
         FROM events e WHERE e.kind IN ('push', 'ref') AND e.id > ? ORDER BY e.id LIMIT ${PAGE}`,
      [after],
    );
    for (const r of rows) {
      if (r.kind === 'push') {
        flush();
        const t = parse(r.timings) as { total?: unknown } | null;
        pending = { verdict: r.verdict as Verdict, outcomeReject: r.outcome === 'reject', pushId: (r.push_id as string | null) ?? null, ms: Number(t?.total ?? 0) || 0, refs: [] };
      } else if (pending && r.push_id === pending.pushId) {
        // A push's ref rows follow its push row in the same transaction.
        const rules = parse(r.rules);
        pending.refs.push({ ref: '', old: '', new: '', verdict: r.verdict as Verdict, decision: (r.decision as string | null) ?? null, rules: Array.isArray(rules) ? rules : [] });
      }
    }
    if (rows.length < PAGE) break;
    after = Number(rows[rows.length - 1]!.id);
  }
  flush();
  return pushes;
}
