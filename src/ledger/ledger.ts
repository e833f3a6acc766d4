// The flake ledger (`ci/flake-ledger.jsonl`): rows {nodeid, seed, fixture_digest, expires,
// reason} that let one known-flaky failure be skipped, bounded by a fixture digest and an
// expiry. This module parses and validates it, and counts how often each (nodeid, seed,
// fixture_digest) triple was added over the file's git history, so a revived freeze shows.

import type { Git } from '../git/git.js';

export interface LedgerRow {
  line: number;
  nodeid: string;
  seed: string;
  fixture_digest: string;
  expires: string;
  reason: string;
}

export type LedgerProblemId = 'badJson' | 'missingField' | 'badField' | 'badDate' | 'tooFar' | 'revived';

export interface LedgerProblem {
  line: number;
  messageId: LedgerProblemId;
  detail: string;
}

export const LEDGER_FIELDS = ['nodeid', 'seed', 'fixture_digest', 'expires', 'reason'] as const;

export function tripleKey(r: { nodeid: string; seed: string; fixture_digest: string }): string {
  return JSON.stringify([r.nodeid, r.seed, r.fixture_digest]);
}

/** A calendar date YYYY-MM-DD that exists, as UTC midnight; null otherwise. */
export function parseDay(s: unknown): Date | null {
  if (typeof s !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(s)) return null;
  const d = new Date(`${s}T00:00:00Z`);
  return Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== s ? null : d;
}

export function dayOf(d: Date): string {
  return d.toISOString().slice(0, 10);
}

export function parseLedger(text: string): { rows: LedgerRow[]; problems: LedgerProblem[] } {
  const rows: LedgerRow[] = [];
  const problems: LedgerProblem[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    if (!raw.trim()) return;
    let obj: unknown;
    try {
      obj = JSON.parse(raw);
    } catch (e) {
      problems.push({ line, messageId: 'badJson', detail: (e as Error).message });
      return;
    }
    if (!obj || typeof obj !== 'object' || Array.isArray(obj)) {
      problems.push({ line, messageId: 'badJson', detail: 'a row must be a JSON object' });
      return;
    }
    const o = obj as Record<string, unknown>;
    const missing = LEDGER_FIELDS.filter((f) => o[f] === undefined || o[f] === null || o[f] === '');
    if (missing.length) {
      problems.push({ line, messageId: 'missingField', detail: `missing ${missing.join(', ')}` });
      return;
    }
    const unknown = Object.keys(o).filter((k) => !(LEDGER_FIELDS as readonly string[]).includes(k));
    if (unknown.length) problems.push({ line, messageId: 'badField', detail: `unknown field ${unknown.join(', ')}` });
    if (typeof o.nodeid !== 'string') problems.push({ line, messageId: 'badField', detail: 'nodeid must be a string' });
    if (!(typeof o.seed === 'string' || (typeof o.seed === 'number' && Number.isSafeInteger(o.seed)))) problems.push({ line, messageId: 'badField', detail: 'seed must be an integer or a string' });
    if (typeof o.fixture_digest !== 'string' || !/^[0-9a-f]{64}$/.test(o.fixture_digest)) problems.push({ line, messageId: 'badField', detail: 'fixture_digest must be a lowercase hex sha256' });
    if (typeof o.reason !== 'string') problems.push({ line, messageId: 'badField', detail: 'reason must be a string' });
    if (!parseDay(o.expires)) {
      problems.push({ line, messageId: 'badDate', detail: `expires ${JSON.stringify(o.expires)} is not a date YYYY-MM-DD` });
      return;
    }
    rows.push({ line, nodeid: String(o.nodeid), seed: String(o.seed), fixture_digest: String(o.fixture_digest), expires: String(o.expires), reason: String(o.reason) });
  });
  return { rows, problems };
}

/** A row's identity for history: its triple and its expiry (extending an expiry is a re-freeze). */
export function rowKey(r: { nodeid: string; seed: string; fixture_digest: string; expires: string }): string {
  return JSON.stringify([r.nodeid, r.seed, r.fixture_digest, r.expires]);
}

