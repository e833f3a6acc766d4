// The judgement of one push's ref updates, under the hook time limit: the trusted branch, its
// tip and policy read once, then the engine per ref. It runs under an AbortSignal
// (src/cancel.ts) that the limit, or the hook hanging up, fires: the parse worker holding the
// push's file is terminated and the judge stops; what was not judged by then is refused
// (`timedOut`, `failed`). Nothing here writes to the audit log (./decision-log.ts does).

import type { Git } from '../../git/git.js';
import { errorDecision, judgeUpdate } from '../../policy/engine.js';
import { loadPolicy, type Policy } from '../../policy/config.js';
import type { SlowPhaseOptions } from '../../progress.js';
import { parsePool } from '../../contract/parse-pool.js';
import { runCancellable } from '../../cancel.js';
import type { RefDecision, RefUpdate } from '../../policy/types.js';
import type { HookContext } from './context.js';
import type { PushSession } from './session.js';

export class Judge {
  private judges = 0;

  constructor(private readonly ctx: HookContext) {}

  /** Judgements still running, including cancelled ones that have not stopped yet (for tests). */
  get judging(): number {
    return this.judges;
  }

  async judgeAll(git: Git, s: PushSession, updates: RefUpdate[], timings: Record<string, number>, gone: AbortSignal, limitMs: number, remote?: SlowPhaseOptions): Promise<RefDecision[]> {
    // Cancelled by the time limit or by the hook hanging up; the parse worker holding this
    // push's file is terminated and the judge stops at its next check (src/cancel.ts).
    const cancel = new AbortController();
    const onGone = () => cancel.abort(gone.reason);
    gone.addEventListener('abort', onGone, { once: true });
    this.judges++;
    const work = runCancellable(cancel.signal, async () => {
      if (this.ctx.opts.beforeJudge) await this.ctx.opts.beforeJudge();
      const t0 = performance.now();
      const store = this.ctx.stores.get(s.repoDir);
      // One policy for the whole push: every ref is judged against the same trusted tip.
      const { trustedTip, trustedBranch, policy } = await trustedState(store, s.trustedBranch);
      // Where a push's time goes, kept in the audit row (ms): setup = trusted tip and policy.
      timings.setup = Math.round(performance.now() - t0);
      const out: RefDecision[] = [];
      for (const u of updates) {
        if (cancel.signal.aborted) break;
        out.push(await judgeUpdate({ git, role: s.role === 'agent' ? 'agent' : 'human', mode: 'push', trustedTip, trustedBranch, policy, cache: this.ctx.opts.cache, mainStore: store, ...(s.pushTarget ? { pushTarget: s.pushTarget } : {}), ...(remote ? { progress: remote } : {}) }, u));
      }
      timings.refs = Math.round(performance.now() - t0) - timings.setup;
      return out;
    }).finally(() => {
      this.judges--;
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<RefDecision[]>((resolve) => {
      timer = setTimeout(() => {
        const parsing = parsePool.pathsOf(cancel.signal);
        this.ctx.opts.onTimeout?.();
        cancel.abort(new Error(`the hook time limit of ${limitMs} ms passed`));
        resolve(updates.map((u) => timedOut(u, limitMs, parsing, s.timeoutMessage)));
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
}

/** The trusted branch (the bare repo's HEAD), its tip and the policy read from that tip. */
export async function trustedState(git: Git, branch?: string): Promise<{ trustedBranch: string; trustedTip: string | null; policy: Policy }> {
  const trustedRef = branch ? `refs/heads/${branch}` : ((await git.symbolicHead()) ?? 'refs/heads/main');
  const trustedTip = await git.refTip(trustedRef);
  return { trustedBranch: trustedRef.replace(/^refs\/heads\//, ''), trustedTip, policy: await loadPolicy(git, trustedTip) };
}

/** The time limit passed; when files were still being parsed, the refusal names them and says what to do. */
function timedOut(u: RefUpdate, ms: number, parsing: string[] = [], lead = ''): RefDecision {
  const files = [...new Set(parsing)].slice(0, 3);
  if (!files.length) return errorDecision(u, new Error(`${lead}the policy did not finish within ${ms} ms (the judgement was stopped)`), Date.now());
  const d = errorDecision(u, new Error(`${lead}the policy did not finish within ${ms} ms: still parsing ${files.join(', ')} (the parse was stopped)`), Date.now());
  if (d.reasons[0]) d.reasons[0] = { ...d.reasons[0], path: files[0]! };
  return { ...d, remediation: `split or simplify ${files.join(', ')} so each parses quickly (or move generated code out of the contract roots), commit, and push again` };
}

function failed(u: RefUpdate, err: unknown): RefDecision {
  return errorDecision(u, err, Date.now());
}
