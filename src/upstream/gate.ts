// What the hook daemon does for a repository that sits in front of an upstream remote, or
// that is in evaluate mode: before judging, refresh the trusted branch from upstream (a push
// is refused when that fails, never judged against a stale branch); after judging, turn the
// would-be refusals of evaluate mode into accepts that are audited as `would-reject`, then
// forward every accepted ref update upstream and refuse on the gate whatever upstream did
// not take. Which refusals evaluate mode relaxes, and what it prints, is in
// src/upstream/evaluate.ts. The engine's judgement is the same in every mode: this only wraps it.
// The decision is written before the forward starts (the `intent` callback of afterJudging;
// a failed write forwards nothing), and the forward's outcome is a row of its own
// (`upstream.forwarded`, and an `upstream-refusal` row per ref upstream did not take; see forwardOutcomes).

import { basename, dirname } from 'node:path';
import { errorMessage, UpstreamError } from '../errors.js';
import { Git, isZeroId } from '../git/git.js';
import { tableRow } from '../policy/decision-table.js';
import { renderDecision } from '../policy/engine.js';
import type { RefDecision, RuleOutcome } from '../policy/types.js';
import type { AdminInput, Role, UpstreamRefusalInput, Verdict } from '../audit/store.js';
import type { AuditSink } from '../audit/sink.js';
import { forwardPush, UPSTREAM_TIMEOUT_MS, type FetchResult, type ForwardItem, type UpstreamMirror } from './remote.js';
import { readSettings, type RepoSettings } from './settings.js';
import { renderEnforced, renderWouldReject, wouldRejectOnly } from './evaluate.js';

/** The data folder and repository name of `<data>/repos/NAME.git`. */
export function repoIdentity(dataDir: string | undefined, repoDir: string): { dataDir: string; name: string } {
  return { dataDir: dataDir ?? dirname(dirname(repoDir)), name: basename(repoDir).replace(/\.git$/, '') };
}

/** How long one upstream call may take inside a hook whose whole limit is `hookMs`. */
export function upstreamBudget(hookMs: number): number {
  return Math.max(1000, Math.min(UPSTREAM_TIMEOUT_MS, Math.floor(hookMs / 3)));
}

/**
 * Before judging: the repository's settings, and with an upstream, a fresh trusted branch.
 * Throws UpstreamError (one redacted line naming upstream) when upstream cannot be fetched.
 */
export async function beforeJudging(mirror: UpstreamMirror, dataDir: string | undefined, repoDir: string, hookMs: number): Promise<{ settings: RepoSettings; fetch: FetchResult | null }> {
  const { dataDir: data, name } = repoIdentity(dataDir, repoDir);
  const settings = readSettings(data, name);
  if (!settings.upstream) return { settings, fetch: null };
  const git = new Git({ dir: repoDir, bare: true });
  let trustedRef: string;
  try {
    trustedRef = (await git.symbolicHead()) ?? 'refs/heads/main';
  } finally {
    git.close();
  }
  try {
    return { settings, fetch: await mirror.refresh(repoDir, settings.upstream, trustedRef, { timeoutMs: upstreamBudget(hookMs) }) };
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    throw new UpstreamError('UPSTREAM_UNREACHABLE', `upstream ${settings.upstream.url} could not be fetched: ${errorMessage(err).split('\n')[0]}`, '', { cause: err });
  }
}

export interface Finished {
  decisions: RefDecision[];
  /** The audit verdict of each decision (`would-reject` in evaluate mode). */
  auditVerdict: (d: RefDecision) => Verdict;
  /** remote: lines to show instead of the plain rendering; null: render as usual. */
  lines: string[] | null;
  /** Keys (ref old new) of the updates upstream took. */
  forwarded: Set<string>;
  timings: Record<string, number>;
  /** What was forwarded and upstream's answers (null: nothing was forwarded). */
  forward: ForwardRecord | null;
}

export interface ForwardRecord {
  url: string;
  at: string;
  ms: number;
  atomic: boolean;
  items: ForwardItem[];
  answers: Array<{ ref: string; ok: boolean; answer: string; messages: string[] }>;
}

const keyOf = (d: { ref: string; oldId: string; newId: string }) => `${d.ref} ${d.oldId} ${d.newId}`;

