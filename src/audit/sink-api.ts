// What every audit store implements (AuditSink) and the password-free form of a database URL,
// on their own floor (issue 22): the stores (./store.ts, ./pg-store.ts) build on this, and
// ./sink.ts, which picks a store for a URL, sits above them, so no import runs back down-up.

import type { VerifyResult } from './chain.js';
import type { CredentialState } from './credential.js';
import type { CheckpointLease } from './checkpoint-lease.js';
import type {
  AdminInput, AuditRow, AuthFailureInput, CiInput, ConfirmItem, EscalationCloseInput, EscalationInput, PushTrace, QueryOptions,
  RecordPushInput, UpstreamRefusalInput,
} from './inputs.js';

export type Awaitable<T> = T | Promise<T>;

/** The ids of a recorded push; `credential` is set when the rows were written as refused because the token went away. */
export interface RecordedPush {
  pushRowId: number;
  refRowIds: number[];
  credential?: Exclude<CredentialState, 'active'>;
}

/** What the gate writes and the audit commands read. A write that throws or rejects wrote nothing; the caller refuses. */
export interface AuditSink {
  /**
   * The push row and its ref rows, one transaction. With `input.credential`, the token is read
   * again in that transaction: when it was revoked or expired, the rows are written as refused
   * and `credential` says why (./credential.ts); the caller must then refuse the push.
   */
  recordPush(input: RecordPushInput): Awaitable<RecordedPush>;
  confirmRefs(pushId: string, items: readonly ConfirmItem[], options?: { time?: string; repo?: string | null }): Awaitable<number[]>;
  appendAuthFailure(input: AuthFailureInput): Awaitable<number>;
  appendAdmin(input: AdminInput): Awaitable<number>;
  appendCi(input: CiInput): Awaitable<number>;
  /** Refs accepted here that upstream refused: one `upstream-refusal` row each, one transaction (issue 48). */
  appendUpstreamRefusal(input: UpstreamRefusalInput): Awaitable<number[]>;
  /** An agent's note for a person (`git push -o patchgate.escalate=…`). */
  appendEscalation(input: EscalationInput): Awaitable<number>;
  /** A person closes an open escalation; UsageError when `id` is no escalation or is closed already. */
  closeEscalation(input: EscalationCloseInput): Awaitable<number>;
  query(options?: QueryOptions): Awaitable<AuditRow[]>;
  get(id: number): Awaitable<AuditRow | null>;
  getPush(pushId: string): Awaitable<PushTrace | null>;
  verify(): Awaitable<VerifyResult>;
  lastRow(): Awaitable<{ id: number; hash: string }>;
  /** Every row's hash in id order (the checkpoints' Merkle leaves); both stores have it. */
  rowHashes?(): Awaitable<string[]>;
  /**
   * Read-only SQL over `events` for the readers that aggregate (the page, export, /metrics at
   * start): SQLite syntax with `?` placeholders (PostgreSQL gets `$n`, and `INDEXED BY` hints
   * are dropped); integers come back as numbers on both.
   */
  select(sql: string, params?: readonly unknown[]): Awaitable<Record<string, unknown>[]>;
  /** A shared log's checkpoint signer lease (./checkpoint-lease.ts); a SQLite log has one node and none. */
  checkpointLease?(): CheckpointLease;
  close(): Awaitable<void>;
}

/** The URL with its password (and any `password=` parameter) replaced by `***`: safe for logs and messages. */
export function redactUrl(url: string): string {
  return url
    .replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*:)[^/@]*@/i, '$1***@')
    .replace(/([?&]password=)[^&]*/gi, '$1***');
}
