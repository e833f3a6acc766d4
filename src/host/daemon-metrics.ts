// Prometheus text for `patchgate daemon`'s GET /metrics: hook answers by host and verdict, how
// long they took, and how many are in flight. Its own small prom-client registry, so it does
// not depend on serve's metrics module (the integrator may fold both into one).

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { HookRequest } from '../server/hook-service.js';

export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly answers = new Counter({ name: 'patchgate_daemon_hook_answers_total', help: 'Hook answers of the daemon, by host and verdict', labelNames: ['host', 'verdict'] as const, registers: [this.registry] });
  private readonly seconds = new Histogram({
    name: 'patchgate_daemon_hook_seconds', help: 'Time from a hook request to its answer', labelNames: ['host'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 4.5, 5, 10, 30], registers: [this.registry],
  });
  readonly up = new Gauge({ name: 'patchgate_daemon_up', help: '1 while every part a push needs answers (as /healthz)', registers: [this.registry] });

  observe = (hr: HookRequest | null, verdict: 'accept' | 'reject', ms: number): void => {
    const host = (hr?.id.host ?? 'unknown').replace(/[^a-z]/g, '').slice(0, 16) || 'unknown';
    this.answers.inc({ host, verdict });
    this.seconds.observe({ host }, ms / 1000);
  };

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
