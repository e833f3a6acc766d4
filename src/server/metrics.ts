// Prometheus metrics for the gate (prom-client): pushes by verdict and rule, judge time,
// hook timeouts, audit write failures, cache hits, HTTP requests. One Registry per server,
// made by createMetrics(), so `patchgate serve` and a `patchgate daemon` can each expose the
// same names. observeAudit() counts pushes where they become audit rows, so the counters
// equal the audit log's counts by construction (a failed write counts as a failure, not a push).

import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RecordPushInput } from '../audit/store.js';
import type { AuditSink } from '../audit/sink.js';
import type { RecordedPush } from '../audit/sink-api.js';
import type { Logger } from '../log.js';

export interface GateMetrics {
  registry: Registry;
  /** Push rows written to the audit log, by verdict and the rule that decided (`none` on accept). */
  pushes: Counter<'verdict' | 'rule'>;
  /** Seconds the policy took per push (the audit row's `timings.total`). */
  judgeSeconds: Histogram<string>;
  hookTimeouts: Counter<string>;
  /** Hook shim requests the daemon answered, by hook (pre-receive, update, other) and verdict. */
  hookAnswers: Counter<'hook' | 'verdict'>;
  auditWriteFailures: Counter<string>;
  /** HTTP requests answered, by route kind and status code. */
  requests: Counter<'route' | 'code'>;
  /** Attach a cache whose `hits`/`misses` fields are read at every scrape. */
  watchCache(cache: { hits: number; misses: number }): void;
}

export interface MetricsOptions {
  /** Also collect Node's process metrics (default true). */
  defaults?: boolean;
  /** Metric name prefix (default `patchgate_`). */
  prefix?: string;
}

export function createMetrics(opts: MetricsOptions = {}): GateMetrics {
  const registry = new Registry();
  const p = opts.prefix ?? 'patchgate_';
  if (opts.defaults !== false) collectDefaultMetrics({ register: registry, prefix: p });
  const caches: Array<{ hits: number; misses: number }> = [];
  const sum = (k: 'hits' | 'misses') => caches.reduce((n, c) => n + c[k], 0);
  const registers = [registry];
  const metrics: GateMetrics = {
    registry,
    pushes: new Counter({ name: `${p}pushes_total`, help: 'Pushes judged and written to the audit log, by verdict and deciding rule', labelNames: ['verdict', 'rule'] as const, registers }),
    judgeSeconds: new Histogram({ name: `${p}judge_seconds`, help: 'Time the policy took per push', buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers }),
    hookTimeouts: new Counter({ name: `${p}hook_timeouts_total`, help: 'Pushes refused because the policy passed the hook time limit', registers }),
    hookAnswers: new Counter({ name: `${p}hook_answers_total`, help: 'Hook shim requests the daemon answered, by hook and verdict (an update hook that took the pass pre-receive left asks nothing)', labelNames: ['hook', 'verdict'] as const, registers }),
    auditWriteFailures: new Counter({ name: `${p}audit_write_failures_total`, help: 'Push decisions the audit log could not record (each such push was refused)', registers }),
    requests: new Counter({ name: `${p}http_requests_total`, help: 'HTTP requests answered', labelNames: ['route', 'code'] as const, registers }),
    watchCache: (c) => void caches.push(c),
  };
  new Counter({ name: `${p}cache_hits_total`, help: 'Content cache lookups answered from memory or disk', registers, collect() { this.reset(); this.inc(sum('hits')); } });
  new Counter({ name: `${p}cache_misses_total`, help: 'Content cache lookups that had to be computed', registers, collect() { this.reset(); this.inc(sum('misses')); } });
  return metrics;
}

/** The rule that decided a push: the first failing rule of its first refused ref, `error` for a gate error, `none` on accept. */
export function decidingRule(record: RecordPushInput): string {
  if (record.verdict === 'accept') return 'none';
  for (const ref of record.refs) {
    if (ref.verdict === 'accept') continue;
    const failing = (ref.rules as Array<{ rule?: unknown; status?: unknown }>).find((r) => r && r.status === 'fail');
    if (ref.decision === 'gate-error' || !failing) return 'error';
    return String(failing.rule);
  }
  return 'error';
}

/**
 * The labels a push is counted under, by outcome (issue 48): a push the gate wrote as not
 * refused that upstream then refused counts as refused by rule `upstream`; any other push
 * as written. Live (observeAudit) and from the log at start (./metrics-restore.ts) alike.
 */
export function outcomeLabels(verdict: string, rule: string, upstreamRefused: boolean): { verdict: string; rule: string } {
  return upstreamRefused && verdict !== 'reject' ? { verdict: 'reject', rule: 'upstream' } : { verdict, rule };
}

