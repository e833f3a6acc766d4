// Where a data folder's audit log is (issue 48). `serve` (its --audit, PATCHGATE_AUDIT_URL or
// the config file's "audit"), the daemon's config and `audit migrate` write the log's place to
// <data>/audit-location.json, without a password; every command run against the folder reads
// it. So `token revoke` with no URL acts on the log the server uses, not on a SQLite file nobody
// writes to any more. A location given again (a flag or the variable) must be the recorded one:
// another is refused with one line naming the recorded log, because acting on it would split the
// folder's history in two. With neither a record nor a given location: the folder's patchgate.db.
// The password of a PostgreSQL log still comes from the environment (PATCHGATE_AUDIT_URL holding
// the same URL with it, PGPASSWORD, a .pgpass file), never from this file.

import { existsSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ConfigError, errorMessage } from '../errors.js';
import { privateDir } from '../private-files.js';
import { describeAudit, parseAuditUrl, type AuditLocation } from './sink.js';

export const LOCATION_FILE = 'audit-location.json';

/** What the data folder's file says: the log (no password), who recorded it and when. */
export interface LocationRecord {
  audit: string;
  by: string;
  time: string;
}

/** A location given to a command, and where it came from (`--audit`, `PATCHGATE_AUDIT_URL`, `config FILE: audit`). */
export interface GivenAudit {
  value: string;
  from: string;
}

export interface FolderAudit {
  /** The log to open: the given one (its URL may carry a password from the environment), else the recorded one, else the folder's file. */
  location: AuditLocation;
  recorded: LocationRecord | null;
  /** `<data>/audit-location.json` */
  file: string;
  given: GivenAudit | null;
}

export function locationFile(dataDir: string): string {
  return join(resolve(dataDir), LOCATION_FILE);
}

/** The URL without its password (userinfo and any `password=` parameter). */
export function withoutPassword(url: string): string {
  const u = new URL(url);
  u.password = '';
  for (const k of [...u.searchParams.keys()]) if (k.toLowerCase() === 'password') u.searchParams.delete(k);
  return u.toString();
}

/** How a location is written to the record: `sqlite:/abs/path`, or the URL without its password. */
export function recordedForm(loc: AuditLocation): string {
  return loc.kind === 'sqlite' ? `sqlite:${loc.path}` : withoutPassword(loc.url);
}

function realPath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

/**
 * One PostgreSQL database: its user, host, port and database, from the URL or from the `user`,
 * `host`, `port` and `dbname` parameters that stand in for them. The password and the other
 * parameters (`sslmode`, …) say how to connect, not to which log.
 */
function pgKey(url: string): string {
  const u = new URL(url);
  const p = (k: string): string | null => {
    for (const [key, v] of u.searchParams) if (key.toLowerCase() === k) return v;
    return null;
  };
  const db = p('dbname') ?? p('database') ?? decodeURIComponent(u.pathname.replace(/^\//, ''));
  return JSON.stringify([p('user') ?? decodeURIComponent(u.username), (p('host') ?? u.hostname).toLowerCase(), p('port') ?? (u.port || '5432'), db]);
}

/** Do two locations name the same log? A password never makes a difference. */
export function sameLocation(a: AuditLocation, b: AuditLocation): boolean {
  if (a.kind === 'sqlite' && b.kind === 'sqlite') return realPath(a.path) === realPath(b.path);
  if (a.kind === 'postgres' && b.kind === 'postgres') return pgKey(a.url) === pgKey(b.url);
  return false;
}

/** The folder's record, or null when there is none. A file that is not one is a ConfigError (fail closed: it says where the log is). */
export function readLocation(dataDir: string): LocationRecord | null {
  const file = locationFile(dataDir);
  if (!existsSync(file)) return null;
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(file, `cannot read this data folder's audit location: ${errorMessage(err)}; it names the folder's audit log: restore it (or remove it only if the log is the folder's patchgate.db)`, { cause: err });
  }
  const r = v as Partial<LocationRecord> | null;
  if (!r || typeof r !== 'object' || typeof r.audit !== 'string' || !r.audit.trim()) {
    throw new ConfigError(file, 'not an audit location: expected {"audit": "sqlite:PATH" | "postgres://…", "by", "time"}');
  }
  return { audit: r.audit, by: typeof r.by === 'string' ? r.by : 'unknown', time: typeof r.time === 'string' ? r.time : 'unknown' };
}

/** The recorded location, parsed (relative paths are the record's own absolute ones). */
export function recordedLocation(dataDir: string, rec: LocationRecord): AuditLocation {
  return parseAuditUrl(rec.audit, resolve(dataDir), locationFile(dataDir));
}

/** "postgres://gate@db/patchgate (recorded in /srv/data/audit-location.json by audit migrate, 2026-…)" */
export function describeRecorded(dataDir: string, rec: LocationRecord): string {
  return `${describeAudit(recordedLocation(dataDir, rec))} (recorded in ${locationFile(dataDir)} by ${rec.by}, ${rec.time})`;
}

/**
 * The log a command run against `dataDir` uses. `given` (a flag, else the variable) must be the
 * recorded log when the folder has a record: another is a ConfigError naming both.
 */
export function folderAudit(dataDir: string, given?: GivenAudit | null): FolderAudit {
  const data = resolve(dataDir);
  const file = locationFile(data);
  const recorded = readLocation(data);
  const rec = recorded ? recordedLocation(data, recorded) : null;
  if (!given) return { location: rec ?? parseAuditUrl(undefined, data), recorded, file, given: null };
  const loc = parseAuditUrl(given.value, data, given.from);
  if (rec && !sameLocation(loc, rec)) {
    throw new ConfigError(given.from, `names the audit log ${describeAudit(loc)}, but this data folder's log is ${describeRecorded(data, recorded!)}; without ${given.from} the folder's log is used; to move the folder to another log, copy it there with patchgate audit migrate`);
  }
  return { location: loc, recorded, file, given };
}

/**
 * Records `loc` as the folder's log (no password in the file). Nothing is written when the
 * folder already records that log. Returns true when it wrote.
 */
export function recordLocation(dataDir: string, loc: AuditLocation, by: string, now: () => Date = () => new Date()): boolean {
  const data = resolve(dataDir);
  const existing = readLocation(data);
  if (existing && sameLocation(recordedLocation(data, existing), loc)) return false;
  privateDir(data);
  const file = locationFile(data);
  const body: LocationRecord = { audit: recordedForm(loc), by, time: now().toISOString() };
  writeFileSync(`${file}.tmp`, JSON.stringify(body, null, 2) + '\n', { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
  return true;
}
