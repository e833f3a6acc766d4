// Where the decisions go: the seam between the gate and its audit log. The embedded SQLite
// store (./store.ts, synchronous) and the shared PostgreSQL store (./pg-store.ts, async) both
// fit `AuditSink`; callers `await` every call, which costs the SQLite path nothing. `--audit
// URL` (or PATCHGATE_AUDIT_URL, else the log the data folder records: ./location.ts) picks the
// store: `sqlite:PATH` (the default is `<data>/patchgate.db`) or `postgres://…`. That one store is the only one the gate writes to
// and every reader reads from (the page, /api/audit, the audit commands, /metrics at start),
// and it holds the tokens too (`tokensFor`): with PostgreSQL, one token works on every node.
// A URL with a password is refused on the command line (`refuseSecretInArgv`): argv is public
// to every user of the machine through `ps`.

import { resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { AuditStore } from './store.js';
import { redactUrl, type AuditSink } from './sink-api.js';
import { TokenStore, type TokenSource } from './tokens.js';

export { redactUrl, type AuditSink, type Awaitable } from './sink-api.js';

export type AuditLocation = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

/** The environment variable that stands in for `--audit`. */
export const AUDIT_URL_ENV = 'PATCHGATE_AUDIT_URL';

/**
 * `sqlite:PATH` (relative to the working folder), `postgres://…` / `postgresql://…`, or
 * nothing: `<dataDir>/patchgate.db`. Anything else is a ConfigError naming `option`.
 */
export function parseAuditUrl(value: string | undefined | null, dataDir: string, option = '--audit'): AuditLocation {
  const v = (value ?? '').trim();
  if (!v) return { kind: 'sqlite', path: resolve(dataDir, 'patchgate.db') };
  if (/^postgres(ql)?:\/\//i.test(v)) {
    try {
      new URL(v);
    } catch (err) {
      throw new ConfigError(option, `not a valid PostgreSQL URL: ${redactUrl(v)}`, { cause: err });
    }
    return { kind: 'postgres', url: v };
  }
  if (v.startsWith('sqlite:')) {
    const path = v.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new ConfigError(option, 'sqlite: needs a path, e.g. sqlite:./data/patchgate.db');
    return { kind: 'sqlite', path: resolve(path) };
  }
  throw new ConfigError(option, `must be sqlite:PATH or postgres://… (got ${JSON.stringify(redactUrl(v).slice(0, 200))})`);
}

/** Does this URL carry a password (in its userinfo or a `password=` parameter)? */
export function urlHasPassword(url: string): boolean {
  try {
    const u = new URL(url.trim());
    return u.password !== '' || [...u.searchParams.keys()].some((k) => k.toLowerCase() === 'password');
  } catch {
    return /^[a-z][a-z0-9+.-]*:\/\/[^/@:]*:[^/@]+@/i.test(url) || /[?&]password=/i.test(url);
  }
}

/** Where a database password goes instead of argv (docs/audit-postgres.md, "Where the password goes"). */
export const PASSWORD_HINT =
  `put the URL in ${AUDIT_URL_ENV} (or the config file's "audit" key), or leave the password out of the URL and give it in PGPASSFILE (a ~/.pgpass file) or PGPASSWORD`;

/**
 * A URL given as a command-line flag (`option`) must not carry a password: every user of the
 * machine reads argv with `ps`. ConfigError (one line, the password not in it) if it does.
 */
export function refuseSecretInArgv(value: string | undefined | null, option: string): void {
  if (typeof value !== 'string' || !urlHasPassword(value)) return;
  throw new ConfigError(option, `a password on the command line is visible to every user in ps, so it is refused; ${PASSWORD_HINT}`);
}

/** How a location is named to people: the path, or the URL without its password. */
export function describeAudit(loc: AuditLocation): string {
  return loc.kind === 'sqlite' ? loc.path : redactUrl(loc.url);
}

/**
 * Opens the store at `loc`. `reuse`: an AuditStore already open on the same SQLite file
 * (the server's own, which also holds the tokens) is returned as is, not opened twice.
 */
export async function openAuditSink(loc: AuditLocation, reuse?: AuditStore): Promise<AuditSink> {
  if (loc.kind === 'sqlite') return reuse && resolve(reuse.path) === loc.path ? reuse : AuditStore.open(loc.path);
  const { PgAuditStore } = await import('./pg-store.js');
  return PgAuditStore.open(loc.url);
}

/**
 * The token store that lives with this audit log: the SQLite file's `tokens` table, or
 * PostgreSQL's (read through on every lookup, so a revocation on one node holds on all of
 * them at once). Token changes and their `admin` rows are one transaction of that log.
 */
export async function tokensFor(sink: AuditSink): Promise<TokenSource> {
  if (sink instanceof AuditStore) return new TokenStore(sink);
  const { PgAuditStore } = await import('./pg-store.js');
  if (!(sink instanceof PgAuditStore)) throw new ConfigError('--audit', 'this audit log holds no tokens');
  const { PgTokenStore } = await import('./pg-tokens.js');
  return new PgTokenStore(sink);
}
