// After pre-receive: the update hook (each ref of a multi-ref push must be one pre-receive
// judged; its verdict again) and the end of receive-pack: the confirm rows of what moved and of
// what did not, `upstream.diverged`, the settling of the intent entry. What moved is git's own
// report-status to the client (../report-status.ts); with no report (a client may ask for
// none) each judged ref is read. The refs have moved or not by then, so these rows go through
// the row queue (retried, in order, never dropped) instead of refusing anything.

import { isZeroId } from '../../git/git.js';
import type { RefDecision } from '../../policy/types.js';
import { recordDiverged } from '../../upstream/gate.js';
import type { HookContext } from './context.js';
import type { DecisionLog } from './decision-log.js';
import { parseRefLine, type HookRequest } from './request.js';
import { key, type PushSession } from './session.js';
import type { ReportOutcome } from '../report-status.js';

export async function update(s: PushSession, hr: HookRequest, lines: string[]): Promise<'accept' | 'reject'> {
  const [u] = hr.lines.map(parseRefLine);
  if (!u) throw new Error('update hook sent no ref');
  const d = s.decisions.get(key(u.ref, u.oldId, u.newId));
  if (!d) {
    lines.push(`patchgate: ${u.ref} refused: it was not judged by the pre-receive gate`);
    return 'reject';
  }
  // The decision was written before pre-receive answered accept: nothing more to write here.
  return d.verdict;
}

/** Judged ref updates of the session that have no confirm row yet. */
function unconfirmed(s: PushSession): RefDecision[] {
  return [...s.decisions.values()].filter((d) => !s.confirmed.has(key(d.ref, d.oldId, d.newId)));
}

/**
 * The confirm rows of `judged` (moved: those in `moved`) and the `upstream.diverged` row, in
 * order through the row queue (retried, never dropped; stop() waits for them). They count as
 * confirmed from this call on, so nothing writes them twice.
 */
function confirmRows(ctx: HookContext, s: PushSession, judged: RefDecision[], moved: Set<RefDecision>): Promise<void> {
  for (const d of judged) s.confirmed.add(key(d.ref, d.oldId, d.newId));
  const items = judged.map((d) => ({ ref: d.ref, old: d.oldId, new: d.newId, moved: moved.has(d) }));
  // Upstream took refs the gate did not move: audited, and the next fetch repairs the gate.
  const diverged = s.forwarded?.size ? judged.filter((d) => !moved.has(d) && s.forwarded!.has(key(d.ref, d.oldId, d.newId))) : [];
  return (async () => {
    if (diverged.length) await ctx.rows.write(s.pushId, 'the upstream.diverged row', () => recordDiverged(ctx.opts.audit, ctx.upstream, s, diverged));
    if (items.length) await ctx.rows.write(s.pushId, 'the confirm rows', () => ctx.opts.audit.confirmRefs(s.pushId, items, { repo: s.repo }));
  })();
}

/**
 * git's report to the client is whole: every ref it names has moved (`ok`) or not (`ng`), so
 * the confirm rows are written now, while receive-pack is still on its way out. The push's
 * HTTP answer waits for this write.
 */
export function confirmReported(ctx: HookContext, s: PushSession, report: ReportOutcome): Promise<void> {
  const judged = unconfirmed(s);
  const moved = new Set(judged.filter((d) => d.verdict === 'accept' && report.refs.get(d.ref) === true));
  return confirmRows(ctx, s, judged, moved);
}

/**
 * receive-pack exited (the session is ended): the confirm rows of every judged ref that has
 * none yet (no report was read), moved or not, then the settling of the intent entry (which
 * checks the log against the refs and records anything still missing). The caller keeps the
 * returned promise until it settles.
 */
export function confirmEnded(ctx: HookContext & { readonly decisions: DecisionLog }, s: PushSession): Promise<void> {
  // The repository's next push finds a reader running (src/git/spare-reader.ts): started now,
  // when this push's processes are done, not while it is judged or answered.
  ctx.stores.prime(s.repoDir);
  const judged = unconfirmed(s);
  return (async () => {
    if (judged.length) await confirmRows(ctx, s, judged, await movedRefs(ctx, s, judged));
    if (s.journaled && ctx.journal) ctx.decisions.settleLater(s);
  })();
}

/**
 * Which judged, accepted updates moved: git's report when there is one (an `ok` line is a
 * committed ref update), else each ref read now (at the pushed commit: moved). Only refs the
 * gate accepted can have moved (an accept that never reached git did not: its pre-receive
 * shim gave up or died before the update, and git refused the ref).
 */
async function movedRefs(ctx: HookContext, s: PushSession, judged: RefDecision[]): Promise<Set<RefDecision>> {
  const out = new Set<RefDecision>();
  const accepted = judged.filter((d) => d.verdict === 'accept');
  if (!accepted.length) return out;
  const report = s.report?.() ?? null;
  if (report) {
    for (const d of accepted) if (report.refs.get(d.ref) === true) out.add(d);
    return out;
  }
  const store = ctx.stores.get(s.repoDir);
  for (const d of accepted) {
    const tip = await store.refTip(d.ref).catch(() => undefined);
    // A ref that cannot be read is not claimed to have moved; the intent entry's settling reads it again.
    if (tip !== undefined && (isZeroId(d.newId) ? tip === null : tip === d.newId)) out.add(d);
  }
  return out;
}
