// What callers hand the audit stores and what they read back: the input of each kind of row
// (push, ref, auth, admin, ci, confirm, escalation), the query options and the row as read.
// Split out of src/audit/store.ts (issue 22); every store (SQLite, PostgreSQL) takes and returns
// these same shapes.

import type { EventKind, Role, Verdict } from './events-table.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Timings of a push or ref decision, e.g. `{ total: 12.5, contract: 3.1 }` (milliseconds). */
export type Timings = Readonly<Record<string, number>>;

/** Who pushed, when and from where: shared by a push and each of its refs. */
export interface PusherInput {
  pushId: string;
  /** ISO 8601; default: now. Stored normalised to UTC with milliseconds. */
  time?: string;
  repo: string;
  actor: string;
  role: Role;
  remoteAddr?: string | null;
  userAgent?: string | null;
}

export interface PushInput extends PusherInput {
  verdict: Verdict;
  refCount: number;
  timings?: Timings | null;
}

/** The decision on one ref of a push. */
export interface RefDecisionInput {
  ref: string;
  old: string;
  new: string;
  verdict: Verdict;
  /** The decision-table row that settled it (a string id), or null. */
  decision?: string | null;
  /** Every rule checked, in order: its outcome and findings (any JSON values). */
  rules: readonly unknown[];
  contractBase?: string | null;
  contractHead?: string | null;
  timings?: Timings | null;
}

export interface RefInput extends RefDecisionInput, PusherInput {}

export interface RecordPushInput extends Omit<PushInput, 'refCount'> {
  /** Written as `ref` rows sharing the push's id, time, repo, actor, role, address and agent. */
  refs: readonly RefDecisionInput[];
  /**
   * The sha256 hex of the pusher's token (never the secret; never stored). When given, the
   * token's row is read again in the transaction that writes these rows, and a push whose
   * token was revoked or expired by then is written as refused (./credential.ts).
   */
  credential?: string;
  /**
   * Written before its forward upstream (never stored): /metrics counts it once the forward's
   * outcome is written, as a refusal when upstream refused (src/server/metrics.ts).
   */
  forwarding?: boolean;
}

export interface AuthFailureInput {
  time?: string;
  remoteAddr?: string | null;
  /** The user name presented (stored in the `actor` column), if any. Long values are cut. */
  user?: string | null;
  userAgent?: string | null;
  repo?: string | null;
  reason: string;
}

export interface AdminInput {
  time?: string;
  actor: string;
  /** e.g. `token.create`, `token.revoke`, `repo.create` (lower case, dots, dashes). */
  action: string;
  subject?: string | null;
  detail?: unknown;
  /** The push this row is about (a forward's outcome, a recovery): `getPush` lists it under `outcomes`. */
  pushId?: string | null;
}

/**
 * Refs the gate accepted and wrote as accepted before forwarding them, which upstream then
 * refused (or which never reached it): one `upstream-refusal` row each (issue 48), so every
 * count of the push reads it as refused (src/audit/queries.ts OUTCOME).
 */
export interface UpstreamRefusalInput extends PusherInput {
  url: string;
  refs: Array<{ ref: string; old: string; new: string; forced?: boolean; answer: string }>;
  /** upstream's own lines (remote: ...), already redacted. */
  messages?: string[];
  /** When the forward started, how long it took, whether it was --atomic. */
  at?: string;
  ms?: number;
  atomic?: boolean;
  /** Written at a later start from the intent journal (src/upstream/recover.ts). */
  recovered?: boolean;
}

/** An agent's `git push -o patchgate.escalate="TEXT"`: a note for a person (src/audit/escalation.ts sanitises `text`). */
export interface EscalationInput {
  time?: string;
  pushId: string;
  repo: string;
  actor: string;
  role: Role;
  remoteAddr?: string | null;
  userAgent?: string | null;
  /** The (first) ref of the push, its old and new ids, and the verdict it got. */
  ref: string;
  old: string;
  new: string;
  verdict: Verdict;
  /** The sanitised, bounded note (at most ESCALATION_TEXT_MAX characters). */
  text: string;
  detail?: unknown;
}

/** A person closes escalation `id` (the row number of its `escalation.open` row). */
export interface EscalationCloseInput {
  time?: string;
  id: number;
  actor: string;
  note: string;
}

/** Characters of an escalation's text or a closing note that are kept. */
export const ESCALATION_TEXT_MAX = 2000;

export interface CiInput {
  time?: string;
  repo: string;
  base: string;
  head: string;
  verdict: Verdict;
  actor?: string | null;
  detail?: unknown;
}

export interface ConfirmItem {
  ref: string;
  /** Where the ref was before the push (zeros: a new ref); rows written before issue 49 have none. */
  old?: string;
  new: string;
  moved: boolean;
}

export interface ConfirmInput extends ConfirmItem {
  pushId: string;
  time?: string;
  repo?: string | null;
}

export interface QueryOptions {
  repo?: string;
  actor?: string;
  verdict?: string;
  /** Inclusive lower bound, ISO 8601. */
  since?: string;
  /** Exclusive upper bound, ISO 8601. */
  until?: string;
  kind?: string;
  pushId?: string;
  /** Only rows of these repositories (a token's grant, src/server/grant.ts); absent: every row. */
  repos?: readonly string[];
  /** Default 100. */
  limit?: number;
}

/** One events row as read back. Columns a kind does not use are null. */
export interface AuditRow {
  id: number;
  kind: EventKind;
  time: string;
  pushId: string | null;
  repo: string | null;
  /** For `auth` rows: the user name presented. */
  actor: string | null;
  role: Role | null;
  remoteAddr: string | null;
  userAgent: string | null;
  verdict: Verdict | null;
  ref: string | null;
  old: string | null;
  new: string | null;
  refCount: number | null;
  decision: string | null;
  rules: JsonValue | null;
  contractBase: string | null;
  contractHead: string | null;
  timings: JsonValue | null;
  /** `ref` rows: from the newest matching confirm row (null until confirmed). `confirm` rows: their own value. */
  moved: 0 | 1 | null;
  reason: string | null;
  action: string | null;
  subject: string | null;
  detail: JsonValue | null;
  base: string | null;
  head: string | null;
  prevHash: string;
  hash: string;
  /** Set only where it differs from `verdict`: a push or ref upstream refused after it was written as accepted (issue 48). */
  outcome?: Verdict;
}

export interface PushTrace {
  push: AuditRow | null;
  refs: AuditRow[];
  confirms: AuditRow[];
  /** Admin rows recorded under the push's id: the forward's outcome (`upstream.forwarded`), recoveries. */
  outcomes?: AuditRow[];
  /** `upstream-refusal` rows: refs accepted here that upstream refused (the push's outcome is a refusal for them). */
  upstreamRefusals?: AuditRow[];
  /** `escalation` rows of the push (`git push -o patchgate.escalate=…`) and their closing rows. */
  escalations?: AuditRow[];
}
