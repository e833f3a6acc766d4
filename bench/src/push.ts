// Measurements (1) and (2): one-file src/ pushes over HTTP to a warm patchgate server and to
// plain node-git-server on a copy of the same repository whose pre-receive hook only exits 0,
// alternated A,B,B,A... patchgate runs as a child process (`node dist/cli.js serve`), the way it
// runs in production: the bench process holds hundreds of MB (generated repository data, the
// prewarm), and spawning a process costs more the bigger its parent is, so an in-process gate
// would make every git process its daemon starts look slower than in production. Its figures
// come from its audit log. Also profiles one extra push with strace: every process the push
// starts, on the client, the receive-pack side and in the daemon.

import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { AuditStore } from '../../dist/audit/store.js';
import { TokenStore } from '../../dist/audit/tokens.js';
import { ContentCache, PersistentCache } from '../../dist/cache/content-cache.js';
import { createRepo } from '../../dist/server/repos.js';
import { makeEdits, type GeneratedRepo } from './gen.js';
import { git, median, memOf, nowMs, percentile, Rng, run, startNodeChild, startServeChild, stopServeChild, tempDir, statFields, trackChild, waitQuiet } from './util.js';

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

/** `git push URL SHA:REF` from a client repository; ok = exit 0 (and ACCEPT when `gate`). Killed after `timeoutMs`. */
export async function pushOnce(cwd: string, url: string, sha: string, ref: string, gate: boolean, timeoutMs = 600_000): Promise<PushRun> {
  const r = await run('git', ['push', '--no-verify', url, `${sha}:${ref}`], { cwd, timeoutMs });
  const ok = r.code === 0 && (!gate || /patchgate: ACCEPT/.test(r.stderr));
  return { ms: r.ms, ok, code: r.code, stderr: r.stderr };
}

// ------------------------------------------------------------------ servers

export interface Baseline {
  url: string;
  /** The baseline server's process (for memory and strace). */
  pid: number | null;
  close(): Promise<void>;
}

const BASELINE_JS = fileURLToPath(new URL('./baseline-server.js', import.meta.url));

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
  // In a process of its own, as patchgate's server is: see baseline-server.ts.
  const { child, port } = await startNodeChild([BASELINE_JS, root], /port (\d+)/, 'baseline server');
  return {
    url: `http://127.0.0.1:${port}/bench.git`,
    pid: child.pid ?? null,
    close: () => stopServeChild(child, 10_000),
  };
}

/**
 * A data folder for a child patchgate server: repository `bench` seeded with the generated
 * repository, a token for the agent (its secret is returned) and an admin token, so that serve
 * finds tokens and prints no first-start secret. Written before the server starts, as
 * measurement (4) does.
 */
export async function prepareGateData(gen: GeneratedRepo, data: string, agentName: string): Promise<string> {
  const repoDir = await createRepo(data, 'bench');
  await seedBare(gen, repoDir);
  const store = AuditStore.open(join(data, 'patchgate.db'));
  try {
    const tokens = new TokenStore(store);
    const secret = tokens.create(agentName, 'agent', { repos: 'bench' });
    tokens.create('admin', 'admin');
    return secret;
  } finally {
    store.close();
  }
}

export interface Gate {
  child: ChildProcess;
  pid: number;
  url: string;
}

/** patchgate serve on a prepared data folder, as a child process (long hook timeout: a cold first push may take minutes). */
export async function startGate(data: string, agentName: string, secret: string, env: Record<string, string> = {}): Promise<Gate> {
  const { child, port } = await startServeChild(data, 900, env);
  return { child, pid: child.pid!, url: `http://${agentName}:${secret}@127.0.0.1:${port}/bench.git` };
}

/**
 * Waits until the gate's /healthz no longer says `warming` (its start-up warm-up is done), at
 * most `maxMs`; returns the time waited. The timed pushes of (1) and (2) are of a warm daemon:
 * pushes during a warm-up are judged first, but the warm-up's work between them still shares
 * the machine with both servers.
 */