function countRows(text: string | null): Map<string, { n: number; row: LedgerRow }> {
  const m = new Map<string, { n: number; row: LedgerRow }>();
  if (!text) return m;
  for (const r of parseLedger(text).rows) {
    const e = m.get(rowKey(r));
    if (e) e.n++;
    else m.set(rowKey(r), { n: 1, row: r });
  }
  return m;
}

export interface LedgerHistory {
  /** Per triple: how many times a row for it was added (first freeze, then revivals). */
  triples: Map<string, number>;
  /** Per row (triple and expiry): the date of the newest commit that added it. */
  added: Map<string, Date>;
}

/**
 * How many times each triple was frozen over the history of `path` reachable from `rev`:
 * a commit adds a row as often as it has more copies of it than any of its parents had.
 */
export async function ledgerHistory(git: Git, rev: string, path: string): Promise<LedgerHistory> {
  const out: LedgerHistory = { triples: new Map(), added: new Map() };
  const history = await git.pathHistory(rev, path);
  const textAt = async (c: string): Promise<string | null> => (await git.readBlob(`${c}:${path}`))?.toString('utf8') ?? null;
  for (const commit of history) {
    const mine = countRows(await textAt(commit.id));
    const parents = await Promise.all(commit.parents.map(async (p) => countRows(await textAt(p))));
    const date = commit.date;
    for (const [k, { n, row }] of mine) {
      const before = Math.max(0, ...parents.map((p) => p.get(k)?.n ?? 0));
      if (n <= before) continue;
      noteAddition(out, row, n - before, date);
    }
  }
  return out;
}

/**
 * The history of a work tree's ledger: the committed history up to `head`, plus the rows the
 * work tree holds beyond HEAD's copy, counted as freezes added `today`.
 */
export async function worktreeLedgerHistory(git: Git, head: string | null, path: string, worktreeRows: LedgerRow[], today: Date): Promise<LedgerHistory> {
  const history: LedgerHistory = head ? await ledgerHistory(git, head, path) : { triples: new Map(), added: new Map() };
  const committed = head ? parseLedger((await git.readBlob(`${head}:${path}`))?.toString('utf8') ?? '').rows : [];
  const atHead = new Map<string, number>();
  for (const r of committed) atHead.set(rowKey(r), (atHead.get(rowKey(r)) ?? 0) + 1);
  const now = new Map<string, number>();
  for (const r of worktreeRows) {
    const n = (now.get(rowKey(r)) ?? 0) + 1;
    now.set(rowKey(r), n);
    if (n > (atHead.get(rowKey(r)) ?? 0)) noteAddition(history, r, 1, today);
  }
  return history;
}

export function noteAddition(h: LedgerHistory, row: LedgerRow, times: number, date: Date): void {
  const t = tripleKey(row);
  h.triples.set(t, (h.triples.get(t) ?? 0) + times);
  const prev = h.added.get(rowKey(row));
  if (!prev || date > prev) h.added.set(rowKey(row), date);
}

/**
 * Validate rows: field problems from parsing, plus an expiry further than `maxDays` from the
 * date the row was added (its commit's date, else `fallbackDate`), and triples added more
 * than twice (revived more than once).
 */
export function validateRows(rows: LedgerRow[], history: LedgerHistory, maxDays: number, fallbackDate: Date): LedgerProblem[] {
  const problems: LedgerProblem[] = [];
  const reported = new Set<string>();
  for (const r of rows) {
    const added = history.added.get(rowKey(r)) ?? fallbackDate;
    const limit = new Date(Date.UTC(added.getUTCFullYear(), added.getUTCMonth(), added.getUTCDate() + maxDays));
    const exp = parseDay(r.expires)!;
    if (exp > limit) problems.push({ line: r.line, messageId: 'tooFar', detail: `expires ${r.expires} is more than ${maxDays} days after ${dayOf(added)}, when the row was added (latest allowed: ${dayOf(limit)})` });
    const n = history.triples.get(tripleKey(r)) ?? 1;
    if (n > 2 && !reported.has(tripleKey(r))) {
      reported.add(tripleKey(r));
      problems.push({ line: r.line, messageId: 'revived', detail: `${r.nodeid} seed ${r.seed} was frozen ${n} times; a triple may be revived at most once — this is a defect, not a flake` });
    }
  }
  return problems;
}
