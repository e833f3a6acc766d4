// The audit log: every decision patchgate makes is appended here, hash-chained, so a
// person can later query what happened and prove that nobody edited or removed a row.
//
// One SQLite file (the server uses `<data>/patchgate.db`), shared with the token store
// (src/audit/tokens.ts), whose tables come from the same ordered migration list below.
//
// API
//   AuditStore.open(dbPath): AuditStore     creates the parent dir, applies migrations
//   store.close(): void
//   store.db                                 the better-sqlite3 handle (for TokenStore)
//   store.appendPush(PushInput): number      one `push` row; returns its id
//   store.appendRef(RefInput): number        one `ref` row (a decision on one ref)
//   store.recordPush(RecordPushInput): {pushRowId, refRowIds}
//                                            the push row and all its ref rows in ONE
//                                            transaction (what the server writes before
//                                            it accepts a push)
//   store.appendAuthFailure(AuthFailureInput): number
//   store.appendAdmin(AdminInput): number    token create/revoke, repo create, ...
//   store.appendCi(CiInput): number
//   store.appendConfirm(ConfirmInput): number   post-receive: did this ref really move?
//   store.appendEscalation(EscalationInput): number   `git push -o patchgate.escalate=…` (src/audit/escalation.ts)
//   store.closeEscalation(EscalationCloseInput): number   a person closes one; refused when not open
//   store.confirmRefs(pushId, ConfirmItem[]): number[]   several confirms, one transaction
//   store.query(QueryOptions): AuditRow[]    newest first (time, then id), default limit 100;
//                                            `confirm` rows only when kind: 'confirm' is asked
//   store.get(id): AuditRow | null
//   store.getPush(pushId): PushTrace | null  the push row, its ref rows (each with its
//                                            rules trace) and confirm rows
//   store.verify(): VerifyResult             walks the whole chain
//   store.lastRow(): {id, hash}              the chain head as recorded in `chain_head`
//   store.explainQuery(QueryOptions): string[]   SQLite's plan for that query
//   store.select(sql, params): rows          read-only SQL for the aggregating readers (AuditSink)
//   newPushId(), nowIso(), parseIsoDate(), compactRow(), canonicalJson(), rowHash()
//
// Errors
//   Every write method (append*, recordPush, confirmRefs) throws only AuditError: a
//   database failure, and also invalid input (then `cause` is a UsageError whose message
//   names the field). A throw means nothing was written, so a caller refuses the push.
//   query/get/getPush throw UsageError for bad options, naming the CLI option
//   (`--since: not an ISO date ...`), and AuditError when the database fails.
//
// The chain
//   hash = sha256 hex of canonicalJson(row) where `row` is every column of the events
//   row except `hash` whose value is not NULL (id and prev_hash included), keys sorted.
//   NULL columns are left out so that a later migration adding a nullable column does
//   not change the hash of old rows. The first row's prev_hash is 64 zeros.
//   `chain_head` (one row) holds the last id and hash, updated in the same IMMEDIATE
//   transaction as the insert; it is what makes deleting the LAST row detectable.
//   Appends take id and prev_hash from `chain_head` inside the IMMEDIATE transaction and
//   refuse (AuditError) when the last events row disagrees with it: a truncated log
//   stops the gate instead of being silently healed.
//   Triggers refuse UPDATE and DELETE on `events`; they stop mistakes, not an attacker
//   who owns the file — that is what verify() is for.
//
// Moved
//   Rows are never updated, so post-receive records a `confirm` row (push_id, ref, new,
//   moved) and queries fill a ref row's `moved` from the newest matching confirm row
//   (null until confirmed, then 0 or 1).

