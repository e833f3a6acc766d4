// Measurement (6): the gate in front of an upstream, on a repository it has never seen. With
// the server running, `repo create --upstream` fetches the trusted branch and starts the
// background contract warm-up; an agent then pushes one-file edits back to back. The figure
// is the time from `repo create` to the end of the first push that judged within the usual
// warm time (1.5 x the median of three pushes made after everything is warm), and the ratio
// of the first push to a warm one. The upstream is a file:// bare repository (no network in
// the figure: the warm-up is what is measured).

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { AuditStore } from '../../dist/audit/store.js';
import { TokenStore } from '../../dist/audit/tokens.js';
import type { GeneratedRepo } from './gen.js';
import { makeEdits } from './gen.js';
import { agentRepo, pushOnce, seedBare } from './push.js';
import { CLI_JS, git, median, nowMs, Rng, run, startServeChild, stopServeChild, tempDir } from './util.js';

export interface UpstreamBenchResult {
  size: string;
  createMs: number;
  /** repo create -> end of the first push within 1.5 x warm. */
  toWarmPushMs: number;
  pushesUntilWarm: number;
  firstPushMs: number;
  warmPushMs: number;
  /** firstPushMs / warmPushMs. */
  ratio: number;
  pushes: number[];
}

export async function upstreamBench(size: string, gen: GeneratedRepo, log: (s: string) => void): Promise<UpstreamBenchResult> {
  const upstream = tempDir('upstream-');
  const data = tempDir('updata-');
  await git(upstream, ['init', '-q', '--bare', '--initial-branch=main', '.']);
  await seedBare(gen, upstream);
  const store = AuditStore.open(join(data, 'patchgate.db'));
  let secret: string;
  try {
    const tokens = new TokenStore(store);
    secret = tokens.create('agent-up', 'agent', { repos: 'bench' });
    tokens.create('admin', 'admin');
  } finally {
    store.close();
  }
  const { child, port } = await startServeChild(data, 900);
  try {
    const client = await agentRepo(gen, 'upclient-');
    const edits = await makeEdits(client, 'agent/up', gen.main, gen.srcFiles, 12, new Rng(6), 'up');
    const url = `http://agent-up:${secret}@127.0.0.1:${port}/bench.git`;
    const t0 = nowMs();
    const c = await run(process.execPath, [CLI_JS, 'repo', 'create', 'bench', '--data', data, '--upstream', `file://${upstream}`], { timeoutMs: 600_000 });
    const createMs = nowMs() - t0;
    if (c.code !== 0) throw new Error(`repo create --upstream failed: ${c.stderr}`);
    const pushes: number[] = [];
    const ends: number[] = [];
    for (const sha of edits) {
      const p = await pushOnce(client, url, sha, 'refs/heads/agent/up', true);
      if (!p.ok) throw new Error(`push refused: ${p.stderr.slice(0, 400)}`);
      pushes.push(p.ms);
      ends.push(nowMs() - t0);
    }
    const warm = median(pushes.slice(-3));
    const i = pushes.findIndex((ms) => ms <= warm * 1.5);
    const r: UpstreamBenchResult = {
      size, createMs, toWarmPushMs: ends[i]!, pushesUntilWarm: i + 1, firstPushMs: pushes[0]!, warmPushMs: warm,
      ratio: pushes[0]! / warm, pushes,
    };
    log(`  [${size}] repo create --upstream ${Math.round(createMs)} ms; first push ${Math.round(r.firstPushMs)} ms, warm ${Math.round(warm)} ms (x${r.ratio.toFixed(2)}); within warm time at push ${r.pushesUntilWarm}, ${Math.round(r.toWarmPushMs)} ms after create`);
    return r;
  } finally {
    await stopServeChild(child);
    rmSync(upstream, { recursive: true, force: true });
    rmSync(data, { recursive: true, force: true });
  }
}
