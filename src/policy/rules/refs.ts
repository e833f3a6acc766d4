// Rule `refs`: which refs an agent may move, and how. A force-push back to an ancestor adds
// no commit, so the write-block would see nothing, yet it can drop a human's test: only
// fast-forward updates of ordinary branches other than the trusted one are allowed.
// The trusted and protected branch names match case-insensitively after Unicode NFC, as
// protected paths do: `Main` or `Release/1` is the same folder to a case-insensitive client.

import { firstMatch, protectedBranchMatcher, sameBranch } from '../match.js';
import { isAncestorOfNew } from '../ancestry.js';
import type { Rule, Finding } from '../types.js';
import { short } from '../types.js';
import { gateStep, pushAgain, pushedBranch, RUN } from '../remedy.js';

export const refs: Rule = {
  id: 'refs',
  description: 'Agents may fast-forward branches other than the trusted branch and protected branches; no deletes, tags or other refs.',
  waivedForHumans: true,
  messages: {
    outsideHeads: 'ref {ref} is not a branch (refs/heads/*); agents may only push branches',
    tag: 'ref {ref} is a tag; agents may not create or move tags',
    replace: 'ref {ref} would make git read another object in place of {object} (refs/replace); agents may never push these',
    trustedBranch: 'ref {ref} is the trusted branch {branch} (names match case-insensitively); agents may not push to it',
    protectedBranch: 'ref {ref} matches protected branch pattern {pattern} (case-insensitive); agents may not push to it',
    delete: 'ref {ref} would be deleted; agents may not delete refs',
    nonFastForward: 'ref {ref}: {old} -> {new} is not a fast-forward (history would be rewritten)',
  },
  async check(ctx) {
    const { update, policy, kind } = ctx;
    const findings: Finding[] = [];
    const ref = update.ref;
    const rp = policy.refs;
    // A replace ref changes what every later git reads for an object: never an agent's, whatever
    // the policy allows outside refs/heads.
    if (ref.startsWith('refs/replace/')) findings.push({ messageId: 'replace', data: { ref, object: ref.slice('refs/replace/'.length, 'refs/replace/'.length + 12) } });
    else if (ref.startsWith('refs/tags/')) {
      if (!rp.allowTags) findings.push({ messageId: 'tag', data: { ref } });
    } else if (!ref.startsWith('refs/heads/')) {
      if (!rp.allowOutsideHeads) findings.push({ messageId: 'outsideHeads', data: { ref } });
    } else {
      const branch = ref.slice('refs/heads/'.length);
      if (sameBranch(branch, policy.trustedBranch)) findings.push({ messageId: 'trustedBranch', data: { ref, branch: policy.trustedBranch } });
      if (protectedBranchMatcher(rp.protectedBranches)(branch)) {
        findings.push({ messageId: 'protectedBranch', data: { ref, pattern: firstMatch(rp.protectedBranches, branch, true) ?? '?' } });
      }
    }
    if (kind === 'delete' && !rp.allowDeletes) findings.push({ messageId: 'delete', data: { ref } });
    if (kind === 'update' && !rp.allowNonFastForward && !(await isAncestorOfNew(ctx, update.oldId, update.newId))) {
      findings.push({ messageId: 'nonFastForward', data: { ref, old: short(update.oldId), new: short(update.newId) }, commit: update.newId });
    }
    return { findings };
  },
  remediation(ctx, findings) {
    const ids = new Set(findings.map((f) => f.messageId));
    const branch = pushedBranch(ctx);
    if (ids.has('nonFastForward')) {
      return [
        `the gate's ${branch} is at ${short(ctx.update.oldId)}; put your work on top of it instead of rewriting it (no --force):`,
        gateStep(ctx, 'fetch it', 'fetch', `refs/heads/${branch}`),
        `${RUN}git rebase FETCH_HEAD`,
        pushAgain(ctx),
      ].join('\n');
    }
    if (ids.has('delete')) return 'leave the branch in place; ask a person to delete it if it is no longer needed';
    const agentBranch = `agent/${branch.replace(/^refs\//, '').replace(/[^A-Za-z0-9._/-]/g, '-') || 'work'}`;
    return gateStep(ctx, 'push to an agent branch instead', 'push', `HEAD:refs/heads/${agentBranch}`);
  },
};