import { createHash, randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { privateFile } from '../private-files.js';
import Database from 'better-sqlite3';
import { AuditError, UsageError } from '../errors.js';

export type EventKind = 'push' | 'ref' | 'auth' | 'admin' | 'ci' | 'confirm' | 'escalation';
/** `would-reject`: evaluate mode (src/upstream/evaluate.ts) accepted what enforce mode would refuse. */
export type Verdict = 'accept' | 'reject' | 'would-reject';
export type Role = 'agent' | 'human' | 'admin';

export const EVENT_KINDS: readonly EventKind[] = ['push', 'ref', 'auth', 'admin', 'ci', 'confirm', 'escalation'];
export const VERDICTS: readonly Verdict[] = ['accept', 'reject', 'would-reject'];
export const ROLES: readonly Role[] = ['agent', 'human', 'admin'];
export const ZERO_HASH = '0'.repeat(64);
export const DEFAULT_QUERY_LIMIT = 100;
export const MAX_QUERY_LIMIT = 1_000_000;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Timings of a push or ref decision, e.g. `{ total: 12.5, contract: 3.1 }` (milliseconds). */
export type Timings = Readonly<Record<string, number>>;

export interface PushInput {
  pushId: string;
  /** ISO 8601; default: now. Stored normalised to UTC with milliseconds. */
  time?: string;
  repo: string;
  actor: string;
  role: Role;
  remoteAddr?: string | null;
  userAgent?: string | null;
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

export interface RefInput extends RefDecisionInput {
  pushId: string;
  time?: string;
  repo: string;
  actor: string;
  role: Role;
  remoteAddr?: string | null;
  userAgent?: string | null;
}

export interface RecordPushInput extends Omit<PushInput, 'refCount'> {
  /** Written as `ref` rows sharing the push's id, time, repo, actor, role, address and agent. */
  refs: readonly RefDecisionInput[];
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
}

export interface PushTrace {
  push: AuditRow | null;
  refs: AuditRow[];
  confirms: AuditRow[];
  /** Admin rows recorded under the push's id: the forward's outcome (`upstream.forwarded` / `upstream.forward-failed`), recoveries. */
  outcomes?: AuditRow[];
  /** `escalation` rows of the push (`git push -o patchgate.escalate=…`) and their closing rows. */
  escalations?: AuditRow[];
}

export type VerifyResult =
  | { ok: true; rows: number }
  | { ok: false; rows: number; firstBadId: number; reason: string };

// ---------------------------------------------------------------------------------------
// Schema

type Migration = (db: Database.Database) => void;

/** The events indexes of schema 1, made again when migration 4 rebuilds the table; PostgreSQL's first step makes the same. */
export const EVENT_INDEXES = `
  CREATE INDEX events_time       ON events (time);
  CREATE INDEX events_repo_time  ON events (repo, time);
  CREATE INDEX events_actor_time ON events (actor, time);
  CREATE INDEX events_verdict_time ON events (verdict, time);
  CREATE INDEX events_kind_time  ON events (kind, time);
  CREATE INDEX events_push       ON events (push_id, ref) WHERE push_id IS NOT NULL;
`;

/** The triggers that make events append-only (schema 1; again after migration 4). */
const APPEND_ONLY_TRIGGERS = `
  CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
  CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END;
`;

/**
 * Ordered; migration i brings `PRAGMA user_version` from i to i + 1. Each runs in its own
 * IMMEDIATE transaction together with the user_version bump. Append only: never edit a
 * migration that has shipped.
 */
export const MIGRATIONS: readonly Migration[] = [
  // 1: the hash-chained events table, its chain head, indexes and append-only triggers.
  (db) => {
    db.exec(`
      CREATE TABLE events (
        id            INTEGER PRIMARY KEY,
        kind          TEXT NOT NULL CHECK (kind IN ('push','ref','auth','admin','ci','confirm')),
        time          TEXT NOT NULL,
        push_id       TEXT,
        repo          TEXT,
        actor         TEXT,
        role          TEXT,
        remote_addr   TEXT,
        user_agent    TEXT,
        verdict       TEXT CHECK (verdict IS NULL OR verdict IN ('accept','reject')),
        ref           TEXT,
        old           TEXT,
        new           TEXT,
        ref_count     INTEGER,
        decision      TEXT,
        rules         TEXT,
        contract_base TEXT,
        contract_head TEXT,
        timings       TEXT,
        moved         INTEGER CHECK (moved IS NULL OR moved IN (0,1)),
        reason        TEXT,
        action        TEXT,
        subject       TEXT,
        detail        TEXT,
        base          TEXT,
        head          TEXT,
        prev_hash     TEXT NOT NULL,
        hash          TEXT NOT NULL
      ) STRICT;
      ${EVENT_INDEXES}
      CREATE TABLE chain_head (
        singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
        last_id   INTEGER NOT NULL,
        last_hash TEXT NOT NULL
      ) STRICT;
      INSERT INTO chain_head (singleton, last_id, last_hash) VALUES (1, 0, '${ZERO_HASH}');
      ${APPEND_ONLY_TRIGGERS}
      CREATE TRIGGER chain_head_no_delete BEFORE DELETE ON chain_head
        BEGIN SELECT RAISE(ABORT, 'chain_head is required'); END;
    `);
  },
  // 2: tokens (src/audit/tokens.ts). Only the sha256 of a secret is stored.
  (db) => {
    db.exec(`
      CREATE TABLE tokens (
        id          INTEGER PRIMARY KEY,
        name        TEXT NOT NULL,
        role        TEXT NOT NULL CHECK (role IN ('agent','human','admin')),
        repos       TEXT NOT NULL,
        secret_hash TEXT NOT NULL UNIQUE,
        created     TEXT NOT NULL,
        expires     TEXT,
        revoked     TEXT
      ) STRICT;
      CREATE UNIQUE INDEX tokens_active_name ON tokens (name) WHERE revoked IS NULL;
    `);
  },
  // 3: a covering index for the audit page's charts and table (src/audit/insights.ts).
  (db) => {
    db.exec('CREATE INDEX events_kind_time_cover ON events (kind, time, verdict, decision, actor, repo)');
  },
  // 4: verdict may be 'would-reject' (evaluate mode). SQLite cannot change a CHECK, so the
  // events table is rebuilt with every row copied as it is (the hash chain is unchanged).
  (db) => {
    const cols = (db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'`).get() as { sql: string }).sql;
    const newSql = cols
      .replace(/CREATE TABLE events\b/, 'CREATE TABLE events_v4')
      .replace("verdict IN ('accept','reject')", "verdict IN ('accept','reject','would-reject')");
    if (newSql === cols) throw new Error('migration 4: unexpected events schema');
    db.exec(`
      DROP TRIGGER IF EXISTS events_no_update;
      DROP TRIGGER IF EXISTS events_no_delete;
      ${newSql};
      INSERT INTO events_v4 SELECT * FROM events;
      DROP TABLE events;
      ALTER TABLE events_v4 RENAME TO events;
      ${EVENT_INDEXES}
      CREATE INDEX events_kind_time_cover ON events (kind, time, verdict, decision, actor, repo);
      ${APPEND_ONLY_TRIGGERS}
    `);
  },
  // 5: kind may be 'escalation' (issue 21: an agent's note for a person, and its closing). As
  // in migration 4 the table is rebuilt with every row copied as it is (the chain is unchanged).
  (db) => {
    const cols = (db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'`).get() as { sql: string }).sql;
    const newSql = cols
      .replace(/CREATE TABLE "?events"?/, 'CREATE TABLE events_v5')
      .replace("kind IN ('push','ref','auth','admin','ci','confirm')", "kind IN ('push','ref','auth','admin','ci','confirm','escalation')");
    if (newSql === cols || !newSql.includes("'escalation'")) throw new Error('migration 5: unexpected events schema');
    db.exec(`
      DROP TRIGGER IF EXISTS events_no_update;
      DROP TRIGGER IF EXISTS events_no_delete;
      ${newSql};
      INSERT INTO events_v5 SELECT * FROM events;
      DROP TABLE events;
      ALTER TABLE events_v5 RENAME TO events;
      ${EVENT_INDEXES}
      CREATE INDEX events_kind_time_cover ON events (kind, time, verdict, decision, actor, repo);
      ${APPEND_ONLY_TRIGGERS}
    `);
  },
];

// ---------------------------------------------------------------------------------------
// Helpers (exported for the CLI, the token store and tests)

export function nowIso(): string {
  return new Date().toISOString();
}

/** A fresh per-push id: sortable by time, unique across processes. */
export function newPushId(): string {
  return `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
}

const ISO_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * Parses an ISO 8601 date or date-time and returns it normalised to UTC with
 * milliseconds (`2024-05-01T10:00:00.000Z`). A date alone is midnight UTC; a time
 * without an offset is UTC. Throws UsageError naming `option` otherwise.
 */
export function parseIsoDate(value: unknown, option: string): string {
  const bad = (): UsageError => new UsageError(`${option}: not an ISO date (got ${JSON.stringify(value)})`);
  if (typeof value !== 'string') throw bad();
  const m = ISO_RE.exec(value.trim());
  if (!m) throw bad();
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) throw bad();
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) throw bad();
  let offset = zone.toUpperCase();
  if (offset !== 'Z' && !offset.includes(':')) offset = `${offset.slice(0, 3)}:${offset.slice(3)}`;
  if (offset !== 'Z' && (Number(offset.slice(1, 3)) > 23 || Number(offset.slice(4, 6)) > 59)) throw bad();
  const ms = (frac + '000').slice(0, 3);
  const t = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}${offset}`);
  if (Number.isNaN(t)) throw bad();
  const out = new Date(t);
  if (out.getUTCFullYear() < 1 || out.getUTCFullYear() > 9999) throw bad();
  return out.toISOString();
}

/** Stable JSON: object keys sorted (by UTF-16 code unit), no whitespace, JSON-only values. */
export function canonicalJson(value: unknown): string {
  const seen = new Set<object>();
  const walk = (v: unknown, path: string): string => {
    if (v === null) return 'null';
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return JSON.stringify(v);
      case 'number':
        if (!Number.isFinite(v)) throw new UsageError(`${path}: not a finite number`);
        return JSON.stringify(v);
      case 'object': {
        const obj = v as { toJSON?: () => unknown };
        if (typeof obj.toJSON === 'function') return walk(obj.toJSON(), path);
        if (seen.has(obj)) throw new UsageError(`${path}: circular structure`);
        seen.add(obj);
        let out: string;
        if (Array.isArray(obj)) {
          out = `[${obj.map((x, i) => (x === undefined ? 'null' : walk(x, `${path}[${i}]`))).join(',')}]`;
        } else {
          const proto = Object.getPrototypeOf(obj);
          if (proto !== Object.prototype && proto !== null) {
            throw new UsageError(`${path}: not a plain JSON object`);
          }
          const rec = obj as Record<string, unknown>;
          const keys = Object.keys(rec).filter((k) => rec[k] !== undefined).sort();
          out = `{${keys.map((k) => `${JSON.stringify(k)}:${walk(rec[k], `${path}.${k}`)}`).join(',')}}`;
        }
        seen.delete(obj);
        return out;
      }
      default:
        throw new UsageError(`${path}: ${typeof v} is not a JSON value`);
    }
  };
  return walk(value, '$');
}

/** The hash of an events row (as stored: snake_case columns); `hash` itself and NULLs are left out. */
export function rowHash(row: Readonly<Record<string, unknown>>): string {
  const content: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (k === 'hash' || v === null || v === undefined) continue;
    content[k] = v;
  }
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}

/**
 * The chain walk of verify(), one row at a time in id order, shared by every store. `rows`
 * counts the rows found intact before the first problem. Detects edited rows (hash
 * mismatch), removed rows (a gap in ids, a prev_hash mismatch, or a tail shorter than the
 * recorded head), inserted and re-ordered rows (prev_hash/hash mismatch) and rows added
 * after the head.
 */
export class ChainCheck {
  rows = 0;
  private expectedId = 1;
  private prev = ZERO_HASH;

  private bad(firstBadId: number, reason: string): VerifyResult {
    return { ok: false, rows: this.rows, firstBadId, reason };
  }

  /** The next row (as stored: snake_case, numbers as numbers); a failure, or undefined when it links. */
  row(row: StoredRow): VerifyResult | undefined {
    const expectedId = this.expectedId;
    if (row.id !== expectedId) {
      return row.id > expectedId
        ? this.bad(expectedId, `row ${expectedId} is missing (the next row is ${row.id}): rows were deleted`)
        : this.bad(row.id, `unexpected row id ${row.id}`);
    }
    if (rowHash(row) !== row.hash) return this.bad(row.id, `row ${row.id} does not match its hash: it was edited`);
    if (row.prev_hash !== this.prev) {
      return this.bad(row.id, `row ${row.id} prev_hash does not match the hash of row ${row.id - 1}: rows were removed, inserted or re-ordered`);
    }
    this.rows += 1;
    this.expectedId += 1;
    this.prev = row.hash;
    return undefined;
  }

  /** After the last row: the recorded chain head must name it. */
  end(head: { last_id: number; last_hash: string } | undefined | null): VerifyResult {
    const lastId = this.expectedId - 1;
    if (!head) return this.bad(lastId + 1, 'chain_head is missing');
    if (head.last_id > lastId) {
      return this.bad(lastId + 1, `chain_head records row ${head.last_id} but the last row is ${lastId}: the log was truncated`);
    }
    if (head.last_id < lastId) {
      return this.bad(head.last_id + 1, `rows after ${head.last_id} (the recorded chain head) were added outside patchgate`);
    }
    if (head.last_hash !== this.prev) return this.bad(lastId, `row ${lastId} hash does not match chain_head: the last row was replaced`);
    return { ok: true, rows: this.rows };
  }
}

/** The row without its null fields (for `audit --json` output). */
export function compactRow(row: AuditRow): Partial<AuditRow> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) if (v !== null) out[k] = v;
  return out as Partial<AuditRow>;
}

