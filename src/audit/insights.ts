// Bounded, indexed reads of the audit log for people (the web page, src/web/): decisions
// over time, refusals by rule and decision-table row, top refused paths and actors, a
// keyset-paginated table of ref decisions. Every query is limited by a time window and/or a
// row limit and runs on an index (migration 3 in ./store.ts covers kind, time, verdict,
// decision, actor, repo), so a log of millions of rows answers the first page fast.
// Rule and path counts need each refusal's JSON trace: they read only the newest
// SAMPLE_LIMIT refusals of the window and say so (`sampled`).
// They read through AuditSink.select, so the page shows the configured log (SQLite or
// PostgreSQL), never a file nobody writes to.

import { UsageError } from '../errors.js';
import { parseIsoDate, VERDICTS } from './store.js';
import { OUTCOME_SQL } from './queries.js';

/** The one read these functions need of an audit log (AuditSink.select). */
export interface SqlReader {
  select(sql: string, params?: readonly unknown[]): Record<string, unknown>[] | Promise<Record<string, unknown>[]>;
}
import { DECISION_TABLE, RULE_ROW } from '../policy/decision-table.js';

export const SAMPLE_LIMIT = 5000;
export const PAGE_SIZE = 50;
export const TOP = 10;

export interface Series {
  buckets: string[];
  /** verdict -> count per bucket (same order as buckets). */
  counts: Record<string, number[]>;
}

export interface Overview {
  since: string;
  days: Series;
  hours: Series;
  byRow: Array<{ key: string; n: number }>;
  byRule: Array<{ key: string; n: number }>;
  topPaths: Array<{ key: string; n: number }>;
  topActors: Array<{ key: string; n: number }>;
  refusals: number;
  sampled: number;
}

const SERIES_VERDICTS = ['accept', 'reject', 'would-reject'];

async function series(store: SqlReader, since: string, width: number, step: number, unit: 'day' | 'hour', now: number, repos?: readonly string[]): Promise<Series> {
  const only = repos === undefined ? '' : repos.length === 0 ? ' AND 1 = 0' : ` AND repo IN (${repos.map(() => '?').join(', ')})`;
  const rows = (await store.select(
    // By outcome: a push upstream refused after the gate wrote it as accepted is a refusal (issue 48).
    `SELECT substr(e.time, 1, ${width}) AS b, ${OUTCOME_SQL} AS verdict, count(*) AS n FROM events AS e INDEXED BY events_kind_time_cover WHERE e.kind = 'push' AND e.time >= ?${only} GROUP BY 1, 2`,
    [since, ...(repos ?? [])],
  )) as Array<{ b: string; verdict: string | null; n: number }>;
  const buckets: string[] = [];
  for (let t = Date.parse(since); t <= now; t += step) buckets.push(new Date(t).toISOString().slice(0, width));
  const index = new Map(buckets.map((b, i) => [b, i]));
  const counts: Record<string, number[]> = {};
  for (const v of SERIES_VERDICTS) counts[v] = buckets.map(() => 0);
  for (const r of rows) {
    const i = index.get(r.b);
    const v = r.verdict ?? 'none';
    if (i === undefined) continue;
    (counts[v] ??= buckets.map(() => 0))[i]! += Number(r.n);
  }
  return { buckets: unit === 'hour' ? buckets.map((b) => `${b.slice(5, 10)} ${b.slice(11)}h`) : buckets, counts };
}

/** The rule of each decision-table row that names one. */
const ROW_RULE = new Map(DECISION_TABLE.filter((r) => r.rule).map((r) => [r.id, r.rule!]));

