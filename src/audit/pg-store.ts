// The shared audit log: the same rows and the same hash chain as the SQLite store
// (./store.ts builds and hashes every row; this file only stores them), in one PostgreSQL
// database that many gate nodes append to. Appends are serialised by a transaction-scoped
// advisory lock: each append takes it, reads `chain_head`, checks the last row against it,
// inserts its rows after it and moves the head, all in one transaction, so concurrent writers
// on any number of nodes make one chain with no fork and no gap. A write that fails (server
// unreachable, timeout, refused statement) throws AuditError and the caller refuses the push.
// Messages never carry the connection password (see redactUrl in ./sink-api.ts).
//
// API (what ./sink.ts's AuditSink asks, all async)
//   PgAuditStore.open(url, options?)  connects, creates or upgrades the schema
//   recordPush, confirmRefs, appendAuthFailure, appendAdmin, appendCi
//   query, get, getPush, verify, lastRow, close
//   ping(): string | null              for /healthz: why the database is down, or null
//   importChain(rows, head, tokens?)   `audit migrate`: copies rows (and tokens) verbatim into an empty log
//   select(sql, params)                read-only SQL for the page, export and /metrics (a READ ONLY transaction)
//   transact(what, fn)                 ./pg-tokens.ts: a token change and its admin rows, one transaction
//   checkpointLease(), statement()     ./pg-lease.ts: the checkpoint signer's lease (one signing node)

import pg from 'pg';
import { AuditError, UsageError, errorMessage } from '../errors.js';
import { redactUrl, type AuditSink, type RecordedPush } from './sink-api.js';
import { CREDENTIAL_SQL, credentialState, refusedForCredential } from './credential.js';
import { EVENT_INDEXES, HEAD_SQL, KINDS_AT, LAST_ROW_SQL, SET_HEAD_SQL, VERDICTS_AT, ZERO_HASH, eventsTableSql, pgInsert, sqlIn, storedOf, type EventContent, type StoredRow } from './events-table.js';
import { tokensTableSql } from './tokens-table.js';
import { ChainCheck, chainAfter, headForAppend, type VerifyResult } from './chain.js';
import { ESCALATION_CLOSED_SQL, SELECT_ROWS, buildQuery, pushTrace, toAuditRow } from './queries.js';
import { adminRows, authRows, ciRows, confirmRows, escalationCloseRows, escalationRows, escalationState, recordPushRows, upstreamRefusalRows } from './rows.js';
import type {
  AdminInput, AuditRow, AuthFailureInput, CiInput, ConfirmItem, EscalationCloseInput, EscalationInput, PushTrace, QueryOptions,
  RecordPushInput, UpstreamRefusalInput,
} from './inputs.js';
import type { TokenRow } from './tokens.js';
import type { CheckpointLease } from './checkpoint-lease.js';
import { PgLease } from './pg-lease.js';

/** pg_advisory_xact_lock keys: one for appends, one for schema changes (arbitrary, fixed). */
const APPEND_LOCK = 0x7061_7463; // "patc"
const MIGRATE_LOCK = 0x6761_7465; // "gate"
const VERIFY_PAGE = 5000;

export interface PgStoreOptions {
  /** Connection attempts give up after this (ms). Default 5000. */
  connectTimeoutMs?: number;
  /** Any statement (a lock wait included) is cancelled after this (ms). Default 10000. */
  statementTimeoutMs?: number;
  /** Pool size. Default 4. */
  max?: number;
}

