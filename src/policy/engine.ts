// The engine: runs every rule, in order, for every ref update of a push (or for one
// base..head range in `check`), and turns the outcomes into a decision. Any exception is a
// rejection with rule `error`: the engine fails closed.

import type { PushTarget } from './push-target.js';
import { isZeroId, type CommitDiff, type CommitInfo, type Git } from '../git/git.js';
import { errorMessage } from '../errors.js';
import { CancelledError, throwIfCancelled } from '../cancel.js';
import type { LiveJudgement } from './live.js';
import type { Policy } from './config.js';
import { trustedPolicy } from './trusted-policy.js';
import { DEFAULT_CLASS } from './classes.js';
import { brokenPolicyDecision, classPolicy } from './rules/policy.js';
import { linearBase } from './ancestry.js';
import { acceptedBefore, carriedCommits, policyDigest, type Judged } from './carried.js';
import { tableRow } from './decision-table.js';
import { decide } from './deciding.js';
import { PRE_RULES, RULES } from './rules/index.js';
import type { RefDecision, RefUpdate, Role, Rule, RuleContext, RuleOutcome, UpdateKind } from './types.js';
import { formatMessage, short } from './types.js';
import type { SlowPhaseOptions } from '../progress.js';

export interface JudgeOptions {
  git: Git;
  role: Role;
  /**
   * An agent's class of the policy (src/policy/classes.ts): its push is judged under that
   * class's view of the policy, every commit its ref carries included. Absent: the default class.
   */
  agentClass?: string;
  mode: 'push' | 'check';
  /** Trusted tip; the policy and the allow file are read from it. */
  trustedTip: string | null;
  /** For `check`: the base whose commits are not new. For a push: every existing ref (`--not --all`). */
  exclude?: string[];
  /** In `check` mode the refs rule runs only when a ref is named. */
  checkRefs?: boolean;
  cache?: Map<string, unknown>;
  policy?: Policy;
  /** The server's trusted branch (the bare repo's HEAD); overrides the policy's name for it. */
  trustedBranch?: string;
  /**
   * In a push: the repository read without the quarantine, so pushed commits can be told
   * from stored ones and the new commits found without a rev-list (Git.pushedLine).
   */
  mainStore?: Git;
  /** In a push: the address the agent pushed to, as far as the gate knows it (src/policy/push-target.ts). */
  pushTarget?: PushTarget;
  /** In a push: where long work reports progress (RuleContext.progress). */
  progress?: SlowPhaseOptions;
  /** In a push: its rules judged ahead from its pack on the same inputs (judgeAhead); only the size limits run. */
  ahead?: AheadRules;
  /**
   * A person's push (issue 47): how long, from the start of the judgement, the answer waits for
   * the rules whose findings are waived for a person. One still running then is audited as
   * deferred and goes on after the answer (its parses fill the caches for the next push); one
   * that fails is audited with its error, since its findings could not refuse the push anyway.
   * Unset: every rule is waited for (check, and an agent's push always).
   */
  waivedBudgetMs?: number;
  /** In a push: where the judgement says what it is doing, for a refusal when the time limit passes (./live.ts). */
  live?: LiveJudgement;
}

/** A waived rule's run that the answer did not wait for (JudgeOptions.waivedBudgetMs). */
const DEFERRED = 'deferred' as const;

export function updateKind(u: RefUpdate): UpdateKind {
  if (isZeroId(u.oldId)) return 'create';
  if (isZeroId(u.newId)) return 'delete';
  return 'update';
}

export function errorDecision(u: RefUpdate, err: unknown, started: number, outcomes: RuleOutcome[] = []): RefDecision {
  const row = tableRow('gate-error');
  const message = `gate error: ${errorMessage(err).split('\n')[0]}`;
  return {
    ref: u.ref, oldId: u.oldId, newId: u.newId, verdict: 'reject', row: row.id, action: row.action,
    remediation: 'nothing was accepted; push again, and if this repeats ask a person to read the audit log',
    reasons: [{ rule: 'error', message, ref: u.ref }], outcomes, contract: { base: null, head: null }, ms: Date.now() - started,
  };
}

