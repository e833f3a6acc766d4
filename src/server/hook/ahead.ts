// A push judged before its hook asks (issue 24). The pack is in the daemon about ten
// milliseconds before receive-pack's pre-receive hook runs (receive-pack unpacks it and checks
// connectivity first). So once ./prewarm.ts has read it, the same engine judges the push's
// ref commands on a sealed view of it (src/git/git.ts: the pack's objects, checked against
// their ids, over the repository's store; no process, and anything else an error), with every
// rule but the size limits. At the hook, the result is used only when it was judged on what
// the hook would judge on: the same ref updates, trusted branch, tip and policy, the same
// pusher, and no push of the repository written or ended in between (the generation). The size
// limits then run on the real quarantine. Otherwise, or when anything failed ahead, the hook
// judges as before: nothing here can accept what the hook would refuse.

import { runCancellable } from '../../cancel.js';
import { Git } from '../../git/git.js';
import type { PackView } from '../../git/pack-read.js';
import { judgeAhead, type AheadRules } from '../../policy/engine.js';
import { policyDigest } from '../../policy/carried.js';
import type { PushTarget } from '../../policy/push-target.js';
import type { RefUpdate, Role } from '../../policy/types.js';
import type { Policy } from '../../policy/config.js';

/** The trusted branch (the bare repository's HEAD, or the host's), its tip and the policy read from that tip. */
export interface TrustedState {
  trustedBranch: string;
  trustedTip: string | null;
  policy: Policy;
}

/** What a push's rules found ahead, and what they were judged on. */
export interface Ahead {
  generation: number;
  role: Role;
  /** The agent's class it was judged under (absent: the default class). */
  agentClass?: string;
  trusted: TrustedState;
  rules: AheadRules[];
}

/** Longest a judgement ahead runs (it is then stopped, and the hook judges). */
export const AHEAD_LIMIT_MS = 2000;

/** Longest the hook waits for a judgement ahead still under way: this, or a quarter of its own limit. */
export function aheadWaitMs(hookLimitMs: number): number {
  return Math.min(AHEAD_LIMIT_MS, Math.floor(hookLimitMs / 4));
}

/**
 * Each repository's generation: bumped whenever one of its pushes writes an accept or ends, so
 * a judgement ahead that began before that (the store, the refs or the accepted commits may
 * have moved since) is not used.
 */
export class Generations {
  private readonly gens = new Map<string, number>();

  of(repoDir: string): number {
    return this.gens.get(repoDir) ?? 0;
  }

  bump(repoDir: string): void {
    this.gens.set(repoDir, this.of(repoDir) + 1);
  }
}

export interface AheadInput {
  repoDir: string;
  store: Git;
  cache: Map<string, unknown>;
  role: Role;
  agentClass?: string;
  pushTarget?: PushTarget;
  updates: readonly RefUpdate[];
  view: PackView;
  trusted: TrustedState;
  generation: number;
}

/** The push's ref commands judged on the pack's sealed view; null when any rule failed there. */
export function judgeFromPack(input: AheadInput): Promise<Ahead | null> {
  const limit = AbortSignal.timeout(AHEAD_LIMIT_MS);
  return runCancellable(limit, () => judgeAll(input)).then((a) => (limit.aborted ? null : a));
}

async function judgeAll(input: AheadInput): Promise<Ahead | null> {
  const git = new Git({ dir: input.repoDir, bare: true, store: input.store, pushObjects: input.view.pushObjects(), sealed: true });
  const { trustedTip, trustedBranch, policy } = input.trusted;
  const rules: AheadRules[] = [];
  for (const u of input.updates) {
    const r = await judgeAhead({ git, role: input.role, ...(input.agentClass ? { agentClass: input.agentClass } : {}), mode: 'push', trustedTip, trustedBranch, policy, cache: input.cache, mainStore: input.store, ...(input.pushTarget ? { pushTarget: input.pushTarget } : {}) }, u);
    if (!r) return null;
    rules.push(r);
  }
  return { generation: input.generation, role: input.role, ...(input.agentClass ? { agentClass: input.agentClass } : {}), trusted: input.trusted, rules };
}

/**
 * The rules judged ahead for `updates`, when they were judged on the same inputs as the hook's
 * judgement now: else null (the hook judges them itself).
 */
export function aheadFor(a: Ahead | null, now: { generation: number; role: Role; agentClass?: string | undefined; trusted: TrustedState; updates: readonly RefUpdate[] }): AheadRules[] | null {
  if (!a || a.generation !== now.generation || a.role !== now.role || (a.agentClass ?? null) !== (now.agentClass ?? null)) return null;
  if (a.trusted.trustedTip !== now.trusted.trustedTip || a.trusted.trustedBranch !== now.trusted.trustedBranch) return null;
  if (policyDigest(a.trusted.policy) !== policyDigest(now.trusted.policy)) return null;
  if (a.rules.length !== now.updates.length) return null;
  const same = a.rules.every((r, i) => r.update.ref === now.updates[i]!.ref && r.update.oldId === now.updates[i]!.oldId && r.update.newId === now.updates[i]!.newId);
  return same ? a.rules : null;
}
