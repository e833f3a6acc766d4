// Reading the audit log, the same SQL for every store: the row select (a ref row's `moved` from
// its newest confirm row), the query builder behind `patchgate audit` and the page, and the
// conversion of a read row into an AuditRow. Split out of src/audit/store.ts (issue 22).
// The text is SQLite's; ./pg-store.ts's pgSql turns it into PostgreSQL's.

import { UsageError } from '../errors.js';
import { EVENT_KINDS, VERDICTS, type EventKind, type Role, type Verdict } from './events-table.js';
import type { AuditRow, JsonValue, PushTrace, QueryOptions } from './inputs.js';
import { oneOf, parseIsoDate, pushIdOf } from './validate.js';

export const DEFAULT_QUERY_LIMIT = 100;
export const MAX_QUERY_LIMIT = 1_000_000;

export function toAuditRow(r: Record<string, unknown>): AuditRow {
  const s = (k: string): string | null => (r[k] === null || r[k] === undefined ? null : String(r[k]));
  const j = (k: string): JsonValue | null => {
    const v = s(k);
    if (v === null) return null;
    try {
      return JSON.parse(v) as JsonValue;
    } catch {
      return v; // a tampered row; verify() reports it, queries still show it
    }
  };
  const movedRaw = 'moved_eff' in r ? r.moved_eff : r.moved;
  // Only where upstream overturned the stored verdict (issue 48): every other row reads as before.
  const outcome = s('outcome');
  return {
    id: Number(r.id),
    kind: r.kind as EventKind,
    time: String(r.time),
    pushId: s('push_id'),
    repo: s('repo'),
    actor: s('actor'),
    role: s('role') as Role | null,
    remoteAddr: s('remote_addr'),
    userAgent: s('user_agent'),
    verdict: s('verdict') as Verdict | null,
    ref: s('ref'),
    old: s('old'),
    new: s('new'),
    refCount: r.ref_count === null || r.ref_count === undefined ? null : Number(r.ref_count),
    decision: s('decision'),
    rules: j('rules'),
    contractBase: s('contract_base'),
    contractHead: s('contract_head'),
    timings: j('timings'),
    moved: movedRaw === null || movedRaw === undefined ? null : Number(movedRaw) ? 1 : 0,
    reason: s('reason'),
    action: s('action'),
    subject: s('subject'),
    detail: j('detail'),
    base: s('base'),
    head: s('head'),
    prevHash: String(r.prev_hash),
    hash: String(r.hash),
    ...(outcome !== null && outcome !== s('verdict') ? { outcome: outcome as Verdict } : {}),
  };
}

/**
 * A push or ref row's outcome (issue 48): its verdict, except that a ref upstream refused after
 * the gate wrote it as accepted (an `upstream-refusal` row of the same push and ref), and the
 * push that carried it, count as refused. Every count reads this, never the bare verdict:
 * `audit --verdict`, the page and its charts, /metrics at start. `e` is the row's alias.
 */
export const OUTCOME_SQL = `CASE WHEN e.kind IN ('push', 'ref') AND e.verdict <> 'reject' AND EXISTS (
      SELECT 1 FROM events u WHERE u.push_id = e.push_id AND u.kind = 'upstream-refusal' AND (e.kind = 'push' OR u.ref = e.ref))
    THEN 'reject' ELSE e.verdict END`;

/** A ref row's `moved` comes from the newest confirm row for the same push, ref and new id. */
export const SELECT_ROWS = `
  SELECT e.*,
    CASE WHEN e.kind = 'ref' THEN (
      SELECT c.moved FROM events c
       WHERE c.push_id = e.push_id AND c.ref = e.ref AND c.kind = 'confirm' AND c.new = e.new
       ORDER BY c.id DESC LIMIT 1)
    ELSE e.moved END AS moved_eff,
    ${OUTCOME_SQL} AS outcome
  FROM events e`;

/** The query that finds a closing row of escalation `?` (its id as text, in `subject`). */
export const ESCALATION_CLOSED_SQL = "SELECT id FROM events WHERE kind = 'escalation' AND action = 'escalation.close' AND subject = ? LIMIT 1";

export function buildQuery(options: QueryOptions): { sql: string; params: unknown[] } {
  if (options === null || typeof options !== 'object') throw new UsageError('query: options must be an object');
  const where: string[] = [];
  const params: unknown[] = [];
  // With --repo or --actor, their (col, time) index is the selective one: a unary `+`
  // keeps SQLite from picking the (verdict, time) or (kind, time) index instead.
  const narrow = options.repo !== undefined || options.actor !== undefined;
  const weak = narrow ? '+' : '';
  const str = (v: unknown, opt: string): string => {
    if (typeof v !== 'string' || v.length === 0) throw new UsageError(`${opt}: must be a non-empty string`);
    return v;
  };
  if (options.repo !== undefined) {
    where.push('e.repo = ?');
    params.push(str(options.repo, '--repo'));
  }
  if (options.repos !== undefined) {
    if (!Array.isArray(options.repos) || options.repos.some((r) => typeof r !== 'string')) throw new UsageError('query: repos must be a list of names');
    if (options.repos.length === 0) where.push('1 = 0');
    else {
      where.push(`e.repo IN (${options.repos.map(() => '?').join(', ')})`);
      params.push(...options.repos);
    }
  }
  if (options.actor !== undefined) {
    where.push('e.actor = ?');
    params.push(str(options.actor, '--actor'));
  }
  if (options.verdict !== undefined) {
    // By outcome: a push upstream refused is listed under reject, not accept.
    where.push(`(${OUTCOME_SQL}) = ?`);
    params.push(oneOf(options.verdict, VERDICTS, '--verdict'));
  }
  if (options.pushId !== undefined) {
    where.push('e.push_id = ?');
    params.push(pushIdOf(options.pushId, '--push'));
  }
  if (options.kind !== undefined) {
    where.push(`${weak}e.kind = ?`);
    params.push(oneOf(options.kind, EVENT_KINDS, '--kind'));
  } else {
    where.push("e.kind <> 'confirm'");
  }
  const since = options.since === undefined ? undefined : parseIsoDate(options.since, '--since');
  const until = options.until === undefined ? undefined : parseIsoDate(options.until, '--until');
  if (since !== undefined && until !== undefined && until < since) {
    throw new UsageError(`--until: ${until} is before --since ${since}`);
  }
  if (since !== undefined) {
    where.push('e.time >= ?');
    params.push(since);
  }
  if (until !== undefined) {
    where.push('e.time < ?');
    params.push(until);
  }
  const limit = options.limit ?? DEFAULT_QUERY_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_QUERY_LIMIT) {
    throw new UsageError(`--limit: must be an integer from 1 to ${MAX_QUERY_LIMIT} (got ${JSON.stringify(options.limit)})`);
  }
  params.push(limit);
  return { sql: `${SELECT_ROWS} WHERE ${where.join(' AND ')} ORDER BY e.time DESC, e.id DESC LIMIT ?`, params };
}

/** The rows recorded under one push id (in id order) as its trace; null when there are none. */
export function pushTrace(rows: readonly AuditRow[]): PushTrace | null {
  if (rows.length === 0) return null;
  return {
    push: rows.find((r) => r.kind === 'push') ?? null,
    refs: rows.filter((r) => r.kind === 'ref'),
    confirms: rows.filter((r) => r.kind === 'confirm'),
    outcomes: rows.filter((r) => r.kind === 'admin'),
    escalations: rows.filter((r) => r.kind === 'escalation'),
    upstreamRefusals: rows.filter((r) => r.kind === 'upstream-refusal'),
  };
}
