// What a judgement is doing right now, for the refusal it gets when the hook's time limit
// passes (issue 47): which ref, which phase (reading the commits, the size limits, the rules),
// which rules had finished and in how long, which were still running, and how far a counted
// phase had come (a contract parse: files parsed of how many). Before, a refusal for time said
// "the policy did not finish within 30000 ms" and its audit row held `"rules": []`, so nobody
// could tell what was slow. The engine (src/policy/engine.ts) records into it; the hook's
// judge (src/server/hook/judge.ts) reads it when the limit passes. A rule's counted phases
// (src/progress.ts slowPhase) find their rule through an AsyncLocalStorage, as the
// cancellation signal does (src/cancel.ts), so no rule takes a parameter for it.

import { AsyncLocalStorage } from 'node:async_hooks';

// No import of ./types.js: src/progress.ts reports here, and the git module reports through
// progress.ts, so an import of the policy's types would close a cycle (test/layout).
type RuleId = string;
/** The shape of ./types.ts RuleOutcome this file fills (the engine's rule ids). */
interface LiveOutcome {
  rule: RuleId;
  status: 'fail' | 'skipped';
  findings: never[];
  details: Record<string, unknown>;
  ms: number;
}

interface RuleState {
  rule: RuleId;
  startedAt: number;
  ms?: number;
  findings?: number;
  error?: string;
  /** The last counted phase of the rule: what it counts, how many done, of how many. */
  count?: Count;
  /** Files the rule parsed itself (liveParsed), over all its phases. */
  parsedNow?: number;
}

interface Count {
  done: number;
  total: number | null;
  unit: string;
  verb: string;
  /** What the phase walks (a contract parse: "the pushed commit 1a2b3c4d5e6f"). */
  what?: string;
  /** Of `done`, the files this judgement parsed itself (the rest were in the cache); see liveParsed. */
  parsed?: number;
}

/**
 * How far a contract parse that the time limit stopped had come (issue 47): its files done
 * (parsed now, or found in the cache) are kept in the cache, so the next try starts from them.
 */
export interface StoppedParse {
  rule: RuleId;
  what: string | null;
  /** Files whose rows are in the cache now (this try's parses and those found there). */
  kept: number;
  total: number | null;
  /** Of `kept`, those this try parsed itself. */
  parsedNow: number;
}

const currentRule = new AsyncLocalStorage<RuleState>();

/** A counted phase (slowPhase) reports here, when it runs inside a rule of a live judgement. */
export function liveCount(done: number, total: number | null, unit = 'files', verb = 'parsed', what?: string): void {
  const r = currentRule.getStore();
  if (r) r.count = { done, total, unit, verb, ...(what ? { what } : {}), parsed: r.parsedNow ?? 0 };
}

/** Files the current rule of a live judgement parsed itself so far (undefined outside one: `check`, a judgement ahead). */
export function liveParsedCount(): number | undefined {
  const r = currentRule.getStore();
  return r ? (r.parsedNow ?? 0) : undefined;
}

/** A file's rows were parsed (not found in the cache) and put in the cache, inside a rule of a live judgement. */
export function liveParsed(): void {
  const r = currentRule.getStore();
  if (!r) return;
  r.parsedNow = (r.parsedNow ?? 0) + 1;
  if (r.count) r.count.parsed = r.parsedNow;
}

export class LiveJudgement {
  ref: string | null = null;
  phase = 'waiting for its turn';
  private startedAt = Date.now();
  private rules: RuleState[] = [];

  /** A new ref update is being judged: its commits are read first. */
  enter(ref: string): void {
    this.ref = ref;
    this.phase = 'reading its new commits';
    this.startedAt = Date.now();
    this.rules = [];
  }

  /** Runs `fn` as rule `rule`'s run: its time and counted phases are recorded. */
  run<T>(rule: RuleId, fn: () => Promise<T>): Promise<T> {
    const state: RuleState = { rule, startedAt: Date.now() };
    this.rules.push(state);
    return currentRule.run(state, fn).then(
      (v) => {
        state.ms = Date.now() - state.startedAt;
        const findings = (v as { res?: { findings?: unknown[] } } | null)?.res?.findings;
        if (Array.isArray(findings)) state.findings = findings.length;
        const err = (v as { err?: unknown } | null)?.err;
        if (err !== undefined) state.error = err instanceof Error ? err.message : String(err);
        return v;
      },
      (e: unknown) => {
        state.ms = Date.now() - state.startedAt;
        state.error = e instanceof Error ? e.message : String(e);
        throw e;
      },
    );
  }

  /** One line: the phase, the rules still running and how far they came, and those done. */
  describe(now = Date.now()): string {
    const running = this.rules.filter((r) => r.ms === undefined);
    const done = this.rules.filter((r) => r.ms !== undefined);
    const parts = [`${this.ref ? `ref ${this.ref}, ` : ''}${this.phase} for ${secs(now - this.startedAt)}`];
    if (running.length) parts.push(`still running: ${running.map((r) => `${r.rule} (${secs(now - r.startedAt)}${r.count ? `; ${countText(r.count)}` : ''})`).join(', ')}`);
    if (done.length) parts.push(`finished: ${done.map((r) => `${r.rule} ${secs(r.ms!)}`).join(', ')}`);
    return parts.join('; ');
  }

  /** The rules still running with a counted parse, and how far each had come (a refusal for time says it). */
  stoppedParses(): StoppedParse[] {
    return this.rules.filter((r) => r.ms === undefined && r.count && r.count.unit === 'files')
      .map((r) => ({ rule: r.rule, what: r.count!.what ?? null, kept: r.count!.done, total: r.count!.total, parsedNow: r.count!.parsed ?? 0 }));
  }

  /** The audit row's outcomes at the limit: the finished rules' times, and the running ones as stopped. */
  outcomes(now = Date.now()): LiveOutcome[] {
    return this.rules.map((r): LiveOutcome => r.ms === undefined
      ? { rule: r.rule, status: 'fail', findings: [], details: { stopped: `still running when the time limit passed (${secs(now - r.startedAt)})`, ...(r.count ? { progress: countText(r.count), ...keptDetails(r.count) } : {}) }, ms: now - r.startedAt }
      : { rule: r.rule, status: r.error ? 'fail' : 'skipped', findings: [], details: { finished: true, ...(r.findings !== undefined ? { findings: r.findings } : {}), ...(r.error ? { error: r.error } : {}), why: 'finished before the limit; the push was refused for time, so its result was not used' }, ms: r.ms });
  }
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** A stopped parse's figures for the audit row: files kept in the cache, of how many, how many left, and how many this try parsed. */
function keptDetails(c: Count): Record<string, unknown> {
  if (c.unit !== 'files') return {};
  return { ...(c.what ? { parsing: c.what } : {}), kept: c.done, total: c.total, left: c.total === null ? null : Math.max(0, c.total - c.done), parsedNow: c.parsed ?? 0 };
}

function countText(c: Count): string {
  return `${c.done}${c.total !== null ? ` of ${c.total}` : ''} ${c.unit} ${c.verb}`;
}
