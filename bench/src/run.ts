// `npm run bench`: patchgate's performance benchmark (issues 5 and 24). Generates repositories,
// runs the measurements, prints one table with PASS/MISS per target (issue 24's table) and writes
// bench/results.json. It is a benchmark, not a test: nothing fails on a MISS. See
// docs/performance.md for what each figure means.
//
//   node bench/dist/run.js [--sizes 1k,10k,50k] [--quick] [--only 1,2,3,4,5,6,7,8,9] [--iterations N]
//                          [--agents N] [--pushes N] [--audit-rows N] [--digest-runs N]
//                          [--concurrency-size S] [--digest-size S] [--budget SECONDS] [--no-strace] [--keep]
//                          [--mechanisms] [--results FILE]

import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { auditBench, type AuditBenchResult } from './audit.js';
import { coldPushBench, HOOK_LIMIT_MS, type ColdPushResult } from './cold.js';
import { concurrencyBench, type ConcurrencyResult } from './concurrency.js';
import { digestBench, type DigestBenchResult } from './digest.js';
import { generateRepo, type GeneratedRepo } from './gen.js';
import { ghesBench, type GhesBenchResult } from './ghes.js';
import { pushBench, type PushBenchResult } from './push.js';
import { mechanismsBench, mechanismsTable, type MechanismsResult } from './mechanisms.js';
import { corpusBundle, realHistoryBench, type RealHistoryResult } from './real-history.js';
import { upstreamBench, type UpstreamBenchResult } from './upstream.js';
import { cleanup, fmtBytes, fmtMs, keepDir, median, nowMs, parseSize, REPO_TOP, round, run, tempDir } from './util.js';

interface Flags {
  sizes: number[];
  quick: boolean;
  only: Set<number>;
  iterations: number | null;
  agents: number;
  pushes: number;
  auditRows: number;
  digestRuns: number;
  concurrencySize: number | null;
  digestSize: number | null;
  strace: boolean;
  keep: boolean;
  /** Seconds each push measurement may run before it stops early. */
  budgetS: number;
  /** (2) again with each push-path mechanism off (./mechanisms.ts). */
  mechanisms: boolean;
  /** Where results.json goes (default bench/results.json). */
  results: string | null;
}

const USAGE = `usage: node bench/dist/run.js [--sizes 1k,10k,50k] [--quick] [--only 1,2,3,4,5,6,7,8,9] [--iterations N]
  [--agents N] [--pushes N] [--audit-rows N] [--digest-runs N] [--concurrency-size S] [--digest-size S]
  [--budget SECONDS] [--no-strace] [--keep] [--mechanisms] [--results FILE]
  --mechanisms: measurement (2) also with each push-path mechanism off (the spare receive-pack,
    the advertisement made ahead, the pack read before the hook, the judgement ahead), then all
    on again; prints the ratio off against all on and whether the difference is outside the noise`;

export function label(n: number): string {
  return n % 1000 === 0 ? `${n / 1000}k` : String(n);
}

/**
 * The median of each pair's difference (gate minus plain, the two pushes of one commit, run back
 * to back in alternating order): drift in the machine's speed between pairs cancels out, so it
 * moves less from run to run than the difference of the two medians. Printed beside the ratio.
 */
function pairedMargin(p: PushBenchResult): number {
  const g = p.gateWall.samples;
  const b = p.baseWall.samples;
  const d = g.slice(0, b.length).map((x, i) => x - b[i]!).sort((x, y) => x - y);
  return d.length ? d[Math.floor(d.length / 2)]! : Number.NaN;
}

