// After pre-receive: the update hook (each ref must be one pre-receive judged; its verdict
// again), post-receive (the confirm rows of refs that moved) and the end of receive-pack (the
// confirm rows of judged refs that never moved, `upstream.diverged`, the settling of the
// intent entry). The refs have moved or not by then, so these rows go through the row queue
// (retried, in order, never dropped) instead of refusing anything.

import { recordDiverged } from '../../upstream/gate.js';
import type { HookContext } from './context.js';
import type { DecisionLog } from './decision-log.js';
import { parseRefLine, type HookRequest } from './request.js';
import { key, type PushSession } from './session.js';

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

export async function postReceive(ctx: HookContext, s: PushSession, hr: HookRequest): Promise<'accept'> {
  const items = hr.lines.map(parseRefLine).map((u) => {
    s.confirmed.add(key(u.ref, u.oldId, u.newId));
    return { ref: u.ref, new: u.newId, moved: true };
  });
  // The refs moved already: a failed write cannot refuse anything, so it is queued and retried.
  if (items.length) await ctx.rows.write(s.pushId, 'the confirm rows of refs that moved', () => ctx.opts.audit.confirmRefs(s.pushId, items, { repo: s.repo }));
  return 'accept';
}

/**
 * receive-pack exited (the session is ended): the writes for refs that were judged but never
 * confirmed, which did not move. The caller keeps the returned promise until it settles.
 */
export function confirmEnded(ctx: HookContext & { readonly decisions: DecisionLog }, s: PushSession): Promise<void> {
  // Accepted but never delivered (the pre-receive shim gave up or died before git ran the
  // update hook): nothing moved, and the audit says refused.
  const unmoved = [...s.decisions.values()].filter((d) => !s.confirmed.has(key(d.ref, d.oldId, d.newId)));
  const items = unmoved.map((d) => ({ ref: d.ref, new: d.newId, moved: false }));
  // In order, through the row queue (retried, never dropped): the diverged row, the confirms
  // of refs that did not move, then the settling of the intent entry (which checks the log
  // against the refs and records anything still missing). stop() waits for these writes.
  // The repository's next push finds a reader running (src/git/spare-reader.ts): started now,
  // when this push's processes are done, not while it is judged or answered.
  ctx.stores.prime(s.repoDir);
  return (async () => {
    // Upstream took refs the gate did not move: audited, and the next fetch repairs the gate.
    const diverged = s.forwarded?.size ? unmoved.filter((d) => s.forwarded!.has(key(d.ref, d.oldId, d.newId))) : [];
    if (diverged.length) await ctx.rows.write(s.pushId, 'the upstream.diverged row', () => recordDiverged(ctx.opts.audit, ctx.upstream, s, diverged));
    if (items.length) await ctx.rows.write(s.pushId, 'the confirm rows of refs that did not move', () => ctx.opts.audit.confirmRefs(s.pushId, items, { repo: s.repo }));
    if (s.journaled && ctx.journal) ctx.decisions.settleLater(s);
  })();
}
