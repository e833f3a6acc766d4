// Settling a push from its intent entry (src/server/intents.ts): the decision rows in the
// audit log are compared with the real refs, and what is missing from the log is recorded.
// Every push ends here once its own rows are written (then nothing is missing), and so does,
// at the next start, a push whose gate was killed or whose store went down on the way:
// - in front of an upstream, an accepted ref with no forward outcome row is looked up
//   upstream: at the pushed commit it is `upstream.forwarded`, else an `upstream-refusal` row
//   (both with `recovered: true`; the push then counts as refused, issue 48); refs upstream took are fetched into the gate (the repair);
// - an accepted ref with no confirm row gets one from the gate's ref as it was found.
// Only then is the entry removed. A store or upstream that does not answer throws: the entry
// stays and is tried again (the row queue's back-off, or the next start).

import { errorMessage } from '../errors.js';
import { Git, isZeroId } from '../git/git.js';
import type { AuditRow } from '../audit/store.js';
import type { AuditSink } from '../audit/sink.js';
import type { IntentEntry, IntentJournal } from '../server/intents.js';
import { upstreamTips, type UpstreamMirror } from './remote.js';
import { readSettings } from './settings.js';
import { repoIdentity } from './gate.js';

export interface SettleDeps {
  audit: AuditSink;
  mirror: UpstreamMirror;
  journal: IntentJournal;
  /** The data folder (repository settings). */
  dataDir?: string;
  /** Most one upstream call may take. */
  timeoutMs: number;
  /**
   * The repository's long-lived object store (the daemon's), so settling a push starts no git
   * process; without it a reader of its own is started and closed.
   */
  storeFor?: (repoDir: string) => Git;
}

/** `upstream.forward-failed`: what a failed forward wrote before `upstream-refusal` rows (issue 48); still read. */
export const FORWARD_OUTCOMES = ['upstream.forwarded', 'upstream.forward-failed'] as const;

/** Refs an outcome row of this push already covers. */
function coveredRefs(outcomes: readonly AuditRow[], refusals: readonly AuditRow[]): Set<string> {
  const out = new Set<string>(refusals.map((r) => r.ref ?? ''));
  for (const o of outcomes) {
    if (!(FORWARD_OUTCOMES as readonly string[]).includes(o.action ?? '')) continue;
    for (const r of ((o.detail as { refs?: Array<{ ref?: unknown }> } | null)?.refs ?? [])) if (typeof r.ref === 'string') out.add(r.ref);
  }
  return out;
}

const sameTip = (tip: string | null | undefined, id: string): boolean => (isZeroId(id) ? !tip : tip === id);