/**
 * Count and log every push decision where it becomes an audit row: wraps this store's
 * recordPush (the one call every push verdict goes through). One log line per decision.
 * A push written before its forward upstream (`forwarding`) is counted once its outcome is
 * written (issue 48): as refused by rule `upstream` at its `upstream-refusal` rows, else as
 * written at its `upstream.forwarded` row, so the counters equal the log's outcomes.
 */
export function observeAudit(audit: Pick<AuditSink, 'recordPush' | 'appendAdmin' | 'appendUpstreamRefusal'>, metrics: GateMetrics, log: Logger): void {
  const record = audit.recordPush.bind(audit);
  /** Forwarding pushes by id: what they count as when upstream takes them. */
  const forwarding = new Map<string, { verdict: string; rule: string; ms: number }>();
  const count = (verdict: string, rule: string, ms: number): void => {
    metrics.pushes.inc({ verdict, rule });
    metrics.judgeSeconds.observe(ms / 1000);
  };
  audit.recordPush = (input: RecordPushInput) => {
    const rule = decidingRule(input);
    const ms = Number((input.timings as Record<string, number> | undefined)?.total ?? 0);
    // Each ref with its own verdict and decision row, so one line says what happened to which branch.
    const refs = input.refs.map((r) => ({ ref: r.ref, verdict: r.verdict, decision: r.decision }));
    const fields = { event: 'push', pushId: input.pushId, repo: input.repo, actor: input.actor, role: input.role, verdict: input.verdict, rule, ms, refs };
    const failed = (err: unknown): never => {
      metrics.auditWriteFailures.inc();
      log.error({ ...fields, verdict: 'reject', auditWrite: 'failed', err: { message: (err as Error).message } }, 'push refused: the audit log could not record its decision');
      throw err;
    };
    const written = <T extends RecordedPush>(out: T): T => {
      if (out.credential) {
        // The token went away before the decision: the store wrote the push as refused (src/audit/credential.ts).
        count('reject', 'credential', ms);
        log.info({ ...fields, verdict: 'reject', rule: 'credential', credential: out.credential, refs: refs.map((r) => ({ ...r, verdict: 'reject' })) }, `push reject: token ${out.credential === 'unknown' ? 'gone' : out.credential} before the decision: ${refs.map((r) => `${r.ref} reject`).join(', ')}`);
        return out;
      }
      if (input.forwarding) forwarding.set(input.pushId, { verdict: input.verdict, rule, ms });
      else count(input.verdict, rule, ms);
      log.info({ ...fields, ...(input.forwarding ? { forwarding: true } : {}) }, `push ${input.verdict}${input.forwarding ? ' (forwarding upstream)' : ''}: ${refs.map((r) => `${r.ref} ${r.verdict}${r.verdict === 'accept' ? '' : ` (${r.decision})`}`).join(', ')}`);
      return out;
    };
    // A synchronous store (SQLite) stays synchronous; PostgreSQL's promise is counted when it settles.
    let out: ReturnType<AuditSink['recordPush']>;
    try {
      out = record(input);
    } catch (err) {
      return failed(err);
    }
    return out instanceof Promise ? out.then(written, failed) : written(out);
  };
  // The forward's outcome rows settle a forwarding push's count (once: the first that is written).
  const settle = (pushId: string | null | undefined, refused: boolean): void => {
    const p = pushId ? forwarding.get(pushId) : undefined;
    if (!p) return;
    forwarding.delete(pushId!);
    const labels = outcomeLabels(p.verdict, p.rule, refused);
    count(labels.verdict, labels.rule, p.ms);
  };
  const after = <A, T>(fn: (a: A) => T, then: (a: A) => void) => (a: A): T => {
    const out = fn(a);
    if (out instanceof Promise) return out.then((v: unknown) => (then(a), v)) as T;
    then(a);
    return out;
  };
  audit.appendUpstreamRefusal = after(audit.appendUpstreamRefusal.bind(audit), (input) => {
    log.info({ event: 'upstream-refusal', pushId: input.pushId, repo: input.repo, actor: input.actor, refs: input.refs.map((r) => ({ ref: r.ref, answer: r.answer })) }, `push ${input.pushId} reject: upstream refused ${input.refs.map((r) => r.ref).join(', ')}`);
    settle(input.pushId, true);
  });
  audit.appendAdmin = after(audit.appendAdmin.bind(audit), (input) => {
    if (input.action === 'upstream.forwarded') settle(input.pushId, false);
  });
}
