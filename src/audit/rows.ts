// The row builders: validate one input and return the rows to append (content columns only;
// id, prev_hash and hash are set by the store that chains them). Shared by every store (SQLite
// in ./store.ts, PostgreSQL in ./pg-store.ts) so both write the very same rows. Split out of
// src/audit/store.ts (issue 22).

import { UsageError } from '../errors.js';
import { ROLES, VERDICTS, type EventContent } from './events-table.js';
import {
  ESCALATION_TEXT_MAX,
  type AdminInput, type AuditRow, type AuthFailureInput, type CiInput, type ConfirmItem, type EscalationCloseInput,
  type EscalationInput, type PushInput, type PusherInput, type RecordPushInput, type RefInput, type UpstreamRefusalInput,
} from './inputs.js';
import { ACTION_RE, jsonOf, lenientString, objectId, oneOf, optString, pushIdOf, reqString, rulesOf, timeOf, timingsOf } from './validate.js';

/** The row without its null fields (for `audit --json` output). */
export function compactRow(row: AuditRow): Partial<AuditRow> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) if (v !== null) out[k] = v;
  return out as Partial<AuditRow>;
}

// Row builders: validate an input and return the rows to append (content columns only;
// id, prev_hash and hash are set by the store that chains them). Shared by every store
// (SQLite here, PostgreSQL in ./pg-store.ts) so both write the very same rows.

/** The push row, then one ref row per decision (ids follow in that order). */
export function recordPushRows(input: RecordPushInput): EventContent[] {
  if (!Array.isArray(input.refs)) throw new UsageError('refs: must be an array');
  const time = timeOf(input.time);
  const push = pushContent({ ...input, time, refCount: input.refs.length });
  const refs = input.refs.map((r, i) =>
    refContent(
      {
        ...r,
        pushId: input.pushId,
        time,
        repo: input.repo,
        actor: input.actor,
        role: input.role,
        remoteAddr: input.remoteAddr ?? null,
        userAgent: input.userAgent ?? null,
      },
      `refs[${i}].`,
    ),
  );
  return [push, ...refs];
}

export function authRows(input: AuthFailureInput): EventContent[] {
  return [
    {
      kind: 'auth',
      time: timeOf(input.time),
      remote_addr: lenientString(input.remoteAddr, 256),
      actor: lenientString(input.user, 256),
      user_agent: lenientString(input.userAgent, 512),
      repo: lenientString(input.repo, 256),
      reason: reqString(input.reason, 'reason', 2048),
    },
  ];
}

export function adminRows(input: AdminInput): EventContent[] {
  if (typeof input.action !== 'string' || !ACTION_RE.test(input.action)) {
    throw new UsageError(`action: must match ${ACTION_RE} (got ${JSON.stringify(input.action)})`);
  }
  return [
    {
      kind: 'admin',
      time: timeOf(input.time),
      actor: reqString(input.actor, 'actor', 256),
      action: input.action,
      subject: optString(input.subject, 'subject', 1024),
      detail: jsonOf(input.detail, 'detail'),
      ...(input.pushId ? { push_id: pushIdOf(input.pushId) } : {}),
    },
  ];
}

/** The query that finds a closing row of escalation `?` (its id as text, in `subject`). */
export const ESCALATION_CLOSED_SQL = "SELECT id FROM events WHERE kind = 'escalation' AND action = 'escalation.close' AND subject = ? LIMIT 1";

/** Is row `row` an open escalation? UsageError (one line, the id in it) when not; else what the closing row copies. */
export function escalationState(row: AuditRow | null, closed: boolean, id: number): { repo: string | null; pushId: string | null } {
  if (!row || row.kind !== 'escalation' || row.action !== 'escalation.open') throw new UsageError(`no escalation ${id} (patchgate escalation list shows them)`);
  if (closed) throw new UsageError(`escalation ${id} is already closed`);
  return { repo: row.repo, pushId: row.pushId };
}

export function escalationRows(input: EscalationInput): EventContent[] {
  return [
    {
      kind: 'escalation',
      action: 'escalation.open',
      time: timeOf(input.time),
      ...pusherColumns(input),
      ref: reqString(input.ref, 'ref', 1024),
      old: objectId(input.old, 'old'),
      new: objectId(input.new, 'new'),
      verdict: oneOf(input.verdict, VERDICTS, 'verdict'),
      reason: reqString(input.text, 'text', ESCALATION_TEXT_MAX),
      detail: jsonOf(input.detail, 'detail'),
    },
  ];
}