type Diffs = Map<string, Promise<CommitDiff>>;
type RuleRun = { res: Awaited<ReturnType<Rule['check']>>; ms: number } | { err: unknown; ms: number };

/**
 * What a push's rules found when it was judged ahead, from its pack before receive-pack's hook
 * (src/server/hook/ahead.ts): everything but the size limits, which read the quarantine.
 * judgeUpdate given one (`opts.ahead`) runs the size limits on the quarantine and takes the
 * rest from it; the caller has checked that it was judged on the same inputs.
 */
export interface AheadRules {
  update: RefUpdate;
  newCommits: CommitInfo[];
  reusedCommits: number;
  judged?: Judged;
  commitsMs: number;
  diffs: Diffs;
  /** RULES' results in order; none is an error (an ahead run with one is not kept). */
  results: RuleRun[];
}

/**
 * The policy a judgement applies: given, or read from the trusted tip (a broken one: the
 * fallback, src/policy/trusted-policy.ts); the server's trusted branch overrides its name for it.
 */
async function policyOf(opts: JudgeOptions): Promise<Policy> {
  const policy = opts.policy ?? (await trustedPolicy(opts.git, opts.trustedTip));
  return opts.trustedBranch ? { ...policy, trustedBranch: opts.trustedBranch } : policy;
}

/** The commits a ref update brings (for an agent: all it carries off the trusted branch, less those accepted before) and the rules' context. */
async function prepare(opts: JudgeOptions, update: RefUpdate, policy: Policy, started: number, ahead: AheadRules | null) {
  const kind = updateKind(update);
  let newCommits: CommitInfo[] = [];
  let judged: Judged | undefined;
  let reusedCommits = 0;
  if (ahead) {
    ({ newCommits, judged, reusedCommits } = ahead);
  } else if (kind !== 'delete') {
    // The ref's own old tip and the trusted tip are ref tips now: a line of pushed commits
    // ending on one of them is the whole of `rev-list new --not --all`.
    const boundaries = [update.oldId, opts.trustedTip].filter((x): x is string => !!x && !isZeroId(x));
    const line = opts.mainStore && opts.exclude === undefined ? await opts.git.pushedLine(update.newId, boundaries, opts.mainStore).catch(() => null) : null;
    if (opts.role === 'agent' && opts.mode === 'push' && opts.exclude === undefined) {
      // An agent's ref carries every commit off the trusted branch, new to the repository
      // or not (src/policy/carried.ts); only those accepted for an agent before are skipped.
      const carried = await carriedCommits(opts.git, update.newId, opts.trustedTip, line, opts.cache);
      const digest = policyDigest(policy);
      const known = opts.cache ? acceptedBefore(opts.cache, digest, carried) : new Set<string>();
      newCommits = known.size ? carried.filter((c) => !known.has(c.id)) : carried;
      reusedCommits = carried.length - newCommits.length;
      judged = { policy: digest, commits: newCommits.map((c) => c.id) };
    } else newCommits = line ?? (await opts.git.newCommits(update.newId, opts.exclude ?? 'all'));
  }
  const commitsMs = ahead ? ahead.commitsMs : Date.now() - started;
  const diffs: Diffs = ahead?.diffs ?? new Map();
  const diff = (commit: CommitInfo): Promise<CommitDiff> => {
    let p = diffs.get(commit.id);
    if (!p) diffs.set(commit.id, (p = opts.git.commitDiff(commit)));
    return p;
  };
  const ctx: RuleContext = {
    git: opts.git, policy, role: opts.role, mode: opts.mode, update, kind,
    trustedTip: opts.trustedTip, newCommits, reusedCommits, cache: opts.cache ?? new Map(),
    ...(opts.pushTarget ? { pushTarget: opts.pushTarget } : {}),
    ...(opts.progress ? { progress: opts.progress } : {}),
    // Only when new commits are those no ref reaches (a push): the ancestry shortcuts need it.
    linearBase: opts.exclude === undefined ? linearBase(newCommits, update.newId) : null,
    changes: async (commit) => {
      throwIfCancelled();
      return (await diff(commit)).changes;
    },
    oddModes: async (commit) => {
      throwIfCancelled();
      return (await diff(commit)).oddModes;
    },
    forms: async (commit) => {
      throwIfCancelled();
      return (await diff(commit)).forms;
    },
  };
  return { kind, newCommits, reusedCommits, judged, commitsMs, diffs, ctx };
}

