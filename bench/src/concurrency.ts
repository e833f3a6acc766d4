// Measurement (4): many agents pushing at once to one gate. The server runs as a child
// process (`node dist/cli.js serve`), the way it runs in production, so its peak memory
// (VmHWM) is its own. Each agent has its own client repository and branch and pushes a chain
// of one-file src/ edits; afterwards the audit log must hold one ref row per push.

import { copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditStore } from '../../dist/audit/store.js';
import { TokenStore } from '../../dist/audit/tokens.js';
import { createRepo } from '../../dist/server/repos.js';
import { makeEdits, type GeneratedRepo } from './gen.js';
import { agentRepo, pushOnce, seedBare, startBaseline } from './push.js';
import { median, memOf, nowMs, percentile, Rng, round, startServeChild, stopServeChild, tempDir } from './util.js';

export interface ConcurrencyResult {
  size: string;
  agents: number;
  pushesPerAgent: number;
  /** Pushes made (the budget may stop the run before all planned ones). */
  pushes: number;
  planned: number;
  /** The daemon started with the cache.db of the earlier run on this repository. */
  restart: boolean;
  wallMs: number;
  pushesPerSec: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  errors: number;
  errorSamples: string[];
  auditRefRows: number;
  auditPushRows: number;
  lost: number;
  accepted: number;
  movedConfirmed: number;
  chainIntact: boolean;
  coldFirstPushMs: number;
  rssAfterWarmMB: number;
  peakRssPhaseMB: number;
  vmHwmMB: number;
  hookTimeoutS: number;
  /** The same pushes, as many at once, to plain node-git-server (a copy of the repository, hook `exit 0`). */
  floor: { pushes: number; wallMs: number; pushesPerSec: number; p50: number; p99: number; errors: number };
}

async function plainFloor(gen: GeneratedRepo, names: string[], chains: Map<string, { dir: string; commits: string[] }>, made: Set<string>, budgetMs: number): Promise<ConcurrencyResult['floor']> {
  const base = await startBaseline(gen);
  try {
    const lat: number[] = [];
    let errors = 0;
    let pushes = 0;
    const start = nowMs();
    const deadline = start + budgetMs;
    await Promise.all(names.map(async (n) => {
      const c = chains.get(n)!;
      for (const sha of c.commits) {
        if (!made.has(sha) || nowMs() > deadline) continue;
        pushes++;
        const r = await pushOnce(c.dir, base.url, sha, `refs/heads/agent/${n}`, false);
        lat.push(r.ms);
        if (!r.ok) errors++;
      }
    }));
    const wallMs = nowMs() - start;
    return { pushes, wallMs, pushesPerSec: pushes / (wallMs / 1000), p50: median(lat), p99: percentile(lat, 99), errors };
  } finally {
    await base.close();
  }
}