// ---------------------------------------------------------------------------------------
// Input validation: each returns the stored form or throws UsageError naming the field.

const CONTROL_RE = /[\u0000-\u001f\u007f]/;
const OBJECT_ID_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const PUSH_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const ACTION_RE = /^[a-z][a-z0-9._-]{0,63}$/;

function reqString(value: unknown, field: string, max = 1024): string {
  if (typeof value !== 'string' || value.length === 0) throw new UsageError(`${field}: required (a non-empty string)`);
  if (value.length > max) throw new UsageError(`${field}: longer than ${max} characters`);
  if (CONTROL_RE.test(value)) throw new UsageError(`${field}: contains control characters`);
  return value;
}

function optString(value: unknown, field: string, max = 1024): string | null {
  if (value === undefined || value === null) return null;
  return reqString(value, field, max);
}

/** Untrusted, informational text (user agents, user names from failed logins): cut, never refused. */
function lenientString(value: unknown, max = 512): string | null {
  if (value === undefined || value === null) return null;
  const s = String(value).replace(/[\u0000-\u001f\u007f]/g, '?');
  return s.length > max ? s.slice(0, max) : s;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`${field}: must be ${allowed.join(' or ')} (got ${JSON.stringify(value)})`);
  }
  return value as T;
}

function objectId(value: unknown, field: string): string {
  if (typeof value !== 'string' || !OBJECT_ID_RE.test(value)) {
    throw new UsageError(`${field}: not a git object id (got ${JSON.stringify(value)})`);
  }
  return value;
}

