// /healthz for a decisions log other than the data folder's SQLite file (./health.ts checks
// that one): a PostgreSQL log answers a ping, or the server reports it down, since a push
// cannot be accepted without its audit row. Never names the connection password.

import { errorMessage } from '../errors.js';
import type { AuditSink } from '../audit/sink.js';

export async function sinkHealth(sink: AuditSink): Promise<string | null> {
  const ping = (sink as { ping?: () => Promise<string | null> }).ping;
  if (ping) return ping.call(sink);
  try {
    await sink.lastRow();
    return null;
  } catch (err) {
    return `audit log does not answer: ${errorMessage(err).split('\n')[0]}`;
  }
}
