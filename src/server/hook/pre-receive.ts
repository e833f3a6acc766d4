// The pre-receive hook: one push from its ref lines to its verdict. It checks the quarantine
// variables, refreshes the trusted branch when the repository has an upstream or evaluate
// mode (src/upstream/gate.ts), judges (./judge.ts), writes the decision before anything can
// move (./decision-log.ts; before the forward, or before the accept is answered), then adds
// the `remote:` lines: each ref's decision, unknown push options, the escalation
// (../escalate.ts) and one patchgate-json line per refused ref.

import { Git, QUARANTINE_VARS } from '../../git/git.js';
import { errorDecision, renderDecision } from '../../policy/engine.js';
import { machineLine } from '../../policy/machine-line.js';
import type { SlowPhaseOptions } from '../../progress.js';
import type { RefDecision } from '../../policy/types.js';
import type { Verdict } from '../../audit/store.js';
import { readPushOptions } from '../../audit/escalation.js';
import { afterJudging, beforeJudging, forwardOutcomes, refuseMovedRefs, upstreamRefused, type ForwardRecord } from '../../upstream/gate.js';
import { recordEscalation } from '../escalate.js';
import type { HookContext } from './context.js';
import type { DecisionLog } from './decision-log.js';
import type { Judge } from './judge.js';
import { UpdateHookError } from './update-hook.js';
import { keepEscalation, keepFailed } from '../escalation-ref.js';
import { inside, parseRefLine, type HookRequest } from './request.js';
import { key, type PushSession } from './session.js';

/** The shared parts, with the judge and the decision log the pre-receive hook calls. */
export interface HookParts extends HookContext {
  readonly judge: Judge;
  readonly decisions: DecisionLog;
}

export async function preReceive(ctx: HookParts, s: PushSession, hr: HookRequest, lines: string[], gone: AbortSignal, remote?: SlowPhaseOptions): Promise<'accept' | 'reject'> {
  // Its intent entry is opened while it is judged; one no decision write took is closed again.
  const early: Early = { opened: null, used: false };
  try {
    return await judgeAndAnswer(ctx, s, hr, lines, gone, early, remote);
  } finally {
    if (!early.used) await ctx.decisions.closeEarly(s, early.opened);
  }
}

interface Early {
  opened: Promise<void> | null;
  /** A decision write took the entry (and settles it itself if that write fails). */
  used: boolean;
}