/** One `upstream-refusal` row per ref upstream did not take: verdict reject, decision `upstream-refused`, rule `upstream`. */
export function upstreamRefusalRows(input: UpstreamRefusalInput): EventContent[] {
  if (!Array.isArray(input.refs) || input.refs.length === 0) throw new UsageError('refs: must be a non-empty array');
  const time = timeOf(input.time);
  const url = reqString(input.url, 'url', 2048);
  return input.refs.map((r, i) => {
    const answer = reqString(r.answer, `refs[${i}].answer`, 2048);
    return {
      kind: 'upstream-refusal',
      time,
      ...pusherColumns(input),
      ref: reqString(r.ref, `refs[${i}].ref`, 1024),
      old: objectId(r.old, `refs[${i}].old`),
      new: objectId(r.new, `refs[${i}].new`),
      verdict: 'reject',
      decision: 'upstream-refused',
      rules: jsonOf([{ rule: 'upstream', status: 'fail', findings: [{ messageId: 'upstream-refused', message: answer }] }], 'rules'),
      reason: answer,
      detail: jsonOf({
        url, ...(input.at ? { at: input.at } : {}), ...(input.ms !== undefined ? { ms: input.ms } : {}), ...(input.atomic !== undefined ? { atomic: input.atomic } : {}),
        ...(r.forced !== undefined ? { forced: r.forced } : {}), ...(input.messages?.length ? { messages: input.messages } : {}), ...(input.recovered ? { recovered: true } : {}),
      }, 'detail'),
    };
  });
}

/** The closing row (repo and push id are copied from the escalation by the store, inside its transaction). */
export function escalationCloseRows(input: EscalationCloseInput, of: { repo: string | null; pushId: string | null } | null): EventContent[] {
  if (!Number.isSafeInteger(input.id) || input.id < 1) throw new UsageError(`id: must be a positive integer (got ${JSON.stringify(input.id)})`);
  return [
    {
      kind: 'escalation',
      action: 'escalation.close',
      time: timeOf(input.time),
      subject: String(input.id),
      actor: reqString(input.actor, 'actor', 256),
      reason: reqString(input.note, 'note', ESCALATION_TEXT_MAX),
      repo: of?.repo ?? null,
      push_id: of?.pushId ?? null,
    },
  ];
}

export function ciRows(input: CiInput): EventContent[] {
  return [
    {
      kind: 'ci',
      time: timeOf(input.time),
      repo: reqString(input.repo, 'repo', 256),
      base: reqString(input.base, 'base', 256),
      head: reqString(input.head, 'head', 256),
      verdict: oneOf(input.verdict, VERDICTS, 'verdict'),
      actor: optString(input.actor, 'actor', 256),
      detail: jsonOf(input.detail, 'detail'),
    },
  ];
}

export function confirmRows(pushId: string, items: readonly ConfirmItem[], options: { time?: string; repo?: string | null } = {}): EventContent[] {
  if (!Array.isArray(items)) throw new UsageError('items: must be an array');
  const time = timeOf(options.time);
  return items.map((it, i) => confirmContent({ ...it, time, repo: options.repo }, pushId, `items[${i}].`));
}

/** Who pushed, and from where: the same six columns of push, ref and escalation rows (validated in this order). */
function pusherColumns(input: PusherInput): PusherColumns {
  return {
    push_id: pushIdOf(input.pushId),
    repo: reqString(input.repo, 'repo', 256),
    actor: reqString(input.actor, 'actor', 256),
    role: oneOf(input.role, ROLES, 'role'),
    remote_addr: lenientString(input.remoteAddr, 256),
    user_agent: lenientString(input.userAgent, 512),
  };
}

type PusherColumns = Pick<EventContent, 'push_id' | 'repo' | 'actor' | 'role' | 'remote_addr' | 'user_agent'>;

export function pushContent(input: PushInput): EventContent {
  if (!Number.isSafeInteger(input.refCount) || input.refCount < 0) {
    throw new UsageError(`refCount: must be a non-negative integer (got ${JSON.stringify(input.refCount)})`);
  }
  return {
    kind: 'push',
    time: timeOf(input.time),
    ...pusherColumns(input),
    verdict: oneOf(input.verdict, VERDICTS, 'verdict'),
    ref_count: input.refCount,
    timings: timingsOf(input.timings, 'timings'),
  };
}

export function refContent(input: RefInput, prefix = ''): EventContent {
  return {
    kind: 'ref',
    time: timeOf(input.time),
    ...pusherColumns(input),
    ref: reqString(input.ref, `${prefix}ref`, 1024),
    old: objectId(input.old, `${prefix}old`),
    new: objectId(input.new, `${prefix}new`),
    verdict: oneOf(input.verdict, VERDICTS, `${prefix}verdict`),
    decision: optString(input.decision, `${prefix}decision`, 256),
    rules: rulesOf(input.rules, `${prefix}rules`),
    contract_base: optString(input.contractBase, `${prefix}contractBase`, 256),
    contract_head: optString(input.contractHead, `${prefix}contractHead`, 256),
    timings: timingsOf(input.timings, `${prefix}timings`),
  };
}

export function confirmContent(input: ConfirmItem & { time?: string; repo?: string | null }, pushId: string, prefix: string): EventContent {
  if (typeof input.moved !== 'boolean') throw new UsageError(`${prefix}moved: must be true or false`);
  return {
    kind: 'confirm',
    time: timeOf(input.time),
    push_id: pushIdOf(pushId),
    repo: optString(input.repo, 'repo', 256),
    ref: reqString(input.ref, `${prefix}ref`, 1024),
    ...(input.old !== undefined ? { old: objectId(input.old, `${prefix}old`) } : {}),
    new: objectId(input.new, `${prefix}new`),
    moved: input.moved ? 1 : 0,
  };
}