/** Ordered schema steps; step i brings `patchgate_schema.version` from i to i + 1. Append only. */
export const PG_MIGRATIONS: readonly string[] = [
  `${eventsTableSql('pg', { kind: KINDS_AT.first, verdict: VERDICTS_AT.evaluate }, '   ')};
   ${EVENT_INDEXES}
   CREATE TABLE chain_head (
     singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
     last_id   BIGINT NOT NULL,
     last_hash TEXT NOT NULL
   );
   INSERT INTO chain_head (singleton, last_id, last_hash) VALUES (1, 0, '${ZERO_HASH}');
   CREATE FUNCTION patchgate_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN RAISE EXCEPTION 'audit events are append-only'; END $$;
   CREATE FUNCTION patchgate_head_required() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN RAISE EXCEPTION 'chain_head is required'; END $$;
   CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
     FOR EACH ROW EXECUTE FUNCTION patchgate_append_only();
   CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
     FOR EACH STATEMENT EXECUTE FUNCTION patchgate_append_only();
   CREATE TRIGGER chain_head_no_delete BEFORE DELETE OR TRUNCATE ON chain_head
     FOR EACH STATEMENT EXECUTE FUNCTION patchgate_head_required();`,
  // 2: tokens (./pg-tokens.ts), shared by every node; as SQLite's migration 2, only the sha256 of a secret.
  `${tokensTableSql('pg', '   ')}`,
  // 3: kind may be 'escalation' (issue 21), as SQLite's migration 5; rows are not touched.
  `ALTER TABLE events DROP CONSTRAINT IF EXISTS events_kind_check;
   ALTER TABLE events ADD CONSTRAINT events_kind_check CHECK (kind IN ${sqlIn(KINDS_AT.escalation)});`,
  // 4: an agent token's class of the policy (issue 50), as SQLite's migration 6; existing tokens: the default class (NULL).
  `ALTER TABLE tokens ADD COLUMN IF NOT EXISTS agent_class TEXT;`,
  // 5: kind may be 'upstream-refusal' (issue 48), as SQLite's migration 7; rows are not touched.
  `ALTER TABLE events DROP CONSTRAINT IF EXISTS events_kind_check;
   ALTER TABLE events ADD CONSTRAINT events_kind_check CHECK (kind IN ${sqlIn(KINDS_AT.upstreamRefusal)});`,
];

/** BIGINT (ids, counts) as a JS number, as SQLite returns them: ids stay far below 2^53. */
const TYPES = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** buildQuery's SQLite text for PostgreSQL: `$n` placeholders, no `+` or `INDEXED BY` index hints. */
function pgSql(sql: string): string {
  let n = 0;
  return sql.replace(/\+e\./g, 'e.').replace(/\s+INDEXED BY \w+/gi, '').replace(/\?/g, () => `$${++n}`);
}

export class PgAuditStore implements AuditSink {
  /** The URL without its password. */
  readonly location: string;
  private closed = false;
  private lease: PgLease | undefined;

  private constructor(private readonly pool: pg.Pool, private readonly secret: string | null, url: string) {
    this.location = redactUrl(url);
  }

  static async open(url: string, options: PgStoreOptions = {}): Promise<PgAuditStore> {
    let secret: string | null = null;
    try {
      secret = decodeURIComponent(new URL(url).password) || null;
    } catch {
      /* parseAuditUrl checked it; a URL without a password is fine */
    }
    const statementTimeout = options.statementTimeoutMs ?? 10_000;
    const pool = new pg.Pool({
      connectionString: url,
      max: options.max ?? 4,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
      idleTimeoutMillis: 10_000,
      statement_timeout: statementTimeout,
      lock_timeout: statementTimeout,
      query_timeout: statementTimeout + 2000,
      idle_in_transaction_session_timeout: statementTimeout * 3,
      application_name: 'patchgate',
      types: TYPES,
    });
    const store = new PgAuditStore(pool, secret, url);
    // An idle connection that the server drops emits here; without a listener it would end the process.
    pool.on('error', (err) => {
      if (!store.closed) process.stderr.write(`patchgate: audit: PostgreSQL connection lost (${store.location}): ${store.clean(err)}\n`);
    });
    try {
      await store.migrate();
    } catch (err) {
      await pool.end().catch(() => {});
      throw new AuditError(`cannot open the audit log ${store.location}: ${store.clean(err)}`, { cause: err });
    }
    return store;
  }

  /** An error's first line without the connection password. */
  private clean(err: unknown): string {
    let m = errorMessage(err).split('\n')[0] ?? '';
    if (this.secret) m = m.split(this.secret).join('***').split(encodeURIComponent(this.secret)).join('***');
    return m || String((err as { code?: string }).code ?? 'unknown error');
  }