export async function waitWarmed(gateUrl: string, maxMs = 120_000): Promise<number> {
  const u = new URL(gateUrl);
  const health = `http://${u.host}/healthz`;
  const t0 = nowMs();
  while (nowMs() - t0 < maxMs) {
    const body = await fetch(health).then((r) => r.text(), () => '');
    if (body.startsWith('ok') && !body.includes('warming')) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return nowMs() - t0;
}

/**
 * Parse every src/ file of main on all cores with the real contractOf and write the cache
 * entries to `dbPath` (the data folder's cache.db) before the server starts: what a daemon that
 * has seen this tree before finds on disk. Entries with `mem:` keys (derived per tree) stay in
 * memory in a daemon and are not written; the daemon rebuilds them from the blob rows.
 */
export async function prewarm(dbPath: string, gen: GeneratedRepo): Promise<{ ms: number; workers: number; entries: number; persisted: number }> {
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
  const disk = new PersistentCache(dbPath);
  const cache = new ContentCache(disk);
  let entries = 0;
  let persisted = 0;
  try {
    for (const list of results) for (const [k, v] of list) {
      cache.set(k, v);
      entries++;
      if (!k.startsWith('mem:')) persisted++;
    }
  } finally {
    disk.close();
  }
  return { ms: nowMs() - t0, workers, entries, persisted };
}

/** A consistent copy of a data folder's cache.db (WAL included), or false when there is no such file. */
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
  /** Every exec during one push, by side and program name (strace on the bench and the server process); null when strace is off or cannot attach. */
  serverExecs: ExecTrace | null;
}

/** Processes started while `fn` ran, by side, from `strace -f` on the given processes (null if strace cannot attach). */
export interface ExecTrace {
  /** The bench's `git push` and everything it started. */
  client: Record<string, number>;
  /** node-git-server's `git receive-pack` (and upload-pack) and everything they started: hooks, shells, curl. */
  receivePack: Record<string, number>;
  /** Processes the server process started itself besides receive-pack: the daemon's git plumbing. */
  daemon: Record<string, number>;
}

/** True when every one of `pids` has a tracer attached (TracerPid in /proc/PID/status). */
function traced(pids: number[]): boolean {
  return pids.every((pid) => {
    try {
      return /^TracerPid:\s+[1-9]/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
    } catch {
      return false;
    }
  });
}

/**
 * `git SUBCOMMAND` from a git argv (global options such as `--git-dir=...`, `-C DIR`, `-c K=V`
 * skipped, so no temp path ends up in a label); `git cat-file` keeps its mode (`--batch-command`).
 */
function gitLabel(argv: string[]): string {
  let i = 1;
  while (i < argv.length && argv[i]!.startsWith('-')) i += argv[i] === '-C' || argv[i] === '-c' ? 2 : 1;
  const sub = argv[i];
  if (sub === undefined) return 'git';
  return sub === 'cat-file' && argv[i + 1] ? `git cat-file ${argv[i + 1]}` : `git ${sub}`;
}

/** Run `fn` under `strace -f -p PID...` (the bench process for the client side, the server child for the rest) and sort its execs by side. */
/** Live child processes of `pid` (from /proc). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    if (Number(statFields(p)?.[1]) === pid) out.push(Number(p)); // the parent (field 4); gone: skipped
  }
  return out;
}

export async function traceExecs<T>(pids: number[], fn: () => Promise<T>): Promise<{ result: T; execs: ExecTrace | null }> {
  const out = join(tempDir('strace-'), 'trace.txt');
  const { spawn } = await import('node:child_process');
  const st = spawn('strace', ['-f', '-qq', '-s', '256', '-e', 'trace=execve,clone,clone3,fork,vfork', '-o', out, ...pids.flatMap((p) => ['-p', String(p)])], { stdio: 'ignore' });
  trackChild(st);
  let attached = false;
  const exited = new Promise<void>((resolve) => st.once('exit', () => resolve()));
  st.once('error', () => {});
  for (let i = 0; i < 50 && st.exitCode === null; i++) {
    if (traced(pids)) {
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
    const ex = /^execve\("([^"]+)", \[(.*?)\]/.exec(rest);
    if (!ex || / = -1 /.test(rest)) continue;
    const prog = ex[1]!.split('/').pop()!;
    const name = prog === 'git' ? gitLabel([...ex[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!)) : prog;
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
  /** How the daemon's cache.db was filled before it started: parsed on worker threads, or not at all (the first push is cold). */
  prewarm: { ms: number; workers: number; entries: number; persisted: number; source: 'workers' | 'none' };
  firstPushMs: number;
  /** True when the first push ran on an empty cache (no prewarm). */
  firstPushCold: boolean;
  /** A cache.db for measurement (4) on this repository: a snapshot taken right after the prewarm, else a copy taken after the run. */
  cacheDb: string | null;
  /** Audit push row timings.total (engine for the whole push), ms. */
  auditPush: { p50: number; p95: number };
  /** Audit ref row timings.total (engine for the ref), ms. */
  auditRef: { p50: number; p95: number };
  /** Median ms per rule, from the ref rows' rule outcomes. */
  rules: Record<string, number>;
  /** Median ms per phase from the audit rows' timings (setup, refs, commits, total). */
  phases: Record<string, number>;
  gateWall: { p50: number; p95: number; samples: number[] };
  baseWall: { p50: number; p95: number; samples: number[] };
  ratio: number;
  errors: number;
  /** The server child's memory after the pushes (MB, /proc/PID/status). */
  daemonMem: { rssMB: number; vmHwmMB: number };
  profile: SpawnProfile;
}