function parseFlags(argv: string[]): Flags {
  const quick = argv.includes('--quick');
  const f: Flags = {
    sizes: quick ? [1000] : [1000, 10_000, 50_000], quick, only: new Set([1, 2, 3, 4, 5, 6, 8, 9]), iterations: null,
    agents: quick ? 8 : 32, pushes: quick ? 3 : 10, auditRows: quick ? 100_000 : 1_000_000, digestRuns: quick ? 1 : 3,
    concurrencySize: null, digestSize: null, strace: true, keep: false, budgetS: quick ? 120 : 300, mechanisms: false, results: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const val = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    const int = (): number => {
      const n = Number(val());
      if (!Number.isInteger(n) || n < 1) throw new Error(`${a}: a positive integer please`);
      return n;
    };
    switch (a) {
      case '--quick': break;
      case '--sizes': f.sizes = val().split(',').filter(Boolean).map(parseSize); break;
      case '--only': f.only = new Set(val().split(',').map(Number)); break;
      case '--iterations': f.iterations = int(); break;
      case '--agents': f.agents = int(); break;
      case '--pushes': f.pushes = int(); break;
      case '--audit-rows': f.auditRows = int(); break;
      case '--digest-runs': f.digestRuns = int(); break;
      case '--concurrency-size': f.concurrencySize = parseSize(val()); break;
      case '--digest-size': f.digestSize = parseSize(val()); break;
      case '--no-strace': f.strace = false; break;
      case '--keep': f.keep = true; break;
      case '--mechanisms': f.mechanisms = true; break;
      case '--results': f.results = val(); break;
      case '--budget': f.budgetS = int(); break;
      case '--help': case '-h': process.stdout.write(USAGE + '\n'); process.exit(0); break;
      default: throw new Error(`unknown option ${a}\n${USAGE}`);
    }
  }
  return f;
}

/**
 * Push iterations (A,B pairs) per size: 40 on every size. A 50k push pair takes about 250 ms;
 * 20 pairs put (2) on either side of 1.25 from one run to the next on this machine, and 10
 * gave medians of ten.
 */
function iterationsFor(size: number, f: Flags): number {
  if (f.iterations) return f.iterations;
  if (f.quick) return 8;
  return 40;
}

const log = (s: string) => process.stderr.write(s + '\n');

interface Target {
  id: string;
  text: string;
  figure: string;
  pass: boolean | null;
}

