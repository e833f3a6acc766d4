// The audit log a server (`serve`, or a git host's `daemon`) keeps its decisions in, opened the
// way every command opens a data folder's log (src/audit/location.ts): the given location (a
// flag, the variable, the config file) must be the one the folder records, and is recorded
// there (without a password) once it has opened; with none given, the recorded log, else
// `<data>/patchgate.db`. Only that log is opened: a data folder whose log is in PostgreSQL has
// its old patchgate.db neither read nor written. /healthz asks `health()`.

import { AuditError } from '../errors.js';
import { AuditStore } from '../audit/store.js';
import { describeAudit, openAuditSink, type AuditSink } from '../audit/sink.js';
import { folderAudit, recordLocation, type FolderAudit, type GivenAudit } from '../audit/location.js';
import { auditHealth, fileIdentity } from './health.js';
import { sinkHealth } from './audit-health.js';

export interface ServerLog {
  sink: AuditSink;
  /** The SQLite store when the log is a SQLite file (then it is `sink` itself), else null. */
  store: AuditStore | null;
  where: FolderAudit;
  /** The log as people read it (never a password), and where that came from when it came from the record. */
  described: string;
  /** Why the log is down for /healthz, or null. */
  health(): Promise<string | null>;
}

/** `by` names the writer of the record: `serve`, `daemon`. */
export async function openServerLog(dataDir: string, given: GivenAudit | null, by: string): Promise<ServerLog> {
  const where = folderAudit(dataDir, given);
  const loc = where.location;
  let sink: AuditSink;
  let store: AuditStore | null = null;
  let health: () => Promise<string | null>;
  if (loc.kind === 'sqlite') {
    const s = AuditStore.open(loc.path);
    const opened = fileIdentity(loc.path);
    sink = store = s;
    health = async () => auditHealth(s, loc.path, opened);
  } else {
    try {
      // Unreachable PostgreSQL at start: the server does not start (it could only refuse every push).
      sink = await openAuditSink(loc);
    } catch (err) {
      if (!(err instanceof AuditError) || !where.recorded || given) throw err;
      throw new AuditError(`${err.message} (this data folder's log, recorded in ${where.file}; the password comes from PATCHGATE_AUDIT_URL, PGPASSFILE or PGPASSWORD)`, { cause: err });
    }
    const s = sink;
    health = () => sinkHealth(s);
  }
  try {
    if (given) recordLocation(dataDir, loc, `${by} ${given.from}`);
  } catch (err) {
    await sink.close();
    throw err;
  }
  const described = `${describeAudit(loc)}${!given && where.recorded ? `, recorded in ${where.file}` : ''}`;
  return { sink, store, where, described, health };
}