function pushIdOf(value: unknown, field = 'pushId'): string {
  if (typeof value !== 'string' || !PUSH_ID_RE.test(value)) {
    throw new UsageError(`${field}: must match ${PUSH_ID_RE} (got ${JSON.stringify(value)})`);
  }
  return value;
}

function timeOf(value: unknown): string {
  return value === undefined || value === null ? nowIso() : parseIsoDate(value, 'time');
}

function jsonOf(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  try {
    return canonicalJson(value);
  } catch (err) {
    throw new UsageError(`${field}: not JSON-serialisable: ${(err as Error).message}`, { cause: err });
  }
}

function timingsOf(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`${field}: must be an object of numbers`);
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new UsageError(`${field}.${k}: must be a finite number`);
  }
  return jsonOf(value, field);
}

function rulesOf(value: unknown, field: string): string {
  if (!Array.isArray(value)) throw new UsageError(`${field}: must be an array of rule outcomes`);
  return jsonOf(value, field) as string;
}

// ---------------------------------------------------------------------------------------
// Columns

/** The content columns of `events`, in table order (everything but id, prev_hash, hash). */
export const CONTENT_COLUMNS = [
  'kind', 'time', 'push_id', 'repo', 'actor', 'role', 'remote_addr', 'user_agent', 'verdict',
  'ref', 'old', 'new', 'ref_count', 'decision', 'rules', 'contract_base', 'contract_head',
  'timings', 'moved', 'reason', 'action', 'subject', 'detail', 'base', 'head',
] as const;
type ContentColumn = (typeof CONTENT_COLUMNS)[number];
export type EventContent = { kind: EventKind; time: string } & Partial<Record<ContentColumn, string | number | null>>;