  private async migrate(): Promise<void> {
    await this.tx(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATE_LOCK]);
      await c.query('CREATE TABLE IF NOT EXISTS patchgate_schema (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), version INTEGER NOT NULL)');
      await c.query('INSERT INTO patchgate_schema (singleton, version) VALUES (1, 0) ON CONFLICT (singleton) DO NOTHING');
      const version = Number((await c.query('SELECT version FROM patchgate_schema WHERE singleton = 1')).rows[0].version);
      if (version > PG_MIGRATIONS.length) {
        throw new AuditError(`the database schema is version ${version}, newer than this patchgate (${PG_MIGRATIONS.length}); upgrade patchgate`);
      }
      for (let i = version; i < PG_MIGRATIONS.length; i++) await c.query(PG_MIGRATIONS[i]!);
      await c.query('UPDATE patchgate_schema SET version = $1 WHERE singleton = 1', [PG_MIGRATIONS.length]);
    });
  }

  /** One transaction on one pooled connection; rolled back on any failure (a broken connection is discarded). */
  private async tx<T>(fn: (c: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
    const c = await this.pool.connect();
    let broken: Error | undefined;
    // A checked-out client has no listener of the pool's: a server that goes away mid-transaction
    // emits 'error' here (besides failing the query), which would otherwise end the process.
    const onError = (err: Error): void => {
      broken = err;
    };
    c.on('error', onError);
    try {
      await c.query(begin);
      const out = await fn(c);
      await c.query('COMMIT');
      return out;
    } catch (err) {
      await c.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw err;
    } finally {
      c.removeListener('error', onError);
      c.release(broken);
    }
  }

  // ------------------------------------------------------------------ writes

  /**
   * With `input.credential`, the token is read again under the append lock that `token revoke`
   * takes too (./credential.ts): gone, the rows are written as refused and `credential` says why.
   */
  async recordPush(input: RecordPushInput): Promise<RecordedPush> {
    const { credential, ...rest } = input;
    if (credential === undefined) {
      const ids = await this.write('push', () => recordPushRows(rest));
      return { pushRowId: ids[0]!, refRowIds: ids.slice(1) };
    }
    let accepted: EventContent[];
    try {
      accepted = recordPushRows(rest);
    } catch (err) {
      throw new AuditError(`audit: cannot write push event: ${(err as Error).message}`, { cause: err });
    }
    const r = await this.transact('push', async (c) => {
      const row = (await c.query(pgSql(CREDENTIAL_SQL), [credential])).rows[0] as { revoked: string | null; expires: string | null } | undefined;
      const state = credentialState(row, Date.now());
      if (state === 'active') return { rows: accepted, value: state };
      try {
        return { rows: recordPushRows(refusedForCredential(rest, state)), value: state };
      } catch (err) {
        throw new AuditError(`audit: cannot write push event: ${(err as Error).message}`, { cause: err });
      }
    });
    return { pushRowId: r.ids[0]!, refRowIds: r.ids.slice(1), ...(r.value === 'active' ? {} : { credential: r.value }) };
  }

  async confirmRefs(pushId: string, items: readonly ConfirmItem[], options: { time?: string; repo?: string | null } = {}): Promise<number[]> {
    return this.write('confirm', () => confirmRows(pushId, items, options));
  }

  async appendAuthFailure(input: AuthFailureInput): Promise<number> {
    return (await this.write('auth failure', () => authRows(input)))[0]!;
  }

  async appendAdmin(input: AdminInput): Promise<number> {
    return (await this.write('admin', () => adminRows(input)))[0]!;
  }

  async appendCi(input: CiInput): Promise<number> {
    return (await this.write('ci', () => ciRows(input)))[0]!;
  }

  async appendUpstreamRefusal(input: UpstreamRefusalInput): Promise<number[]> {
    return this.write('upstream-refusal', () => upstreamRefusalRows(input));
  }

  async appendEscalation(input: EscalationInput): Promise<number> {
    return (await this.write('escalation', () => escalationRows(input)))[0]!;
  }

  /** The closing row, written only while escalation `input.id` is open (checked under the append lock). */
  async closeEscalation(input: EscalationCloseInput): Promise<number> {
    let rows: EventContent[];
    try {
      rows = escalationCloseRows(input, null);
    } catch (err) {
      throw new AuditError(`audit: cannot write escalation event: ${(err as Error).message}`, { cause: err });
    }
    const r = await this.transact('escalation', async (c) => {
      const open = (await c.query(`${SELECT_ROWS} WHERE e.id = $1`, [input.id])).rows[0] as Record<string, unknown> | undefined;
      const closed = (await c.query(ESCALATION_CLOSED_SQL.replace('?', '$1'), [String(input.id)])).rows.length > 0;
      const state = escalationState(open ? toAuditRow(open) : null, closed, input.id);
      return { rows: [{ ...rows[0]!, repo: state.repo, push_id: state.pushId }], value: undefined };
    });
    return r.ids[0]!;
  }

  /** Validates (build), then appends every row in one transaction under the append lock. Nothing is written on failure. */
  private async write(what: string, build: () => EventContent[]): Promise<number[]> {
    let rows: EventContent[];
    try {
      rows = build();
    } catch (err) {
      throw new AuditError(`audit: cannot write ${what} event: ${(err as Error).message}`, { cause: err });
    }
    return this.transact(what, async () => ({ rows, value: undefined })).then((r) => r.ids);
  }

  /**
   * One transaction under the append lock: `fn` runs first (a token change, on the same
   * connection), then the rows it returns are chained after the head and the head moves. All
   * or nothing; a failure is an AuditError (a UsageError from `fn` passes through).
   */
  async transact<T>(what: string, fn: (c: pg.PoolClient) => Promise<{ rows: EventContent[]; value: T }>): Promise<{ ids: number[]; value: T }> {
    if (this.closed) throw new AuditError(`audit: cannot write ${what} event: the PostgreSQL audit log ${this.location} is closed`);
    try {
      return await this.tx(async (c) => {
        await c.query('SELECT pg_advisory_xact_lock($1)', [APPEND_LOCK]);
        const h = (await c.query(HEAD_SQL)).rows[0] as { last_id: number; last_hash: string } | undefined;
        const last = (await c.query(LAST_ROW_SQL)).rows[0] as { id: number; hash: string } | undefined;
        const from = headForAppend(h && { last_id: Number(h.last_id), last_hash: h.last_hash }, last && { id: Number(last.id), hash: last.hash });
        const { rows, value } = await fn(c);
        const { stored, head } = chainAfter(from, rows);
        await this.insertRows(c, stored);
        await c.query(pgSql(SET_HEAD_SQL), [head.id, head.hash]);
        return { ids: stored.map((r) => r.id), value };
      });
    } catch (err) {
      if (err instanceof AuditError || err instanceof UsageError) throw err;
      throw new AuditError(`audit: cannot write ${what} event to PostgreSQL (${this.location}): ${this.clean(err)}`, { cause: err });
    }
  }

  private async insertRows(c: pg.PoolClient, rows: readonly StoredRow[]): Promise<void> {
    if (!rows.length) return;
    const { sql, params } = pgInsert(rows);
    await c.query(sql, params);
  }

  /**
   * `audit migrate`: copies `rows` (in id order, as stored) verbatim into this log, which
   * must be empty, and sets the chain head to `head`, in one transaction.
   */
  async importChain(rows: AsyncIterable<StoredRow> | Iterable<StoredRow>, head: { id: number; hash: string }, tokens: readonly TokenRow[] = []): Promise<number> {
    try {
      return await this.tx(async (c) => {
        await c.query('SELECT pg_advisory_xact_lock($1)', [APPEND_LOCK]);
        const n = Number((await c.query('SELECT count(*) AS n FROM events')).rows[0].n);
        if (n > 0) throw new UsageError(`--to: the audit log ${this.location} already has ${n} row(s); migrate only into an empty log`);
        const k = Number((await c.query('SELECT count(*) AS n FROM tokens')).rows[0].n);
        if (k > 0) throw new UsageError(`--to: the audit log ${this.location} already has ${k} token(s); migrate only into an empty log`);
        // Tokens as stored (the hash of each secret, never a secret), in their original order.
        for (const t of tokens) {
          await c.query('INSERT INTO tokens (name, role, repos, secret_hash, created, expires, revoked, agent_class) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [t.name, t.role, t.repos, t.secret_hash, t.created, t.expires, t.revoked, t.agent_class ?? null]);
        }
        let batch: StoredRow[] = [];
        let copied = 0;
        for await (const r of rows) {
          batch.push(r);
          if (batch.length >= 500) {
            await this.insertRows(c, batch);
            copied += batch.length;
            batch = [];
          }
        }
        await this.insertRows(c, batch);
        copied += batch.length;
        await c.query('UPDATE chain_head SET last_id = $1, last_hash = $2 WHERE singleton = 1', [head.id, head.hash]);
        return copied;
      });
    } catch (err) {
      if (err instanceof AuditError || err instanceof UsageError) throw err;
      throw new AuditError(`audit: cannot copy into PostgreSQL (${this.location}): ${this.clean(err)}`, { cause: err });
    }
  }

  // ------------------------------------------------------------------ reads

  private async read<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof AuditError || err instanceof UsageError) throw err;
      throw new AuditError(`audit: cannot read the log ${this.location}: ${this.clean(err)}`, { cause: err });
    }
  }

  async query(options: QueryOptions = {}): Promise<AuditRow[]> {
    const { sql, params } = buildQuery(options);
    return this.read(async () => (await this.pool.query(pgSql(sql), params)).rows.map(toAuditRow));
  }

  async get(id: number): Promise<AuditRow | null> {
    if (!Number.isSafeInteger(id) || id < 1) throw new UsageError(`id: must be a positive integer (got ${JSON.stringify(id)})`);
    const r = await this.read(async () => (await this.pool.query(`${SELECT_ROWS} WHERE e.id = $1`, [id])).rows[0]);
    return r ? toAuditRow(r) : null;
  }

  async getPush(pushId: string): Promise<PushTrace | null> {
    if (typeof pushId !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(pushId)) {
      throw new UsageError(`push id: not a push id (got ${JSON.stringify(pushId)})`);
    }
    const rows = await this.read(async () => (await this.pool.query(`${SELECT_ROWS} WHERE e.push_id = $1 ORDER BY e.id`, [pushId])).rows.map(toAuditRow));
    return pushTrace(rows);
  }

  /** Every row's hash in id order: the leaves of the checkpoints' Merkle tree (src/audit/merkle.ts). */
  async rowHashes(): Promise<string[]> {
    const rows = await this.read(async () => (await this.pool.query('SELECT id, hash FROM events ORDER BY id')).rows);
    return rows.map((r: { id: unknown; hash: unknown }, i: number) => {
      if (Number(r.id) !== i + 1) throw new AuditError(`audit: row ${i + 1} is missing (the next row is ${String(r.id)}); run \`patchgate audit verify\``);
      return String(r.hash);
    });
  }

  async lastRow(): Promise<{ id: number; hash: string }> {
    const h = await this.read(async () => (await this.pool.query(HEAD_SQL)).rows[0]);
    if (!h) throw new AuditError('audit: chain_head is missing');
    return { id: Number(h.last_id), hash: String(h.last_hash) };
  }

  /** Every row in id order, in pages, within one read snapshot (REPEATABLE READ). */
  async *rows(c: pg.PoolClient): AsyncGenerator<StoredRow> {
    let after = 0;
    for (;;) {
      const page = (await c.query(`SELECT * FROM events WHERE id > $1 ORDER BY id LIMIT ${VERIFY_PAGE}`, [after])).rows;
      for (const r of page) yield storedOf(r);
      if (page.length < VERIFY_PAGE) return;
      after = Number(page[page.length - 1].id);
    }
  }

  /** The same walk as the SQLite store's verify() (ChainCheck), in one snapshot. */
  async verify(): Promise<VerifyResult> {
    return this.read(() =>
      this.tx(async (c) => {
        const h = (await c.query(HEAD_SQL)).rows[0];
        const head = h ? { last_id: Number(h.last_id), last_hash: String(h.last_hash) } : undefined;
        const check = new ChainCheck();
        for await (const row of this.rows(c)) {
          const bad = check.row(row);
          if (bad) return bad;
        }
        return check.end(head);
      }, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY'),
    );
  }

  /** Read-only SQL (SQLite syntax, see pgSql) in a READ ONLY transaction: a statement that writes fails. */
  async select(sql: string, params: readonly unknown[] = []): Promise<Record<string, unknown>[]> {
    return this.read(() => this.tx(async (c) => (await c.query(pgSql(sql), params as unknown[])).rows as Record<string, unknown>[], 'BEGIN READ ONLY'));
  }

  /** Reads on the pool, for ./pg-tokens.ts (errors become AuditErrors without the password). */
  async readQuery(sql: string, params: readonly unknown[] = []): Promise<Record<string, unknown>[]> {
    return this.read(async () => (await this.pool.query(sql, params as unknown[])).rows as Record<string, unknown>[]);
  }

  /** One statement on the pool for ./pg-lease.ts, the checkpoint signer's lease (errors become AuditErrors without the password). */
  async statement(sql: string, params: readonly unknown[] = []): Promise<Record<string, unknown>[]> {
    try {
      return (await this.pool.query(sql, params as unknown[])).rows as Record<string, unknown>[];
    } catch (err) {
      throw new AuditError(`audit: the checkpoint lease in ${this.location}: ${this.clean(err)}`, { cause: err });
    }
  }

  /** The checkpoint signer's lease of this log (./pg-lease.ts): one signing node at a time. */
  checkpointLease(): CheckpointLease {
    return (this.lease ??= new PgLease(this));
  }

  /** For /healthz: null when the database answers, else why not (no password). */
  async ping(): Promise<string | null> {
    try {
      await this.pool.query('SELECT last_id FROM chain_head WHERE singleton = 1');
      return null;
    } catch (err) {
      return `audit database ${this.location} does not answer: ${this.clean(err)}`;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
