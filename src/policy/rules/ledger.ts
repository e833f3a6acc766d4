// Rule `ledger`: the flake ledger may only hold bounded freezes. A row without a fixture
// digest or an expiry, with a bad date, with an expiry beyond the policy's maximum, or a
// triple revived more than once is refused, for humans as for agents.
// The problems are a function of the ledger blob, its history and the policy's maximum (when
// every row is in the history, the commit date is not used), so they are kept by those
// (src/cache/rule-results.ts): an unchanged ledger costs an id lookup.

import { isZeroId } from '../../git/git.js';
import { parseLedger, rowKey, validateRows, type LedgerProblem } from '../../ledger/ledger.js';
import { ledgerResultsOf, ruleResults } from '../../cache/rule-results.js';
import { ledgerHistoryAt } from '../ancestry.js';
import type { Rule } from '../types.js';
import { shq, short } from '../types.js';
import { pushAgain, remedy } from '../remedy.js';

export const ledger: Rule = {
  id: 'ledger',
  description: 'Every flake-ledger row has a fixture digest and an expiry within the maximum; no triple is revived more than once.',
  waivedForHumans: false,
  messages: {
    badJson: 'commit {commit}: {path}:{line}: not a JSON object row ({detail})',
    missingField: 'commit {commit}: {path}:{line}: {detail}; every freeze needs nodeid, seed, fixture_digest, expires and reason',
    badField: 'commit {commit}: {path}:{line}: {detail}',
    badDate: 'commit {commit}: {path}:{line}: {detail}',
    tooFar: 'commit {commit}: {path}:{line}: {detail}',
    revived: 'commit {commit}: {path}:{line}: {detail}',
  },
  async check(ctx) {
    const rev = ctx.update.newId;
    if (isZeroId(rev)) return { findings: [] };
    const path = ctx.policy.ledger.path;
    const id = await ctx.git.pathId(rev, path);
    if (!id) return { findings: [], details: { ledger: 'absent' } };
    const history = await ledgerHistoryAt(ctx, rev, path);
    const memo = ledgerResultsOf(history);
    const key = `${id.id}:${ctx.policy.ledger.maxDays}`;
    let cached = id.type === 'blob' ? (memo.get(key) as unknown as [LedgerProblem[], number] | undefined) : undefined;
    if (cached) ruleResults.stats.ledgerHits++;
    else {
      ruleResults.stats.ledgerMisses++;
      const blob = await ctx.git.readBlob(`${rev}:${path}`);
      if (!blob) return { findings: [], details: { ledger: 'absent' } };
      const { rows, problems } = parseLedger(blob.toString('utf8'));
      // A row the history lacks counts from this commit's date: then the answer is not kept.
      const dated = rows.some((r) => !history.added.has(rowKey(r)));
      const all = [...problems, ...validateRows(rows, history, ctx.policy.ledger.maxDays, dated ? await ctx.git.commitDate(rev) : new Date(0))].sort((a, b) => a.line - b.line);
      cached = [all, rows.length];
      if (!dated) memo.set(key, cached as unknown as ReadonlyArray<unknown>);
    }
    const [all, rowCount] = cached;
    return {
      findings: all.map((p) => ({ messageId: p.messageId, path, commit: rev, data: { commit: short(rev), path, line: p.line, detail: p.detail } })),
      details: { rows: rowCount },
    };
  },
  remediation(ctx) {
    const path = ctx.policy.ledger.path;
    if (ctx.role === 'agent' && ctx.trustedTip) {
      return remedy(
        'the flake ledger is a person\'s file: put it back as the trusted branch has it:',
        [`git restore --source=${ctx.trustedTip} --staged --worktree -- ${shq(`:(literal)${path}`)}`, `git commit -m ${shq('restore flake ledger')}`],
        pushAgain(ctx),
      );
    }
    return `fix or remove the listed rows of ${path} (patchgate ledger check shows them), commit, and push again`;
  },
};