export interface StoredRow extends Record<string, string | number | null> {
  id: number;
  prev_hash: string;
  hash: string;
}

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
  };
}

/** A ref row's `moved` comes from the newest confirm row for the same push, ref and new id. */
export const SELECT_ROWS = `
  SELECT e.*,
    CASE WHEN e.kind = 'ref' THEN (
      SELECT c.moved FROM events c
       WHERE c.push_id = e.push_id AND c.ref = e.ref AND c.kind = 'confirm' AND c.new = e.new
       ORDER BY c.id DESC LIMIT 1)
    ELSE e.moved END AS moved_eff
  FROM events e`;

// ---------------------------------------------------------------------------------------

export class AuditStore {
  readonly path: string;
  readonly db: Database.Database;
  private readonly stmts: {
    head: Database.Statement<[], { last_id: number; last_hash: string }>;
    lastRow: Database.Statement<[], { id: number; hash: string }>;
    insert: Database.Statement<[Record<string, unknown>]>;
    setHead: Database.Statement<[number, string]>;
    get: Database.Statement<[number], Record<string, unknown>>;
    byPush: Database.Statement<[string], Record<string, unknown>>;
  };

  private constructor(path: string, db: Database.Database) {
    this.path = path;
    this.db = db;
    this.stmts = {
      head: db.prepare('SELECT last_id, last_hash FROM chain_head WHERE singleton = 1'),
      lastRow: db.prepare('SELECT id, hash FROM events ORDER BY id DESC LIMIT 1'),
      insert: db.prepare(
        `INSERT INTO events (id, ${CONTENT_COLUMNS.join(', ')}, prev_hash, hash)
         VALUES (@id, ${CONTENT_COLUMNS.map((c) => '@' + c).join(', ')}, @prev_hash, @hash)`,
      ),
      setHead: db.prepare('UPDATE chain_head SET last_id = ?, last_hash = ? WHERE singleton = 1'),
      get: db.prepare(`${SELECT_ROWS} WHERE e.id = ?`),
      byPush: db.prepare(`${SELECT_ROWS} WHERE e.push_id = ? ORDER BY e.id`),
    };
  }

