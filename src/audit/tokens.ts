// The token store: who may push, with which role, to which repos. A secret is shown
// once at creation and never stored — only its sha256 — so a stolen database file
// does not let anyone push.
//
// It lives in the audit log's SQLite file and shares its handle (`new TokenStore(store)`);
// its `tokens` table comes from migration 2 in src/audit/store.ts. With a PostgreSQL audit
// log the same API (`TokenSource`, async there) is ./pg-tokens.ts, over the shared database;
// the checks and the secret format below are shared by both.
//
// API
//   new TokenStore(store: AuditStore, options?: { now?: () => number })
//   tokens.create(name, role, { repos?, expiresDays?, actor?, agentClass? }): string   the secret, `pg_` + 43 chars
//   tokens.list(): TokenInfo[]                     every token ever made, oldest first; no secrets, no hashes
//   tokens.revoke(name, { actor? }): void
//   tokens.count(): number                         active tokens (not revoked, not expired)
//   tokens.authenticate(secret): AuthenticatedToken | null
//   tokens.allowsRepo(token, repoName): boolean    same as the exported allowsRepo()
//   allowsRepo({ repos }, repoName): boolean
//   TOKEN_NAME_RE, SECRET_PREFIX, hashSecret(secret)
//
// create() and revoke() append their own `admin` audit row (`token.create` /
// `token.revoke`, subject = token name, detail = role, repos, expiry; never the secret)
// in the SAME transaction as the token change: callers must not append another.
// Errors: UsageError for bad names, roles, globs, expiries, duplicate or unknown names;
// AuditError when the database fails.
//
// An agent token may carry a class of the policy (issue 50, src/policy/classes.ts; column
// `agent_class`, SQLite migration 6 and PostgreSQL step 4): its pushes are judged under that
// class. None (null) is the default class; `--class default` is stored as none.
//
// Names: /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/. One active token per name; a name whose
// token is revoked or expired can be created again (an expired one is then marked revoked).
//
// Repo globs (picomatch, whole-name match, dot files allowed): `*` is every repo name
// without a `/`, `**` every name, `team-*` a prefix, `{a,b}` a list, `!x` everything but x.

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import picomatch from 'picomatch';
import type Database from 'better-sqlite3';
import { AuditError, UsageError } from '../errors.js';
import { ROLES, type AuditStore, type Role } from './store.js';
import { CLASS_NAME_RE, DEFAULT_CLASS } from '../policy/config.js';

type Awaitable<T> = T | Promise<T>;

/** What the server and the token commands ask of a token store (SQLite: sync; PostgreSQL: async). */
export interface TokenSource {
  create(name: string, role: Role, options?: CreateTokenOptions): Awaitable<string>;
  list(): Awaitable<TokenInfo[]>;
  revoke(name: string, options?: { actor?: string }): Awaitable<void>;
  count(): Awaitable<number>;
  authenticate(secret: string): Awaitable<AuthenticatedToken | null>;
  authenticateHash(secretHash: string): Awaitable<AuthenticatedToken | null>;
}

export const TOKEN_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const SECRET_PREFIX = 'pg_';
/** `pg_` + base64url of 32 random bytes. */
const SECRET_RE = /^pg_[A-Za-z0-9_-]{43}$/;
const MAX_EXPIRES_DAYS = 36_500;
const DAY_MS = 86_400_000;

export type TokenStatus = 'active' | 'revoked' | 'expired';

export interface TokenInfo {
  name: string;
  role: Role;
  repos: string;
  created: string;
  expires: string | null;
  revoked: string | null;
  status: TokenStatus;
  /** An agent token's class (src/policy/classes.ts); null: the default class (and every other role). */
  class: string | null;
}

export interface AuthenticatedToken {
  name: string;
  role: Role;
  repos: string;
  /** An agent token's class of the policy; absent: the default class. */
  agentClass?: string;
}

export interface CreateTokenOptions {
  /** Repo glob, default `*`. */
  repos?: string;
  /** Positive number of days (fractions allowed); default: never expires. */
  expiresDays?: number;
  /** Who is creating it, for the audit row; default `local`. */
  actor?: string;
  /** An agent token's class of the policy (`--class`); absent or `default`: the default class. */
  agentClass?: string;
}

export interface TokenRow {
  id: number;
  name: string;
  role: Role;
  repos: string;
  secret_hash: string;
  created: string;
  expires: string | null;
  revoked: string | null;
  /** Absent in a row read before migration 6 ran (never, once the store is open). */
  agent_class?: string | null;
}

/** sha256 hex of the whole secret string. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

const matchers = new Map<string, (name: string) => boolean>();

/** Does the token's repo glob cover this repo name? A broken glob matches nothing. */
export function allowsRepo(token: { readonly repos: string }, repoName: string): boolean {
  if (typeof repoName !== 'string' || repoName.length === 0) return false;
  let match = matchers.get(token.repos);
  if (!match) {
    try {
      match = picomatch(token.repos, { dot: true });
    } catch {
      match = () => false;
    }
    if (matchers.size > 1000) matchers.clear();
    matchers.set(token.repos, match);
  }
  return match(repoName);
}

