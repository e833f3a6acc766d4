// Measurements (1) and (2): one-file src/ pushes over HTTP to a warm patchgate server (in
// this process, so its daemon can be timed from the inside) and to plain node-git-server on
// a copy of the same repository whose pre-receive hook only exits 0, alternated A,B,B,A...
// Also profiles one extra push: git processes the daemon spawns, and (with strace) every
// process the push starts on the server side.

import http from 'node:http';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { Git as GitServer } from 'node-git-server';
import { startServer, type RunningServer } from '../server/app.js';
import { createRepo } from '../server/repos.js';
import { makeEdits, type GeneratedRepo } from './gen.js';
import { git, median, nowMs, percentile, Rng, run, tempDir, trackChild } from './util.js';

// ------------------------------------------------------------------ repositories

/** Put the generated repository's objects and main into a bare repository (no push, no hook). */
export async function seedBare(gen: GeneratedRepo, bare: string): Promise<void> {
  const from = join(gen.dir, 'objects', 'pack');
  const to = join(bare, 'objects', 'pack');
  mkdirSync(to, { recursive: true });
  for (const f of readdirSync(from)) if (/\.(pack|idx|rev)$/.test(f)) copyFileSync(join(from, f), join(to, f));
  await git(bare, ['update-ref', 'refs/heads/main', gen.main]);
}

/** A bare client repository that borrows the generated objects (alternates) and has main. */
export async function agentRepo(gen: GeneratedRepo, prefix: string): Promise<string> {
  const dir = tempDir(prefix);
  await git(dir, ['init', '-q', '--bare', '--initial-branch=main', '.']);
  writeFileSync(join(dir, 'objects', 'info', 'alternates'), join(gen.dir, 'objects') + '\n');
  await git(dir, ['update-ref', 'refs/heads/main', gen.main]);
  return dir;
}

export interface PushRun {
  ms: number;
  ok: boolean;
  code: number;
  stderr: string;
}

/** `git push URL SHA:REF` from a client repository; ok = exit 0 (and ACCEPT when `gate`). */
export async function pushOnce(cwd: string, url: string, sha: string, ref: string, gate: boolean): Promise<PushRun> {
  const r = await run('git', ['push', '--no-verify', url, `${sha}:${ref}`], { cwd, timeoutMs: 600_000 });
  const ok = r.code === 0 && (!gate || /patchgate: ACCEPT/.test(r.stderr));
  return { ms: r.ms, ok, code: r.code, stderr: r.stderr };
}

// ------------------------------------------------------------------ servers

export interface Baseline {
  url: string;
  close(): Promise<void>;
}

/** Plain node-git-server (no auth, no patchgate) on a copy of the repo whose pre-receive only exits 0. */
export async function startBaseline(gen: GeneratedRepo): Promise<Baseline> {
  const root = tempDir('base-');
  const dir = join(root, 'bench.git');
  mkdirSync(dir);
  await git(dir, ['init', '-q', '--bare', '--initial-branch=main', '.']);
  await git(dir, ['config', 'receive.fsckObjects', 'true']);
  await git(dir, ['config', 'http.receivepack', 'true']);
  await seedBare(gen, dir);
  const hooks = join(dir, 'hooks');
  for (const f of readdirSync(hooks)) rmSync(join(hooks, f));
  writeFileSync(join(hooks, 'pre-receive'), '#!/bin/sh\nexit 0\n');
  chmodSync(join(hooks, 'pre-receive'), 0o755);
  const gs = new GitServer((d?: string) => join(root, d ?? ''), { autoCreate: false });
  // Same as gs.listen(0), but bound to loopback only.
  const server = http.createServer((req, res) => gs.handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/bench.git`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export interface Gate {
  srv: RunningServer;
  data: string;
  repoDir: string;
  url: string;
  /** Milliseconds of each daemon hook handler, by hook. */
  hookMs: { preReceive: number[]; update: number[]; postReceive: number[] };
  close(): Promise<void>;
}

type Handler = (...a: unknown[]) => unknown;

/** patchgate in this process, on a short temp data folder (the hook socket path must stay short). */
export async function startGate(gen: GeneratedRepo, agentName: string, seedCache: string | null = null): Promise<Gate & { secret: string }> {
  const data = tempDir('pgb-', tmpdir());
  if (seedCache) copyFileSync(seedCache, join(data, 'cache.db'));
  const srv = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', hookTimeoutMs: 900_000, log: () => {} });
  const repoDir = await createRepo(data, 'bench');
  await seedBare(gen, repoDir);
  const secret = srv.tokens.create(agentName, 'agent');
  const hookMs = { preReceive: [] as number[], update: [] as number[], postReceive: [] as number[] };
  // Time the daemon's hook handlers from the inside (private methods, wrapped on this instance).
  const h = srv.hooks as unknown as Record<'preReceive' | 'update' | 'postReceive', Handler>;
  for (const name of ['preReceive', 'update', 'postReceive'] as const) {
    const orig = h[name].bind(srv.hooks);
    h[name] = (...a: unknown[]) => {
      const t0 = nowMs();
      const done = () => hookMs[name].push(nowMs() - t0);
      const r = orig(...a);
      if (r instanceof Promise) return r.finally(done);
      done();
      return r;
    };
  }
  return {
    srv, data, repoDir, secret, hookMs,
    url: `http://${agentName}:${secret}@127.0.0.1:${srv.port}/bench.git`,
    close: () => srv.close(),
  };
}

