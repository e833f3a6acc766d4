// The audit side of a push: how its decision goes to the log. An accept is durable before
// anything outside the gate changes (its intent entry first, when there is a journal, then
// the rows, awaited; a failure refuses; the pusher's token is read again in the transaction
// that writes them, and one revoked or expired since the push began writes the push as
// refused and refuses it: src/audit/credential.ts); an accept that never reached git is written as
// refused; an entry whose rows may or may not have landed is settled later through the row
// queue (../intents.ts, src/upstream/recover.ts). Kept apart from the judging (./judge.ts)
// and from the pre-receive flow that calls both (./pre-receive.ts).

import { AuditError, CredentialError, errorMessage } from '../../errors.js';
import type { RecordPushInput, Verdict } from '../../audit/store.js';
import type { RecordedPush } from '../../audit/sink-api.js';
import { credentialReason } from '../../audit/credential.js';
import { boundRecord } from '../../audit/bound.js';
import { fsckOutcome } from '../../git/push-fsck.js';
import { rememberAccepted } from '../../policy/carried.js';
import type { RefDecision } from '../../policy/types.js';
import { upstreamBudget } from '../../upstream/gate.js';
import { settleIntent, type SettleDeps } from '../../upstream/recover.js';
import type { HookContext } from './context.js';
import type { PushSession } from './session.js';

export class DecisionLog {
  constructor(private readonly ctx: HookContext) {}

  /** What settling an intent entry needs (the recovery at start, and the row queue). */
  get settleDeps(): SettleDeps {
    return { audit: this.ctx.opts.audit, mirror: this.ctx.upstream, journal: this.ctx.journal!, dataDir: this.ctx.opts.dataDir, timeoutMs: upstreamBudget(this.ctx.opts.timeoutMs), storeFor: (dir) => this.ctx.stores.get(dir) };
  }

  /** The record is durable in the audit log: an agent's enforce-mode accepts may skip those commits next time (src/policy/carried.ts). */
  remember(decisions: RefDecision[], verdictOf: (d: RefDecision) => Verdict, enforce: boolean, pushId: string): void {
    if (!enforce) return;
    const judged = decisions.filter((d) => d.judged && d.verdict === 'accept' && verdictOf(d) === 'accept').map((d) => d.judged!);
    if (judged.length) rememberAccepted(this.ctx.opts.cache, judged, pushId);
  }

  /** The push row and its ref rows as they go to the log, bounded in size (src/audit/bound.ts). */
  recordOf(s: PushSession, decisions: RefDecision[], auditVerdict: (d: RefDecision) => Verdict, timings: Record<string, number>): RecordPushInput {
    const accepted = decisions.filter((d) => d.verdict === 'accept').length;
    return boundRecord({
      pushId: s.pushId, repo: s.repo, actor: s.actor, role: s.role, remoteAddr: s.remoteAddr, userAgent: s.userAgent,
      verdict: accepted < decisions.length ? 'reject' : decisions.some((d) => auditVerdict(d) === 'would-reject') ? 'would-reject' : 'accept',
      timings,
      refs: decisions.map((d) => ({
        ref: d.ref, old: d.oldId, new: d.newId, verdict: auditVerdict(d), decision: d.row,
        // A person's push whose receive-pack relaxed git's fsck says so, with what git warned about (src/git/push-fsck.ts).
        rules: [...(JSON.parse(JSON.stringify(d.outcomes)) as unknown[]), ...(s.fsckWarnings ? [fsckOutcome(s.fsckWarnings)] : [])],
        contractBase: d.contract.base, contractHead: d.contract.head, timings: { total: d.ms, ...(d.commitsMs !== undefined ? { commits: d.commitsMs } : {}) },
      })),
    });
  }