/** Everything the charts show, for refusals at or after `since` (default: 30 days ago). */
export async function overview(store: SqlReader, opts: { days?: number; now?: Date; repos?: readonly string[] } = {}): Promise<Overview> {
  const now = (opts.now ?? new Date()).getTime();
  const days = opts.days ?? 30;
  if (!Number.isInteger(days) || days < 1 || days > 366) throw new UsageError(`days: must be 1 to 366 (got ${JSON.stringify(opts.days)})`);
  const dayStart = new Date(now - (days - 1) * 86_400_000);
  dayStart.setUTCHours(0, 0, 0, 0);
  const since = dayStart.toISOString();
  const hourStart = new Date(now - 47 * 3_600_000);
  hourStart.setUTCMinutes(0, 0, 0);
  // A token's grant (src/server/grant.ts): only its repositories' refusals are counted.
  const only = opts.repos === undefined ? '' : opts.repos.length === 0 ? ' AND 1 = 0' : ` AND repo IN (${opts.repos.map(() => '?').join(', ')})`;
  const args = [since, ...(opts.repos ?? [])];
  // Each refused ref once: refused by the gate (its ref row), or accepted and then refused by
  // upstream (its `upstream-refusal` row; its ref row says accept), issue 48.
  const refusals = `FROM events INDEXED BY events_kind_time_cover WHERE kind IN ('ref', 'upstream-refusal') AND time >= ? AND verdict = 'reject'${only}`;
  const group = async (col: string) =>
    ((await store.select(`SELECT ${col} AS key, count(*) AS n ${refusals} GROUP BY ${col} ORDER BY n DESC, key LIMIT ${TOP}`, args)) as Array<{ key: string | null; n: number }>)
      .map((r) => ({ key: r.key ?? '(none)', n: Number(r.n) }));
  const total = Number(((await store.select(`SELECT count(*) AS n ${refusals}`, args))[0] as { n: number } | undefined)?.n ?? 0);
  const sample = (await store.select(`SELECT decision, rules ${refusals} ORDER BY time DESC LIMIT ${SAMPLE_LIMIT}`, args)) as Array<{ decision: string | null; rules: string | null }>;
  const rules = new Map<string, number>();
  const paths = new Map<string, number>();
  for (const { decision, rules: text } of sample) {
    let trace: unknown;
    try {
      trace = JSON.parse(text ?? '[]');
    } catch {
      trace = null; // a damaged row: verify reports it; it still counts once below
    }
    const list = Array.isArray(trace) ? (trace as Array<{ rule?: unknown; status?: unknown; findings?: unknown }>) : [];
    // One rule per refusal, as the rows count one row per refusal: the deciding row's rule
    // (upstream-refused: `upstream`), else the first rule that failed.
    const firstFailed = list.find((o) => o && o.status === 'fail' && typeof o.rule === 'string')?.rule as string | undefined;
    const rule = ROW_RULE.get(decision ?? '') ?? firstFailed ?? '(none)';
    rules.set(rule, (rules.get(rule) ?? 0) + 1);
    const seenPaths = new Set<string>();
    for (const o of list) {
      if (!o || o.status !== 'fail' || typeof o.rule !== 'string') continue;
      for (const f of Array.isArray(o.findings) ? (o.findings as Array<{ path?: unknown }>) : []) {
        if (f && typeof f.path === 'string') seenPaths.add(f.path);
      }
    }
    for (const p of seenPaths) paths.set(p, (paths.get(p) ?? 0) + 1);
  }
  const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, TOP).map(([key, n]) => ({ key, n }));
  return {
    since,
    days: await series(store, since, 10, 86_400_000, 'day', now, opts.repos),
    hours: await series(store, hourStart.toISOString(), 13, 3_600_000, 'hour', now, opts.repos),
    byRow: await group('decision'),
    byRule: top(rules),
    topPaths: top(paths),
    topActors: await group('actor'),
    refusals: total,
    sampled: sample.length,
  };
}

export interface TableFilter {
  repo?: string;
  actor?: string;
  verdict?: string;
  /** A rule id (refs, write-block, contract, ...): matched through its decision-table row. */
  rule?: string;
  /** A decision-table row id. */
  row?: string;
  since?: string;
  until?: string;
  /** Keyset cursor: rows strictly older than `time|id`. */
  before?: string;
}

export interface TableRow {
  id: number;
  time: string;
  pushId: string | null;
  repo: string | null;
  actor: string | null;
  role: string | null;
  ref: string | null;
  verdict: string | null;
  decision: string | null;
  /** The first failing rule of the trace, if any. */
  rule: string | null;
  /** That rule's first finding (or error), cut; null for an accept. */
  reason: string | null;
  /** An agent's push: the class of the policy it was judged under (issue 50), from the rules' trace. */
  agentClass: string | null;
}

export interface TablePage {
  rows: TableRow[];
  /** Cursor for the next (older) page, or null. */
  next: string | null;
}

const TEXT_MAX = 256;