async function calibrate(): Promise<{ gitSpawnMs: number; nodeStartMs: number }> {
  const g: number[] = [];
  for (let i = 0; i < 10; i++) g.push((await run('git', ['--version'])).ms);
  const n: number[] = [];
  for (let i = 0; i < 3; i++) n.push((await run(process.execPath, ['-e', '0'])).ms);
  return { gitSpawnMs: median(g), nodeStartMs: median(n) };
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  // The code being measured: the commit, and the files changed on top of it when the run began.
  const commit = {
    head: (await run('git', ['rev-parse', 'HEAD'], { cwd: REPO_TOP })).stdout.trim() || null,
    dirty: (await run('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO_TOP })).stdout.split('\n').filter(Boolean).map((l) => l.slice(3)),
  };
  const began = nowMs();
  const loads: number[] = [];
  const loadTimer = setInterval(() => loads.push(loadavg()[0]!), 2000);
  loadTimer.unref();
  const startLoad = loadavg();
  const calStart = await calibrate();
  log(`patchgate bench at ${commit.head?.slice(0, 12) ?? '(no git)'}${commit.dirty.length ? ` + ${commit.dirty.length} changed file(s)` : ''}: sizes ${flags.sizes.map(label).join(',')}, measurements ${[...flags.only].join(',')}; load ${startLoad.map((x) => round(x, 2)).join(' ')} on ${availableParallelism()} cpu(s); git spawn ${round(calStart.gitSpawnMs, 1)} ms, node start ${Math.round(calStart.nodeStartMs)} ms`);

  const gens = new Map<number, GeneratedRepo>();
  const genRows: Array<{ size: string; files: number; srcFiles: number; mb: number; ms: number }> = [];
  const needs = new Set<number>();
  const concSize = flags.concurrencySize ?? (flags.sizes.includes(10_000) ? 10_000 : Math.max(...flags.sizes.filter((s) => s <= 10_000), Math.min(...flags.sizes)));
  const digestSize = flags.digestSize ?? Math.min(...flags.sizes);
  if (flags.only.has(1) || flags.only.has(2)) for (const s of flags.sizes) needs.add(s);
  if (flags.only.has(3)) needs.add(digestSize);
  if (flags.only.has(4) || flags.only.has(6) || flags.only.has(7)) needs.add(concSize);
  // (8): a never-seen repository's first push on a cold daemon, on the 10k and 50k sizes asked for.
  const coldSizes: number[] = flags.only.has(8) ? flags.sizes.filter((s) => s === 10_000 || s === 50_000) : [];
  for (const s of coldSizes) needs.add(s);
  const gen = async (size: number): Promise<GeneratedRepo> => {
    let g = gens.get(size);
    if (!g) {
      g = await generateRepo(tempDir(`gen-${label(size)}-`), size);
      gens.set(size, g);
      const mb = g.totalBytes / 1e6;
      genRows.push({ size: label(size), files: g.files, srcFiles: g.srcFiles.length, mb, ms: g.genMs });
      log(`  [${label(size)}] generated ${g.files} files (${round(mb, 1)} MB, ${g.srcFiles.length} under src/, ${g.commits} commits) in ${Math.round(g.genMs)} ms`);
    }
    return g;
  };

  const pushes: PushBenchResult[] = [];
  const mechanisms: MechanismsResult[] = [];
  const cacheDbs = new Map<number, string>();
  let digest: DigestBenchResult | null = null;
  let conc: ConcurrencyResult | null = null;
  let audit: AuditBenchResult | null = null;
  let ghes: GhesBenchResult | null = null;
  let upstreamFig: UpstreamBenchResult | null = null;
  const colds: ColdPushResult[] = [];

  for (const size of [...needs].sort((a, b) => a - b)) {
    const g = await gen(size);
    if ((flags.only.has(1) || flags.only.has(2)) && flags.sizes.includes(size)) {
      log(`(1,2) pushes on ${label(size)}: ${iterationsFor(size, flags)} alternated patchgate/baseline pairs (patchgate in a child process)`);
      const smallest = size === Math.min(...flags.sizes);
      const pushOpts = { strace: flags.strace, log, prewarm: !smallest, budgetMs: flags.budgetS * 1000, saveCache: flags.only.has(4) && size === concSize };
      const r = await pushBench(label(size), g, iterationsFor(size, flags), pushOpts);
      pushes.push(r);
      if (r.cacheDb) cacheDbs.set(size, r.cacheDb);
      if (flags.mechanisms && flags.only.has(2)) mechanisms.push(await mechanismsBench(label(size), g, iterationsFor(size, flags), pushOpts, r));
    }
    if (coldSizes.includes(size)) {
      log(`(8) never-seen ${label(size)} repository: first push on a cold daemon (empty cache.db, --hook-timeout 900, stopped after ${flags.budgetS} s)`);
      colds.push(await coldPushBench(label(size), g, { log, budgetMs: flags.budgetS * 1000 }));
    }
    if (flags.only.has(3) && size === digestSize) {
      log(`(3) cold contract digest on ${label(size)}: ${flags.digestRuns} run(s)`);
      digest = await digestBench(label(size), g, flags.digestRuns, log);
    }
    if (flags.only.has(4) && size === concSize) {
      log(`(4) ${flags.agents} agents x ${flags.pushes} pushes at once on ${label(size)} (server in a child process)`);
      conc = await concurrencyBench(label(size), g, flags.agents, flags.pushes, { log, cacheDb: cacheDbs.get(size) ?? null, budgetMs: flags.budgetS * 1000 });
    }
    if (flags.only.has(6) && size === concSize) {
      log(`(6) GHES shim on ${label(size)}: ${flags.quick ? 10 : 40} one-file pushes through git receive-pack, the shim and a warm daemon`);
      ghes = await ghesBench(label(size), g, flags.quick ? 10 : 40, log);
    }
    if (flags.only.has(7) && size === concSize) {
      log(`(7) repo create --upstream, then the first push that judges within the warm time, on ${label(size)}`);
      upstreamFig = await upstreamBench(label(size), g, log);
    }
    // Big repositories are not needed past their own measurements.
    if (!flags.keep && size !== concSize && size !== digestSize) gens.delete(size);
  }
  if (flags.only.has(5)) {
    log(`(5) audit queries on a ${flags.auditRows}-row log`);
    audit = await auditBench(flags.auditRows, log);
  }
  // (9) a real project's whole history (issue 47): the figures above come from generated trees.
  const reals: RealHistoryResult[] = [];
  if (flags.only.has(9)) {
    for (const project of ['requests']) {
      const bundle = corpusBundle(project);
      if (!bundle) {
        log(`(9) ../shared/corpus/${project}.bundle is not here: not run`);
        continue;
      }
      log(`(9) ${project}'s whole history: a person's first push through the gate and to plain node-git-server, then the agent's first push`);
      reals.push(await realHistoryBench(project, bundle, { log, budgetMs: flags.budgetS * 1000 }));
    }
  }

  const calEnd = await calibrate();
  clearInterval(loadTimer);
  const durationMs = nowMs() - began;

  // ------------------------------------------------------------------ targets and table
  const targets: Target[] = [];
  const rows: string[][] = [];
  const row = (...c: string[]) => rows.push(c);
  const verdict = (p: boolean | null) => (p === null ? 'n/a' : p ? 'PASS' : 'MISS');

  for (const g of genRows) row('gen', `repo ${g.size}`, `${g.files} files, ${round(g.mb, 1)} MB (${g.srcFiles} under src/), fast-import ${fmtMs(g.ms)}`, '', '');
  // Issue 24's targets. Each figure is a ratio or a median taken in this run.
  const P2 = 1.25; // (2) push through the gate / plain node-git-server, at every size judged
  const FLAT = 1.5; // contract rule median: largest size / smallest size
  const judged2 = new Set(['1k', '10k', '50k']);
  const p10 = pushes.find((p) => p.size === '10k');
  const pass1 = (p: PushBenchResult) => p.auditPush.p50 <= 15 && p.auditPush.p95 <= 40;
  for (const p of pushes) {
    const on10 = p.size === '10k';
    row('(1)', `hook eval ${p.size} (audit push timings)`, `p50 ${fmtMs(p.auditPush.p50)}, p95 ${fmtMs(p.auditPush.p95)} (n=${p.iterations})`, on10 ? 'p50<=15, p95<=40 ms' : '', on10 ? verdict(pass1(p)) : '');
    row('', `  per rule ${p.size} (median)`, Object.entries(p.rules).map(([k, v]) => `${k} ${v}`).join(', ') + ' ms', '', '');
    row('', `  phases ${p.size} (median)`, Object.entries(p.phases).map(([k, v]) => `${k} ${v}`).join(', ') + ' ms (setup = trusted tip + policy; commits = rev-list)', '', '');
    row('', `  push wall ${p.size}`, `patchgate p50 ${fmtMs(p.gateWall.p50)} p95 ${fmtMs(p.gateWall.p95)}; plain p50 ${fmtMs(p.baseWall.p50)} p95 ${fmtMs(p.baseWall.p95)}`, '', '');
    const judged = judged2.has(p.size);
    row('(2)', `push vs plain git ${p.size}`, `ratio ${round(p.ratio, 2)} (+${fmtMs(p.gateWall.p50 - p.baseWall.p50)}; paired +${fmtMs(pairedMargin(p))})`, judged ? `<= ${P2}` : '', judged ? verdict(p.ratio <= P2) : '');
    const how = p.prewarm.source === 'workers' ? `new daemon on a cache.db prewarmed in ${fmtMs(p.prewarm.ms)} on ${p.prewarm.workers} worker(s)` : 'on a cold daemon (empty cache)';
    row('', `  first push ${p.size}`, `${fmtMs(p.firstPushMs)} ${how}`, '', '');
    if (p.errors) row('', `  push errors ${p.size}`, String(p.errors), '', '');
  }
  targets.push({ id: '1', text: 'hook evaluation, one-file change, 10k: p50 <= 15 ms and p95 <= 40 ms (audit push timings.total)', figure: p10 ? `p50 ${round(p10.auditPush.p50)} ms, p95 ${round(p10.auditPush.p95)} ms` : 'not run', pass: p10 ? pass1(p10) : null });
  for (const sz of ['10k', '1k', '50k']) {
    const p = pushes.find((x) => x.size === sz);
    targets.push({ id: sz === '10k' ? '2' : `2@${sz}`, text: `git push through patchgate / plain node-git-server on ${sz} <= ${P2}`, figure: p ? `ratio ${round(p.ratio, 2)}` : 'not run', pass: p ? p.ratio <= P2 : null });
  }
  // "Flat with size": the contract rule's median at each size, largest / smallest.
  {
    const bySize = pushes.filter((p) => typeof p.rules['contract'] === 'number').sort((x, y) => x.files - y.files);
    const lo = bySize[0];
    const hi = bySize[bySize.length - 1];
    const ratio = bySize.length >= 2 ? hi!.rules['contract']! / Math.max(lo!.rules['contract']!, 1) : Number.NaN;
    const pass = bySize.length >= 2 ? ratio <= FLAT : null;
    const figure = bySize.length ? `${bySize.map((p) => `${p.size} ${p.rules['contract']} ms`).join(' / ')}${bySize.length >= 2 ? `: ${hi!.size} / ${lo!.size} = ${round(ratio, 2)}` : ' (one size: n/a)'}` : 'not run';
    row('', `contract rule median, ${bySize.map((p) => p.size).join(' / ') || '1k / 10k / 50k'}`, figure, `${bySize.length >= 2 ? hi!.size : 'largest'} <= ${FLAT} x ${bySize.length >= 2 ? lo!.size : 'smallest'}`, verdict(pass));
    targets.push({ id: 'flat', text: `contract rule median flat with size: largest size's median <= ${FLAT} x the smallest's (at least two sizes)`, figure, pass });
  }
  if (digest) {
    const d = digest;
    // Retired as a target (issue 47, item 8): typescript-estree stays the contract's parser; the
    // ratio is still printed, informational, beside the Python one.
    row('(3)', `cold digest TS ${d.size}`, `${round(d.ts.digestMBs, 2)} MB/s vs createSourceFile ${round(d.ts.floorMBs, 2)} MB/s: ratio ${round(d.ts.ratio, 2)} (${round(d.ts.mb, 1)} MB, ${d.ts.files} files)`, '(retired)', 'info');
    row('', `  cold digest Python ${d.size}`, `${round(d.py.digestMBs, 2)} MB/s vs tree-sitter parse ${round(d.py.floorMBs, 2)} MB/s: ratio ${round(d.py.ratio, 2)} (${round(d.py.mb, 1)} MB)`, '', '');
    row('', `  cold digest src/ ${d.size}`, `${round(d.all.digestMBs, 2)} MB/s (${round(d.all.mb, 1)} MB, ${d.all.files} files, median of ${d.runs})`, '', '');
  }
  if (conc) {
    const c = conc;
    // The floor is the same pushes, as many at once, to plain node-git-server in this run.
    const p99Ratio = c.p99 / c.floor.p99;
    const passP99 = p99Ratio <= P2;
    const pass4 = c.errors === 0 && c.lost === 0 && passP99 && c.vmHwmMB <= 300;
    row('(4)', `${c.agents}x${c.pushesPerAgent} pushes ${c.size}`, `${round(c.pushesPerSec, 2)} pushes/s, p50 ${fmtMs(c.p50)}, p99 ${fmtMs(c.p99)}, max ${fmtMs(c.max)}${c.pushes < c.planned ? ` (${c.pushes} of ${c.planned} made within the budget)` : ''}`, '', '');
    row('', `  same pushes, plain git`, `${round(c.floor.pushesPerSec, 2)} pushes/s, p50 ${fmtMs(c.floor.p50)}, p99 ${fmtMs(c.floor.p99)}, ${c.floor.errors} errors (node-git-server, hook exit 0: the floor here)`, '', '');
    row('', `  p99 gate / plain`, `${fmtMs(c.p99)} / ${fmtMs(c.floor.p99)} = ${round(p99Ratio, 2)}`, `<= ${P2}`, verdict(passP99));
    row('', `  errors / audit rows`, `${c.errors} errors; ${c.auditRefRows} ref rows for ${c.pushes} pushes, ${c.lost} lost, ${c.movedConfirmed} moved, chain ${c.chainIntact ? 'intact' : 'BROKEN'}`, '0 errors, 0 lost', verdict(c.errors === 0 && c.lost === 0));
    row('', `  daemon memory`, `VmHWM ${Math.round(c.vmHwmMB)} MB (after warm-up ${Math.round(c.rssAfterWarmMB)} MB, peak during pushes ${Math.round(c.peakRssPhaseMB)} MB)`, '<= 300 MB', verdict(c.vmHwmMB <= 300));
    row('', `  first push, new daemon ${c.size}`, `${fmtMs(c.coldFirstPushMs)} (${c.restart ? 'restart with the earlier cache.db' : 'empty cache'}; --hook-timeout ${c.hookTimeoutS}, default 30 s)`, '', '');
    targets.push({ id: '4', text: `${c.agents} agents x ${c.pushesPerAgent} pushes on ${c.size}: gate p99 / plain p99 (same run) <= ${P2}, daemon peak RSS <= 300 MB, 0 errors, 0 lost rows`, figure: `p99 ratio ${round(p99Ratio, 2)} (${round(c.p99 / 1000, 2)} s / ${round(c.floor.p99 / 1000, 2)} s), VmHWM ${Math.round(c.vmHwmMB)} MB, ${c.errors} errors, ${c.lost} lost`, pass: pass4 });
  } else targets.push({ id: '4', text: 'concurrent agents', figure: 'not run', pass: null });
  if (audit) {
    const a = audit;
    row('(5)', `audit log`, `${a.rows} rows, ${fmtBytes(a.dbBytes)}, filled in ${Math.round(a.fillMs / 1000)} s; verify() ${Math.round(a.verifyMs / 1000)} s`, '', '');
    row('', `  audit write rate`, `API 1 push/txn ${Math.round(a.apiRowsPerSec)} rows/s (1M: ${Math.round(a.apiProjectedMs / 1000)} s); API ${a.batch} pushes/txn ${Math.round(a.batchedRowsPerSec)} rows/s; direct ${Math.round(a.directRowsPerSec)} rows/s`, '', '');
    for (const q of a.queries) {
      const isTarget = q.name.startsWith('actor');
      row('', `  ${q.name}`, `median ${fmtMs(q.medianMs)} (first ${fmtMs(q.firstMs)}, ${q.rows} rows)`, isTarget ? '<= 50 ms' : '', isTarget ? verdict(q.medianMs <= 50) : '');
    }
    row('', `  CLI actor + range`, `${fmtMs(a.cliActorRangeMs)} (patchgate audit --json, node start-up included)`, '', '');
    const q = a.queries[0]!;
    targets.push({ id: '5', text: `audit query actor + time range on ${a.rows} rows <= 50 ms`, figure: `median ${round(q.medianMs, 2)} ms`, pass: q.medianMs <= 50 });
    // The audit page as ratios of one full walk of the log (verify()): bounded queries must not grow with it.
    row('', `  audit page (/)`, `table first page ${fmtMs(a.page.tableFirstMs)} (median ${fmtMs(a.page.tableMedianMs)}); charts ${fmtMs(a.page.chartsFirstMs)} (median ${fmtMs(a.page.chartsMedianMs)})`, 'table <= 0.01, charts <= 0.2 of verify()', verdict(a.page.tableMedianMs <= 0.01 * a.verifyMs && a.page.chartsMedianMs <= 0.2 * a.verifyMs));
    targets.push({ id: '5p', text: `audit page on ${a.rows} rows: first table page <= 0.01 and charts <= 0.2 of one verify() walk`, figure: `table ${round(a.page.tableMedianMs / a.verifyMs, 4)}, charts ${round(a.page.chartsMedianMs / a.verifyMs, 3)} of verify (${Math.round(a.verifyMs)} ms)`, pass: a.page.tableMedianMs <= 0.01 * a.verifyMs && a.page.chartsMedianMs <= 0.2 * a.verifyMs });
  } else targets.push({ id: '5', text: 'audit queries', figure: 'not run', pass: null });
  if (ghes) {
    const x = ghes;
    const ratio = x.wall.p99 / x.budgetMs;
    row('(6)', `GHES hook ${x.size} (${x.pushes} pushes)`, `push wall p50 ${fmtMs(x.wall.p50)} p99 ${fmtMs(x.wall.p99)} (max ${fmtMs(x.wall.max)}); judge p50 ${fmtMs(x.judge.p50)} p99 ${fmtMs(x.judge.p99)}; p99 / budget ${x.budgetMs} ms = ${round(ratio, 3)}; ${x.refused} refused`, 'p99/budget <= 0.5', verdict(ratio <= 0.5 && x.refused === 0));
    targets.push({ id: '6', text: `GHES shim: push p99 / ${x.budgetMs} ms budget <= 0.5, none refused`, figure: `ratio ${round(ratio, 3)}, ${x.refused} refused`, pass: ratio <= 0.5 && x.refused === 0 });
  } else targets.push({ id: '6', text: 'GHES hook budget', figure: 'not run', pass: null });
  if (upstreamFig) {
    const u = upstreamFig;
    const limitRatio = u.firstPushMs / 30_000;
    row('(7)', `upstream first push ${u.size}`, `create ${fmtMs(u.createMs)}; a push within warm time (${fmtMs(u.warmPushMs)}) ${fmtMs(u.toWarmPushMs)} after create (push ${u.pushesUntilWarm}); first push ${fmtMs(u.firstPushMs)} = x${round(u.ratio, 2)} warm`, 'first push / 30 s hook limit < 1', verdict(limitRatio < 1));
    targets.push({ id: '7', text: `first agent push right after repo create --upstream on ${u.size} / the 30 s hook time limit < 1`, figure: `ratio ${round(limitRatio, 2)}; ${Math.round(u.toWarmPushMs)} ms from create to a warm-time push`, pass: limitRatio < 1 });
  } else targets.push({ id: '7', text: 'first push after repo create --upstream', figure: 'not run', pass: null });
  // Never-seen repositories: the first push on a cold daemon, judged against the default 30 s hook limit.
  {
    const c10 = colds.find((c) => c.size === '10k');
    let n10: { ms: number; ok: boolean; how: string } | null = null;
    if (c10) n10 = { ms: c10.ms, ok: c10.ok, how: `(8) new data folder, empty cache.db, --hook-timeout ${c10.hookTimeoutS}${c10.timedOut ? '; stopped at the budget: a lower bound' : c10.ok ? '' : `; failed: ${c10.stderrTail}`}; daemon VmHWM ${Math.round(c10.vmHwmMB)} MB` };
    else if (conc && conc.size === '10k' && !conc.restart) n10 = { ms: conc.coldFirstPushMs, ok: true, how: `(4) first push on a new daemon, empty cache, --hook-timeout ${conc.hookTimeoutS}` };
    else if (p10 && p10.firstPushCold) n10 = { ms: p10.firstPushMs, ok: true, how: '(1,2) first push on a cold daemon (empty cache)' };
    else if (upstreamFig && upstreamFig.size === '10k') n10 = { ms: upstreamFig.firstPushMs, ok: true, how: '(7) first push right after repo create --upstream on a new daemon' };
    const r10 = n10 ? n10.ms / HOOK_LIMIT_MS : Number.NaN;
    const pass10 = n10 ? n10.ok && r10 < 1 : null;
    const fig10 = n10 ? `${fmtMs(n10.ms)} / 30 s = ${round(r10, 2)} (${n10.how})` : 'not run';
    row('(8)', 'never-seen 10k, first push, cold daemon', fig10, 'first push / 30 s hook limit < 1', verdict(pass10));
    targets.push({ id: '8@10k', text: 'never-seen 10k repository, first push on a cold daemon / the 30 s hook limit < 1', figure: n10 ? `ratio ${round(r10, 2)} (${n10.how})` : 'not run', pass: pass10 });
    const c50 = colds.find((c) => c.size === '50k');
    const pass50 = c50 ? c50.ok && c50.limitRatio < 1 && c50.vmHwmMB <= 500 : null;
    const fig50 = c50 ? `${fmtMs(c50.ms)} / 30 s = ${round(c50.limitRatio, 2)}${c50.timedOut ? ' (stopped at the budget: a lower bound)' : c50.ok ? '' : ` (failed: ${c50.stderrTail})`}; daemon VmHWM ${Math.round(c50.vmHwmMB)} MB` : 'not run';
    row('(8)', 'never-seen 50k, first push, cold daemon', fig50, '/ 30 s < 1, VmHWM <= 500 MB', verdict(pass50));
    targets.push({ id: '8@50k', text: 'never-seen 50k repository, first push on a cold daemon / the 30 s hook limit < 1, daemon peak RSS <= 500 MB', figure: c50 ? `ratio ${round(c50.limitRatio, 2)}, VmHWM ${Math.round(c50.vmHwmMB)} MB${c50.timedOut ? ' (stopped at the budget)' : ''}` : 'not run', pass: pass50 });
  }
  for (const r of reals) {
    // Issue 47's targets: the person's push at most 1.5 x plain git in the same run, and accepted; the agent's <= 2 s.
    const pass = r.personOk && r.agentOk && r.agentMs <= 2000 && r.ratio <= 1.5;
    row('(9)', `real history: ${r.project}`, `${r.commits} commits, ${r.objects} objects; person's first push ${fmtMs(r.personMs)}${r.personOk ? '' : ' NOT accepted'} vs plain ${fmtMs(r.plainMs)} (x${round(r.ratio, 2)}); agent's first push after it ${fmtMs(r.agentMs)}${r.agentOk ? '' : ' NOT accepted'}; after repo create --upstream ${fmtMs(r.upstreamCreateMs)}, the agent's first push ${fmtMs(r.upstreamAgentMs)}${r.upstreamAgentOk ? '' : ' NOT accepted'}${r.stderrTail ? ` (${r.stderrTail})` : ''}`, 'person accepted, <= 1.5 x plain; agent <= 2 s', verdict(pass));
    targets.push({ id: `9@${r.project}`, text: `${r.project}'s whole history: a person's first push accepted under the default hook limit at <= 1.5 x plain node-git-server (same run), and the agent's first push right after it <= 2 s`, figure: `person ${Math.round(r.personMs)} ms (x${round(r.ratio, 2)} plain), agent ${Math.round(r.agentMs)} ms`, pass });
  }
  if (flags.only.has(9) && reals.length === 0) targets.push({ id: '9', text: 'a real project\'s whole history', figure: 'not run (no corpus bundle)', pass: null });
  row('env', 'machine', `${availableParallelism()} cpu(s) ${cpus()[0]?.model ?? ''}, ${fmtBytes(totalmem())}; load avg 1m min/median/max ${round(Math.min(...loads, startLoad[0]!), 1)}/${round(median(loads.length ? loads : [startLoad[0]!]), 1)}/${round(Math.max(...loads, startLoad[0]!), 1)}`, '', '');
  row('', 'code', `${commit.head?.slice(0, 12) ?? 'unknown'}${commit.dirty.length ? ` + ${commit.dirty.length} uncommitted file(s)` : ''}`, '', '');
  row('', 'calibration', `git --version spawn ${round(calStart.gitSpawnMs, 1)} -> ${round(calEnd.gitSpawnMs, 1)} ms; node -e 0 ${Math.round(calStart.nodeStartMs)} -> ${Math.round(calEnd.nodeStartMs)} ms; run ${Math.round(durationMs / 1000)} s`, '', '');

  const head = ['#', 'measure', 'figure', 'target', 'result'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (c: string[]) => c.map((x, i) => x.padEnd(widths[i]!)).join('  ').trimEnd();
  const out = [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
  out.push('', 'targets: ' + targets.map((t) => `(${t.id}) ${verdict(t.pass)}`).join('  '));
  if (mechanisms.length) out.push('', '(2) with each push-path mechanism off (--mechanisms):', ...mechanismsTable(mechanisms));
  process.stdout.write(out.join('\n') + '\n');

  const results = {
    meta: {
      date: new Date().toISOString(), node: process.version, git: (await run('git', ['--version'])).stdout.trim(),
      commit: commit.head, dirtyFiles: commit.dirty,
      cpus: availableParallelism(), cpuModel: cpus()[0]?.model ?? null, memBytes: totalmem(),
      loadAvg1m: { start: startLoad[0], min: Math.min(...loads, startLoad[0]!), median: median(loads), max: Math.max(...loads, startLoad[0]!) },
      calibration: { start: calStart, end: calEnd }, durationMs, flags: { ...flags, only: [...flags.only] },
    },
    targets, generation: genRows,
    push: pushes.map((p) => ({ ...p, gateWall: { ...p.gateWall, samples: p.gateWall.samples.map((x) => round(x, 2)) }, baseWall: { ...p.baseWall, samples: p.baseWall.samples.map((x) => round(x, 2)) } })),
    digest, concurrency: conc, audit, ghes, upstream: upstreamFig, coldPush: colds, realHistory: reals, mechanisms, table: out,
  };
  const file = flags.results ?? join(REPO_TOP, 'bench', 'results.json');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(results, null, 2) + '\n');
  log(`wrote ${file}`);
  if (flags.keep) for (const g of gens.values()) keepDir(g.dir);
}

let cleaned = false;
const finish = (code: number) => {
  if (!cleaned) {
    cleaned = true;
    cleanup();
  }
  process.exit(code);
};
process.on('SIGINT', () => finish(130));
process.on('SIGTERM', () => finish(143));
main().then(() => finish(0), (err: unknown) => {
  log(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
  finish(1);
});
