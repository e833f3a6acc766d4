// The one description of the audit `events` table (issue 22): its columns, their types and
// constraints, from which the SQLite store (./migrations.ts, ./store.ts) and the PostgreSQL
// store (./pg-store.ts) both generate their CREATE TABLE text and their insert and select
// statements, so the two stores cannot drift apart. The hash chain covers these columns.
//
// A migration must keep meaning what it meant when it shipped, so the enumerations a CHECK
// allowed at each schema step are frozen below (KINDS_AT, VERDICTS_AT), and a column records the
// schema step it came with (`since`): a later column is added by a migration of its own.

export type EventKind = 'push' | 'ref' | 'auth' | 'admin' | 'ci' | 'confirm' | 'escalation' | 'upstream-refusal';
export type Verdict = 'accept' | 'reject' | 'would-reject';
export type Role = 'agent' | 'human' | 'admin';

export const EVENT_KINDS: readonly EventKind[] = ['push', 'ref', 'auth', 'admin', 'ci', 'confirm', 'escalation', 'upstream-refusal'];
export const VERDICTS: readonly Verdict[] = ['accept', 'reject', 'would-reject'];
export const ROLES: readonly Role[] = ['agent', 'human', 'admin'];
/** The prev_hash of row 1, and the head of an empty log. */
export const ZERO_HASH = '0'.repeat(64);

/**
 * What `kind` allowed: at the first schema step, since `escalation` (SQLite step 5, PostgreSQL
 * step 3), and since `upstream-refusal` (SQLite step 7, PostgreSQL step 5: a ref the gate
 * accepted and upstream then refused, issue 48).
 */
export const KINDS_AT = {
  first: ['push', 'ref', 'auth', 'admin', 'ci', 'confirm'],
  escalation: ['push', 'ref', 'auth', 'admin', 'ci', 'confirm', 'escalation'],
  upstreamRefusal: ['push', 'ref', 'auth', 'admin', 'ci', 'confirm', 'escalation', 'upstream-refusal'],
} as const;
/** What `verdict` allowed: at SQLite's first step, and since evaluate mode (SQLite step 4; PostgreSQL from its first). */
export const VERDICTS_AT = {
  first: ['accept', 'reject'],
  evaluate: ['accept', 'reject', 'would-reject'],
} as const;

/** id: the chain position; text; integer (numbers in the hash, as SQLite returns them). */
type ColumnType = 'id' | 'text' | 'integer';

interface Column {
  readonly name: string;
  readonly type: ColumnType;
  readonly notNull?: true;
  /** CHECK (col IN (…)): an enumeration chosen per schema step ('kind', 'verdict'), or fixed values. */
  readonly oneOf?: 'kind' | 'verdict' | readonly number[];
  /** The schema step (SQLite's numbering) that added the column. */
  readonly since: 1;
}

function col<const N extends string>(name: N, type: ColumnType, more: { notNull?: true; oneOf?: Column['oneOf'] } = {}): Column & { name: N } {
  return { name, type, since: 1, ...more };
}

/** The columns in table order. NULL columns are left out of a row's hash (./chain.ts). */
export const EVENT_COLUMNS = [
  col('id', 'id', { notNull: true }), col('kind', 'text', { notNull: true, oneOf: 'kind' }), col('time', 'text', { notNull: true }),
  col('push_id', 'text'), col('repo', 'text'), col('actor', 'text'), col('role', 'text'), col('remote_addr', 'text'), col('user_agent', 'text'),
  col('verdict', 'text', { oneOf: 'verdict' }), col('ref', 'text'), col('old', 'text'), col('new', 'text'), col('ref_count', 'integer'),
  col('decision', 'text'), col('rules', 'text'), col('contract_base', 'text'), col('contract_head', 'text'), col('timings', 'text'),
  col('moved', 'integer', { oneOf: [0, 1] }), col('reason', 'text'), col('action', 'text'), col('subject', 'text'), col('detail', 'text'),
  col('base', 'text'), col('head', 'text'), col('prev_hash', 'text', { notNull: true }), col('hash', 'text', { notNull: true }),
] as const;

type ColumnName = (typeof EVENT_COLUMNS)[number]['name'];
export type ContentColumn = Exclude<ColumnName, 'id' | 'prev_hash' | 'hash'>;

/** Every column, in table order. */
export const ALL_COLUMNS: readonly ColumnName[] = EVENT_COLUMNS.map((c) => c.name);
/** The content columns of `events`, in table order (everything but id, prev_hash, hash). */
export const CONTENT_COLUMNS: readonly ContentColumn[] = ALL_COLUMNS.filter(
  (c): c is ContentColumn => c !== 'id' && c !== 'prev_hash' && c !== 'hash',
);
/** Columns whose values are numbers in a stored row (and so in its hash). */
export const NUMBER_COLUMNS: ReadonlySet<string> = new Set(EVENT_COLUMNS.filter((c) => c.type !== 'text').map((c) => c.name));