  /**
   * Write a decision that lets something happen (an accept, before the forward or the answer):
   * its intent entry first (when there is a journal), then the rows, awaited. Either failing
   * throws AuditError, and the caller refuses; an entry whose rows may or may not have landed
   * is settled from the log later (the row queue).
   */
  async writeDecision(s: PushSession, record: RecordPushInput, viaUpstream: boolean, opened?: Promise<void> | null): Promise<void> {
    const journaled = !!this.ctx.journal && !s.auditAtJudge && record.refs.some((r) => r.verdict !== 'reject');
    // Refs and accepted commits may move from here on: a push judged ahead before this is judged again (./ahead.ts).
    this.ctx.generations.bump(s.repoDir);
    const refuse = (what: string, err: unknown): AuditError => {
      this.ctx.log(`patchgate: audit: push ${s.pushId} refused, ${what}: ${errorMessage(err)}`);
      return new AuditError(`the audit log could not record push ${s.pushId}, so nothing is accepted${viaUpstream ? ' or forwarded' : ''}; push again, and if this repeats ask a person to check the gate's audit store`, { cause: err });
    };
    if (!journaled) {
      await this.closeEarly(s, opened ?? null);
    } else {
      try {
        await (opened ?? this.ctx.journal!.open({ pushId: s.pushId, repo: s.repo, repoDir: s.repoDir, upstream: viaUpstream }));
      } catch (err) {
        throw refuse('its intent entry could not be written', err);
      }
    }
    let written: RecordedPush;
    try {
      // The token is read again in the transaction that writes the decision (src/audit/credential.ts).
      written = await this.ctx.opts.audit.recordPush(s.credential ? { ...record, credential: s.credential } : record);
    } catch (err) {
      if (journaled) this.settleLater({ ...s, viaUpstream });
      throw refuse('its decision could not be written', err);
    }
    if (written.credential) {
      // Written as refused, every ref: nothing moves, so its intent entry has nothing to settle.
      if (journaled) this.closeEntry(s);
      const why = credentialReason(s.actor, written.credential);
      this.ctx.log(`patchgate: audit: push ${s.pushId} refused: ${why}`);
      throw new CredentialError(`${why}${viaUpstream ? ' or forwarded' : ''}; ask a person for a new token and push again`, written.credential);
    }
    s.journaled = journaled;
    s.viaUpstream = viaUpstream;
  }

  /** The intent entry of a push whose decision row refuses it (nothing moves): closed now; a failure leaves it to the next start. */
  private closeEntry(s: PushSession): void {
    try {
      this.ctx.journal!.settle(s.pushId);
    } catch (err) {
      this.ctx.log(`patchgate: intent journal: could not close the entry of refused push ${s.pushId}: ${errorMessage(err)}`);
    }
  }

  /**
   * The push's intent entry, opened while it is judged (the fdatasync then costs the push
   * nothing): writeDecision takes it when the push is accepted. Null where there is no journal.
   */
  openEarly(s: PushSession, viaUpstream: boolean): Promise<void> | null {
    if (!this.ctx.journal || s.auditAtJudge) return null;
    const p = this.ctx.journal.open({ pushId: s.pushId, repo: s.repo, repoDir: s.repoDir, upstream: viaUpstream });
    p.catch(() => undefined);
    return p;
  }

  /** An entry opened early for a push that was then refused (no decision lets anything move): closed once it is written. */
  async closeEarly(s: PushSession, opened: Promise<void> | null): Promise<void> {
    // A failed close leaves the entry to the recovery at the next start (it has no decision row, so it is only closed).
    if (opened) await opened.then(() => this.ctx.journal!.settle(s.pushId), () => undefined).catch((err: unknown) => this.ctx.log(`patchgate: intent journal: could not close the entry of refused push ${s.pushId}: ${errorMessage(err)}`));
  }

  /** Settle the push's intent entry through the row queue: record what the log lacks, then remove it. */
  settleLater(s: Pick<PushSession, 'pushId' | 'repo' | 'repoDir' | 'viaUpstream'>): void {
    const entry = { pushId: s.pushId, repo: s.repo, repoDir: s.repoDir, upstream: !!s.viaUpstream, time: new Date().toISOString() };
    void this.ctx.rows.write(s.pushId, 'the settling of its intent entry', async () => {
      for (const l of await settleIntent(this.settleDeps, entry)) this.ctx.log(`patchgate: audit: ${l}`);
    });
  }

  /**
   * Write a judged accept as refused: the verdict cannot reach git (the pre-receive shim gave
   * up waiting or died first), so nothing moves. Every ref row keeps the rules' outcomes and
   * adds a `delivery` entry that says why.
   */
  async recordUndelivered(s: PushSession, record: RecordPushInput): Promise<void> {
    const why = 'the accept never reached git: the pre-receive hook ended (it gave up waiting or was killed) before its verdict, so nothing moved';
    try {
      await this.ctx.opts.audit.recordPush({
        ...record,
        verdict: 'reject',
        refs: record.refs.map((r) => ({
          ...r,
          verdict: 'reject',
          decision: r.verdict !== 'reject' ? 'gate-error' : r.decision,
          rules: r.verdict !== 'reject' ? [...r.rules, { rule: 'delivery', status: 'fail', findings: [], details: { error: why, judged: 'accept' } }] : r.rules,
        })),
      });
    } catch (err) {
      this.ctx.log(`patchgate: audit: could not record the undelivered push ${s.pushId}: ${errorMessage(err)}`);
    }
  }
}