/** One rule's result and its time, to a tenth of a millisecond (a warm rule takes 1-5 ms; the bench compares sizes). */
function runRule(ctx: RuleContext, live?: LiveJudgement): (rule: Rule) => Promise<RuleRun> {
  return (rule) => {
    const t0 = performance.now();
    const ms = (): number => Math.round((performance.now() - t0) * 10) / 10;
    const go = (): Promise<RuleRun> => rule.check(ctx).then((res) => ({ res, ms: ms() }), (err: unknown) => ({ err, ms: ms() }));
    return live ? live.run(rule.id, go) : go();
  };
}

/**
 * A push's ref update judged ahead from its pack (`opts.git` a sealed view: src/git/git.ts):
 * every rule but the size limits, whose bound here is the pack reader's own (1 MiB, 256
 * objects). Null when a rule failed: the hook then judges as if nothing was run ahead.
 */
export async function judgeAhead(opts: JudgeOptions & { policy: Policy }, update: RefUpdate): Promise<AheadRules | null> {
  const started = Date.now();
  const cls = opts.role === 'agent' ? classPolicy(await policyOf(opts), opts.agentClass, update, opts.mode, started) : { policy: await policyOf(opts) };
  // A class that cannot be judged is refused by judgeUpdate itself.
  if ('decision' in cls) return null;
  const p = await prepare(opts, update, cls.policy, started, null);
  const results = await Promise.all(RULES.map(runRule(p.ctx)));
  if (results.some((r) => 'err' in r)) return null;
  return { update, newCommits: p.newCommits, reusedCommits: p.reusedCommits, ...(p.judged ? { judged: p.judged } : {}), commitsMs: p.commitsMs, diffs: p.diffs, results };
}

