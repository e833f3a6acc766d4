// The strict run of `patchgate ci` (policy ci.integrity "strict", the default): the suite runs
// in a sealed copy of the judged tree with a scrubbed environment and patchgate's reporter
// attached; the stream is cross-checked against the runner's report and exit status; the
// tree must be untouched after the run; later runs are shuffled and must agree; the baseline
// is the trusted tree's own run when none is given (baseline.ts); held-out tests run last.

import { copyFile, cp, mkdir, readdir, readFile, symlink } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { basename, isAbsolute, join, resolve } from 'node:path';
import { errorMessage } from '../errors.js';
import type { Git } from '../git/git.js';
import type { Policy } from '../policy/config.js';
import { attachChannel, crossCheck, pluginDir as channelDir, parseStream, runnerKind, tampersInOutput, TRIPWIRE_MARK, type Stream, type StreamTest, type Tamper } from './channel.js';
import { filesOf, mergeStreams, nodeTestShape, shuffleOrder } from './node-order.js';
import { runCommand, showArgv, withSeed, type CommandResult } from './process.js';
import { variedEnv } from './vary.js';
import { sealTree, sealedEnv, unseal, verifySeal, type Seal } from './sealed.js';
import { findExecutable, sandboxArgv, sandboxEnv, type SandboxMode } from './sandbox.js';
import { describeVariation, variation, type Variation } from './vary.js';
import { runLabel, RunWatch, type RunPlan, type RunProgressOut } from './run-progress.js';

export interface StrictFinding {
  kind: 'no-stream' | 'report-mismatch' | 'tree-tampered' | 'runtime-tamper' | 'order-dependent' | 'environment-dependent' | 'vanished' | 'skipped' | 'holdout-failed' | 'holdout-no-stream' | 'holdout-unavailable'
    | 'holdout-missing' | 'holdout-extra' | 'holdout-exit' | 'sealed-failed' | 'sealed-missing' | 'sealed-extra' | 'sealed-exit' | 'sealed-invalid';
  row: string;
  message: string;
  test?: string;
}

export interface SealedRun {
  res: CommandResult;
  argv: string[];
  root: string;
  junit: string | null;
  stream: Stream | null;
  findings: StrictFinding[];
}

export interface StrictOptions {
  git: Git;
  policy: Policy;
  repo: string;
  cmd: string[];
  seed: number;
  tmp: string;
  junit?: string;
  io: { out(l: string): void; err(l: string): void };
  /** Where the test command's own output goes (default: io; the summary log drops it). */
  relay?: { out(l: string): void; err(l: string): void };
  /** Folders the sealed copy links to by name (the checkout's node_modules: the dependencies CI installed). */
  links?: Array<{ name: string; target: string }>;
  /** bwrap (the default of a strict run) or none (the explicit, reported opt-out). */
  sandbox?: SandboxMode;
  /** Folders the sandbox never shows, even through a toolchain on PATH (the checkout, the data folder). */
  hidden?: string[];
  /** Where each run's progress goes after 2 s (run-progress.ts; the CLI: stderr); none without it. */
  progress?: RunProgressOut;
  /** How many runs the whole `patchgate ci` makes, for "run 2 of 3". */
  plan?: RunPlan;
}

/** The n-th shuffle seed of a run: derived from the run seed, so a replay shuffles the same way. */
export function shuffleSeed(seed: number, run: number): number {
  return createHash('sha256').update(`${seed}:${run}`).digest().readUInt32BE(0) & 0x7fffffff;
}

/**
 * One run of the command in a fresh sealed copy of `rev`. With `sequence`, each argv of it
 * runs in turn in the same copy (the per-file rerun of node:test); their streams are merged
 * and each is cross-checked against its own exit status.
 */
