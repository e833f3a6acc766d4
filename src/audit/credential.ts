// The credential at the decision (issue 45, item 4). A push's token is checked when its
// request's headers arrive, but its pack, and so its judgement and its decision, may come much
// later: a token revoked (or expired) in between would otherwise accept a push under a name
// that was taken away. So the decision row of a push that lets something move is written
// with the sha256 of the pusher's token (`RecordPushInput.credential`, never stored), and the
// store reads that token's row again INSIDE the transaction that appends the decision: on
// SQLite the same IMMEDIATE transaction, on PostgreSQL under the append lock that
// `token revoke` takes too (./pg-tokens.ts). A revocation is therefore either before the
// decision in the chain (and the push is written as refused, every ref, by
// `refusedForCredential`) or after it (and the push was accepted while the token held). A
// recheck that fails fails the whole write, and a failed write refuses the push.
// Shared by both stores (./store.ts, ./pg-store.ts).

import type { RecordPushInput } from './inputs.js';

/** What a token's row says at the decision: still good, or why not (`unknown`: the row is gone). */
export type CredentialState = 'active' | 'revoked' | 'expired' | 'unknown';

/** The token row a decision rechecks, by the sha256 of the secret (SQLite placeholders; PostgreSQL gets `$1`). */
export const CREDENTIAL_SQL = 'SELECT revoked, expires FROM tokens WHERE secret_hash = ?';

/** The state of a token row read at the decision (`now` in ms). */
export function credentialState(row: { revoked: string | null; expires: string | null } | undefined, nowMs: number): CredentialState {
  if (!row) return 'unknown';
  if (row.revoked !== null) return 'revoked';
  // As ./tokens.ts isExpired (not imported: tokens.ts imports the store, which imports this file).
  return row.expires !== null && Date.parse(row.expires) <= nowMs ? 'expired' : 'active';
}

/** One line: why a push whose credential went away is refused (no secret, no hash). */
export function credentialReason(actor: string, state: Exclude<CredentialState, 'active'>): string {
  const what = state === 'revoked' ? 'was revoked' : state === 'expired' ? 'expired' : 'no longer exists';
  return `the token of ${actor} ${what} after this push began, before its decision was written, so no ref of it is accepted`;
}

/**
 * The decision as it is written when the credential went away: the push and every ref
 * refused (`gate-error`), each ref keeping its rules' outcomes and adding a `credential`
 * outcome that says why and what the judgement had been.
 */
export function refusedForCredential(input: RecordPushInput, state: Exclude<CredentialState, 'active'>): RecordPushInput {
  const why = credentialReason(input.actor, state);
  return {
    ...input,
    verdict: 'reject',
    refs: input.refs.map((r) => ({
      ...r,
      verdict: 'reject',
      decision: r.verdict !== 'reject' ? 'gate-error' : r.decision ?? null,
      rules: [...r.rules, { rule: 'credential', status: 'fail', findings: [], details: { error: why, credential: state, judged: r.verdict } }],
    })),
  };
}