/** Record what the log lacks about one push, then remove its entry. Returns one line per row written. */
export async function settleIntent(d: SettleDeps, e: IntentEntry): Promise<string[]> {
  const said: string[] = [];
  const trace = await d.audit.getPush(e.pushId);
  // No decision row: the write never landed, so nothing was forwarded and no ref was let move.
  const accepted = (trace?.refs ?? []).filter((r) => r.verdict !== 'reject' && r.ref && r.new && r.old);
  if (!trace || !accepted.length) {
    d.journal.settle(e.pushId);
    return said;
  }
  const shared = d.storeFor?.(e.repoDir);
  const git = shared ?? new Git({ dir: e.repoDir, bare: true });
  try {
    const gateBefore = new Map<string, string | null>();
    for (const r of accepted) gateBefore.set(r.ref!, await git.refTip(r.ref!).catch(() => null));
    if (e.upstream) {
      const covered = coveredRefs(trace.outcomes ?? [], trace.upstreamRefusals ?? []);
      const unknown = accepted.filter((r) => !covered.has(r.ref!));
      const { name } = repoIdentity(d.dataDir, e.repoDir);
      const upstream = unknown.length ? readSettings(repoIdentity(d.dataDir, e.repoDir).dataDir, name).upstream : null;
      if (unknown.length && upstream) {
        const tips = await upstreamTips(e.repoDir, upstream, unknown.map((r) => r.ref!), d.timeoutMs);
        const took = unknown.filter((r) => sameTip(tips.get(r.ref!), r.new!));
        const failed = unknown.filter((r) => !sameTip(tips.get(r.ref!), r.new!));
        const rowOf = (r: AuditRow) => ({ ref: r.ref, old: r.old, new: r.new, upstream: tips.get(r.ref!) ?? null, gate: gateBefore.get(r.ref!) ?? null });
        let repair: string | null = null;
        if (took.some((r) => !sameTip(gateBefore.get(r.ref!), r.new!))) {
          // Upstream has what the gate does not: the gate mirrors upstream for those refs.
          for (const r of took) d.mirror.markDiverged(e.repoDir, r.ref!);
          const trustedRef = (await git.symbolicHead()) ?? 'refs/heads/main';
          repair = await d.mirror.refresh(e.repoDir, upstream, trustedRef, { force: true, timeoutMs: d.timeoutMs }).then(() => 'the gate\'s refs were set to upstream\'s', (err: unknown) => `the gate's refs could not be set to upstream's yet (${errorMessage(err).split('\n')[0]}); the next fetch does it`);
        }
        if (took.length) {
          await d.audit.appendAdmin({ actor: 'gate', action: 'upstream.forwarded', subject: e.repo, pushId: e.pushId, detail: { pushId: e.pushId, recovered: true, url: upstream.url, refs: took.map(rowOf), found: 'the forward\'s outcome was not recorded (the gate stopped or its log was down); upstream has the pushed commits', ...(repair ? { repair } : {}) } });
          said.push(`push ${e.pushId}: upstream has ${took.map((r) => r.ref).join(', ')}; recorded as upstream.forwarded${repair ? ` (${repair})` : ''}`);
        }
        if (failed.length) {
          const p = trace.push;
          await d.audit.appendUpstreamRefusal({
            pushId: e.pushId, repo: e.repo, actor: p?.actor ?? failed[0]!.actor ?? 'unknown', role: p?.role ?? failed[0]!.role ?? 'agent', url: upstream.url, recovered: true,
            refs: failed.map((r) => ({ ref: r.ref!, old: r.old!, new: r.new!, answer: `the forward's outcome was not recorded (the gate stopped or its log was down); upstream has ${tips.get(r.ref!)?.slice(0, 12) ?? 'no such ref'}, not the pushed commit` })),
          });
          said.push(`push ${e.pushId}: upstream does not have ${failed.map((r) => r.ref).join(', ')}; recorded as upstream-refusal`);
        }
      }
    }
    // Confirms: did the push move the gate's ref? (As found, before any repair from upstream.)
    const confirmed = new Set((trace.confirms ?? []).map((c) => `${c.ref} ${c.new}`));
    const items = accepted.filter((r) => !confirmed.has(`${r.ref} ${r.new}`)).map((r) => ({ ref: r.ref!, ...(r.old ? { old: r.old } : {}), new: r.new!, moved: sameTip(gateBefore.get(r.ref!), r.new!) }));
    if (items.length) {
      await d.audit.confirmRefs(e.pushId, items, { repo: e.repo });
      said.push(`push ${e.pushId}: confirmed ${items.map((i) => `${i.ref} ${i.moved ? 'moved' : 'did not move'}`).join(', ')}`);
    }
  } finally {
    if (!shared) git.close();
  }
  d.journal.settle(e.pushId);
  return said;
}

/** At start: settle every entry left by the previous run; one that cannot be settled yet stays (and is logged). */
export async function recoverIntents(d: SettleDeps, log: (line: string) => void): Promise<{ settled: number; left: number }> {
  const { entries, bad } = d.journal.list();
  for (const b of bad) log(`patchgate: intent journal: unreadable entry ${b} (left in place; look at it and delete it)`);
  let settled = 0;
  for (const e of entries) {
    try {
      for (const l of await settleIntent(d, e)) log(`patchgate: recovery: ${l}`);
      settled++;
    } catch (err) {
      log(`patchgate: recovery: push ${e.pushId} (${e.repo}) not settled yet: ${errorMessage(err).split('\n')[0]}; tried again at the next start`);
    }
  }
  // What is left (entries that could not be settled yet) is rewritten into a short journal.
  try {
    d.journal.compact();
  } catch (err) {
    log(`patchgate: intent journal: could not be rewritten (${errorMessage(err).split('\n')[0]}); it is read as it is at the next start`);
  }
  return { settled, left: entries.length - settled };
}
