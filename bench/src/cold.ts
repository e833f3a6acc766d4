// Measurement (8): a repository the gate has never seen, first push on a cold daemon (issue
// 24: "a never-seen repository, first push" on 10k and 50k files). A new data folder holds the
// generated repository and no cache.db; `patchgate serve` starts on it as a child process with
// `--hook-timeout 900`, so the push completes and its time can be judged against the default
// 30 s hook limit; one one-file push follows. Figures: the push's wall time and the daemon's
// peak memory (VmHWM from /proc/PID/status) right after it. The push is killed after the
// `--budget` time: then the figure is a lower bound.

import { tmpdir } from 'node:os';
import { makeEdits, type GeneratedRepo } from './gen.js';
import { agentRepo, prepareGateData, pushOnce, startGate } from './push.js';
import { memOf, Rng, stopServeChild, tempDir } from './util.js';

/** The default `--hook-timeout`: what a first push on a never-seen repository must finish inside. */
export const HOOK_LIMIT_MS = 30_000;

export interface ColdPushResult {
  size: string;
  ms: number;
  ok: boolean;
  /** Killed at the budget before it finished (ms is then a lower bound). */
  timedOut: boolean;
  budgetMs: number;
  hookTimeoutS: number;
  /** Daemon peak RSS (VmHWM) after the push, MB. */
  vmHwmMB: number;
  /** ms / HOOK_LIMIT_MS. */
  limitRatio: number;
  stderrTail: string;
}

export async function coldPushBench(size: string, gen: GeneratedRepo, opts: { log: (s: string) => void; budgetMs: number }): Promise<ColdPushResult> {
  const agent = 'cold-agent';
  const data = tempDir('pgf-', tmpdir());
  const secret = await prepareGateData(gen, data, agent);
  const client = await agentRepo(gen, 'cold-');
  const [sha] = await makeEdits(client, 'agent/cold', gen.main, gen.srcFiles, 1, new Rng(8), 'cold');
  const gate = await startGate(data, agent, secret);
  try {
    const r = await pushOnce(client, gate.url, sha!, 'refs/heads/agent/cold', true, opts.budgetMs);
    const vmHwmMB = memOf(gate.pid)?.hwm ?? Number.NaN;
    const timedOut = !r.ok && r.ms >= opts.budgetMs - 100;
    const res: ColdPushResult = {
      size, ms: r.ms, ok: r.ok, timedOut, budgetMs: opts.budgetMs, hookTimeoutS: 900, vmHwmMB,
      limitRatio: r.ms / HOOK_LIMIT_MS, stderrTail: r.ok ? '' : r.stderr.trim().split('\n').slice(-3).join(' | '),
    };
    opts.log(`  [${size}] first push of a never-seen repository on a cold daemon: ${Math.round(r.ms)} ms${timedOut ? ' (stopped at the budget)' : r.ok ? '' : ` (failed: ${res.stderrTail})`}; daemon VmHWM ${Math.round(vmHwmMB)} MB`);
    return res;
  } finally {
    await stopServeChild(gate.child);
  }
}
