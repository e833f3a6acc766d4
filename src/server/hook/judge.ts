// The judgement of one push's ref updates, under the hook time limit: the trusted branch, its
// tip and policy read once, then the engine per ref. It runs under an AbortSignal
// (src/cancel.ts) that the limit, or the hook hanging up, fires: the parse worker holding the
// push's file is terminated and the judge stops; what was not judged by then is refused
// (`timedOut`, `failed`). Nothing here writes to the audit log (./decision-log.ts does).

import type { Git } from '../../git/git.js';
import { errorDecision, judgeUpdate } from '../../policy/engine.js';
import type { Policy } from '../../policy/config.js';
import { trustedPolicy } from '../../policy/trusted-policy.js';
import type { SlowPhaseOptions } from '../../progress.js';
import { parsePool } from '../../contract/parse-pool.js';
import { runCancellable } from '../../cancel.js';
import { LiveJudgement, type StoppedParse } from '../../policy/live.js';
import { RUN } from '../../policy/remedy.js';
import { foreground } from '../../contract/priority.js';
import type { RefDecision, RefUpdate, RuleOutcome } from '../../policy/types.js';
import type { HookContext } from './context.js';
import type { PushSession } from './session.js';
import { defaultJudgeSlots, Slots } from './slots.js';
import { aheadFor, aheadWaitMs, type TrustedState } from './ahead.js';

/** How long a person's push waits, by default, for the rules whose findings are waived for a person. */
export const WAIVED_WAIT_MS = 1000;

export class Judge {
  private judges = 0;
  /** Judgements that run at once (./slots.ts); the others wait in arrival order. */
  readonly slots: Slots;

  constructor(private readonly ctx: HookContext) {
    this.slots = new Slots(ctx.opts.judgeSlots ?? defaultJudgeSlots());
  }

  /** Judgements still running, including cancelled ones that have not stopped yet (for tests). */
  get judging(): number {
    return this.judges;
  }

