// Measurement (6): the GHES shim against GitHub Enterprise's budget. A copy of the generated
// repository gets the `hook install --host ghes` shim as its pre-receive hook; a real
// `patchgate daemon` (child process, warmed on the repository) answers it; one-file agent
// pushes over git's local transport (a real receive-pack) with GHES's variables. Reported:
// push wall time and the daemon's own judgement time (audit timings.total), p50/p99, as a
// ratio of the budget (config ghesBudgetMs, default 4.5 s of the 5 s GHES allows all hooks).

import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeEdits, type GeneratedRepo } from './gen.js';
import { CLI_JS, git, median, nowMs, percentile, Rng, run, tempDir, gitEnv } from './util.js';

export interface GhesBenchResult {
  size: string;
  pushes: number;
  budgetMs: number;
  wall: { p50: number; p99: number; max: number };
  judge: { p50: number; p99: number };
  refused: number;
}

export async function ghesBench(size: string, gen: GeneratedRepo, pushes: number, log: (s: string) => void): Promise<GhesBenchResult> {
  const root = tempDir('ghes-');
  const bare = join(root, 'repo.git');
  await git(root, ['clone', '-q', '--bare', '--no-local', gen.dir, bare]);
  const data = join(root, 'daemon');
  const config = join(root, 'daemon.json');
  const budgetMs = 4500;
  writeFileSync(config, JSON.stringify({ data, agents: ['agent-*'], humans: [], monitor: '127.0.0.1:0', warm: [bare], ghesBudgetMs: budgetMs }));
  const inst = await run(process.execPath, [CLI_JS, 'hook', 'install', '--host', 'ghes', '--config', config, root]);
  if (inst.code) throw new Error(`hook install failed: ${inst.stderr}`);
  await git(root, ['--git-dir', bare, 'config', 'core.hooksPath', root]);
  // the installed script is root/patchgate-pre-receive.sh; git wants it named pre-receive
  await run('ln', ['-sf', join(root, 'patchgate-pre-receive.sh'), join(root, 'pre-receive')]);
  const daemon = spawn(process.execPath, [CLI_JS, 'daemon', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  daemon.stdout.on('data', (c) => (out += String(c)));
  daemon.stderr.on('data', (c) => (out += String(c)));
  try {
    // Up, and its cache warmed on the repository (as an operator would wait before enabling the hook).
    const t0 = nowMs();
    for (let i = 0; !out.includes('cache warm-up of 1 repository finished'); i++) {
      if (daemon.exitCode !== null || i > 12_000) throw new Error(`daemon did not start and warm up: ${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    log(`  [${size}] ghes daemon up and warm after ${Math.round(nowMs() - t0)} ms`);
    const client = join(root, 'client.git');
    await git(root, ['clone', '-q', '--bare', '--no-local', gen.dir, client]);
    const rng = new Rng(7);
    const env = { ...gitEnv(), GITHUB_USER_LOGIN: 'agent-bench', GITHUB_USER_ID: '1', GITHUB_REPO_NAME: 'bench/repo', GITHUB_VIA: 'git push' };
    const commits = await makeEdits(client, 'agent/ghes', gen.main, gen.srcFiles, pushes + 1, rng, 'ghes');
    const wall: number[] = [];
    let refused = 0;
    for (let i = 0; i < commits.length; i++) {
      const t0 = nowMs();
      const r = await run('git', ['push', '-q', bare, `${commits[i]}:refs/heads/agent/ghes`], { cwd: client, env });
      const ms = nowMs() - t0;
      if (r.code !== 0) refused++;
      if (i > 0) wall.push(ms); // the first push warms what the warm-up did not
      if (i === 0) log(`  [${size}] ghes first push ${Math.round(ms)} ms${r.code ? ` (refused: ${r.stderr.trim().split('\n').slice(-3).join(' | ')})` : ''}`);
    }
    const audit = await run(process.execPath, [CLI_JS, 'audit', '--data', data, '--kind', 'push', '--json', '--limit', String(pushes + 5)]);
    const judge = audit.stdout.trim().split('\n').filter(Boolean).map((l) => Number((JSON.parse(l) as { timings?: { total?: number } }).timings?.total ?? Number.NaN)).filter(Number.isFinite);
    return {
      size, pushes: wall.length, budgetMs, refused,
      wall: { p50: median(wall), p99: percentile(wall, 99), max: Math.max(...wall) },
      judge: { p50: median(judge), p99: percentile(judge, 99) },
    };
  } finally {
    daemon.kill('SIGTERM');
  }
}