export function checkName(name: unknown): string {
  if (typeof name !== 'string' || !TOKEN_NAME_RE.test(name)) {
    throw new UsageError(`token name: must match ${TOKEN_NAME_RE} (got ${JSON.stringify(name)})`);
  }
  return name;
}

function checkRepos(repos: unknown): string {
  if (typeof repos !== 'string' || repos.length === 0 || repos.length > 256 || /[\s\u0000-\u001f\u007f]/.test(repos)) {
    throw new UsageError(`--repos: must be a glob of up to 256 characters without spaces (got ${JSON.stringify(repos)})`);
  }
  try {
    picomatch.makeRe(repos);
  } catch (err) {
    throw new UsageError(`--repos: not a valid glob: ${(err as Error).message}`, { cause: err });
  }
  return repos;
}

/** A new token's checked fields, its secret and the secret's hash (shared by both stores). */
export interface NewToken {
  name: string;
  role: Role;
  repos: string;
  days: number | undefined;
  actor: string;
  secret: string;
  hash: string;
  /** Null: the default class. */
  agentClass: string | null;
}

export function newToken(name: string, role: Role, options: CreateTokenOptions = {}): NewToken {
  checkName(name);
  if (!(ROLES as readonly string[]).includes(role)) {
    throw new UsageError(`--role: must be ${ROLES.join(', ')} (got ${JSON.stringify(role)})`);
  }
  const repos = checkRepos(options.repos ?? '*');
  const days = options.expiresDays;
  if (days !== undefined && (typeof days !== 'number' || !Number.isFinite(days) || days <= 0 || days > MAX_EXPIRES_DAYS)) {
    throw new UsageError(`--expires-days: must be a number of days above 0 and at most ${MAX_EXPIRES_DAYS} (got ${JSON.stringify(days)})`);
  }
  const agentClass = checkClass(options.agentClass, role);
  const secret = SECRET_PREFIX + randomBytes(32).toString('base64url');
  return { name, role, repos, days, actor: options.actor ?? 'local', secret, hash: hashSecret(secret), agentClass };
}

/** A token's class, checked: only an agent's, a class name of the policy's form; `default` is stored as none (null). */
export function checkClass(agentClass: unknown, role: Role): string | null {
  if (agentClass === undefined || agentClass === null) return null;
  if (typeof agentClass !== 'string' || !CLASS_NAME_RE.test(agentClass)) {
    throw new UsageError(`--class: must be a class name of the policy, lower case letters, digits, . _ - (got ${JSON.stringify(agentClass)})`);
  }
  if (role !== 'agent') throw new UsageError(`--class: only an agent token has a class (got --role ${role})`);
  return agentClass === DEFAULT_CLASS ? null : agentClass;
}

/** The audit row detail of a token's creation: never the secret. */
export function createDetail(t: NewToken, expires: string | null): Record<string, unknown> {
  return { role: t.role, repos: t.repos, expires, ...(t.role === 'agent' ? { class: t.agentClass ?? DEFAULT_CLASS } : {}) };
}

/** When a token made now for `days` expires (ISO), or null. */
export function expiryOf(nowMs: number, days: number | undefined): string | null {
  return days === undefined ? null : new Date(nowMs + days * DAY_MS).toISOString();
}

/** A stored row as listed: no secret, no hash. */
export function tokenInfo(r: TokenRow, nowMs: number): TokenInfo {
  return {
    name: r.name,
    role: r.role,
    repos: r.repos,
    created: r.created,
    expires: r.expires,
    revoked: r.revoked,
    status: r.revoked !== null ? 'revoked' : isExpired(r, nowMs) ? 'expired' : 'active',
    class: r.agent_class ?? null,
  };
}

/** The token a stored row grants now, or null (revoked, expired, or a hash that does not match). */
export function grantOf(row: TokenRow | undefined, presentedHash: string, nowMs: number): AuthenticatedToken | null {
  if (!row) return null;
  const stored = Buffer.from(row.secret_hash, 'hex');
  const presented = Buffer.from(presentedHash, 'hex');
  if (stored.length !== presented.length || !timingSafeEqual(stored, presented)) return null;
  if (row.revoked !== null || isExpired(row, nowMs)) return null;
  return grantFields(row);
}

/** What a stored row grants: name, role, repos and, for an agent, its class. */
export function grantFields(row: TokenRow): AuthenticatedToken {
  return { name: row.name, role: row.role, repos: row.repos, ...(row.role === 'agent' && row.agent_class ? { agentClass: row.agent_class } : {}) };
}

/** The hash to look a presented secret up by, or null when it cannot be a secret of ours. */
export function lookupHash(secret: unknown): string | null {
  if (typeof secret !== 'string' || secret.length > 256 || !SECRET_RE.test(secret)) return null;
  return hashSecret(secret);
}

