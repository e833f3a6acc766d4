// Why this exists (issue 24, nothing silent for long): `audit verify` walks every row of the
// chain, about 20 s for a million rows, and said nothing until the end. This is the same walk
// as the stores' verify() (the shared ChainCheck, in one read snapshot) with progress on
// stderr: rows checked of the chain head's count, in place on a terminal, else a line when it
// starts and one when it ends; nothing when it ends within 2 s. The SQLite walk is synchronous,
// so its progress is drawn from the row loop; PostgreSQL's verify() is awaited as it is (a line
// once it has run 2 s, one when it ends).
// TODO(store split): once AuditStore.verify takes an onRow callback this walk can be its call.

import { AuditError, UsageError } from '../errors.js';
import { Progress, slowPhase, type SlowPhaseOptions } from '../progress.js';
import { AuditStore, ChainCheck, type StoredRow, type VerifyResult } from './store.js';
import type { AuditSink } from './sink.js';

/** Rows between two progress ticks of the SQLite walk (a tick reads the clock). */
const TICK_ROWS = 1000;

export interface VerifyProgressOptions extends SlowPhaseOptions {
  label?: string;
}

/** The chain walk of `s.verify()`, reporting progress to `out`. */
export async function verifyWithProgress(s: AuditSink, out: VerifyProgressOptions): Promise<VerifyResult> {
  const label = out.label ?? 'patchgate: audit verify';
  if (!(s instanceof AuditStore)) {
    const total = (await s.lastRow()).id; // one indexed read, before the walk
    return slowPhase({ unit: 'rows', verb: 'checked', ...out }, label, async () => total, async (tick) => {
      const v = await s.verify();
      tick(v.rows);
      return v;
    });
  }
  return verifySqlite(s, { unit: 'rows', verb: 'checked', ...out }, label);
}

function verifySqlite(s: AuditStore, out: SlowPhaseOptions, label: string): VerifyResult {
  const progress = new Progress({ ...out, delayMs: out.delayMs ?? 2000 });
  try {
    return s.db.transaction((): VerifyResult => {
      const head = s.db.prepare('SELECT last_id, last_hash FROM chain_head WHERE singleton = 1').get() as { last_id: number; last_hash: string } | undefined;
      progress.phase(label, head ? head.last_id : null);
      const check = new ChainCheck();
      const all = s.db.prepare('SELECT * FROM events ORDER BY id').iterate() as IterableIterator<StoredRow>;
      let n = 0;
      for (const row of all) {
        const result = check.row(row);
        if (result) {
          progress.tick(n % TICK_ROWS);
          progress.end('a problem was found');
          return result; // for..of closes the iterator
        }
        if (++n % TICK_ROWS === 0) progress.tick(TICK_ROWS);
      }
      progress.tick(n % TICK_ROWS);
      const end = check.end(head);
      progress.end(end.ok ? '' : 'a problem was found');
      return end;
    })();
  } catch (err) {
    progress.end('stopped');
    if (err instanceof AuditError || err instanceof UsageError) throw err;
    throw new AuditError(`audit: cannot read the log: ${(err as Error).message}`, { cause: err });
  }
}