async function judgeAndAnswer(ctx: HookParts, s: PushSession, hr: HookRequest, lines: string[], gone: AbortSignal, early: Early, remote?: SlowPhaseOptions): Promise<'accept' | 'reject'> {
  const updates = hr.lines.map(parseRefLine);
  const options = readPushOptions(hr.env);
  const env: Record<string, string> = {};
  for (const v of QUARANTINE_VARS) {
    const val = hr.env[v];
    if (val === undefined) continue;
    for (const p of val.split(':').filter(Boolean)) {
      if (!inside(s.repoDir, p)) throw new Error(`${v} points outside the repository`);
    }
    env[v] = val;
  }
  const t0 = Date.now();
  // The push's object reader: a push of loose objects (under receive-pack's unpack limit) is
  // read in process (src/git/loose.ts) and may need none; it takes the spare reader started
  // when the repository's last push ended (src/git/spare-reader.ts) at its first read that
  // needs one. A push that holds a pack gets it now, so its start-up overlaps the setup reads.
  const git = new Git({ dir: s.repoDir, env, bare: true, store: ctx.stores.get(s.repoDir), reader: () => ctx.stores.spare(s.repoDir, env) });
  git.startUnlessLoose();
  let decisions: RefDecision[];
  const timings: Record<string, number> = {};
  let shown: string[] | null = null;
  let auditVerdict = (d: RefDecision): Verdict => d.verdict;
  let forward: ForwardRecord | null = null;
  let mode: 'enforce' | 'evaluate' = 'enforce';
  let enforce = false;
  try {
    // Upstream and evaluate mode (src/upstream/gate.ts): refresh the trusted branch first,
    // forward what was accepted after; the engine's judgement in between is the same.
    // Several refs: one may be refused and the others accepted, which only the update hook can
    // tell git; it is put in place before anything is judged (./update-hook.ts), or none is.
    const perRef = updates.length > 1 && !s.auditAtJudge ? ctx.updateHooks.tryNeed(s.repoDir, s.pid) : null;
    const pre = perRef ?? (await beforeJudging(ctx.upstream, ctx.opts.dataDir, s.repoDir, ctx.opts.timeoutMs).catch((err: unknown) => err as Error));
    if (pre instanceof UpdateHookError) {
      decisions = updates.map((u) => ({ ...errorDecision(u, pre, t0), remediation: pre.next }));
    } else if (pre instanceof Error) {
      decisions = updates.map((u) => upstreamRefused(u, pre, s.repo));
    } else {
      if (pre.fetch) timings.upstreamFetch = pre.fetch.ms;
      if (pre.settings.mode === 'evaluate') mode = 'evaluate';
      enforce = pre.settings.mode === 'enforce';
      // Its intent entry is made durable while it is judged (used only if it is accepted).
      early.opened = ctx.decisions.openEarly(s, !!(pre.settings.upstream || pre.settings.mode === 'evaluate'));
      decisions = await ctx.judge.judgeAll(git, s, updates, timings, gone, s.timeoutMs ?? ctx.opts.timeoutMs, remote);
      // A push that escalates already did what its refusal would suggest: that line is left out.
      if (options.escalate !== null) decisions = decisions.map((d) => (d.escalate ? { ...d, escalate: undefined } : d));
      // A ref that moved on the gate since receive-pack read it (the refresh just now) would
      // fail git's lock after an accept: refused before anything is written or forwarded.
      decisions = await refuseMovedRefs(ctx.stores.get(s.repoDir), decisions);
      if ((pre.settings.upstream || pre.settings.mode === 'evaluate') && !gone.aborted) {
        const fin = await afterJudging({
          settings: pre.settings, repo: s.repo, repoDir: s.repoDir, env, git, atomic: !!s.atomic, decisions, actor: s.actor, pushId: s.pushId, hookMs: ctx.opts.timeoutMs, mirror: ctx.upstream,
          // The decision row, before the forward: a failed write forwards nothing (and throws).
          intent: async (ds, verdictOf) => {
            const record = ctx.decisions.recordOf(s, ds, verdictOf, { ...timings, total: Date.now() - t0 });
            if (s.ended || gone.aborted) {
              await ctx.decisions.recordUndelivered(s, record);
              throw new Error('the hook went away before its verdict, so nothing was forwarded');
            }
            early.used = true;
            await ctx.decisions.writeDecision(s, { ...record, forwarding: true }, true, early.opened);
            ctx.decisions.remember(ds, verdictOf, enforce, s.pushId);
          },
        });
        decisions = fin.decisions;
        shown = fin.lines;
        auditVerdict = fin.auditVerdict;
        forward = fin.forward;
        s.forwarded = new Set([...(s.forwarded ?? []), ...fin.forwarded]);
        Object.assign(timings, fin.timings);
      }
    }
  } finally {
    // For good: a read of a cancelled judgement still on its way starts no reader.
    git.dispose();
  }
  const accepted = decisions.filter((d) => d.verdict === 'accept').length;
  if (forward) {
    // The decision is in the log already (written before the forward); its outcome follows.
    for (const d of decisions) s.decisions.set(key(d.ref, d.oldId, d.newId), d);
    // The refusals first: the first outcome row written settles the push's count (src/server/metrics.ts).
    const out = forwardOutcomes(forward, s);
    const refusal = out.refusal;
    if (refusal) await ctx.rows.write(s.pushId, 'the upstream-refusal rows', () => ctx.opts.audit.appendUpstreamRefusal(refusal));
    for (const row of out.admin) await ctx.rows.write(s.pushId, `the ${row.action} row`, () => ctx.opts.audit.appendAdmin(row));
  } else {
    const record = ctx.decisions.recordOf(s, decisions, auditVerdict, { ...timings, total: Date.now() - t0 });
    if (accepted === 0) {
      // A refusal changes nothing: written now (a failed write still refuses).
      await ctx.opts.audit.recordPush(record);
    } else if (s.ended || gone.aborted) {
      // Nobody is left to receive the accept: audited as refused, answered as refused.
      await ctx.decisions.recordUndelivered(s, record);
      lines.push(`patchgate: push ${s.pushId} refused: the hook went away before its verdict`);
      return 'reject';
    } else {
      // Before the accept is answered (git updates the refs only after it): a failed write refuses.
      early.used = true;
      await ctx.decisions.writeDecision(s, record, false, early.opened);
      ctx.decisions.remember(decisions, auditVerdict, enforce, s.pushId);
    }
    for (const d of decisions) s.decisions.set(key(d.ref, d.oldId, d.newId), d);
  }
  if (shown) lines.push(...shown);
  else for (const d of decisions) lines.push(...renderDecision(d, s.actor));
  for (const name of options.unknown) lines.push(`patchgate: push option ${name} is not one patchgate knows (it knows patchgate.escalate); ignored`);
  const escalation = options.escalate !== null && decisions.length ? await recordEscalation({ audit: ctx.opts.audit, notifier: ctx.notifier, log: ctx.log, ...(ctx.opts.escalationWhere ? { where: ctx.opts.escalationWhere } : {}) }, s, decisions, auditVerdict, options.escalate, lines) : null;
  // Its commits, kept for a person from the quarantine before git drops it (src/server/escalation-ref.ts);
  // not inside a git host, whose advertisement the gate does not control.
  if (escalation && !s.auditAtJudge) await keepForReview(ctx, s, escalation.id, decisions[0]!.newId, env, lines);
  // For machines: one patchgate-json line per refused or would-be-refused ref (src/policy/machine-line.ts).
  for (const d of decisions) {
    const verdict = auditVerdict(d);
    if (verdict !== 'accept') lines.push(machineLine(d, { verdict, mode, pushId: s.pushId, ...(escalation ? { escalation } : {}) }));
  }
  lines.push(`patchgate: push ${s.pushId} ${accepted ? 'judged' : 'audited'} (${accepted}/${decisions.length} ref(s) accepted)`);
  return accepted > 0 ? 'accept' : 'reject';
}

/** Keep an escalated push's commits under refs/patchgate/escalations/N; a failure is said, never a refusal. */
async function keepForReview(ctx: HookParts, s: PushSession, id: number, newId: string, quarantine: Record<string, string>, lines: string[]): Promise<void> {
  try {
    if (await keepEscalation(s.repoDir, quarantine, id, newId)) lines.push(`patchgate: escalation ${id}: commit ${newId.slice(0, 12)} kept for review until it is closed (agents cannot fetch it)`);
  } catch (err) {
    ctx.log(keepFailed(id, err));
    lines.push(keepFailed(id, err));
  }
}
