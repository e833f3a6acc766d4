// `audit verify` also holds the tokens table to the chain. The table itself is not hashed
// (a revocation updates a row), but every change patchgate makes to it is an `admin` row in
// the same transaction: `token.create` with the role, repo grant and expiry, `token.revoke`.
// So someone who owns the database and adds a token, widens its grant or role, moves its
// expiry, or takes back a revocation with plain SQL leaves a table the chain contradicts,
// (a token row deleted outright is not reported: it can no longer authenticate)
// and verify fails naming the token. Same check on SQLite and PostgreSQL (AuditSink.select).

import type { SqlReader } from './insights.js';
import type { TokenRow } from './tokens.js';

interface AdminRow {
  id: number;
  action: string;
  subject: string | null;
  time: string;
  detail: string | null;
}

/** null when every token agrees with the chain, else what the first disagreement is. */
export async function checkTokens(log: SqlReader): Promise<{ tokens: number; problem: string | null }> {
  const tokens = (await log.select('SELECT name, role, repos, created, expires, revoked FROM tokens ORDER BY id')) as unknown as TokenRow[];
  const admin = (await log.select("SELECT id, action, subject, time, detail FROM events WHERE kind = 'admin' AND action IN ('token.create', 'token.revoke') ORDER BY id")) as unknown as AdminRow[];
  const creates = new Map<string, AdminRow>();
  for (const a of admin) if (a.action === 'token.create') creates.set(`${a.subject}\n${a.time}`, a);
  const result = (problem: string | null) => ({ tokens: tokens.length, problem });
  for (const t of tokens) {
    const made = creates.get(`${t.name}\n${t.created}`);
    if (!made) return result(`token ${t.name} (created ${t.created}) has no token.create row in the chain: it was added outside patchgate`);
    let d: { role?: unknown; repos?: unknown; expires?: unknown } = {};
    try {
      d = JSON.parse(made.detail ?? '{}') as typeof d;
    } catch {
      /* a damaged row: the chain walk names it */
    }
    for (const [field, want] of [['role', t.role], ['repos', t.repos], ['expires', t.expires]] as const) {
      if ((d[field] ?? null) !== want) {
        return result(`token ${t.name}: its ${field === 'repos' ? 'repo grant' : field} ${JSON.stringify(want)} is not the ${JSON.stringify(d[field] ?? null)} of its token.create row ${made.id}: changed outside patchgate`);
      }
    }
    if (t.revoked !== null) {
      const said = admin.some((a) => a.subject === t.name && a.time === t.revoked && (a.action === 'token.revoke' || a.action === 'token.create'));
      if (!said) return result(`token ${t.name} is marked revoked at ${t.revoked}, which no row of the chain records`);
    }
  }
  // A revocation taken back: a token that was active when a token.revoke row named it is active still.
  // (A token row that is gone entirely cannot authenticate, so it is not reported.)
  for (const a of admin) {
    if (a.action !== 'token.revoke') continue;
    const back = tokens.find((t) => t.name === a.subject && t.revoked === null && t.created <= a.time);
    if (back) return result(`token ${a.subject} is active, but token.revoke row ${a.id} revoked it at ${a.time}: the revocation was taken back outside patchgate`);
  }
  return result(null);
}