export type EventContent = { kind: EventKind; time: string } & Partial<Record<ContentColumn, string | number | null>>;

/** An events row as stored: snake_case columns, numbers as numbers. */
export interface StoredRow extends Record<string, string | number | null> {
  id: number;
  prev_hash: string;
  hash: string;
}

/** `('a','b')` / `(0,1)`: the list of a CHECK (… IN …). */
export function sqlIn(values: readonly (string | number)[]): string {
  return `(${values.map((v) => (typeof v === 'number' ? String(v) : `'${v}'`)).join(',')})`;
}

export type Dialect = 'sqlite' | 'pg';

/**
 * `CREATE TABLE events (…)` for a dialect, with the enumerations of one schema step and the
 * columns that step had; `indent` is the line prefix of the closing parenthesis (the column
 * lines get two more spaces), so SQLite's stored schema text stays what it always was.
 */
export function eventsTableSql(dialect: Dialect, enums: { kind: readonly string[]; verdict: readonly string[] }, indent: string, step = 1): string {
  const cols = (EVENT_COLUMNS as readonly Column[]).filter((c) => c.since <= step).map((c) => {
    let def: string;
    if (c.type === 'id') def = dialect === 'sqlite' ? 'INTEGER PRIMARY KEY' : `BIGINT PRIMARY KEY CHECK (${c.name} > 0)`;
    else def = c.type === 'integer' ? 'INTEGER' : 'TEXT';
    if (c.notNull && c.type !== 'id') def += ' NOT NULL';
    if (c.oneOf) {
      const values = c.oneOf === 'kind' ? enums.kind : c.oneOf === 'verdict' ? enums.verdict : c.oneOf;
      const list = `${c.name} IN ${sqlIn(values)}`;
      def += c.notNull ? ` CHECK (${list})` : ` CHECK (${c.name} IS NULL OR ${list})`;
    }
    return `${indent}  ${c.name.padEnd(13)} ${def}`;
  });
  return `CREATE TABLE events (\n${cols.join(',\n')}\n${indent})${dialect === 'sqlite' ? ' STRICT' : ''}`;
}

/** The events indexes of schema 1, made again when migration 4 rebuilds the table; PostgreSQL's first step makes the same. */
export const EVENT_INDEXES = `
  CREATE INDEX events_time       ON events (time);
  CREATE INDEX events_repo_time  ON events (repo, time);
  CREATE INDEX events_actor_time ON events (actor, time);
  CREATE INDEX events_verdict_time ON events (verdict, time);
  CREATE INDEX events_kind_time  ON events (kind, time);
  CREATE INDEX events_push       ON events (push_id, ref) WHERE push_id IS NOT NULL;
`;

/** SQLite's insert of one stored row, with named parameters (`@id`, `@kind`, …). */
export const SQLITE_INSERT = `INSERT INTO events (${ALL_COLUMNS.join(', ')}) VALUES (${ALL_COLUMNS.map((c) => '@' + c).join(', ')})`;

/** PostgreSQL's insert of `rows` stored rows in one statement, with its parameters. */
export function pgInsert(rows: readonly StoredRow[]): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const tuples = rows.map((r) => `(${ALL_COLUMNS.map((col) => `$${params.push(r[col] ?? null)}`).join(', ')})`);
  return { sql: `INSERT INTO events (${ALL_COLUMNS.join(', ')}) VALUES ${tuples.join(', ')}`, params };
}

/** A row read back from a driver in the stored form the hash covers (PostgreSQL's BIGINTs may come back as strings). */
export function storedOf(r: Record<string, unknown>): StoredRow {
  const out: Record<string, string | number | null> = {};
  for (const c of ALL_COLUMNS) {
    const v = r[c];
    out[c] = v === undefined || v === null ? null : NUMBER_COLUMNS.has(c) ? Number(v) : String(v);
  }
  return out as StoredRow;
}

// The chain head and the last row, read and moved by every append (`?` placeholders; pgSql turns them into `$n`).
export const HEAD_SQL = 'SELECT last_id, last_hash FROM chain_head WHERE singleton = 1';
export const LAST_ROW_SQL = 'SELECT id, hash FROM events ORDER BY id DESC LIMIT 1';
export const SET_HEAD_SQL = 'UPDATE chain_head SET last_id = ?, last_hash = ? WHERE singleton = 1';