function upstreamRefusal(d: RefDecision, message: string, extra: string[], outcome: RuleOutcome): RefDecision {
  const row = tableRow('upstream-refused');
  const nonFf = /fetch first|non-fast-forward|stale info/.test(message);
  const branch = d.ref.replace(/^refs\/heads\//, '');
  return {
    ...d, verdict: 'reject', row: row.id, action: row.action,
    reasons: [{ rule: 'upstream', message, ref: d.ref }, ...extra.map((m) => ({ rule: 'upstream' as const, message: m, ref: d.ref }))],
    remediation: nonFf
      ? `someone else moved ${branch} upstream; the gate now mirrors it: git pull --rebase origin ${branch} && git push origin ${branch}`
      : 'nothing moved on the gate or upstream; fix what upstream says above (a person checks the gate\'s upstream credential and upstream\'s branch rules), then push again',
    outcomes: [...d.outcomes, outcome],
  };
}

/**
 * After judging: evaluate mode, then the forward. `git` reads the push's quarantined objects
 * (for fast-forward checks); `env` is the quarantine environment the forward pushes from.
 */
export async function afterJudging(args: {
  settings: RepoSettings; repo: string; repoDir: string; env: Record<string, string>; git: Git; atomic: boolean;
  decisions: RefDecision[]; actor: string; pushId: string; hookMs: number; mirror: UpstreamMirror;
  /**
   * Called with the decisions (and their audit verdicts) just before the forward starts: it
   * writes the decision row. When it throws, nothing is forwarded and afterJudging throws it.
   */
  intent?: (decisions: RefDecision[], auditVerdict: (d: RefDecision) => Verdict) => Promise<void>;
}): Promise<Finished> {
  const { settings, repo } = args;
  const timings: Record<string, number> = {};
  const forwarded = new Set<string>();
  const would = new Set<string>();
  const lines: string[] = [];
  const evaluate = settings.mode === 'evaluate';
  let decisions = args.decisions;
  // Evaluate mode (src/upstream/evaluate.ts): only content findings become would-reject accepts.
  const enforced = new Set<string>();
  if (evaluate) {
    if (decisions.some(wouldRejectOnly)) lines.push(`patchgate: evaluate mode: repository ${repo} is in evaluate mode, so a push enforce mode would refuse for its content is accepted and audited as would-reject`);
    decisions = decisions.map((d) => {
      if (!wouldRejectOnly(d)) {
        if (d.verdict === 'reject' && d.row !== 'gate-error' && d.row !== 'upstream-refused') enforced.add(keyOf(d));
        return d;
      }
      would.add(keyOf(d));
      return { ...d, verdict: 'accept' };
    });
  }
  const up = settings.upstream;
  let forward: ForwardRecord | null = null;
  if (up) {
    const accepted = decisions.filter((d) => d.verdict === 'accept');
    // An --atomic push with one refused ref moves nothing on the gate: nothing goes upstream either.
    const atomicFails = args.atomic && accepted.length !== decisions.length;
    if (accepted.length && !atomicFails) {
      const items: ForwardItem[] = [];
      for (const d of accepted) {
        const forced = isZeroId(d.newId) || (!isZeroId(d.oldId) && !(await args.git.isAncestor(d.oldId, d.newId).catch(() => false)));
        items.push({ ref: d.ref, oldId: d.oldId, newId: d.newId, forced });
      }
      if (args.intent) {
        const wouldNow = new Set(would);
        await args.intent(decisions, (d) => (d.verdict === 'accept' && wouldNow.has(keyOf(d)) ? 'would-reject' : d.verdict));
      }
      const at = new Date().toISOString();
      const { answers, ms } = await forwardPush(args.repoDir, args.env, up, items, { atomic: args.atomic, timeoutMs: upstreamBudget(args.hookMs) });
      timings.forward = ms;
      forward = { url: up.url, at, ms, atomic: args.atomic, items, answers };
      const byRef = new Map(answers.map((a) => [a.ref, a]));
      decisions = decisions.map((d) => {
        const a = byRef.get(d.ref);
        if (!a || d.verdict !== 'accept') return d;
        const remoteLines = a.messages.filter((m) => /^remote:/.test(m)).map((m) => m.replace(/^remote:\s*/, '')).filter(Boolean);
        const outcome = {
          rule: 'upstream', status: a.ok ? 'pass' : 'fail', ms,
          findings: a.ok ? [] : [{ messageId: 'upstream-refused', data: {}, message: a.answer }],
          details: { url: up.url, answer: a.answer, messages: a.messages, at, atomic: args.atomic },
        } as unknown as RuleOutcome;
        if (a.ok) {
          forwarded.add(keyOf(d));
          return { ...d, outcomes: [...d.outcomes, outcome] };
        }
        // Upstream moved (someone pushed there) or refused: the next fetch brings its ref here.
        if (/fetch first|non-fast-forward|stale info/.test(a.answer)) args.mirror.markDiverged(args.repoDir, d.ref);
        would.delete(keyOf(d));
        return upstreamRefusal(d, `upstream ${up.url} refused ${d.ref}: ${a.answer}`, remoteLines.map((l) => `upstream says: ${l}`).slice(0, 10), outcome);
      });
    }
  }
  const render: string[] = [...lines];
  for (const d of decisions) {
    if (would.has(keyOf(d))) render.push(...renderWouldReject(d, args.actor));
    else if (enforced.has(keyOf(d)) && d.verdict === 'reject') render.push(...renderEnforced(d, args.actor, repo));
    else render.push(...renderDecision(d, args.actor));
    if (forwarded.has(keyOf(d))) render.push(`  forwarded to upstream ${up!.url} (${timings.forward} ms)`);
  }
  return {
    decisions,
    auditVerdict: (d) => (d.verdict === 'accept' && would.has(keyOf(d)) ? 'would-reject' : d.verdict),
    lines: up || evaluate ? render : null,
    forwarded,
    timings,
    forward,
  };
}

/**
 * The forward's outcome as audit rows: one admin `upstream.forwarded` row for the refs upstream
 * took, and the refs it did not take as a refusal of their own (`upstream-refusal` rows, issue
 * 48), so the push counts as refused wherever pushes are counted.
 */
export function forwardOutcomes(f: ForwardRecord, s: { pushId: string; repo: string; actor: string; role: Role; remoteAddr?: string | null; userAgent?: string | null }): { admin: AdminInput[]; refusal: UpstreamRefusalInput | null } {
  const byRef = new Map(f.answers.map((a) => [a.ref, a]));
  const refsOf = (ok: boolean) => f.items.filter((it) => (byRef.get(it.ref)?.ok ?? false) === ok).map((it) => ({ ref: it.ref, old: it.oldId, new: it.newId, forced: it.forced, answer: byRef.get(it.ref)?.answer ?? 'no answer' }));
  const messages = f.answers[0]?.messages ?? [];
  const took = refsOf(true);
  const refused = refsOf(false);
  return {
    admin: took.length ? [{
      actor: 'gate', action: 'upstream.forwarded', subject: s.repo, pushId: s.pushId,
      detail: { pushId: s.pushId, url: f.url, at: f.at, ms: f.ms, atomic: f.atomic, refs: took, ...(messages.length ? { messages } : {}) },
    }] : [],
    refusal: refused.length ? {
      pushId: s.pushId, repo: s.repo, actor: s.actor, role: s.role, remoteAddr: s.remoteAddr ?? null, userAgent: s.userAgent ?? null,
      url: f.url, at: f.at, ms: f.ms, atomic: f.atomic, refs: refused, ...(messages.length ? { messages } : {}),
    } : null,
  };
}

/**
 * Refs whose tip on the gate is no longer the old id the client pushed against (the upstream
 * refresh inside this hook moved them, e.g. a ref `repo sync` or a repair copied from
 * upstream): git would refuse to lock them after an accept, so they are refused before
 * anything is written or forwarded, with what to do.
 */
export async function refuseMovedRefs(store: Git, decisions: RefDecision[]): Promise<RefDecision[]> {
  const out: RefDecision[] = [];
  for (const d of decisions) {
    if (d.verdict !== 'accept') {
      out.push(d);
      continue;
    }
    const tip = await store.refTip(d.ref).catch(() => undefined);
    const expected = isZeroId(d.oldId) ? null : d.oldId;
    if (tip === undefined || tip === expected) {
      out.push(d);
      continue;
    }
    const row = tableRow('upstream-refused');
    const branch = d.ref.replace(/^refs\/heads\//, '');
    out.push({
      ...d, verdict: 'reject', row: row.id, action: row.action,
      reasons: [{ rule: 'upstream', message: `${d.ref} is at ${tip ? tip.slice(0, 12) : 'nothing'} on the gate now (another push, or a fetch from upstream, moved it while this push was judged), not at ${expected ? expected.slice(0, 12) : 'nothing'} as your push expected`, ref: d.ref }],
      remediation: `nothing moved; fetch what the gate has and push again: git pull --rebase origin ${branch} && git push origin ${branch}`,
    });
  }
  return out;
}

/** Every ref of a push refused because upstream could not be refreshed (or the settings not read). */
export function upstreamRefused(u: { ref: string; oldId: string; newId: string }, err: Error, repo = 'NAME'): RefDecision {
  const row = tableRow('upstream-refused');
  return {
    ref: u.ref, oldId: u.oldId, newId: u.newId, verdict: 'reject', row: row.id, action: row.action,
    reasons: [{ rule: 'upstream', message: `${errorMessage(err).split('\n')[0]}; not judged against a trusted branch that could not be refreshed`, ref: u.ref }],
    remediation: `nothing was accepted; push again in a minute, and if this repeats ask a person to check upstream and the gate's credential (patchgate repo sync ${repo} shows the error)`,
    outcomes: [], contract: { base: null, head: null }, ms: 0,
  };
}

/**
 * Upstream took updates that the gate then did not make (its own ref update failed, or the
 * hook went away after the forward): an admin row records it, and the next fetch of this
 * repository brings those refs from upstream, so the gate is repaired from upstream.
 */
export async function recordDiverged(audit: AuditSink, mirror: UpstreamMirror, s: { pushId: string; repo: string; repoDir: string; actor: string }, refs: Array<{ ref: string; oldId: string; newId: string }>): Promise<void> {
  if (!refs.length) return;
  for (const r of refs) mirror.markDiverged(s.repoDir, r.ref);
  // A failed write throws: the caller's row queue keeps it and retries (never only in memory).
  await audit.appendAdmin({
    actor: 'gate', action: 'upstream.diverged', subject: s.repo, pushId: s.pushId,
    detail: { pushId: s.pushId, pusher: s.actor, refs: refs.map((r) => ({ ref: r.ref, old: r.oldId, new: r.newId })), repair: 'the next fetch from upstream (any push, or patchgate repo sync) sets these refs to upstream\'s' },
  });
}
