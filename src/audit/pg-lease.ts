// The checkpoint signer's lease in the shared PostgreSQL log (./checkpoint-lease.ts says why).
// One row: the holder, its key, since when and until when it holds, and the last checkpoint
// made under it. Taken or renewed by one INSERT … ON CONFLICT DO UPDATE … WHERE (the row is
// locked for the update, so two nodes never both win), with the database's clock, so the nodes'
// clocks do not matter. The table holds no audit data: it is made on first use, outside the
// schema steps of ./pg-store.ts.

import { AuditError } from '../errors.js';
import type { CheckpointLease, LeaseState } from './checkpoint-lease.js';

const TABLE = `CREATE TABLE IF NOT EXISTS checkpoint_lease (
  singleton   INTEGER PRIMARY KEY CHECK (singleton = 1),
  holder      TEXT NOT NULL,
  key         TEXT NOT NULL,
  since       TIMESTAMPTZ NOT NULL,
  expires     TIMESTAMPTZ NOT NULL,
  last_size   BIGINT,
  last_head   TEXT,
  last_time   TEXT,
  last_by     TEXT
)`;

const COLUMNS = 'holder, key, since, expires, expires > now() AS live, last_size, last_head, last_time, last_by';

function iso(v: unknown): string {
  return v instanceof Date ? v.toISOString() : String(v);
}

function stateOf(r: Record<string, unknown>, asker: string | undefined): LeaseState {
  const live = r.live === true;
  return {
    holder: String(r.holder), key: String(r.key), since: iso(r.since), expires: iso(r.expires), live, mine: live && asker !== undefined && r.holder === asker,
    last: r.last_size === null || r.last_size === undefined ? null : { size: Number(r.last_size), head: String(r.last_head), time: String(r.last_time), by: String(r.last_by) },
  };
}

/** What the lease needs of ./pg-store.ts's PgAuditStore: one statement on its pool. */
export interface StatementRunner {
  statement(sql: string, params?: readonly unknown[]): Promise<Record<string, unknown>[]>;
}

export class PgLease implements CheckpointLease {
  private made = false;

  constructor(private readonly log: StatementRunner) {}

  private async table(): Promise<void> {
    if (this.made) return;
    try {
      await this.log.statement(TABLE);
    } catch (err) {
      // Two nodes creating it at once: one wins, the other sees it made (a duplicate type or relation).
      const code = (err instanceof AuditError ? (err.cause as { code?: string } | undefined)?.code : undefined) ?? '';
      if (code !== '23505' && code !== '42P07') throw err;
    }
    this.made = true;
  }

  async acquire(holder: string, key: string, ttlMs: number): Promise<LeaseState> {
    await this.table();
    const won = await this.log.statement(
      `INSERT INTO checkpoint_lease AS l (singleton, holder, key, since, expires) VALUES (1, $1, $2, now(), now() + make_interval(secs => $3::double precision))
       ON CONFLICT (singleton) DO UPDATE SET holder = EXCLUDED.holder, key = EXCLUDED.key, expires = EXCLUDED.expires,
         since = CASE WHEN l.holder = EXCLUDED.holder AND l.expires > now() THEN l.since ELSE now() END
       WHERE l.holder = EXCLUDED.holder OR l.expires <= now()
       RETURNING ${COLUMNS}`,
      [holder, key, ttlMs / 1000],
    );
    if (won[0]) return stateOf(won[0], holder);
    const now = await this.current(holder);
    if (!now) throw new AuditError('audit: the checkpoint lease row is missing');
    return now;
  }

  async current(holder?: string): Promise<LeaseState | null> {
    await this.table();
    const r = await this.log.statement(`SELECT ${COLUMNS} FROM checkpoint_lease WHERE singleton = 1`);
    return r[0] ? stateOf(r[0], holder) : null;
  }

  async release(holder: string): Promise<void> {
    await this.table();
    await this.log.statement('UPDATE checkpoint_lease SET expires = now() WHERE singleton = 1 AND holder = $1 AND expires > now()', [holder]);
  }

  async noteCheckpoint(holder: string, cp: { size: number; head: string; time: string }): Promise<void> {
    await this.table();
    await this.log.statement('UPDATE checkpoint_lease SET last_size = $2, last_head = $3, last_time = $4, last_by = $1 WHERE singleton = 1 AND holder = $1', [holder, cp.size, cp.head, cp.time]);
  }
}
