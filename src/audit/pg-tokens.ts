// Tokens in the shared PostgreSQL audit log, so that several gate nodes on one database
// share one set of tokens: a token made on any node works on every node, and a revocation
// made on any node holds on all of them from the moment it commits, because every lookup
// reads the table (no cache, no staleness). A token change and its `admin` row
// (`token.create` / `token.revoke`, never the secret) are one transaction under the log's
// append lock (PgAuditStore.transact), so the grant and the revocation are in the same hash
// chain as the decisions, and no node can see a token whose row is not written.
// The checks and the secret format are the SQLite store's (./tokens.ts).

import { UsageError } from '../errors.js';
import { adminRows, type Role } from './store.js';
import type { PgAuditStore } from './pg-store.js';
import {
  HASH_RE,
  checkName,
  createDetail,
  expiryOf,
  grantOf,
  isExpired,
  lookupHash,
  newToken,
  tokenInfo,
  type AuthenticatedToken,
  type CreateTokenOptions,
  type TokenInfo,
  type TokenRow,
  type TokenSource,
} from './tokens.js';

export class PgTokenStore implements TokenSource {
  constructor(private readonly log: PgAuditStore, private readonly now: () => number = Date.now) {}

  async create(name: string, role: Role, options: CreateTokenOptions = {}): Promise<string> {
    const t = newToken(name, role, options);
    await this.log.transact('token.create', async (c) => {
      const nowMs = this.now();
      const now = new Date(nowMs).toISOString();
      const current = (await c.query('SELECT * FROM tokens WHERE name = $1 AND revoked IS NULL', [t.name])).rows[0] as TokenRow | undefined;
      if (current) {
        if (!isExpired(current, nowMs)) throw new UsageError(`token ${t.name} already exists; revoke it first (patchgate token revoke ${t.name})`);
        await c.query('UPDATE tokens SET revoked = $1 WHERE id = $2', [now, current.id]);
      }
      const expires = expiryOf(nowMs, t.days);
      await c.query('INSERT INTO tokens (name, role, repos, secret_hash, created, expires, agent_class) VALUES ($1, $2, $3, $4, $5, $6, $7)', [t.name, t.role, t.repos, t.hash, now, expires, t.agentClass]);
      return { rows: adminRows({ time: now, actor: t.actor, action: 'token.create', subject: t.name, detail: createDetail(t, expires) }), value: undefined };
    });
    return t.secret;
  }

  async list(): Promise<TokenInfo[]> {
    const rows = (await this.log.readQuery('SELECT * FROM tokens ORDER BY id')) as unknown as TokenRow[];
    const nowMs = this.now();
    return rows.map((r) => tokenInfo(r, nowMs));
  }

  async revoke(name: string, options: { actor?: string } = {}): Promise<void> {
    checkName(name);
    await this.log.transact('token.revoke', async (c) => {
      const now = new Date(this.now()).toISOString();
      const res = await c.query('UPDATE tokens SET revoked = $1 WHERE name = $2 AND revoked IS NULL', [now, name]);
      if (!res.rowCount) throw new UsageError(`no token named ${name} (or it is already revoked)`);
      return { rows: adminRows({ time: now, actor: options.actor ?? 'local', action: 'token.revoke', subject: name }), value: undefined };
    });
  }

  async count(): Promise<number> {
    const now = new Date(this.now()).toISOString();
    const r = await this.log.readQuery('SELECT count(*) AS n FROM tokens WHERE revoked IS NULL AND (expires IS NULL OR expires > $1)', [now]);
    return Number(r[0]?.n ?? 0);
  }

  async authenticate(secret: string): Promise<AuthenticatedToken | null> {
    const hash = lookupHash(secret);
    return hash ? this.byHash(hash) : null;
  }

  async authenticateHash(secretHash: string): Promise<AuthenticatedToken | null> {
    return typeof secretHash === 'string' && HASH_RE.test(secretHash) ? this.byHash(secretHash) : null;
  }

  /** Read through on every call: a revocation committed by any node is seen by the next request. */
  private async byHash(hash: string): Promise<AuthenticatedToken | null> {
    const rows = (await this.log.readQuery('SELECT * FROM tokens WHERE secret_hash = $1', [hash])) as unknown as TokenRow[];
    return grantOf(rows[0], hash, this.now());
  }
}