  /** Opens (creating if needed) the database file and brings its schema up to date. */
  static open(dbPath: string): AuditStore {
    const path = resolve(dbPath);
    let db: Database.Database | undefined;
    try {
      privateFile(path); // 0600 in a 0700 folder when it is new (its -wal and -shm follow its mode)
      db = new Database(path);
      db.pragma('busy_timeout = 5000');
      walMode(db);
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
      migrate(db);
      return new AuditStore(path, db);
    } catch (err) {
      try {
        db?.close();
      } catch {
        /* already failing */
      }
      if (err instanceof AuditError) throw err;
      const code = (err as { code?: string }).code ?? '';
      const damaged = /SQLITE_(NOTADB|CORRUPT)/.test(code) || /not a database|malformed/i.test((err as Error).message);
      const hint = damaged
        ? ': the file is damaged or not a patchgate audit log, so nothing can be recorded and the server does not start; restore it from a backup (or move it aside to start a new, empty log, whose chain then starts again)'
        : '';
      throw new AuditError(`cannot open the audit log ${path}: ${(err as Error).message}${hint}`, { cause: err });
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  // ------------------------------------------------------------------ writes

  appendPush(input: PushInput): number {
    return this.write('push', () => [pushContent(input)])[0]!;
  }

  appendRef(input: RefInput): number {
    return this.write('ref', () => [refContent(input)])[0]!;
  }

  /** The push row, then one ref row per decision, in one transaction: all or nothing. */
  recordPush(input: RecordPushInput): { pushRowId: number; refRowIds: number[] } {
    const ids = this.write('push', () => recordPushRows(input));
    return { pushRowId: ids[0]!, refRowIds: ids.slice(1) };
  }

  appendAuthFailure(input: AuthFailureInput): number {
    return this.write('auth failure', () => authRows(input))[0]!;
  }

  appendAdmin(input: AdminInput): number {
    return this.write('admin', () => adminRows(input))[0]!;
  }

  appendCi(input: CiInput): number {
    return this.write('ci', () => ciRows(input))[0]!;
  }

  appendConfirm(input: ConfirmInput): number {
    return this.write('confirm', () => [confirmContent(input, input.pushId, '')])[0]!;
  }

  appendEscalation(input: EscalationInput): number {
    return this.write('escalation', () => escalationRows(input))[0]!;
  }

  /** The closing row, written only while escalation `input.id` is open (checked in the same transaction). */
  closeEscalation(input: EscalationCloseInput): number {
    let rows: EventContent[];
    try {
      rows = escalationCloseRows(input, null);
    } catch (err) {
      throw new AuditError(`audit: cannot write escalation event: ${(err as Error).message}`, { cause: err });
    }
    return this.db.transaction(() => {
      const open = this.read(() => this.stmts.get.get(input.id));
      const closed = this.read(() => this.db.prepare(ESCALATION_CLOSED_SQL).get(String(input.id)));
      const state = escalationState(open ? toAuditRow(open) : null, !!closed, input.id);
      return this.insertChained([{ ...rows[0]!, repo: state.repo, push_id: state.pushId }]);
    }).immediate()[0]!;
  }

  /** Confirms several refs of one push in one transaction (what post-receive sends). */
  confirmRefs(pushId: string, items: readonly ConfirmItem[], options: { time?: string; repo?: string | null } = {}): number[] {
    return this.write('confirm', () => confirmRows(pushId, items, options));
  }

  /**
   * Validates (build), then appends every row in one IMMEDIATE transaction, chaining
   * from `chain_head`. Any failure becomes an AuditError and nothing is written.
   */
  private write(what: string, build: () => EventContent[]): number[] {
    let rows: EventContent[];
    try {
      rows = build();
    } catch (err) {
      throw new AuditError(`audit: cannot write ${what} event: ${(err as Error).message}`, { cause: err });
    }
    try {
      return this.db.transaction(() => this.insertChained(rows)).immediate();
    } catch (err) {
      if (err instanceof AuditError) throw err;
      throw new AuditError(`audit: cannot write ${what} event: ${(err as Error).message}`, { cause: err });
    }
  }

  private insertChained(rows: readonly EventContent[]): number[] {
    const head = this.stmts.head.get();
    if (!head) throw new AuditError('audit: chain_head is missing; the log was tampered with (run `patchgate audit verify`)');
    const last = this.stmts.lastRow.get();
    if ((last?.id ?? 0) !== head.last_id || (last?.hash ?? ZERO_HASH) !== head.last_hash) {
      throw new AuditError(
        `audit: the last row (id ${last?.id ?? 'none'}) does not match chain_head (id ${head.last_id}); ` +
          'the log was truncated or tampered with (run `patchgate audit verify`)',
      );
    }
    let id = head.last_id;
    let prev = head.last_hash;
    const ids: number[] = [];
    for (const content of rows) {
      id += 1;
      const stored = chainRow(content, id, prev);
      this.stmts.insert.run(stored);
      prev = stored.hash as string;
      ids.push(id);
    }
    this.stmts.setHead.run(id, prev);
    return ids;
  }

  // ------------------------------------------------------------------ reads

  /** Rows newest first (by time, then id). `confirm` rows appear only when `kind: 'confirm'`. */
  query(options: QueryOptions = {}): AuditRow[] {
    const { sql, params } = buildQuery(options);
    return this.read(() => this.db.prepare(sql).all(...params) as Record<string, unknown>[]).map(toAuditRow);
  }

  /** The SQLite plan of query(options), one line per step (tests use it to prove an index is used). */
  explainQuery(options: QueryOptions = {}): string[] {
    const { sql, params } = buildQuery(options);
    const plan = this.read(() => this.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]);
    return plan.map((r) => r.detail);
  }

  get(id: number): AuditRow | null {
    if (!Number.isSafeInteger(id) || id < 1) throw new UsageError(`id: must be a positive integer (got ${JSON.stringify(id)})`);
    const r = this.read(() => this.stmts.get.get(id));
    return r ? toAuditRow(r) : null;
  }

  /** A push and everything recorded under its id: ref rows (with rules traces) and confirms. Null if none. */
  getPush(pushId: string): PushTrace | null {
    const id = pushIdOf(pushId, 'push id');
    const rows = this.read(() => this.stmts.byPush.all(id)).map(toAuditRow);
    if (rows.length === 0) return null;
    return {
      push: rows.find((r) => r.kind === 'push') ?? null,
      refs: rows.filter((r) => r.kind === 'ref'),
      confirms: rows.filter((r) => r.kind === 'confirm'),
      outcomes: rows.filter((r) => r.kind === 'admin'),
      escalations: rows.filter((r) => r.kind === 'escalation'),
    };
  }

  /** Every row's hash in id order: the leaves of the checkpoints' Merkle tree (src/audit/merkle.ts). */
  rowHashes(): string[] {
    return this.read(() => (this.db.prepare('SELECT id, hash FROM events ORDER BY id').raw().all() as Array<[number, string]>)).map(([id, hash], i) => {
      if (id !== i + 1) throw new AuditError(`audit: row ${i + 1} is missing (the next row is ${id}); run \`patchgate audit verify\``);
      return hash;
    });
  }

  /** The chain head as recorded (id 0 and 64 zeros for an empty log). */
  lastRow(): { id: number; hash: string } {
    const h = this.read(() => this.stmts.head.get());
    if (!h) throw new AuditError('audit: chain_head is missing');
    return { id: h.last_id, hash: h.last_hash };
  }

  /**
   * Walks every row in id order in one read snapshot. `rows` counts the rows found
   * intact before the first problem. Detects edited rows (hash mismatch), removed rows
   * (a gap in ids, a prev_hash mismatch, or a tail shorter than `chain_head`), inserted
   * and re-ordered rows (prev_hash/hash mismatch) and rows added after the head.
   */
  verify(): VerifyResult {
    return this.read(() =>
      this.db.transaction((): VerifyResult => {
        const head = this.stmts.head.get();
        const check = new ChainCheck();
        const all = this.db.prepare('SELECT * FROM events ORDER BY id').iterate() as IterableIterator<StoredRow>;
        for (const row of all) {
          const result = check.row(row);
          if (result) return result; // for..of closes the iterator
        }
        return check.end(head);
      })(),
    );
  }

  /** Read-only SQL (the page's aggregates, export, /metrics at start); a statement that writes is refused. */
  select(sql: string, params: readonly unknown[] = []): Record<string, unknown>[] {
    return this.read(() => {
      const stmt = this.db.prepare(sql);
      if (!stmt.reader || !stmt.readonly) throw new AuditError('audit: select() runs read-only queries only');
      return stmt.all(...params) as Record<string, unknown>[];
    });
  }

  private read<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof AuditError || err instanceof UsageError) throw err;
      throw new AuditError(`audit: cannot read the log: ${(err as Error).message}`, { cause: err });
    }
  }
}