/** The daemon's content cache (rows per blob, digests per tree). Internal; used only to prewarm it. */
export function daemonCache(srv: RunningServer): Map<string, unknown> {
  return (srv.hooks as unknown as { opts: { cache: Map<string, unknown> } }).opts.cache;
}

/**
 * Parse every src/ file of main on all cores with the real contractOf and merge the rows into
 * the daemon's cache: what a daemon that has seen this tree before holds.
 */
export async function prewarm(cache: Map<string, unknown>, gen: GeneratedRepo): Promise<{ ms: number; workers: number; entries: number }> {
  const t0 = nowMs();
  const groups = new Map<string, number>();
  for (const f of gen.srcFiles) {
    const parts = f.path.split('/');
    if (parts.length < 4) continue; // shallow files are parsed by the warm-up push
    const root = parts.slice(0, 3).join('/') + '/';
    groups.set(root, (groups.get(root) ?? 0) + f.bytes);
  }
  const workers = Math.max(1, Math.min(availableParallelism(), 4));
  const shares: string[][] = Array.from({ length: workers }, () => []);
  const load = new Array<number>(workers).fill(0);
  for (const [root, bytes] of [...groups].sort((a, b) => b[1] - a[1])) {
    const i = load.indexOf(Math.min(...load));
    shares[i]!.push(root);
    load[i]! += bytes;
  }
  const url = new URL('./prewarm-worker.js', import.meta.url);
  const results = await Promise.all(shares.filter((s) => s.length).map((roots) => new Promise<Array<[string, unknown]>>((resolve, reject) => {
    const w = new Worker(url, { workerData: { dir: gen.dir, rev: gen.main, roots } });
    w.once('message', (m: Array<[string, unknown]>) => resolve(m));
    w.once('error', reject);
    w.once('exit', (code) => (code !== 0 ? reject(new Error(`prewarm worker exited ${code}`)) : undefined));
  })));
  let entries = 0;
  for (const list of results) for (const [k, v] of list) {
    cache.set(k, v);
    entries++;
  }
  return { ms: nowMs() - t0, workers, entries };
}

/** A consistent copy of the daemon's cache.db (WAL included), or false when it keeps no such file. */
export function snapshotCache(data: string, to: string): boolean {
  const db = join(data, 'cache.db');
  if (!existsSync(db)) return false;
  rmSync(to, { force: true });
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    conn.prepare('VACUUM INTO ?').run(to);
  } finally {
    conn.close();
  }
  return true;
}

// ------------------------------------------------------------------ profiling

export interface SpawnProfile {
  /** `git <subcommand>` -> count, for processes the daemon and node-git-server started during one push. */
  daemonSpawns: Record<string, number>;
  /** Every exec on the server side during one push, by program name (strace); null when strace is unavailable. */
  serverExecs: ExecTrace | null;
}