export const HASH_RE = /^[0-9a-f]{64}$/;

export class TokenStore implements TokenSource {
  private readonly store: AuditStore;
  private readonly db: Database.Database;
  private readonly now: () => number;

  constructor(store: AuditStore, options: { now?: () => number } = {}) {
    this.store = store;
    this.db = store.db;
    this.now = options.now ?? Date.now;
  }

  /** Makes a token and returns its secret (the only time it exists outside the caller). */
  create(name: string, role: Role, options: CreateTokenOptions = {}): string {
    const t = newToken(name, role, options);
    const { repos, days, actor, secret, hash } = t;
    this.run(() =>
      this.db
        .transaction(() => {
          const nowMs = this.now();
          const now = new Date(nowMs).toISOString();
          const current = this.db
            .prepare('SELECT * FROM tokens WHERE name = ? AND revoked IS NULL')
            .get(name) as TokenRow | undefined;
          if (current) {
            if (!isExpired(current, nowMs)) {
              throw new UsageError(`token ${name} already exists; revoke it first (patchgate token revoke ${name})`);
            }
            this.db.prepare('UPDATE tokens SET revoked = ? WHERE id = ?').run(now, current.id);
          }
          const expires = expiryOf(nowMs, days);
          this.db
            .prepare('INSERT INTO tokens (name, role, repos, secret_hash, created, expires, agent_class) VALUES (?, ?, ?, ?, ?, ?, ?)')
            .run(name, role, repos, hash, now, expires, t.agentClass);
          this.store.appendAdmin({ time: now, actor, action: 'token.create', subject: name, detail: createDetail(t, expires) });
        })
        .immediate(),
    );
    return secret;
  }

  /** Every token, oldest first, without secrets or hashes. */
  list(): TokenInfo[] {
    const nowMs = this.now();
    const rows = this.run(() => this.db.prepare('SELECT * FROM tokens ORDER BY id').all() as TokenRow[]);
    return rows.map((r) => tokenInfo(r, nowMs));
  }

  /** Revokes the token with this name (active or expired); UsageError if there is none. */
  revoke(name: string, options: { actor?: string } = {}): void {
    checkName(name);
    this.run(() =>
      this.db
        .transaction(() => {
          const now = new Date(this.now()).toISOString();
          const res = this.db.prepare('UPDATE tokens SET revoked = ? WHERE name = ? AND revoked IS NULL').run(now, name);
          if (res.changes === 0) throw new UsageError(`no token named ${name} (or it is already revoked)`);
          this.store.appendAdmin({ time: now, actor: options.actor ?? 'local', action: 'token.revoke', subject: name });
        })
        .immediate(),
    );
  }

  /** How many tokens can authenticate now (not revoked, not expired). */
  count(): number {
    const now = new Date(this.now()).toISOString();
    const row = this.run(
      () =>
        this.db
          .prepare('SELECT count(*) AS n FROM tokens WHERE revoked IS NULL AND (expires IS NULL OR expires > ?)')
          .get(now) as { n: number },
    );
    return row.n;
  }

  /** The token this secret belongs to, if it is neither revoked nor expired; else null. */
  authenticate(secret: string): AuthenticatedToken | null {
    if (typeof secret !== 'string' || secret.length > 256) return null;
    const presented = Buffer.from(hashSecret(secret), 'hex');
    if (!SECRET_RE.test(secret)) return null;
    const row = this.run(
      () => this.db.prepare('SELECT * FROM tokens WHERE secret_hash = ?').get(presented.toString('hex')) as TokenRow | undefined,
    );
    if (!row) return null;
    const stored = Buffer.from(row.secret_hash, 'hex');
    if (stored.length !== presented.length || !timingSafeEqual(stored, presented)) return null;
    if (row.revoked !== null || isExpired(row, this.now())) return null;
    return grantFields(row);
  }

  /** As authenticate(), from the sha256 of the secret (a web session keeps only that). */
  authenticateHash(secretHash: string): AuthenticatedToken | null {
    if (typeof secretHash !== 'string' || !/^[0-9a-f]{64}$/.test(secretHash)) return null;
    const row = this.run(() => this.db.prepare('SELECT * FROM tokens WHERE secret_hash = ?').get(secretHash) as TokenRow | undefined);
    if (!row || row.revoked !== null || isExpired(row, this.now())) return null;
    return grantFields(row);
  }

  allowsRepo(token: { readonly repos: string }, repoName: string): boolean {
    return allowsRepo(token, repoName);
  }

  private run<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof UsageError || err instanceof AuditError) throw err;
      throw new AuditError(`tokens: ${(err as Error).message}`, { cause: err });
    }
  }
}

export function isExpired(row: { expires: string | null }, nowMs: number): boolean {
  return row.expires !== null && Date.parse(row.expires) <= nowMs;
}