export interface PushBenchOptions {
  strace: boolean;
  log: (s: string) => void;
  /** Prewarm the daemon's cache.db on all cores; false: the first push is a cold one. */
  prewarm: boolean;
  /** Stop alternating after this long (at least 3 pairs run). */
  budgetMs: number;
  /** Keep a copy of the daemon's cache.db for a later measurement (restart scenario). */
  saveCache: boolean;
  /** Extra environment of the gate's serve process (PATCHGATE_PUSH_PATH_OFF: bench/src/mechanisms.ts). */
  gateEnv?: Record<string, string>;
}

/** Server-side figures from the audit log: the push rows and ref rows of the timed pushes. */
function auditFigures(dbPath: string, agent: string, timed: Set<string>): Pick<PushBenchResult, 'auditPush' | 'auditRef' | 'rules' | 'phases'> {
  const audit = AuditStore.open(dbPath);
  try {
    const refRows = audit.query({ kind: 'ref', actor: agent, limit: 10_000 }).filter((r) => r.new !== null && timed.has(r.new));
    const pushIds = new Set(refRows.map((r) => r.pushId));
    const pushRows = audit.query({ kind: 'push', actor: agent, limit: 10_000 }).filter((r) => pushIds.has(r.pushId));
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
    return {
      auditPush: { p50: median(pushTotals), p95: percentile(pushTotals, 95) },
      auditRef: { p50: median(refTotals), p95: percentile(refTotals, 95) },
      rules: Object.fromEntries([...perRule].map(([k, v]) => [k, median(v)])),
      phases: Object.fromEntries([...phaseSamples].map(([k, v]) => [k, median(v)])),
    };
  } finally {
    audit.close();
  }
}