export async function sealedRun(o: StrictOptions, rev: string, name: string, opt: { shuffle?: number; collectOnly?: boolean; only?: string; quiet?: boolean; argv?: string[]; extraFiles?: string; held?: Record<string, string>; sequence?: string[][]; vary?: Variation } = {}): Promise<SealedRun> {
  const root = join(o.tmp, name, 'tree');
  await mkdir(root, { recursive: true });
  const extra = opt.extraFiles;
  // Held-out tests: on disk under .patchgate-holdout/, or (held) an empty folder there and the
  // sources handed to patchgate's pytest plugin on stdin, so no file of theirs is there to read.
  const held = opt.held;
  const seal = await sealCopy(o, rev, root, extra ? () => cp(extra, join(root, '.patchgate-holdout'), { recursive: true }) : held ? () => mkdir(join(root, '.patchgate-holdout')).then(() => {}) : undefined);
  const findings: StrictFinding[] = [];
  const parts: Array<{ res: CommandResult; argv: string[]; stream: Stream | null }> = [];
  let junit: string | null = null;
  const label = runLabel(name, o.plan);
  const sandboxed = (o.sandbox ?? 'bwrap') === 'bwrap';
  const where = `sealed copy of ${rev.slice(0, 12)} in ${root}${sandboxed ? ', sandboxed by bubblewrap' : ', NOT SANDBOXED'}`;
  // Every run says when it starts (issue 49: a run can take minutes); run 1 names its command too.
  if (opt.quiet) o.io.out(`patchgate: ${label}: started (${where})`);
  let watch: RunWatch | null = null;
  try {
  for (const argv of opt.sequence ?? [opt.argv ?? withSeed(o.cmd, o.seed)]) {
    // Paths into the agent's checkout are paths into the sealed copy.
    let base = argv.map((a) => a.split(o.repo + '/').join(root + '/'));
    const pluginDir = join(o.tmp, name, 'plugin');
    const nodeHeld = held && runnerKind(base).kind === 'node';
    if (nodeHeld) base = await nodeHeldArgv(base, pluginDir);
    const att = await attachChannel(base, { dir: pluginDir, seed: o.seed, shuffle: opt.shuffle, plugins: o.policy.ci.pytestPlugins, haveReport: !!o.junit && !opt.argv, collectOnly: opt.collectOnly, ...(opt.only !== undefined ? { only: opt.only } : {}), root });
    junit = o.junit && !opt.argv ? (isAbsolute(o.junit) ? o.junit : resolve(root, o.junit)) : att.junit;
    const runEnv = (opt.extraFiles || held) && !nodeHeld ? { ...att.env, PYTHONPATH: [att.env.PYTHONPATH, root, join(root, 'src')].filter(Boolean).join(':'), ...(held ? { PATCHGATE_HOLDOUT_FROM_STDIN: '1' } : {}) } : att.env;
    if (!opt.quiet) o.io.out(`patchgate: ${label}: running ${showArgv(att.argv)} (${where})`);
    if (o.progress && !watch) watch = new RunWatch(label, o.progress, att.kind !== 'unknown').start();
    // Tripwire lines the node preload wrote on stderr (vitest and jest workers pass it through).
    const marks: string[] = [];
    const mark = (emit: (l: string) => void) => (l: string) => {
      if (l.includes(TRIPWIRE_MARK)) marks.push(l);
      else emit(l);
    };
    const quiet = () => {};
    const res = await spawnSealed(o, { root, pluginDir, argv: att.argv, runEnv, ...(opt.vary ? { vary: opt.vary } : {}), ...(held ? { stdin: Buffer.from(JSON.stringify({ files: held })) } : {}), channel: att.kind !== 'unknown', ...(watch ? { onChannel: (l: string) => watch!.line(l) } : {}), onStdout: mark(opt.quiet ? quiet : (o.relay ?? o.io).out), onStderr: mark(opt.quiet ? quiet : (o.relay ?? o.io).err) });
    const stream = att.kind === 'unknown' ? null : parseStream(res.channel ?? '', att.kind, root);
    findings.push(...tamperFindings([...(stream?.tampers ?? []), ...tampersInOutput(marks)], name));
    parts.push({ res, argv: att.argv, stream });
    if (opt.sequence) findings.push(...checkStream({ res, argv: att.argv, root, junit: null, stream, findings: [] }, null).map((f) => ({ ...f, message: `${f.message} (${showArgv(argv.slice(1))})` })));
  }
  } catch (e) {
    watch?.stop('stopped by an error');
    throw e;
  }
  const last = parts.find((p) => p.res.spawnError || p.res.signal || p.res.code !== 0)?.res ?? parts.at(-1)?.res;
  watch?.stop(!last ? 'ended' : last.spawnError ? 'could not start' : last.signal ? `killed by ${last.signal}` : `exited ${last.code}`);
  const changed = await verifySeal(seal).catch((e) => [`(the tree could not be read back: ${errorMessage(e)})`]);
  if (changed.length) findings.push({ kind: 'tree-tampered', row: 'tree-tampered', message: `the tests or fixtures changed during the run (${name}): ${changed.slice(0, 8).join(', ')}${changed.length > 8 ? ', ...' : ''}; code under test may not write the oracle` });
  await unseal(root);
  if (parts.length === 1 || !opt.sequence) {
    const p = parts[0]!;
    return { res: p.res, argv: p.argv, root, junit, stream: p.stream, findings };
  }
  const failed = parts.find((p) => p.res.spawnError || p.res.signal || p.res.code !== 0);
  const res: CommandResult = {
    code: failed?.res.code ?? 0, signal: failed?.res.signal ?? null, ...(failed?.res.spawnError ? { spawnError: failed.res.spawnError } : {}),
    stdout: parts.map((p) => p.res.stdout).join(''), ms: parts.reduce((n, p) => n + p.res.ms, 0),
  };
  const stream = parts.every((p) => p.stream) ? mergeStreams(parts.map((p) => p.stream!)) : null;
  return { res, argv: parts[0]!.argv, root, junit: null, stream, findings };
}

