// `audit export --since ISO --format jsonl`: rows for a SIEM, oldest first (id order), one
// JSON object per line exactly as stored (snake_case columns, JSON columns as strings, NULLs
// left out), so a consumer can recompute each `hash` with rowHash() and follow `prev_hash`.
// Read in bounded batches: memory stays flat on a log of millions of rows. It reads the
// configured log (`--audit`: SQLite or PostgreSQL) through AuditSink.select.

import { UsageError } from '../errors.js';
import { parseIsoDate } from './store.js';
import type { SqlReader } from './insights.js';

const BATCH = 5000;

export async function* exportRows(store: SqlReader, opts: { since: string; until?: string; format?: string }): AsyncGenerator<string> {
  if ((opts.format ?? 'jsonl') !== 'jsonl') throw new UsageError(`--format: only jsonl is supported (got ${JSON.stringify(opts.format)})`);
  const since = parseIsoDate(opts.since, '--since');
  const until = opts.until === undefined ? '9999-12-31T23:59:59.999Z' : parseIsoDate(opts.until, '--until');
  // The first row at or after --since (times follow ids, give or take a clock step).
  const first = (await store.select('SELECT id FROM events WHERE time >= ? ORDER BY time, id LIMIT 1', [since]))[0] as { id: number } | undefined;
  if (!first) return;
  let from = Number(first.id);
  for (;;) {
    const rows = await store.select(`SELECT * FROM events WHERE id >= ? AND time >= ? AND time < ? ORDER BY id LIMIT ${BATCH}`, [from, since, until]);
    for (const r of rows) {
      const o: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(r)) if (v !== null) o[k] = v;
      yield JSON.stringify(o);
    }
    if (rows.length < BATCH) return;
    from = Number(rows[rows.length - 1]!.id) + 1;
  }
}