/** Count the git processes this process spawns while `fn` runs (the bench's own `git push` is left out). */
export async function countSpawns<T>(fn: () => Promise<T>): Promise<{ result: T; spawns: Record<string, number> }> {
  const cp = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  const orig = cp.spawn;
  const spawns: Record<string, number> = {};
  const wrapped = ((cmd: string, args?: readonly string[], ...rest: unknown[]) => {
    const a = Array.isArray(args) ? args : [];
    if (a[0] !== 'push' && cmd !== 'strace') {
      const key = `${cmd} ${a.slice(0, a[0] === 'cat-file' ? 2 : 1).join(' ')}`.trim();
      spawns[key] = (spawns[key] ?? 0) + 1;
    }
    return (orig as (...x: unknown[]) => unknown)(cmd, args, ...rest);
  }) as typeof cp.spawn;
  cp.spawn = wrapped;
  syncBuiltinESMExports();
  try {
    return { result: await fn(), spawns };
  } finally {
    cp.spawn = orig;
    syncBuiltinESMExports();
  }
}

/** Processes started while `fn` ran, by side, from `strace -f` on this process (null if strace cannot attach). */
export interface ExecTrace {
  /** The bench's `git push` and everything it started. */
  client: Record<string, number>;
  /** node-git-server's `git receive-pack` (and upload-pack) and everything they started: hooks, shells, curl. */
  receivePack: Record<string, number>;
  /** Processes the server process started itself besides receive-pack: the daemon's git plumbing. */
  daemon: Record<string, number>;
}