/**
 * node's held-out run from memory (issue 46): `node --test .patchgate-holdout/a.test.mjs ...`
 * becomes `node patchgate-holdout-main.mjs a.test.mjs ...`, whose module hooks read the sources
 * from stdin in their own thread and serve them under `.patchgate-holdout/`, which is not on disk.
 */
async function nodeHeldArgv(argv: string[], pluginDir: string): Promise<string[]> {
  await mkdir(pluginDir, { recursive: true });
  for (const f of ['patchgate-holdout-main.mjs', 'patchgate-holdout-hooks.mjs']) await copyFile(join(channelDir(), f), join(pluginDir, f));
  const files = argv.filter((a) => a.startsWith('.patchgate-holdout/')).map((a) => a.slice('.patchgate-holdout/'.length));
  return [argv[0]!, join(pluginDir, 'patchgate-holdout-main.mjs'), ...files];
}

/** A fresh sealed copy of `rev` in `root` (sealed.ts), with the checkout's dependency folders linked in by name. */
export async function sealCopy(o: StrictOptions, rev: string, root: string, afterExport?: () => Promise<void>): Promise<Seal> {
  const seal = await sealTree(o.git, rev, o.policy, root, afterExport);
  for (const l of o.links ?? []) await symlink(l.target, join(root, l.name)).catch(() => {});
  return seal;
}

/** What one process of a strict run is: its argv, its own variables, what it reads on stdin, whether it gets the gate's pipe (fd 3). */
export interface SealedSpawn {
  root: string;
  /** The gate's folder for this run (plugins, reports): writable inside, outside the tree. */
  pluginDir: string;
  argv: string[];
  runEnv: Record<string, string>;
  stdin?: Buffer;
  /** A later run's varied conditions (vary.ts): clock, uid, HOME, temp folder, hostname, hash seed, variable order. */
  vary?: Variation;
  channel: boolean;
  /** Each line of the gate's pipe as it arrives (the run's progress). */
  onChannel?(line: string): void;
  onStdout(line: string): void;
  onStderr(line: string): void;
}

/**
 * Spawn one process of a strict run in the sealed tree: under bubblewrap (sandbox.ts) with the
 * allow-listed environment, or, with the explicit `--sandbox none`, the scrubbed one. Every
 * process of a strict run goes through here, so none has a weaker sandbox than another.
 */
export async function spawnSealed(o: StrictOptions, p: SealedSpawn): Promise<CommandResult> {
  const sandboxed = (o.sandbox ?? 'bwrap') === 'bwrap';
  let env = sandboxed ? sandboxEnv({ ...sealedEnv(o.seed, {}, true), ...p.runEnv }, '/tmp/home') : sealedEnv(o.seed, p.runEnv);
  let vary = p.vary;
  if (vary && !sandboxed) {
    // Unsandboxed, HOME and the temp folder are folders of the run's own, not of the machine's /tmp.
    vary = { ...vary, home: join(o.tmp, basename(vary.home)), tmp: join(o.tmp, basename(vary.tmp)) };
    for (const d of [vary.home, vary.tmp]) await mkdir(d, { recursive: true });
  }
  if (vary) env = variedEnv(env, vary);
  const linked = (o.links ?? []).map((l) => l.target);
  const spawnArgv = sandboxed
    ? sandboxArgv(p.argv, { writable: [p.root, p.pluginDir], readOnly: linked, scratch: linked.flatMap((t) => [join(t, '.vite'), join(t, '.vite-temp'), join(t, '.cache')]), cwd: p.root, env, ...(vary ? { uid: vary.uid, hostname: vary.hostname } : {}) }, o.hidden ?? [o.repo])
    : p.argv;
  if (sandboxed && !findExecutable(p.argv[0] ?? '', p.root, env.PATH ?? '')) return { code: null, signal: null, spawnError: `cannot run ${p.argv[0]}: spawn ${p.argv[0]} ENOENT (not found on PATH)`, stdout: '', ms: 0 };
  return runCommand(spawnArgv, { cwd: p.root, env, exactEnv: true, ...(p.stdin ? { stdin: p.stdin } : {}), channel: p.channel, ...(p.onChannel ? { onChannel: p.onChannel } : {}), capture: true, onStdout: p.onStdout, onStderr: p.onStderr });
}