// ---------------------------------------------------------------------------------------

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
    where.push(`${weak}e.verdict = ?`);
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

// ---------------------------------------------------------------------------------------
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
      push_id: pushIdOf(input.pushId),
      repo: reqString(input.repo, 'repo', 256),
      actor: reqString(input.actor, 'actor', 256),
      role: oneOf(input.role, ROLES, 'role'),
      remote_addr: lenientString(input.remoteAddr, 256),
      user_agent: lenientString(input.userAgent, 512),
      ref: reqString(input.ref, 'ref', 1024),
      old: objectId(input.old, 'old'),
      new: objectId(input.new, 'new'),
      verdict: oneOf(input.verdict, VERDICTS, 'verdict'),
      reason: reqString(input.text, 'text', ESCALATION_TEXT_MAX),
      detail: jsonOf(input.detail, 'detail'),
    },
  ];
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

/** The stored form of one row at `id` after `prev`: every column, and its hash. */
export function chainRow(content: EventContent, id: number, prev: string): StoredRow {
  const stored: Record<string, unknown> = { id, prev_hash: prev };
  for (const c of CONTENT_COLUMNS) stored[c] = content[c] ?? null;
  stored.hash = rowHash(stored);
  return stored as StoredRow;
}

/**
 * Switch to WAL. A second process opening a fresh file while the first switches (or migrates)
 * can get SQLITE_BUSY here without the busy handler being asked, so it is retried for up to 5 s.
 */