export async function traceExecs<T>(fn: () => Promise<T>): Promise<{ result: T; execs: ExecTrace | null }> {
  const out = join(tempDir('strace-'), 'trace.txt');
  const { spawn } = await import('node:child_process');
  const st = spawn('strace', ['-f', '-qq', '-e', 'trace=execve,clone,clone3,fork,vfork', '-o', out, '-p', String(process.pid)], { stdio: 'ignore' });
  trackChild(st);
  let attached = false;
  const exited = new Promise<void>((resolve) => st.once('exit', () => resolve()));
  st.once('error', () => {});
  for (let i = 0; i < 50 && st.exitCode === null; i++) {
    if (/^TracerPid:\s+[1-9]/m.test(readFileSync('/proc/self/status', 'utf8'))) {
      attached = true;
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  let result: T;
  try {
    result = await fn();
  } finally {
    if (st.exitCode === null) st.kill('SIGINT');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  }
  let text: string;
  try {
    text = readFileSync(out, 'utf8');
  } catch {
    return { result, execs: null };
  }
  if (!attached) return { result, execs: null };
  const parent = new Map<number, number>();
  const label = new Map<number, string>();
  const execs: Array<{ pid: number; prog: string }> = [];
  for (const line of text.split('\n')) {
    const pidM = /^(\d+)\s+(.*)$/.exec(line);
    if (!pidM) continue;
    const pid = Number(pidM[1]);
    const rest = pidM[2]!;
    const fork = /(?:clone3?|v?fork)\b.*= (\d+)$/.exec(rest);
    if (fork && !rest.startsWith('execve')) {
      parent.set(Number(fork[1]), pid);
      continue;
    }
    const ex = /^execve\("([^"]+)", \["([^"]*)"(?:, "([^"]*)")?/.exec(rest);
    if (!ex || / = -1 /.test(rest)) continue;
    const prog = ex[1]!.split('/').pop()!;
    const name = prog === 'git' && ex[3] ? `git ${ex[3]}` : prog;
    label.set(pid, name);
    execs.push({ pid, prog: name });
  }
  const trace: ExecTrace = { client: {}, receivePack: {}, daemon: {} };
  for (const e of execs) {
    let side: keyof ExecTrace = 'daemon';
    for (let p: number | undefined = e.pid, hops = 0; p !== undefined && hops < 64; p = parent.get(p), hops++) {
      const l = label.get(p);
      if (l === 'git push') { side = 'client'; break; }
      if (l !== undefined && /^git[ -](receive|upload)-pack$/.test(l)) { side = 'receivePack'; break; }
    }
    trace[side][e.prog] = (trace[side][e.prog] ?? 0) + 1;
  }
  return { result, execs: trace };
}

// ------------------------------------------------------------------ the measurement

export interface PushBenchResult {
  size: string;
  files: number;
  iterations: number;
  /** How the daemon was warmed: parsed on worker threads, or not at all (the first push is cold). */
  prewarm: { ms: number; workers: number; entries: number; source: 'workers' | 'none' };
  firstPushMs: number;
  /** True when the first push ran on an empty cache (no prewarm). */
  firstPushCold: boolean;
  /** A cache.db for measurement (4) on this repository: a snapshot taken right after the prewarm, else a copy taken after the run. */
  cacheDb: string | null;
  /** Daemon pre-receive handler (engine + audit write), ms. */
  hook: { p50: number; p95: number; samples: number[] };
  /** Audit push row timings.total (engine for the whole push), ms. */
  auditPush: { p50: number; p95: number };
  /** Audit ref row timings.total (engine for the ref), ms. */
  auditRef: { p50: number; p95: number };
  /** Median ms per rule, from the ref rows' rule outcomes. */
  rules: Record<string, number>;
  /** Median ms per phase from the audit rows' timings (setup, refs, commits, total). */
  phases: Record<string, number>;
  updateHookMs: number;
  postReceiveHookMs: number;
  gateWall: { p50: number; p95: number; samples: number[] };
  baseWall: { p50: number; p95: number; samples: number[] };
  ratio: number;
  errors: number;
  profile: SpawnProfile;
}

export interface PushBenchOptions {
  strace: boolean;
  log: (s: string) => void;
  /** Prewarm the daemon's cache on all cores; false: the first push is a cold one. */
  prewarm: boolean;
  /** Stop alternating after this long (at least 3 pairs run). */
  budgetMs: number;
  /** Keep a copy of the daemon's cache.db for a later measurement (restart scenario). */
  saveCache: boolean;
}

export async function pushBench(size: string, gen: GeneratedRepo, iterations: number, opts: PushBenchOptions): Promise<PushBenchResult> {
  const { log } = opts;
  const agent = 'bench-agent';
  const gate = await startGate(gen, agent);
  const base = await startBaseline(gen);
  let result: PushBenchResult | undefined;
  let snapshot: string | null = null;
  try {
    let pre: PushBenchResult['prewarm'] = { ms: 0, workers: 0, entries: 0, source: 'none' };
    if (opts.prewarm) {
      pre = { ...(await prewarm(daemonCache(gate.srv), gen)), source: 'workers' };
      log(`  [${size}] daemon cache prewarmed: ${pre.entries} entries in ${Math.round(pre.ms)} ms on ${pre.workers} worker(s)`);
      // The warm cache as a restarted daemon would find it on disk, for measurement (4).
      if (opts.saveCache) {
        const to = join(tempDir('cache-'), 'cache.db');
        if (snapshotCache(gate.data, to)) snapshot = to;
      }
    }
    const client = await agentRepo(gen, 'agent-');
    const rng = new Rng(42);
    // Warm-up: the first push creates the branch and loads everything lazily loaded.
    const warm = await makeEdits(client, 'agent/warm', gen.main, gen.srcFiles, 1, rng, 'warm');
    const first = await pushOnce(client, gate.url, warm[0]!, 'refs/heads/agent/warm', true);
    if (!first.ok) throw new Error(`warm-up push to patchgate failed: ${first.stderr}`);
    const firstBase = await pushOnce(client, base.url, warm[0]!, 'refs/heads/agent/warm', false);
    if (!firstBase.ok) throw new Error(`warm-up push to the baseline failed: ${firstBase.stderr}`);
    log(`  [${size}] first push ${opts.prewarm ? 'after prewarm' : 'on a cold daemon (empty cache)'}: ${Math.round(first.ms)} ms (baseline ${Math.round(firstBase.ms)} ms)`);

    const commits = await makeEdits(client, 'agent/bench', gen.main, gen.srcFiles, iterations + 1, rng, 'bench');
    const ref = 'refs/heads/agent/bench';
    const gateWall: number[] = [];
    const baseWall: number[] = [];
    let errors = 0;
    gate.hookMs.preReceive.length = 0;
    gate.hookMs.update.length = 0;
    gate.hookMs.postReceive.length = 0;
    const deadline = nowMs() + opts.budgetMs;
    let done = 0;
    for (let i = 0; i < iterations; i++) {
      if (i >= 3 && nowMs() > deadline) {
        log(`  [${size}] time budget of ${Math.round(opts.budgetMs / 1000)} s spent after ${i} of ${iterations} pairs; stopping there`);
        break;
      }
      done++;
      const order = i % 2 === 0 ? ['A', 'B'] : ['B', 'A'];
      for (const who of order) {
        const r = who === 'A' ? await pushOnce(client, gate.url, commits[i]!, ref, true) : await pushOnce(client, base.url, commits[i]!, ref, false);
        if (!r.ok) {
          errors++;
          log(`  [${size}] push ${i} to ${who === 'A' ? 'patchgate' : 'baseline'} failed: ${r.stderr.split('\n').slice(-4).join(' | ')}`);
        }
        (who === 'A' ? gateWall : baseWall).push(r.ms);
      }
    }
    const hook = [...gate.hookMs.preReceive];
    const updateHookMs = median(gate.hookMs.update);
    const postReceiveHookMs = median(gate.hookMs.postReceive);

    // Server-side figures from the audit log: the push rows and ref rows of the timed pushes.
    const timed = new Set(commits.slice(0, done));
    const refRows = gate.srv.audit.query({ kind: 'ref', actor: agent, limit: 10_000 }).filter((r) => r.new !== null && timed.has(r.new));
    const pushIds = new Set(refRows.map((r) => r.pushId));
    const pushRows = gate.srv.audit.query({ kind: 'push', actor: agent, limit: 10_000 }).filter((r) => pushIds.has(r.pushId));
    const tot = (t: unknown): number => Number((t as { total?: number } | null)?.total ?? Number.NaN);
    const refTotals = refRows.map((r) => tot(r.timings));
    const pushTotals = pushRows.map((r) => tot(r.timings));
    const phaseSamples = new Map<string, number[]>();
    for (const t of [...pushRows.map((r) => r.timings), ...refRows.map((r) => ({ commits: (r.timings as Record<string, number> | null)?.commits }))]) {
      for (const [k, v] of Object.entries((t as Record<string, number | undefined> | null) ?? {})) {
        if (typeof v !== 'number') continue;
        if (!phaseSamples.has(k)) phaseSamples.set(k, []);
        phaseSamples.get(k)!.push(v);
      }
    }
    const perRule = new Map<string, number[]>();
    for (const r of refRows) {
      for (const o of (r.rules as Array<{ rule: string; ms: number }> | null) ?? []) {
        if (!perRule.has(o.rule)) perRule.set(o.rule, []);
        perRule.get(o.rule)!.push(o.ms);
      }
    }

    // One more push, profiled: which processes does a push start?
    const last = commits[done]!;
    const traced: { execs: ExecTrace | null } = { execs: null };
    const counted = await countSpawns(async () => {
      if (!opts.strace) return pushOnce(client, gate.url, last, ref, true);
      const t = await traceExecs(() => pushOnce(client, gate.url, last, ref, true));
      traced.execs = t.execs;
      return t.result;
    });
    const serverExecs = traced.execs;
    if (serverExecs) log(`  [${size}] processes started by one push: ${JSON.stringify(serverExecs)}`);
    log(`  [${size}] git processes the server process spawned for one push: ${JSON.stringify(counted.spawns)}`);

    const ratio = median(gateWall) / median(baseWall);
    result = {
      size, files: gen.files, iterations: done, prewarm: pre, firstPushMs: first.ms, firstPushCold: !opts.prewarm, cacheDb: null,
      hook: { p50: median(hook), p95: percentile(hook, 95), samples: hook },
      auditPush: { p50: median(pushTotals), p95: percentile(pushTotals, 95) },
      auditRef: { p50: median(refTotals), p95: percentile(refTotals, 95) },
      rules: Object.fromEntries([...perRule].map(([k, v]) => [k, median(v)])),
      phases: Object.fromEntries([...phaseSamples].map(([k, v]) => [k, median(v)])),
      updateHookMs, postReceiveHookMs,
      gateWall: { p50: median(gateWall), p95: percentile(gateWall, 95), samples: gateWall },
      baseWall: { p50: median(baseWall), p95: percentile(baseWall, 95), samples: baseWall },
      ratio, errors,
      profile: { daemonSpawns: counted.spawns, serverExecs },
    };
  } finally {
    await base.close();
    await gate.close();
    if (opts.saveCache && result) {
      if (snapshot) result.cacheDb = snapshot;
      else if (existsSync(join(gate.data, 'cache.db'))) {
        const keep = join(tempDir('cache-'), 'cache.db');
        copyFileSync(join(gate.data, 'cache.db'), keep);
        result.cacheDb = keep;
      }
    }
  }
  return result!;
}
