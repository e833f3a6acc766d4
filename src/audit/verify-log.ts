// One verdict on an audit log, said the same way by `audit verify` and by the page's /chain
// (issue 48: the page showed green while `audit verify` said TAMPERED): the hash chain walked
// in id order, then the tokens table held to its token.create/token.revoke rows
// (./token-check.ts). The CLI walks with progress on stderr (./verify-progress.ts); a server
// walks without holding its event loop (`walkYielding`): a SQLite log is read through a
// connection of its own, in one read snapshot, a page of rows at a time, so pushes go on while
// a large log is checked; PostgreSQL's verify() already reads page by page.

import Database from 'better-sqlite3';
import { setImmediate as yieldNow } from 'node:timers/promises';
import { AuditError } from '../errors.js';
import { AuditStore, ChainCheck, type StoredRow, type VerifyResult } from './store.js';
import type { AuditSink } from './sink.js';
import { checkTokens } from './token-check.js';

export interface LogVerdict {
  ok: boolean;
  /** Rows found intact (before the first problem). */
  rows: number;
  tokens?: number;
  firstBadId?: number;
  reason?: string;
  /** What `audit verify` prints, and the page shows. */
  lines: string[];
}

/** Rows between two yields of the server's SQLite walk. */
const PAGE = 2000;

/** How far a running walk is: rows checked so far (null: the store does not say, PostgreSQL's one-statement walk). */
export interface WalkProgress {
  rows: number | null;
}

/** The chain walk of a SQLite store through its own read-only connection, yielding between pages. */
async function walkSqlite(path: string, progress: WalkProgress): Promise<VerifyResult> {
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    throw new AuditError(`audit: cannot read the log: ${(err as Error).message}`, { cause: err });
  }
  try {
    db.pragma('busy_timeout = 5000');
    db.exec('BEGIN'); // one read snapshot: the head and every row as of the first read
    const head = db.prepare('SELECT last_id, last_hash FROM chain_head WHERE singleton = 1').get() as { last_id: number; last_hash: string } | undefined;
    const check = new ChainCheck();
    let n = 0;
    for (const row of db.prepare('SELECT * FROM events ORDER BY id').iterate() as IterableIterator<StoredRow>) {
      const bad = check.row(row);
      if (bad) return bad;
      if (++n % PAGE === 0) {
        progress.rows = n;
        await yieldNow();
      }
    }
    return check.end(head);
  } catch (err) {
    if (err instanceof AuditError) throw err;
    throw new AuditError(`audit: cannot read the log: ${(err as Error).message}`, { cause: err });
  } finally {
    db.close();
  }
}

/** The chain walk for a server: never holds the event loop for the whole log. `progress` is kept up to date. */
export function walkYielding(s: AuditSink, progress: WalkProgress = { rows: null }): Promise<VerifyResult> {
  if (s instanceof AuditStore) {
    progress.rows = 0;
    return walkSqlite(s.path, progress);
  }
  return Promise.resolve(s.verify());
}

/** The chain (walked by `walk`), then the tokens, as one verdict. */
export async function verifyLog(s: AuditSink, walk: (s: AuditSink) => Promise<VerifyResult>): Promise<LogVerdict> {
  const v = await walk(s);
  if (!v.ok) {
    // firstBadId is a row id; after a deletion it can be above the number of rows left.
    return { ok: false, rows: v.rows, firstBadId: v.firstBadId, reason: v.reason, lines: [`TAMPERED: first bad row ${v.firstBadId} (a row id; ${v.rows} row(s) present): ${v.reason}`] };
  }
  const tk = await checkTokens(s);
  if (tk.problem) return { ok: false, rows: v.rows, reason: `tokens: ${tk.problem}`, lines: [`TAMPERED: tokens: ${tk.problem} (${v.rows} row(s), hash chain intact)`] };
  return { ok: true, rows: v.rows, tokens: tk.tokens, lines: [`ok: ${v.rows} row(s), hash chain intact`, `ok: ${tk.tokens} token(s), each as its token.create/token.revoke rows say`] };
}