  async judgeAll(git: Git, s: PushSession, updates: RefUpdate[], timings: Record<string, number>, gone: AbortSignal, limitMs: number, remote?: SlowPhaseOptions): Promise<RefDecision[]> {
    // Cancelled by the time limit or by the hook hanging up; the parse worker holding this
    // push's file is terminated and the judge stops at its next check (src/cancel.ts).
    const cancel = new AbortController();
    const live = new LiveJudgement();
    const onGone = () => cancel.abort(gone.reason);
    gone.addEventListener('abort', onGone, { once: true });
    this.judges++;
    let started = false;
    const work = runCancellable(cancel.signal, async () => {
      const waited = performance.now();
      // A wait past the remote-progress delay says so on `remote:` (nothing silent for long).
      const ahead = this.slots.waiting;
      let said = false;
      const say = remote ? setTimeout(() => {
        said = true;
        remote.write(`patchgate: waiting for its turn (pushes judged at once: ${this.slots.size}; waiting before this one: ${ahead})\n`);
      }, remote.delayMs ?? 2000) : undefined;
      const release = await this.slots.acquire(cancel.signal).finally(() => clearTimeout(say));
      if (said) remote!.write(`patchgate: its turn came after ${((performance.now() - waited) / 1000).toFixed(1)} s; judging\n`);
      started = true;
      // Where a push's time goes, kept in the audit row (ms): queued = waiting for a slot.
      const queued = Math.round(performance.now() - waited);
      if (queued > 0) timings.queued = queued;
      try {
        // While it runs, warm-up parses wait (src/contract/priority.ts): a push is judged ahead of a warm-up.
        return await foreground(() => this.judgeUpdates(git, s, updates, timings, cancel.signal, remote, live));
      } finally {
        release();
      }
    }).finally(() => {
      this.judges--;
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<RefDecision[]>((resolve) => {
      timer = setTimeout(() => {
        const parsing = parsePool.pathsOf(cancel.signal);
        this.ctx.opts.onTimeout?.();
        cancel.abort(new Error(`the hook time limit of ${limitMs} ms passed`));
        const seed = this.ctx.opts.seedCommand?.(s.repoDir) ?? null;
        resolve(updates.map((u) => (started ? timedOut(u, limitMs, parsing, s.timeoutMessage, live, seed) : busy(u, limitMs, this.slots.size))));
      }, limitMs);
    });
    try {
      const out = await Promise.race([work.catch((err) => updates.map((u) => failed(u, err))), timeout]);
      // Cancelled (the hook hung up) while a ref was judged: nothing of it is an accept.
      if (cancel.signal.aborted && out.length !== updates.length) return updates.map((u) => failed(u, cancel.signal.reason));
      return cancel.signal.aborted ? out.map((d) => (d.verdict === 'accept' ? failed(d, cancel.signal.reason) : d)) : out;
    } finally {
      clearTimeout(timer);
      gone.removeEventListener('abort', onGone);
    }
  }

  /** The engine per ref, against one trusted tip and policy read once (inside a slot). */
  private async judgeUpdates(git: Git, s: PushSession, updates: RefUpdate[], timings: Record<string, number>, signal: AbortSignal, remote?: SlowPhaseOptions, live?: LiveJudgement): Promise<RefDecision[]> {
    if (this.ctx.opts.beforeJudge) await this.ctx.opts.beforeJudge();
    const t0 = performance.now();
    if (live) live.phase = 'reading the trusted branch and its policy';
    const store = this.ctx.stores.get(s.repoDir);
    // One policy for the whole push: every ref is judged against the same trusted tip.
    const trusted = await trustedState(store, s.trustedBranch);
    const { trustedTip, trustedBranch, policy } = trusted;
    const role = s.role === 'agent' ? 'agent' : 'human';
    // The rules judged from the pack before this hook (./ahead.ts), if on the same inputs as now.
    const generation = this.ctx.generations.of(s.repoDir);
    const agentClass = role === 'agent' ? s.agentClass : undefined;
    const ahead = s.ahead ? aheadFor(await within(s.ahead, aheadWaitMs(s.timeoutMs ?? this.ctx.opts.timeoutMs)), { generation, role, agentClass, trusted, updates }) : null;
    if (ahead) timings.ahead = 1;
    // Where a push's time goes, kept in the audit row (ms): setup = trusted tip and policy.
    timings.setup = Math.round(performance.now() - t0);
    const out: RefDecision[] = [];
    // A person's push: the rules waived for a person hold the answer WAIVED_WAIT_MS (or a quarter
    // of its time limit, if less) at most; what they have not found by then is audited as
    // deferred and goes on after the answer (issue 47: they do not hold a person's push).
    const waivedBudgetMs = this.ctx.opts.waivedWaitMs ?? Math.min(WAIVED_WAIT_MS, Math.floor((s.timeoutMs ?? this.ctx.opts.timeoutMs) / 4));
    for (const [i, u] of updates.entries()) {
      if (signal.aborted) break;
      out.push(await judgeUpdate({ git, role, ...(agentClass ? { agentClass } : {}), mode: 'push', waivedBudgetMs, ...(live ? { live } : {}), trustedTip, trustedBranch, policy, cache: this.ctx.opts.cache, mainStore: store, ...(s.pushTarget ? { pushTarget: s.pushTarget } : {}), ...(remote ? { progress: remote } : {}), ...(ahead ? { ahead: ahead[i]! } : {}) }, u));
    }
    timings.refs = Math.round(performance.now() - t0) - timings.setup;
    return out;
  }
}

/**
 * The trusted branch (the bare repo's HEAD), its tip and the policy read from that tip; when
 * that policy does not validate, the fallback with `fallback` set (src/policy/trusted-policy.ts).
 */
export async function trustedState(git: Git, branch?: string): Promise<TrustedState> {
  const trustedRef = branch ? `refs/heads/${branch}` : ((await git.symbolicHead()) ?? 'refs/heads/main');
  const trustedTip = await git.refTip(trustedRef);
  // The policy is a function of the tip's history: read and checked once per tip (a failure is not kept).
  const policy = trustedTip ? await git.objects.get(`policy ${trustedTip}`, () => trustedPolicy(git, trustedTip), () => 1) : await trustedPolicy(git, trustedTip);
  return { trustedBranch: trustedRef.replace(/^refs\/heads\//, ''), trustedTip, policy };
}

/**
 * The time limit passed: the refusal says what the judgement was doing (the phase, the rules
 * still running and how far they came, those done: ./live.ts), and its audit row keeps the
 * rules' times; when files were still being parsed, it names them and says what to do.
 */
function timedOut(u: RefUpdate, ms: number, parsing: string[] = [], lead = '', live?: LiveJudgement, seed: string | null = null): RefDecision {
  const files = [...new Set(parsing)].slice(0, 3);
  const doing = live ? ` (${live.describe()})` : '';
  const outcomes = live && live.ref === u.ref ? (live.outcomes() as RuleOutcome[]) : [];
  // A walk with more files left than those being parsed (a repository's first parse): what it
  // parsed is kept (issue 47). One slow file holding the limit keeps the step below instead.
  const walk = live && live.ref === u.ref ? live.stoppedParses().find((p) => (p.total === null ? !files.length && p.kept > 0 : p.total - p.kept > Math.max(1, files.length))) : undefined;
  if (walk) {
    const d = errorDecision(u, new Error(`${lead}the policy did not finish within ${ms} ms${doing}; the judgement was stopped`), Date.now(), outcomes);
    return { ...d, remediation: keptRemedy(walk, seed) };
  }
  if (!files.length) return errorDecision(u, new Error(`${lead}the policy did not finish within ${ms} ms${doing}; the judgement was stopped`), Date.now(), outcomes);
  const d = errorDecision(u, new Error(`${lead}the policy did not finish within ${ms} ms: still parsing ${files.join(', ')}${doing}; the parse was stopped`), Date.now(), outcomes);
  if (d.reasons[0]) d.reasons[0] = { ...d.reasons[0], path: files[0]! };
  return { ...d, remediation: `split or simplify ${files.join(', ')} so each parses quickly (or move generated code out of the contract roots), commit, and push again` };
}

/**
 * The next step after a stopped parse: how much of it is kept and how much is left, push again
 * (each try starts from what the ones before it parsed), or seed the cache first with the
 * command that parses the repository outside any push's time limit (`patchgate warm`).
 */
export function keptRemedy(p: StoppedParse, seed: string | null): string {
  const what = `${p.rule}${p.what ? ` of ${p.what}` : ''}`;
  const counts = p.total === null ? `${p.kept} files parsed and kept` : `${p.kept} of ${p.total} files parsed and kept; ${Math.max(0, p.total - p.kept)} left`;
  const again = 'push again (each try keeps its work)';
  return seed
    ? `${what}: ${counts}: ${again}, or seed the cache first (a person runs it on the gate's machine; it parses the repository outside any push's time limit, with progress):\n${RUN}${seed}`
    : `${what}: ${counts}: ${again}`;
}

/** The limit passed before a slot was free: nothing of this push was judged. */
function busy(u: RefUpdate, ms: number, slots: number): RefDecision {
  const d = errorDecision(u, new Error(`the gate was busy judging other pushes (${slots} at a time) for all of this push's ${ms} ms, so it was not judged`), Date.now());
  return { ...d, remediation: 'nothing is wrong with the push: wait a minute and push again (git push)' };
}

/** `p`'s value, or null when it fails or takes longer than `ms`. */
function within<T>(p: Promise<T | null>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p.catch(() => null), new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)))]).finally(() => clearTimeout(timer));
}

function failed(u: RefUpdate, err: unknown): RefDecision {
  return errorDecision(u, err, Date.now());
}
