// A SQLite audit log whose log moved (issue 48): `audit migrate` copies it into PostgreSQL and
// then marks it, in the same SQLite transaction that held its writers off during the copy. The
// mark is a one-row table `moved_to` (where the log went, when, at which head) and triggers that
// refuse every append (events, chain_head) and token change, so an older patchgate, or anything
// else that opens the file as the current log, cannot write to it either. AuditStore.open reads
// the mark before anything else and refuses with one line naming the new log: the file is kept
// as history, and never read or written again as if it were current.

import type Database from 'better-sqlite3';
import { AuditError } from '../errors.js';

export interface MovedMark {
  /** Where the log went: the URL without its password. */
  to: string;
  time: string;
  headId: number;
  headHash: string;
}

const REFUSE = "SELECT RAISE(ABORT, 'this audit log moved (see its moved_to table): it is history, not the current log')";

/** The mark, when the file has one (no table: null). Reads only; safe before migrations. */
export function movedMark(db: Database.Database): MovedMark | null {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'moved_to'").get();
  if (!table) return null;
  const r = db.prepare('SELECT url, time, head_id, head_hash FROM moved_to WHERE singleton = 1').get() as { url: string; time: string; head_id: number; head_hash: string } | undefined;
  return r ? { to: r.url, time: r.time, headId: r.head_id, headHash: r.head_hash } : { to: '(unknown)', time: '(unknown)', headId: 0, headHash: '' };
}

/** Writes the mark and its triggers; the caller holds the transaction (migrate's IMMEDIATE one). */
export function markMoved(db: Database.Database, mark: MovedMark): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS moved_to (
      singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
      url       TEXT NOT NULL,
      time      TEXT NOT NULL,
      head_id   INTEGER NOT NULL,
      head_hash TEXT NOT NULL
    ) STRICT;
    CREATE TRIGGER IF NOT EXISTS events_moved BEFORE INSERT ON events BEGIN ${REFUSE}; END;
    CREATE TRIGGER IF NOT EXISTS chain_head_moved BEFORE UPDATE ON chain_head BEGIN ${REFUSE}; END;
    CREATE TRIGGER IF NOT EXISTS tokens_moved_insert BEFORE INSERT ON tokens BEGIN ${REFUSE}; END;
    CREATE TRIGGER IF NOT EXISTS tokens_moved_update BEFORE UPDATE ON tokens BEGIN ${REFUSE}; END;
    CREATE TRIGGER IF NOT EXISTS tokens_moved_delete BEFORE DELETE ON tokens BEGIN ${REFUSE}; END;
  `);
  db.prepare('INSERT INTO moved_to (singleton, url, time, head_id, head_hash) VALUES (1, ?, ?, ?, ?)').run(mark.to, mark.time, mark.headId, mark.headHash);
}

/** The one-line refusal of opening a moved file as the current log. */
export function movedError(path: string, mark: MovedMark): AuditError {
  return new AuditError(`the audit log ${path} moved to ${mark.to} (patchgate audit migrate, ${mark.time}, head #${mark.headId}): it is kept as history and is not read or written as the current log; use ${mark.to} (--audit, or the data folder that records it)`);
}
