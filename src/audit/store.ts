// The audit log: every decision patchgate makes is appended here, hash-chained, so a
// person can later query what happened and prove that nobody edited or removed a row.
//
// One SQLite file (the server uses `<data>/patchgate.db`), shared with the token store
// (src/audit/tokens.ts), whose tables come from the same ordered migration list below.
//
// API
//   AuditStore.open(dbPath): AuditStore     creates the parent dir, applies migrations; a file
//                                            `audit migrate` marked as moved is refused (./moved.ts)
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
//   store.appendConfirm(ConfirmInput): number   after receive-pack: did this ref really move?
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
//   Rows are never updated, so the end of a push records a `confirm` row (push_id, ref, new,
//
// Layout (issue 22): this file is the SQLite store and the module every caller imports; the
// pieces it is made of, re-exported here, live beside it:
//   events-table.ts  the one description of `events` (columns, types, constraints, statements)
//   migrations.ts    SQLite's schema steps, WAL, migrate()
//   chain.ts         canonical JSON, row hashes, the append check, ChainCheck
//   inputs.ts        the input and row types
//   validate.ts      field validation, clock and push ids
//   rows.ts          the row builders both stores write with
//   queries.ts       the row select, buildQuery, toAuditRow

import { resolve } from 'node:path';
import { privateFile } from '../private-files.js';
import Database from 'better-sqlite3';
import { AuditError, UsageError } from '../errors.js';
import { HEAD_SQL, LAST_ROW_SQL, SET_HEAD_SQL, SQLITE_INSERT, type EventContent, type StoredRow } from './events-table.js';
import { ChainCheck, chainAfter, headForAppend, type VerifyResult } from './chain.js';
import { migrate, walMode } from './migrations.js';
import { ESCALATION_CLOSED_SQL, SELECT_ROWS, buildQuery, pushTrace, toAuditRow } from './queries.js';
import {
  adminRows, authRows, ciRows, confirmContent, confirmRows, escalationCloseRows, escalationRows, escalationState, pushContent,
  recordPushRows, refContent, upstreamRefusalRows,
} from './rows.js';
import { pushIdOf } from './validate.js';
import { movedError, movedMark } from './moved.js';
import { CREDENTIAL_SQL, credentialState, refusedForCredential } from './credential.js';
import type { RecordedPush } from './sink-api.js';
import type {
  AdminInput, AuditRow, AuthFailureInput, CiInput, ConfirmInput, ConfirmItem, EscalationCloseInput, EscalationInput, PushInput,
  PushTrace, QueryOptions, RecordPushInput, RefInput, UpstreamRefusalInput,
} from './inputs.js';

export { CONTENT_COLUMNS, EVENT_INDEXES, EVENT_KINDS, ROLES, VERDICTS, ZERO_HASH } from './events-table.js';
export type { EventContent, EventKind, Role, StoredRow, Verdict } from './events-table.js';
export * from './inputs.js';
export { ChainCheck, canonicalJson, chainRow, rowHash, type VerifyResult } from './chain.js';
export { MIGRATIONS } from './migrations.js';
export { DEFAULT_QUERY_LIMIT, ESCALATION_CLOSED_SQL, MAX_QUERY_LIMIT, SELECT_ROWS, buildQuery, toAuditRow } from './queries.js';
export {
  adminRows, authRows, ciRows, compactRow, confirmRows, escalationCloseRows, escalationRows, escalationState, recordPushRows, upstreamRefusalRows,
} from './rows.js';
export { newPushId, nowIso, parseIsoDate } from './validate.js';

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
      head: db.prepare(HEAD_SQL),
      lastRow: db.prepare(LAST_ROW_SQL),
      insert: db.prepare(SQLITE_INSERT),
      setHead: db.prepare(SET_HEAD_SQL),
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
      // A log that moved (`audit migrate` marked it) is history: refused before any migration touches it.
      const moved = movedMark(db);
      if (moved) throw movedError(path, moved);
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

  /**
   * The push row, then one ref row per decision, in one transaction: all or nothing. With
   * `input.credential`, the token is read again in that transaction (./credential.ts): gone,
   * the rows are written as refused and `credential` says why; a failed read writes nothing.
   */
  recordPush(input: RecordPushInput): RecordedPush {
    const { credential, ...rest } = input;
    if (credential === undefined) {
      const ids = this.write('push', () => recordPushRows(rest));
      return { pushRowId: ids[0]!, refRowIds: ids.slice(1) };
    }
    let accepted: EventContent[];
    try {
      accepted = recordPushRows(rest);
    } catch (err) {
      throw new AuditError(`audit: cannot write push event: ${(err as Error).message}`, { cause: err });
    }
    try {
      return this.db.transaction((): RecordedPush => {
        const state = credentialState(this.db.prepare(CREDENTIAL_SQL).get(credential) as { revoked: string | null; expires: string | null } | undefined, Date.now());
        const ids = this.insertChained(state === 'active' ? accepted : recordPushRows(refusedForCredential(rest, state)));
        return { pushRowId: ids[0]!, refRowIds: ids.slice(1), ...(state === 'active' ? {} : { credential: state }) };
      }).immediate();
    } catch (err) {
      if (err instanceof AuditError) throw err;
      throw new AuditError(`audit: cannot write push event (its token could not be checked again): ${(err as Error).message}`, { cause: err });
    }
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

  appendUpstreamRefusal(input: UpstreamRefusalInput): number[] {
    return this.write('upstream-refusal', () => upstreamRefusalRows(input));
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
    const from = headForAppend(this.stmts.head.get(), this.stmts.lastRow.get());
    const { stored, head } = chainAfter(from, rows);
    for (const row of stored) this.stmts.insert.run(row);
    this.stmts.setHead.run(head.id, head.hash);
    return stored.map((r) => r.id);
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
    return pushTrace(rows);
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