function walMode(db: Database.Database): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; ; i++) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || i >= 100) throw err;
      Atomics.wait(pause, 0, 0, 50);
    }
  }
}

function migrate(db: Database.Database): void {
  const version = (): number => db.pragma('user_version', { simple: true }) as number;
  if (version() > MIGRATIONS.length) {
    throw new AuditError(
      `audit: the database schema is version ${version()}, newer than this patchgate (${MIGRATIONS.length}); upgrade patchgate`,
    );
  }
  for (let i = 0; i < MIGRATIONS.length; i++) {
    // Re-read the version inside the IMMEDIATE transaction: another process may have
    // migrated while we waited for the lock.
    db.transaction(() => {
      if (version() > i) return;
      MIGRATIONS[i]!(db);
      db.pragma(`user_version = ${i + 1}`);
    }).immediate();
  }
}

function pushContent(input: PushInput): EventContent {
  if (!Number.isSafeInteger(input.refCount) || input.refCount < 0) {
    throw new UsageError(`refCount: must be a non-negative integer (got ${JSON.stringify(input.refCount)})`);
  }
  return {
    kind: 'push',
    time: timeOf(input.time),
    push_id: pushIdOf(input.pushId),
    repo: reqString(input.repo, 'repo', 256),
    actor: reqString(input.actor, 'actor', 256),
    role: oneOf(input.role, ROLES, 'role'),
    remote_addr: lenientString(input.remoteAddr, 256),
    user_agent: lenientString(input.userAgent, 512),
    verdict: oneOf(input.verdict, VERDICTS, 'verdict'),
    ref_count: input.refCount,
    timings: timingsOf(input.timings, 'timings'),
  };
}

function refContent(input: RefInput, prefix = ''): EventContent {
  return {
    kind: 'ref',
    time: timeOf(input.time),
    push_id: pushIdOf(input.pushId),
    repo: reqString(input.repo, 'repo', 256),
    actor: reqString(input.actor, 'actor', 256),
    role: oneOf(input.role, ROLES, 'role'),
    remote_addr: lenientString(input.remoteAddr, 256),
    user_agent: lenientString(input.userAgent, 512),
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

function confirmContent(input: ConfirmItem & { time?: string; repo?: string | null }, pushId: string, prefix: string): EventContent {
  if (typeof input.moved !== 'boolean') throw new UsageError(`${prefix}moved: must be true or false`);
  return {
    kind: 'confirm',
    time: timeOf(input.time),
    push_id: pushIdOf(pushId),
    repo: optString(input.repo, 'repo', 256),
    ref: reqString(input.ref, `${prefix}ref`, 1024),
    new: objectId(input.new, `${prefix}new`),
    moved: input.moved ? 1 : 0,
  };
}