export async function pushBench(size: string, gen: GeneratedRepo, iterations: number, opts: PushBenchOptions): Promise<PushBenchResult> {
  const { log } = opts;
  const agent = 'bench-agent';
  // A short data folder in the system temp folder (the hook endpoint lives in it).
  const data = tempDir('pgb-', tmpdir());
  let gate: Gate | null = null;
  let base: Baseline | null = null;
  let result: PushBenchResult | undefined;
  let snapshot: string | null = null;
  try {
    const secret = await prepareGateData(gen, data, agent);
    let pre: PushBenchResult['prewarm'] = { ms: 0, workers: 0, entries: 0, persisted: 0, source: 'none' };
    if (opts.prewarm) {
      pre = { ...(await prewarm(join(data, 'cache.db'), gen)), source: 'workers' };
      log(`  [${size}] daemon cache.db prewarmed: ${pre.entries} entries (${pre.persisted} written to cache.db) in ${Math.round(pre.ms)} ms on ${pre.workers} worker(s)`);
      // The warm cache as a restarted daemon would find it on disk, for measurement (4).
      if (opts.saveCache) {
        const to = join(tempDir('cache-'), 'cache.db');
        if (snapshotCache(data, to)) snapshot = to;
      }
    }
    gate = await startGate(data, agent, secret, opts.gateEnv);
    base = await startBaseline(gen);
    const client = await agentRepo(gen, 'agent-');
    const rng = new Rng(42);
    // Warm-up: the first push creates the branch and loads everything lazily loaded.
    const warm = await makeEdits(client, 'agent/warm', gen.main, gen.srcFiles, 1, rng, 'warm');
    const first = await pushOnce(client, gate.url, warm[0]!, 'refs/heads/agent/warm', true);
    if (!first.ok) throw new Error(`warm-up push to patchgate failed: ${first.stderr}`);
    const firstBase = await pushOnce(client, base.url, warm[0]!, 'refs/heads/agent/warm', false);
    if (!firstBase.ok) throw new Error(`warm-up push to the baseline failed: ${firstBase.stderr}`);
    log(`  [${size}] first push ${opts.prewarm ? 'on a new daemon with the prewarmed cache.db' : 'on a cold daemon (empty cache)'}: ${Math.round(first.ms)} ms (baseline ${Math.round(firstBase.ms)} ms); daemon RSS ${Math.round(memOf(gate.pid)?.rss ?? Number.NaN)} MB`);
    const warmedMs = await waitWarmed(gate.url);
    if (warmedMs > 250) log(`  [${size}] waited ${Math.round(warmedMs)} ms for the daemon's start-up warm-up to end before the timed pushes`);
    const quietMs = await waitQuiet(gate.pid);
    log(`  [${size}] waited ${Math.round(quietMs)} ms more for the daemon to go quiet (its parsers' JIT warm-up) before the timed pushes`);

    const commits = await makeEdits(client, 'agent/bench', gen.main, gen.srcFiles, iterations + 1, rng, 'bench');
    const ref = 'refs/heads/agent/bench';
    const gateWall: number[] = [];
    const baseWall: number[] = [];
    let errors = 0;
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

    // One more push, profiled: which processes does a push start? strace follows the bench
    // (the client's git push) and the server child (receive-pack and its hooks, the daemon's git).
    const last = commits[done]!;
    let serverExecs: ExecTrace | null = null;
    if (opts.strace) {
      // The server's spawn helper (src/git/spawner.ts) starts git for it: traced as the server's side.
      const t = await traceExecs([process.pid, gate.pid, ...childrenOf(gate.pid)], () => pushOnce(client, gate!.url, last, ref, true));
      serverExecs = t.execs;
    } else {
      await pushOnce(client, gate.url, last, ref, true);
    }
    if (serverExecs) {
      log(`  [${size}] processes started by one push: ${JSON.stringify(serverExecs)}`);
      log(`  [${size}] git processes the server process spawned for one push: ${JSON.stringify(serverExecs.daemon)}`);
    } else {
      log(`  [${size}] git processes the server process spawned for one push: not available (${opts.strace ? 'strace could not attach to the server child' : '--no-strace'})`);
    }

    const mem = memOf(gate.pid);
    const daemonMem = { rssMB: mem?.rss ?? Number.NaN, vmHwmMB: mem?.hwm ?? Number.NaN };
    log(`  [${size}] patchgate server (child pid ${gate.pid}): VmHWM ${Math.round(daemonMem.vmHwmMB)} MB, RSS ${Math.round(daemonMem.rssMB)} MB after the pushes`);

    // Stop the server the way an operator does (SIGTERM drains in-flight pushes), then read its audit log.
    await stopServeChild(gate.child);
    const figures = auditFigures(join(data, 'patchgate.db'), agent, new Set(commits.slice(0, done)));

    const ratio = median(gateWall) / median(baseWall);
    result = {
      size, files: gen.files, iterations: done, prewarm: pre, firstPushMs: first.ms, firstPushCold: !opts.prewarm, cacheDb: null,
      ...figures,
      gateWall: { p50: median(gateWall), p95: percentile(gateWall, 95), samples: gateWall },
      baseWall: { p50: median(baseWall), p95: percentile(baseWall, 95), samples: baseWall },
      ratio, errors, daemonMem,
      profile: { serverExecs },
    };
  } finally {
    if (base) await base.close();
    if (gate) await stopServeChild(gate.child);
    if (opts.saveCache && result) {
      if (snapshot) result.cacheDb = snapshot;
      else {
        const keep = join(tempDir('cache-'), 'cache.db');
        if (snapshotCache(data, keep)) result.cacheDb = keep;
      }
    }
    // The data folder holds a copy of the repository's packs: not needed past this measurement.
    rmSync(data, { recursive: true, force: true });
  }
  return result!;
}