/** Judge one ref update. Never throws: errors become a rejection. */
export async function judgeUpdate(opts: JudgeOptions, update: RefUpdate): Promise<RefDecision> {
  const started = Date.now();
  const outcomes: RuleOutcome[] = [];
  try {
    throwIfCancelled();
    opts.live?.enter(update.ref);
    const trusted = await policyOf(opts);
    // The trusted policy does not validate: an agent's push is not judged (rule `policy`).
    if (trusted.fallback && opts.role === 'agent') return brokenPolicyDecision(update, trusted.fallback, opts.mode, started);
    // An agent's push is judged under its class's view of the policy (src/policy/classes.ts).
    const cls = opts.role === 'agent' ? classPolicy(trusted, opts.agentClass, update, opts.mode, started) : { policy: trusted };
    if ('decision' in cls) return cls.decision;
    const policy = cls.policy;
    const agentClass = opts.role === 'agent' ? { agentClass: policy.agentClass ?? DEFAULT_CLASS } : {};
    const ahead = opts.ahead ?? null;
    const { kind, judged, commitsMs, ctx } = await prepare(opts, update, policy, started, ahead);
    const human = opts.role !== 'agent';
    const run = runRule(ctx, opts.live);
    if (opts.live) opts.live.phase = 'running the size limits';
    // A person's push: the waived rules hold the answer only until the budget is spent.
    const budget = human && opts.mode === 'push' ? opts.waivedBudgetMs : undefined;
    const deadline = budget === undefined ? null : new Promise<typeof DEFERRED>((resolve) => {
      const timer = setTimeout(() => resolve(DEFERRED), Math.max(0, started + budget - Date.now()));
      timer.unref?.();
    });
    const runMain = (rule: Rule): Promise<RuleRun | typeof DEFERRED> => {
      const p = run(rule);
      if (!deadline || !rule.waivedForHumans) return p;
      // A budget of 0 waits for nothing: deferred at once (a 0 ms timer may fire only after work that never waits).
      if (budget! <= 0) return (void p.catch(() => undefined), Promise.resolve(DEFERRED));
      return Promise.race([p, deadline]);
    };
    // The size limits run first and alone: a pack bomb is refused before any rule reads it.
    // Then the rules run side by side (they mostly wait on the same cat-file reader, which
    // then answers back to back) and are read in order: outcomes, the first failing rule and
    // an error are exactly what running them one after another would give.
    const rules: Rule[] = [...PRE_RULES];
    const results: Array<Awaited<ReturnType<typeof run>> | null | 'over-limit' | typeof DEFERRED> = await Promise.all(PRE_RULES.map(run));
    const overLimit = results.some((r) => r && r !== 'over-limit' && r !== DEFERRED && ('err' in r || r.res.findings.length > 0));
    rules.push(...RULES);
    if (opts.live) opts.live.phase = 'running the rules';
    if (overLimit) results.push(...RULES.map(() => 'over-limit' as const));
    // Judged ahead from the pack: the same rules' results on the same inputs (the caller checked).
    else if (ahead) results.push(...ahead.results);
    else results.push(...(await Promise.all(RULES.map((rule) => (rule.id === 'refs' && opts.mode === 'check' && !opts.checkRefs ? null : runMain(rule))))));
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]!;
      const r = results[i];
      if (!r || r === 'over-limit') {
        outcomes.push({ rule: rule.id, status: 'skipped', findings: [], details: { why: r ? 'the push is over a size limit; nothing of it was read' : 'no ref update in check mode' }, ms: 0 });
        continue;
      }
      if (r === DEFERRED) {
        outcomes.push({ rule: rule.id, status: 'waived', findings: [], details: { deferred: `not finished within ${budget} ms; its findings are waived for a person, so the answer did not wait (it went on after the answer)` }, ms: Date.now() - started });
        continue;
      }
      if ('err' in r && human && rule.waivedForHumans && budget !== undefined && !(r.err instanceof CancelledError)) {
        // Its findings could not refuse a person's push, so neither can its failure: audited.
        outcomes.push({ rule: rule.id, status: 'waived', findings: [], details: { error: errorMessage(r.err) }, ms: r.ms });
        continue;
      }
      if ('err' in r) {
        // A rule that failed on a policy file rule `policy` refused already (a lock that does not
        // parse): that refusal, with the file and line, says it; the push is refused either way.
        if (outcomes.some((o) => o.rule === 'policy' && o.status === 'fail')) {
          outcomes.push({ rule: rule.id, status: 'skipped', findings: [], details: { why: 'a policy file does not validate (rule policy)', error: errorMessage(r.err) }, ms: r.ms });
          continue;
        }
        outcomes.push({ rule: rule.id, status: 'fail', findings: [], details: { error: errorMessage(r.err) }, ms: r.ms });
        return errorDecision(update, new Error(`rule ${rule.id}: ${errorMessage(r.err)}`, { cause: r.err }), started, outcomes);
      }
      try {
        const findings = r.res.findings.map((f) => ({ ...f, message: formatMessage(rule.messages[f.messageId] ?? f.messageId, f.data) }));
        const failed = findings.length > 0;
        outcomes.push({
          rule: rule.id,
          status: !failed ? 'pass' : human && rule.waivedForHumans ? 'waived' : 'fail',
          findings,
          remediation: failed ? rule.remediation(ctx, r.res.findings) : undefined,
          // The write-block applies the class's paths: its row names the class (src/policy/classes.ts).
          details: rule.id === 'write-block' && opts.role === 'agent' ? { ...r.res.details, class: agentClass.agentClass } : r.res.details,
          ms: r.ms,
        });
      } catch (err) {
        outcomes.push({ rule: rule.id, status: 'fail', findings: [], details: { error: errorMessage(err) }, ms: r.ms });
        return errorDecision(update, new Error(`rule ${rule.id}: ${errorMessage(err)}`, { cause: err }), started, outcomes);
      }
    }
    const contractOutcome = outcomes.find((o) => o.rule === 'contract');
    const contract = {
      base: (contractOutcome?.details?.base as string | null | undefined) ?? null,
      head: (contractOutcome?.details?.head as string | null | undefined) ?? null,
    };
    const failing = outcomes.filter((o) => o.status === 'fail');
    const { reasons, row, remediation, escalate } = decide(ctx, failing);
    return {
      ref: update.ref, oldId: update.oldId, newId: update.newId,
      verdict: failing.length ? 'reject' : 'accept', row: row.id, action: row.action,
      remediation, ...(escalate ? { escalate } : {}), reasons, outcomes, contract, ms: Date.now() - started, commitsMs,
      ...(judged ? { judged } : {}), ...agentClass,
    };
  } catch (err) {
    return errorDecision(update, err, started, outcomes);
  }
}