/** One `runtime-tamper` finding per tripwire that fired (the same event at the same line once). */
export function tamperFindings(tampers: Tamper[], name: string): StrictFinding[] {
  const seen = new Set<string>();
  const out: StrictFinding[] = [];
  for (const t of tampers) {
    const key = `${t.event}\0${t.file}\0${t.line}\0${t.detail}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const where = t.file ? ` at ${t.file}${t.line ? `:${t.line}` : ''}` : '';
    out.push({ kind: 'runtime-tamper', row: 'runtime-tamper', message: `tripwire (${name}): ${t.event}${where}: ${t.detail}; tested code may not read or patch the runner: remove it and fix the code` });
  }
  return out;
}

/** The cross-check of a run's stream with its report (null when the report could not be read). */
export function checkStream(run: SealedRun, report: Array<{ id: string; status: 'passed' | 'failed' | 'skipped' }> | null): StrictFinding[] {
  const kind = runnerKind(run.argv).kind;
  const cc = crossCheck(run.stream, kind, report, { code: run.res.code, signal: run.res.signal }, run.root);
  const out: StrictFinding[] = [];
  if (cc.noStream) out.push({ kind: 'no-stream', row: 'report-forged', message: cc.noStream });
  for (const m of cc.mismatches.slice(0, 20)) out.push({ kind: 'report-mismatch', row: 'report-forged', message: `the run is not evidence: ${m}` });
  if (cc.mismatches.length > 20) out.push({ kind: 'report-mismatch', row: 'report-forged', message: `... and ${cc.mismatches.length - 20} more disagreements` });
  return out;
}

/**
 * Outcomes that differ between the first run and a later one, matched by key (node: file,
 * name and occurrence, whatever order the files ran in) else by id. A test that runs in one
 * and not the other changed too ("did not run"). Named by the first run's id.
 */
export function orderChanges(first: Stream, later: Stream): Array<{ id: string; from: string; to: string }> {
  const NOT_RUN = 'did not run';
  const keyOf = (t: StreamTest) => t.key ?? t.id;
  const a = new Map(first.tests.map((t) => [keyOf(t), t]));
  const b = new Map(later.tests.map((t) => [keyOf(t), t]));
  const changes: Array<{ id: string; from: string; to: string }> = [];
  for (const [k, t] of a) {
    const now = b.get(k)?.status ?? NOT_RUN;
    if (now !== t.status) changes.push({ id: t.id, from: t.status, to: now });
  }
  for (const [k, t] of b) if (!a.has(k)) changes.push({ id: t.id, from: NOT_RUN, to: t.status });
  return changes;
}

/** A later run (2..N) of the suite, shuffled where the runner allows it; `how` says how, for the log and the reasons. */
export interface LaterRun {
  how: string;
  stream: Stream | null;
  findings: StrictFinding[];
  /** The run's varied conditions (vary.ts) and their one-line description. */
  vary: Variation;
  varied: string;
}

/**
 * Run `run` (2..N): pytest through patchgate's plugin with the order shuffled from the seed;
 * node:test once per test file, one after another, files in an order shuffled from the seed
 * (node-order.ts); a command that cannot be shuffled runs again unchanged and says so. Every
 * later run also varies its conditions (vary.ts), derived from the same seed.
 */
export async function laterRun(o: StrictOptions, rev: string, run: number, first: Stream): Promise<LaterRun> {
  const sh = shuffleSeed(o.seed, run);
  const vary = variation(sh);
  const varied = describeVariation(vary, (o.sandbox ?? 'bwrap') === 'bwrap');
  const kind = runnerKind(o.cmd).kind;
  let plan: { files: string[]; options: string[] } | { why: string } = { why: 'the runner is neither pytest nor node:test' };
  if (kind === 'pytest' || kind === 'vitest' || kind === 'jest') {
    const r = await sealedRun(o, rev, `run${run}`, { shuffle: sh, quiet: true, vary });
    return { how: `order shuffled with seed ${sh}`, stream: r.stream, findings: [...r.findings, ...checkStream(r, null)], vary, varied };
  }
  if (kind === 'node') plan = await nodePlan(o, rev, first);
  if ('files' in plan) {
    const order = shuffleOrder(plan.files, sh);
    const how = `files one by one in an order shuffled with seed ${sh}: ${order.join(', ')}`;
    const r = await sealedRun(o, rev, `run${run}`, { quiet: true, vary, sequence: order.map((f) => [o.cmd[0]!, ...plan.options, f]) });
    return { how, stream: r.stream, findings: r.findings, vary, varied };
  }
  const r = await sealedRun(o, rev, `run${run}`, { quiet: true, vary });
  return { how: `same order: not shuffled, because ${plan.why}`, stream: r.stream, findings: [...r.findings, ...checkStream(r, null)], vary, varied };
}

/**
 * Which of a later run's changes are the environment's: the command as run 1 ran it (run 1's
 * order) under that run's varied conditions. Run only when a later run changed something.
 */
export async function environmentRun(o: StrictOptions, rev: string, run: number, vary: Variation): Promise<{ stream: Stream | null; findings: StrictFinding[] }> {
  const r = await sealedRun(o, rev, `run${run}-env`, { quiet: true, vary });
  return { stream: r.stream, findings: [...r.findings, ...checkStream(r, null)] };
}

/** The per-file rerun of a node:test command: its options, and the files the first run ran. */
async function nodePlan(o: StrictOptions, rev: string, first: Stream): Promise<{ files: string[]; options: string[] } | { why: string }> {
  const argv = withSeed(o.cmd, o.seed);
  const shape = await nodeTestShape(argv, async (a) => {
    const rel = isAbsolute(a) ? (a.startsWith(o.repo + '/') ? a.slice(o.repo.length + 1) : null) : a.replace(/^\.\/+/, '').replace(/\/+$/, '');
    if (rel === null) return false;
    if (rel === '' || rel === '.') return true;
    const t = (await o.git.pathId(rev, rel))?.type;
    return t === 'blob' || t === 'tree';
  });
  if ('why' in shape) return shape;
  const { files, outside } = filesOf(first);
  if (outside.length) return { why: `node ran files outside the tree (${outside.slice(0, 3).join(', ')})` };
  if (files.length < 2) return { why: `the first run ran ${files.length} test file(s); a file order needs two or more` };
  return { files, options: shape.options };
}

/**
 * The held-out tests as sources to hand over from memory, or null when they must stay files:
 * only pytest test modules (`test_*.py`, `*_test.py`) are; a conftest, helper or data file in
 * the set, or another runner, keeps the folder on disk (sealed and read-only, as before).
 */
export async function heldInMemory(cmd: string[], dir: string): Promise<Record<string, string> | null> {
  const kind = runnerKind(cmd).kind;
  if (kind !== 'pytest' && kind !== 'node') return null;
  // node: ES modules only (a module hook serves them from memory; node 20 reads CommonJS from disk).
  const fits = kind === 'pytest' ? /(^|\/)(test_[^/]*|[^/]*_test)\.py$/ : /\.mjs$/;
  const files: Record<string, string> = {};
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isDirectory()) continue;
    const rel = join(e.parentPath ?? (e as unknown as { path: string }).path, e.name).slice(dir.length + 1);
    if (!fits.test(rel) || !e.isFile()) return null;
    files[rel] = await readFile(join(dir, rel), 'utf8');
  }
  return Object.keys(files).length ? files : null;
}

/** The argv that runs the held-out tests in `.patchgate-holdout/` with the project's runner. */
export async function holdoutArgv(cmd: string[], dir: string): Promise<string[] | null> {
  const { kind, at } = runnerKind(cmd);
  if (kind === 'pytest') return [...cmd.slice(0, at), '.patchgate-holdout'];
  if (kind === 'node') {
    const files = (await readdir(dir, { recursive: true })).filter((f) => /\.(test|spec)\.[cm]?js$|^test.*\.[cm]?js$/.test(f.split('/').pop()!)).sort();
    return [cmd[0]!, '--test', ...files.map((f) => `.patchgate-holdout/${f}`)];
  }
  return null;
}
