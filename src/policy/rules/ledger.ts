// Rule `ledger`: the flake ledger may only hold bounded freezes. A row without a fixture
// digest or an expiry, with a bad date, with an expiry beyond the policy's maximum, or a
// triple revived more than once is refused, for humans as for agents.

import { isZeroId } from '../../git/git.js';
import { parseLedger, validateRows } from '../../ledger/ledger.js';
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
    const blob = await ctx.git.readBlob(`${rev}:${path}`);
    if (!blob) return { findings: [], details: { ledger: 'absent' } };
    const { rows, problems } = parseLedger(blob.toString('utf8'));
    const history = await ledgerHistoryAt(ctx, rev, path);
    const all = [...problems, ...validateRows(rows, history, ctx.policy.ledger.maxDays, await ctx.git.commitDate(rev))].sort((a, b) => a.line - b.line);
    return {
      findings: all.map((p) => ({ messageId: p.messageId, path, commit: rev, data: { commit: short(rev), path, line: p.line, detail: p.detail } })),
      details: { rows: rows.length },
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
