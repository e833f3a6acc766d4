// The SQLite audit file's schema: the ordered migrations (`PRAGMA user_version` counts them),
// the append-only triggers, WAL mode and the migrate step every open runs. Split out of
// src/audit/store.ts (issue 22); the events table's text comes from ./events-table.ts.

import type Database from 'better-sqlite3';
import { AuditError } from '../errors.js';
import { tokensTableSql } from './tokens-table.js';
import { EVENT_INDEXES, KINDS_AT, VERDICTS_AT, ZERO_HASH, eventsTableSql, sqlIn } from './events-table.js';

type Migration = (db: Database.Database) => void;

/**
 * SQLite cannot change a CHECK, so migrations 4 and 5 rebuild `events`: `edit` turns the stored
 * CREATE TABLE text into that of table `temp`, every row is copied as it is (the hash chain is
 * unchanged), and the indexes and append-only triggers are made again.
 */
function rebuildEvents(db: Database.Database, temp: string, edit: (sql: string) => string): void {
  const cols = (db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'`).get() as { sql: string }).sql;
  const newSql = edit(cols);
  db.exec(`
      DROP TRIGGER IF EXISTS events_no_update;
      DROP TRIGGER IF EXISTS events_no_delete;
      ${newSql};
      INSERT INTO ${temp} SELECT * FROM events;
      DROP TABLE events;
      ALTER TABLE ${temp} RENAME TO events;
      ${EVENT_INDEXES}
      CREATE INDEX events_kind_time_cover ON events (kind, time, verdict, decision, actor, repo);
      ${APPEND_ONLY_TRIGGERS}
    `);
}

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
      ${eventsTableSql('sqlite', { kind: KINDS_AT.first, verdict: VERDICTS_AT.first }, '      ')};
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
      ${tokensTableSql('sqlite', '      ')}
    `);
  },
  // 3: a covering index for the audit page's charts and table (src/audit/insights.ts).
  (db) => {
    db.exec('CREATE INDEX events_kind_time_cover ON events (kind, time, verdict, decision, actor, repo)');
  },
  // 4: verdict may be 'would-reject' (evaluate mode). SQLite cannot change a CHECK, so the
  // events table is rebuilt with every row copied as it is (the hash chain is unchanged).
  (db) =>
    rebuildEvents(db, 'events_v4', (sql) => {
      const newSql = sql
        .replace(/CREATE TABLE events\b/, 'CREATE TABLE events_v4')
        .replace(`verdict IN ${sqlIn(VERDICTS_AT.first)}`, `verdict IN ${sqlIn(VERDICTS_AT.evaluate)}`);
      if (newSql === sql) throw new Error('migration 4: unexpected events schema');
      return newSql;
    }),
  // 5: kind may be 'escalation' (issue 21: an agent's note for a person, and its closing). As
  // in migration 4 the table is rebuilt with every row copied as it is (the chain is unchanged).
  (db) =>
    rebuildEvents(db, 'events_v5', (sql) => {
      const newSql = sql
        .replace(/CREATE TABLE "?events"?/, 'CREATE TABLE events_v5')
        .replace(`kind IN ${sqlIn(KINDS_AT.first)}`, `kind IN ${sqlIn(KINDS_AT.escalation)}`);
      if (newSql === sql || !newSql.includes("'escalation'")) throw new Error('migration 5: unexpected events schema');
      return newSql;
    }),
  // 6: an agent token's class of the policy (issue 50, src/policy/classes.ts); existing tokens
  // keep NULL, the default class, which is what they were judged under before.
  (db) => {
    db.exec('ALTER TABLE tokens ADD COLUMN agent_class TEXT');
  },
  // 7: kind may be 'upstream-refusal' (issue 48: a ref the gate accepted, which upstream then
  // refused, is a refusal of its own so every count agrees). Rebuilt as in migration 5.
  (db) =>
    rebuildEvents(db, 'events_v7', (sql) => {
      const newSql = sql
        .replace(/CREATE TABLE "?events"?/, 'CREATE TABLE events_v7')
        .replace(`kind IN ${sqlIn(KINDS_AT.escalation)}`, `kind IN ${sqlIn(KINDS_AT.upstreamRefusal)}`);
      if (newSql === sql || !newSql.includes("'upstream-refusal'")) throw new Error('migration 7: unexpected events schema');
      return newSql;
    }),
];

/**
 * Switch to WAL. A second process opening a fresh file while the first switches (or migrates)
 * can get SQLITE_BUSY here without the busy handler being asked, so it is retried for up to 5 s.
 */
export function walMode(db: Database.Database): void {
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

export function migrate(db: Database.Database): void {
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
