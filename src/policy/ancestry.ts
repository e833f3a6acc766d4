// Commit-graph questions the rules ask on every push (is the old tip an ancestor, where is
// the merge-base with the trusted branch, which commits touched the ledger), answered from
// what the engine already knows when that is exact, so a typical push starts no git process
// for them. Each shortcut below says why its answer equals git's; anything else asks git.

import type { LedgerHistory } from '../ledger/ledger.js';
import { ledgerHistory } from '../ledger/ledger.js';
import type { CommitInfo } from '../git/git.js';
import type { RuleContext } from './types.js';

/**
 * When the pushed commits form one line ending at `tip` (no merges), the commit just below
 * them; otherwise null. Every pushed commit then sits between that commit and the tip.
 */
export function linearBase(newCommits: CommitInfo[], tip: string): string | null {
  if (newCommits.length === 0 || newCommits[newCommits.length - 1]!.id !== tip) return null;
  for (let i = 0; i < newCommits.length; i++) {
    const c = newCommits[i]!;
    if (c.parents.length !== 1) return null;
    if (i > 0 && c.parents[0] !== newCommits[i - 1]!.id) return null;
  }
  return newCommits[0]!.parents[0]!;
}

/** Is `a` an ancestor of `b` (= update.newId)? A pushed commit whose parent is `a` proves it. */
export async function isAncestorOfNew(ctx: RuleContext, a: string, b: string): Promise<boolean> {
  if (a === b || ctx.newCommits.some((c) => c.parents.includes(a))) return true;
  return ctx.git.isAncestor(a, b);
}

/**
 * merge-base(head, trusted) for head = update.newId. If a pushed commit's parent is the
 * trusted tip, the tip is an ancestor of head and is the merge-base. In a push (`linearBase`
 * set: the judged commits are those no ref reaches, or for an agent those the trusted tip does
 * not reach (src/policy/carried.ts), so none is an ancestor of the trusted tip), the
 * common ancestors of head and the tip are those of the line's base and the tip, so the answer
 * is the same as for the base, which the previous push to this branch already asked.
 */
export async function mergeBaseWithTrusted(ctx: RuleContext, head: string, trusted: string): Promise<string | null> {
  const memo = (id: string) => `mem:merge-base:${id}:${trusted}`;
  if (head === trusted || ctx.newCommits.some((c) => c.parents.includes(trusted))) {
    // Kept too: the next push to this branch starts its line here, and asks for this answer.
    ctx.cache.set(memo(head), trusted);
    return trusted;
  }
  const hit = ctx.cache.get(memo(head));
  if (hit !== undefined) return hit as string | null;
  const from = ctx.linearBase ?? head;
  let mb = ctx.cache.get(memo(from)) as string | null | undefined;
  if (mb === undefined) mb = await ctx.git.mergeBase(from, trusted);
  ctx.cache.set(memo(from), mb);
  ctx.cache.set(memo(head), mb);
  return mb;
}

/**
 * The ledger's history as seen from `rev`. When the pushed line touches no ledger path, git's
 * simplified history of the path from the tip is exactly that from the line's base (the
 * pushed commits are TREESAME and drop out), so the base's answer is reused.
 */
export async function ledgerHistoryAt(ctx: RuleContext, rev: string, path: string): Promise<LedgerHistory> {
  const memo = (id: string) => `mem:ledger-history:${id}:${path}`;
  const hit = ctx.cache.get(memo(rev)) as LedgerHistory | undefined;
  if (hit) return hit;
  let history: LedgerHistory | undefined;
  const literal = !/[*?[\]\\:!]/.test(path);
  if (ctx.linearBase && literal) {
    let touched = false;
    for (const c of ctx.newCommits) {
      if ((await ctx.changes(c)).some((ch) => ch.path === path || ch.path.startsWith(`${path}/`))) touched = true;
    }
    if (!touched) {
      // The base's answer, computed once for it when missing: every new branch an agent starts
      // from the trusted tip then reuses it instead of asking git for the path's history again.
      const base = ctx.linearBase;
      history = (ctx.cache.get(memo(base)) as LedgerHistory | undefined) ?? (await ledgerHistory(ctx.git, base, path));
      ctx.cache.set(memo(base), history);
    }
  }
  history ??= await ledgerHistory(ctx.git, rev, path);
  ctx.cache.set(memo(rev), history);
  return history;
}
