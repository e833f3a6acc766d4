// Applies the flake ledger to the failures of one `patchgate ci` run. Only an unexpired row
// with the same (nodeid, seed, fixture digest) skips a failure, once; the same nodeid failing
// under another seed is a new defect; an expired row or one bound to other fixture bytes
// skips nothing. The ledger is read from the judged revision and revalidated first.

import type { Git } from '../git/git.js';
import { dayOf, ledgerHistory, parseDay, parseLedger, validateRows, type LedgerProblem, type LedgerRow } from '../ledger/ledger.js';

export type LedgerOutcome = 'frozen' | 'new-seed' | 'expired' | 'fixture-mismatch' | 'not-frozen';

export interface LedgerApplication {
  nodeid: string;
  seed: string;
  outcome: LedgerOutcome;
  /** The decision-table row this failure fires. */
  row: 'frozen-flake' | 'new-seed' | 'contract-red';
  /** The ledger row that matched (or came closest). */
  ledger?: { line: number; seed: string; fixture_digest: string; expires: string; reason: string };
  message: string;
}

export interface LoadedLedger {
  path: string;
  present: boolean;
  rows: LedgerRow[];
  problems: LedgerProblem[];
}

/** The ledger at `rev`, validated as the `ledger` rule and `ledger check` do. */
export async function loadLedgerAt(git: Git, rev: string, path: string, maxDays: number): Promise<LoadedLedger> {
  const blob = await git.readBlob(`${rev}:${path}`);
  if (!blob) return { path, present: false, rows: [], problems: [] };
  const { rows, problems } = parseLedger(blob.toString('utf8'));
  const history = await ledgerHistory(git, rev, path);
  const all = [...problems, ...validateRows(rows, history, maxDays, await git.commitDate(rev))].sort((a, b) => a.line - b.line);
  return { path, present: true, rows, problems: all };
}

function pick(r: LedgerRow): NonNullable<LedgerApplication['ledger']> {
  return { line: r.line, seed: r.seed, fixture_digest: r.fixture_digest, expires: r.expires, reason: r.reason };
}

/** A row is live through its expiry day and dropped the day after. */
export function isExpired(r: { expires: string }, today: Date): boolean {
  const d = parseDay(r.expires);
  return !d || d < today;
}

/** Decide, for each failing test and the seed it ran with, what the ledger says. */
export function applyLedger(failures: Array<{ id: string; seed: string }>, rows: LedgerRow[], digest: string, today: Date): LedgerApplication[] {
  return failures.map(({ id, seed }) => {
    const mine = rows.filter((r) => r.nodeid === id);
    const sameSeed = mine.filter((r) => r.seed === seed);
    const exact = sameSeed.filter((r) => r.fixture_digest === digest);
    const live = exact.filter((r) => !isExpired(r, today)).sort((a, b) => (a.expires < b.expires ? 1 : -1));
    if (live.length) {
      const r = live[0]!;
      return { nodeid: id, seed, outcome: 'frozen', row: 'frozen-flake', ledger: pick(r), message: `frozen flake skipped once: ${id} seed ${seed} (ledger line ${r.line}, expires ${r.expires}: ${r.reason})` };
    }
    if (exact.length) {
      const r = exact.sort((a, b) => (a.expires < b.expires ? 1 : -1))[0]!;
      return { nodeid: id, seed, outcome: 'expired', row: 'contract-red', ledger: pick(r), message: `${id} seed ${seed} failed; its freeze (ledger line ${r.line}) expired on ${r.expires} and skips nothing on ${dayOf(today)}` };
    }
    if (sameSeed.length) {
      const r = sameSeed[0]!;
      return { nodeid: id, seed, outcome: 'fixture-mismatch', row: 'contract-red', ledger: pick(r), message: `${id} seed ${seed} failed; its freeze (ledger line ${r.line}) is bound to fixture digest ${r.fixture_digest.slice(0, 12)}, but the fixtures now digest to ${digest.slice(0, 12)}: the fixture bytes changed, so the freeze does not apply` };
    }
    if (mine.length) {
      const seeds = [...new Set(mine.map((r) => r.seed))].join(', ');
      return { nodeid: id, seed, outcome: 'new-seed', row: 'new-seed', ledger: pick(mine[0]!), message: `${id} failed with seed ${seed}, but it is frozen only under seed ${seeds}: a new seed is a new defect, not the frozen flake` };
    }
    return { nodeid: id, seed, outcome: 'not-frozen', row: 'contract-red', message: `${id} failed with seed ${seed}; no freeze covers it` };
  });
}