async function inBatches<T>(items: T[], width: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

export interface ConcurrencyOptions {
  log: (s: string) => void;
  /** A cache.db from an earlier daemon on the same repository (a restart), or null for a cold start. */
  cacheDb: string | null;
  /** No new push starts after this long; pushes not started are reported, not counted as errors. */
  budgetMs: number;
}

export async function concurrencyBench(size: string, gen: GeneratedRepo, agents: number, pushesPerAgent: number, opts: ConcurrencyOptions): Promise<ConcurrencyResult> {
  const { log } = opts;
  const data = tempDir('pgc-', tmpdir());
  const repoDir = await createRepo(data, 'bench');
  if (opts.cacheDb) copyFileSync(opts.cacheDb, join(data, 'cache.db'));
  await seedBare(gen, repoDir);
  const store = AuditStore.open(join(data, 'patchgate.db'));
  const tokens = new TokenStore(store);
  const names = Array.from({ length: agents }, (_, i) => `agent-${i + 1}`);
  const secrets = new Map<string, string>();
  for (const n of [...names, 'warm-agent']) secrets.set(n, tokens.create(n, 'agent', { repos: 'bench' }));
  tokens.create('admin', 'admin');
  store.close();

  // Client repositories and their chains of edits, made before the clock starts.
  const t0 = nowMs();
  const chains = new Map<string, { dir: string; commits: string[] }>();
  await inBatches(names, 4, async (n) => {
    const dir = await agentRepo(gen, 'cl-');
    chains.set(n, { dir, commits: await makeEdits(dir, `agent/${n}`, gen.main, gen.srcFiles, pushesPerAgent, new Rng(1000 + names.indexOf(n)), n) });
  });
  const warmDir = await agentRepo(gen, 'cl-');
  const warm = await makeEdits(warmDir, 'agent/warm', gen.main, gen.srcFiles, 1, new Rng(7), 'warm');
  log(`  [${size}] ${agents} client repositories with ${pushesPerAgent} commits each ready in ${Math.round(nowMs() - t0)} ms`);

  // A restarted daemon runs with the default hook timeout, as in production; a cold one needs
  // minutes for its first push on a big repository, so it gets a long timeout (reported).
  const hookTimeoutS = opts.cacheDb ? 30 : 900;
  const { child, port } = await startServeChild(data, hookTimeoutS);
  const pid = child.pid!;
  const url = (n: string) => `http://${n}:${secrets.get(n)}@127.0.0.1:${port}/bench.git`;
  let phasePeak = 0;
  let sampling = false;
  const sampler = setInterval(() => {
    const m = memOf(pid);
    if (m && sampling) phasePeak = Math.max(phasePeak, m.rss);
  }, 50);
  try {
    // The first push on a fresh daemon parses the whole contract: the cold figure.
    const first = await pushOnce(warmDir, url('warm-agent'), warm[0]!, 'refs/heads/agent/warm', true);
    if (!first.ok) throw new Error(`warm-up push failed: ${first.stderr}`);
    const rssAfterWarmMB = memOf(pid)?.rss ?? Number.NaN;
    log(`  [${size}] first push on a fresh daemon (${opts.cacheDb ? 'cache.db from the earlier run: a restart' : 'empty cache: cold'}): ${Math.round(first.ms)} ms; daemon RSS ${Math.round(rssAfterWarmMB)} MB`);

    sampling = true;
    const lat: number[] = [];
    const errorSamples: string[] = [];
    let errors = 0;
    const start = nowMs();
    const deadline = start + opts.budgetMs;
    const made = new Set<string>();
    let notStarted = 0;
    await Promise.all(names.map(async (n) => {
      const c = chains.get(n)!;
      for (const sha of c.commits) {
        if (nowMs() > deadline) {
          notStarted++;
          continue;
        }
        made.add(sha);
        const r = await pushOnce(c.dir, url(n), sha, `refs/heads/agent/${n}`, true);
        lat.push(r.ms);
        if (!r.ok) {
          errors++;
          if (errorSamples.length < 5) errorSamples.push(`${n}: exit ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
        }
      }
    }));
    const wallMs = nowMs() - start;
    if (notStarted) log(`  [${size}] time budget of ${Math.round(opts.budgetMs / 1000)} s spent: ${notStarted} push(es) not started`);
    sampling = false;
    const hwm = memOf(pid)?.hwm ?? Number.NaN;

    // Stop the server the way an operator does (SIGTERM drains in-flight pushes), then read the log.
    await stopServeChild(child);

    const audit = AuditStore.open(join(data, 'patchgate.db'));
    let auditRefRows = 0;
    let auditPushRows = 0;
    let lost = 0;
    let accepted = 0;
    let movedConfirmed = 0;
    let chainIntact = false;
    try {
      const refRows = audit.query({ kind: 'ref', limit: 1_000_000 }).filter((r) => r.actor !== null && names.includes(r.actor));
      auditRefRows = refRows.length;
      auditPushRows = audit.query({ kind: 'push', limit: 1_000_000 }).filter((r) => r.actor !== null && names.includes(r.actor)).length;
      const byKey = new Map(refRows.map((r) => [`${r.ref} ${r.new}`, r]));
      for (const n of names) {
        for (const sha of chains.get(n)!.commits) {
          if (!made.has(sha)) continue;
          const row = byKey.get(`refs/heads/agent/${n} ${sha}`);
          if (!row) {
            lost++;
            continue;
          }
          if (row.verdict === 'accept') accepted++;
          if (row.moved === 1) movedConfirmed++;
        }
      }
      chainIntact = audit.verify().ok;
    } finally {
      audit.close();
    }
    // The floor on this machine: the same pushes, as many at once, to plain node-git-server.
    const floor = await plainFloor(gen, names, chains, made, opts.budgetMs);
    log(`  [${size}] the same pushes to plain node-git-server: ${round(floor.pushesPerSec, 2)} pushes/s, p50 ${Math.round(floor.p50)} ms, p99 ${Math.round(floor.p99)} ms, ${floor.errors} errors`);

    const pushes = made.size;
    return {
      floor,
      size, agents, pushesPerAgent, pushes, planned: agents * pushesPerAgent, restart: opts.cacheDb !== null, wallMs, pushesPerSec: pushes / (wallMs / 1000),
      p50: median(lat), p95: percentile(lat, 95), p99: percentile(lat, 99), max: Math.max(...lat),
      errors, errorSamples, auditRefRows, auditPushRows, lost, accepted, movedConfirmed, chainIntact,
      coldFirstPushMs: first.ms, rssAfterWarmMB, peakRssPhaseMB: phasePeak, vmHwmMB: hwm, hookTimeoutS,
    };
  } finally {
    clearInterval(sampler);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