/** Lines for the agent (git relays them as `remote:`): verdict, every reason, the decision row, the fix. */
export function renderDecision(d: RefDecision, actor?: string): string[] {
  const range = `${isZeroId(d.oldId) ? '(new)' : short(d.oldId)}..${isZeroId(d.newId) ? '(delete)' : short(d.newId)}`;
  const who = actor ? ` for ${actor}${d.agentClass ? ` (class ${d.agentClass})` : ''}` : d.agentClass ? ` (class ${d.agentClass})` : '';
  if (d.verdict === 'accept') {
    const waived = d.outcomes.filter((o) => o.status === 'waived');
    const lines = [`patchgate: ACCEPT ${d.ref} ${range}${who}`];
    for (const o of waived) lines.push(`  (waived for a person) [${o.rule}] ${o.findings.length} finding(s), first: ${o.findings[0]?.message ?? ''}`);
    // Judged under the fallback of a broken trusted policy (src/policy/trusted-policy.ts): say so.
    const fallback = d.outcomes.find((o) => o.rule === 'policy')?.details?.fallback as { judgedUnder?: string } | undefined;
    if (fallback?.judgedUnder) lines.push(`  (the trusted branch's policy does not validate: judged under ${fallback.judgedUnder === 'defaults' ? 'the documented defaults' : `the policy of ${short(fallback.judgedUnder)}`}; the pushed policy validates)`);
    return lines;
  }
  const row = tableRow(d.row);
  const lines = [`patchgate: REJECT ${d.ref} ${range}${who}`];
  const shown = d.reasons.slice(0, 40);
  for (const r of shown) lines.push(`  [${r.rule}] ${r.message}`);
  if (d.reasons.length > shown.length) lines.push(`  ... and ${d.reasons.length - shown.length} more`);
  lines.push(`  decision: ${row.observation} -> ${row.result} -> ${row.action}`);
  if (d.remediation) {
    const [first, ...rest] = d.remediation.split('\n');
    lines.push(`  next step: ${first}`);
    for (const l of rest) lines.push(`    ${l}`);
  }
  if (d.escalate) {
    // The honest exit (issue 21): not a `$ ` fix line, because it is an alternative to the fix.
    lines.push(`  or, ${d.escalate.when}: ask a person instead. Put your reason between the quotes and run this${d.escalate.setup ? ' (the first line sets up the remote)' : ` (after the git config remote.patchgate-fix.url line above)`}; the push is judged as usual and the note is recorded for a person:`);
    if (d.escalate.setup) lines.push(`    ${d.escalate.setup}`);
    lines.push(`    ${d.escalate.command}`);
  }
  return lines;
}