/** One page (PAGE_SIZE) of ref decisions, newest first, filtered. Bad filters are UsageErrors naming the field. */
/** `repos`: only rows of these repositories (a token's grant, src/server/grant.ts); absent: every row. */
export async function tablePage(store: SqlReader, f: TableFilter, repos?: readonly string[]): Promise<TablePage> {
  const where = ["e.kind = 'ref'"];
  const params: unknown[] = [];
  // A ref upstream refused after it was written as accepted reads as that refusal (issue 48).
  const verdictCol = 'COALESCE(u.verdict, e.verdict)';
  const decisionCol = 'COALESCE(u.decision, e.decision)';
  const text = (v: string | undefined, name: string): string | undefined => {
    if (v === undefined || v === '') return undefined;
    if (v.length > TEXT_MAX) throw new UsageError(`${name}: longer than ${TEXT_MAX} characters`);
    return v;
  };
  const repo = text(f.repo, 'repo');
  const actor = text(f.actor, 'actor');
  if (repo) (where.push('e.repo = ?'), params.push(repo));
  if (repos) {
    if (repos.length === 0) where.push('1 = 0');
    else (where.push(`e.repo IN (${repos.map(() => '?').join(', ')})`), params.push(...repos));
  }
  if (actor) (where.push('e.actor = ?'), params.push(actor));
  const verdict = text(f.verdict, 'verdict');
  if (verdict) {
    if (![...VERDICTS, 'would-reject'].includes(verdict)) throw new UsageError(`verdict: must be accept, reject or would-reject (got ${JSON.stringify(verdict)})`);
    where.push(`${verdictCol} = ?`);
    params.push(verdict);
  }
  let row = text(f.row, 'row');
  const rule = text(f.rule, 'rule');
  if (rule) {
    const r = RULE_ROW[rule];
    if (!r) throw new UsageError(`rule: unknown rule ${JSON.stringify(rule)} (one of ${Object.keys(RULE_ROW).join(', ')})`);
    if (row && row !== r) throw new UsageError(`rule ${rule} maps to row ${r}, not ${row}`);
    row = r;
  }
  if (row) (where.push(`${decisionCol} = ?`), params.push(row));
  const since = text(f.since, 'since');
  const until = text(f.until, 'until');
  if (since) (where.push('e.time >= ?'), params.push(parseIsoDate(since, 'since')));
  if (until) (where.push('e.time < ?'), params.push(parseIsoDate(until, 'until')));
  const before = text(f.before, 'before');
  if (before) {
    const m = /^(.+)\|(\d{1,15})$/.exec(before);
    if (!m) throw new UsageError('before: not a page cursor');
    where.push('(e.time < ? OR (e.time = ? AND e.id < ?))');
    const t = parseIsoDate(m[1], 'before');
    params.push(t, t, Number(m[2]));
  }
  const sql = `SELECT e.id, e.time, e.push_id, e.repo, e.actor, e.role, e.ref, ${verdictCol} AS verdict, ${decisionCol} AS decision, COALESCE(u.rules, e.rules) AS rules, e.rules AS judged
    FROM events e LEFT JOIN events u ON u.kind = 'upstream-refusal' AND u.push_id = e.push_id AND u.ref = e.ref
    WHERE ${where.join(' AND ')} ORDER BY e.time DESC, e.id DESC LIMIT ${PAGE_SIZE + 1}`;
  const raw = (await store.select(sql, params)) as Array<Record<string, string | number | null>>;
  const rows = raw.slice(0, PAGE_SIZE).map((r) => ({
    id: Number(r.id), time: String(r.time), pushId: r.push_id as string | null, repo: r.repo as string | null,
    actor: r.actor as string | null, role: r.role as string | null, ref: r.ref as string | null,
    verdict: r.verdict as string | null, decision: r.decision as string | null, rule: firstFailing(r.rules as string | null),
    reason: firstReason(r.rules as string | null),
    agentClass: classInTrace(r.judged as string | null),
  }));
  const last = rows[rows.length - 1];
  return { rows, next: raw.length > PAGE_SIZE && last ? `${last.time}|${last.id}` : null };
}

/**
 * The agent class a ref row was judged under: the write-block's details name it (or, for a
 * class the policy could not judge, the policy rule's). Null for a person's push or a row
 * written before classes (issue 50).
 */
export function classInTrace(text: string | unknown[] | null): string | null {
  try {
    const trace = (typeof text === 'string' ? JSON.parse(text) : text ?? []) as Array<{ rule?: string; details?: { class?: unknown } }>;
    if (!Array.isArray(trace)) return null;
    const c = trace.find((o) => o && (o.rule === 'write-block' || o.rule === 'policy') && typeof o.details?.class === 'string')?.details?.class;
    return typeof c === 'string' ? c : null;
  } catch {
    return null;
  }
}

/** The first failing rule's first finding (or its error), cut to REASON_MAX characters: the /pushes reason column. */
export const REASON_MAX = 200;
function firstReason(text: string | null): string | null {
  try {
    const trace = JSON.parse(text ?? '[]') as Array<{ status?: string; findings?: Array<{ message?: string }>; details?: { error?: unknown } }>;
    const o = Array.isArray(trace) ? trace.find((x) => x && x.status === 'fail') : undefined;
    const m = o?.findings?.find((f) => typeof f?.message === 'string')?.message ?? (typeof o?.details?.error === 'string' ? o.details.error : null);
    if (!m) return null;
    const n = o?.findings?.length ?? 0;
    const more = n > 1 ? ` (+${n - 1} more)` : '';
    return m.length > REASON_MAX ? `${m.slice(0, REASON_MAX - 1)}…${more}` : m + more;
  } catch {
    return null;
  }
}

function firstFailing(text: string | null): string | null {
  try {
    const trace = JSON.parse(text ?? '[]') as Array<{ rule?: string; status?: string }>;
    return (Array.isArray(trace) ? trace.find((o) => o && o.status === 'fail')?.rule : undefined) ?? null;
  } catch {
    return null;
  }
}
