// `patchgate ledger check`: validates the flake ledger of a work tree (uncommitted rows count
// as added today) against its git history, and lists rows that expire within 3 days.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Git } from '../git/git.js';
import { UsageError } from '../errors.js';
import { dayOf, parseDay, parseLedger, validateRows, worktreeLedgerHistory, type LedgerProblem } from '../ledger/ledger.js';
import { loadPolicy } from '../policy/config.js';

export async function runLedgerCheck(args: { repo: string; today?: string }): Promise<{ lines: string[]; problems: LedgerProblem[] }> {
  const today = args.today ? parseDay(args.today) : parseDay(dayOf(new Date()));
  if (!today) throw new UsageError(`--today: ${JSON.stringify(args.today)} is not a date YYYY-MM-DD`);
  const git = new Git({ dir: args.repo });
  try {
    const head = await git.refTip('HEAD');
    const policy = await loadPolicy(git, head);
    const path = policy.ledger.path;
    let text: string;
    try {
      text = await readFile(join(args.repo, path), 'utf8');
    } catch {
      return { lines: [`no ${path}: nothing to check`], problems: [] };
    }
    const { rows, problems } = parseLedger(text);
    const history = await worktreeLedgerHistory(git, head, path, rows, today);
    const all = [...problems, ...validateRows(rows, history, policy.ledger.maxDays, today)].sort((a, b) => a.line - b.line);
    const lines = all.map((p) => `${path}:${p.line}: ${p.messageId}: ${p.detail}`);
    const soon = new Date(today.getTime() + 3 * 86400_000);
    for (const r of rows) {
      const exp = parseDay(r.expires)!;
      if (exp < today) lines.push(`${path}:${r.line}: note: ${r.nodeid} seed ${r.seed} expired on ${r.expires}; it no longer skips anything`);
      else if (exp <= soon) lines.push(`${path}:${r.line}: expiring: ${r.nodeid} seed ${r.seed} expires ${r.expires} (within 3 days of ${dayOf(today)})`);
    }
    lines.push(all.length ? `${all.length} problem(s) in ${rows.length + problems.filter((p) => p.messageId === 'badJson' || p.messageId === 'missingField' || p.messageId === 'badDate').length} row(s)` : `ok: ${rows.length} row(s) valid`);
    return { lines, problems: all };
  } finally {
    git.close();
  }
}
