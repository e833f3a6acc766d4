// The one description of the `tokens` table (issue 22), from which SQLite's migration 2
// (./migrations.ts) and PostgreSQL's step 2 (./pg-store.ts) generate their CREATE TABLE text.
// Only the sha256 of a secret is stored. The roles are frozen as the step shipped them.

import { sqlIn, type Dialect } from './events-table.js';

const ROLES_AT_2 = ['agent', 'human', 'admin'] as const;

const TOKEN_COLUMNS: ReadonlyArray<readonly [name: string, sqlite: string, pg?: string]> = [
  ['id', 'INTEGER PRIMARY KEY', 'BIGSERIAL PRIMARY KEY'],
  ['name', 'TEXT NOT NULL'],
  ['role', `TEXT NOT NULL CHECK (role IN ${sqlIn(ROLES_AT_2)})`],
  ['repos', 'TEXT NOT NULL'],
  ['secret_hash', 'TEXT NOT NULL UNIQUE'],
  ['created', 'TEXT NOT NULL'],
  ['expires', 'TEXT'],
  ['revoked', 'TEXT'],
];

/** `CREATE TABLE tokens (…)` and its index; `indent` as in eventsTableSql. */
export function tokensTableSql(dialect: Dialect, indent: string): string {
  const cols = TOKEN_COLUMNS.map(([name, sqlite, pg]) => `${indent}  ${name.padEnd(11)} ${dialect === 'pg' ? (pg ?? sqlite) : sqlite}`);
  return `CREATE TABLE tokens (\n${cols.join(',\n')}\n${indent})${dialect === 'sqlite' ? ' STRICT' : ''};
${indent}CREATE UNIQUE INDEX tokens_active_name ON tokens (name) WHERE revoked IS NULL;`;
}
