// The strict run of `patchgate ci` (policy ci.integrity "strict", the default): the suite runs
// in a sealed copy of the judged tree with a scrubbed environment and patchgate's reporter
// attached; the stream is cross-checked against the runner's report and exit status; the
// tree must be untouched after the run; later runs are shuffled and must agree; the baseline
// is the test ids of the trusted tree when none is given; held-out tests run last.

import { cp, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { isAbsolute, join, resolve } from 'node:path';
import { errorMessage } from '../errors.js';
import type { Git } from '../git/git.js';
import type { Policy } from '../policy/config.js';
import { attachChannel, crossCheck, parseStream, runnerKind, type Stream } from './channel.js';
import { runCommand, showArgv, withSeed, type CommandResult } from './process.js';
import { sealTree, sealedEnv, unseal, verifySeal } from './sealed.js';

export interface StrictFinding {
  kind: 'no-stream' | 'report-mismatch' | 'tree-tampered' | 'order-dependent' | 'vanished' | 'skipped' | 'holdout-failed' | 'holdout-no-stream' | 'holdout-unavailable';
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
}

/** The n-th shuffle seed of a run: derived from the run seed, so a replay shuffles the same way. */
export function shuffleSeed(seed: number, run: number): number {
  return createHash('sha256').update(`${seed}:${run}`).digest().readUInt32BE(0) & 0x7fffffff;
}

/** One run of the command in a fresh sealed copy of `rev`. */
export async function sealedRun(o: StrictOptions, rev: string, name: string, opt: { shuffle?: number; collectOnly?: boolean; quiet?: boolean; argv?: string[]; extraFiles?: string } = {}): Promise<SealedRun> {
  const root = join(o.tmp, name, 'tree');
  await mkdir(root, { recursive: true });
  const extra = opt.extraFiles;
  const seal = await sealTree(o.git, rev, o.policy, root, extra ? () => cp(extra, join(root, '.patchgate-holdout'), { recursive: true }) : undefined);
  // Paths into the agent's checkout are paths into the sealed copy.
  const base = (opt.argv ?? withSeed(o.cmd, o.seed)).map((a) => a.split(o.repo + '/').join(root + '/'));
  const att = await attachChannel(base, { dir: join(o.tmp, name, 'plugin'), seed: o.seed, shuffle: opt.shuffle, plugins: o.policy.ci.pytestPlugins, haveReport: !!o.junit && !opt.argv, collectOnly: opt.collectOnly });
  const junit = o.junit && !opt.argv ? (isAbsolute(o.junit) ? o.junit : resolve(root, o.junit)) : att.junit;
  const env = sealedEnv(o.seed, opt.extraFiles ? { ...att.env, PYTHONPATH: [att.env.PYTHONPATH, root, join(root, 'src')].filter(Boolean).join(':') } : att.env);
  if (!opt.quiet) o.io.out(`patchgate: running ${showArgv(att.argv)} (sealed copy of ${rev.slice(0, 12)} in ${root})`);
  const quiet = () => {};
  const res = await runCommand(att.argv, { cwd: root, env, exactEnv: true, channel: att.kind !== 'unknown', capture: true, onStdout: opt.quiet ? quiet : o.io.out, onStderr: opt.quiet ? quiet : o.io.err });
  const findings: StrictFinding[] = [];
  const changed = await verifySeal(seal).catch((e) => [`(the tree could not be read back: ${errorMessage(e)})`]);
  if (changed.length) findings.push({ kind: 'tree-tampered', row: 'tree-tampered', message: `the tests or fixtures changed during the run (${name}): ${changed.slice(0, 8).join(', ')}${changed.length > 8 ? ', ...' : ''}; code under test may not write the oracle` });
  await unseal(root);
  const stream = att.kind === 'unknown' ? null : parseStream(res.channel ?? '', att.kind, root);
  return { res, argv: att.argv, root, junit, stream, findings };
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

/** Outcomes that differ between the first run and a shuffled one. */
export function orderChanges(first: Stream, later: Stream): Array<{ id: string; from: string; to: string }> {
  const a = new Map(first.tests.map((t) => [t.id, t.status]));
  const changes: Array<{ id: string; from: string; to: string }> = [];
  for (const t of later.tests) {
    const was = a.get(t.id);
    if (was !== undefined && was !== t.status) changes.push({ id: t.id, from: was, to: t.status });
  }
  return changes;
}

/**
 * The test ids of the trusted tree: pytest --collect-only through patchgate's plugin, or for
 * node:test the ids of a run at the trusted tip (failures there are fine). Cached per
 * trusted tree and command in the repository's git folder.
 */
export async function trustedIds(o: StrictOptions, baseId: string): Promise<{ ids: string[]; cached: boolean; problem?: string }> {
  const tree = await o.git.commitTree(baseId);
  const key = createHash('sha256').update(JSON.stringify([tree, o.cmd, o.policy.ci.pytestPlugins])).digest('hex').slice(0, 32);
  const common = resolve(o.repo, (await o.git.text(['rev-parse', '--git-common-dir'])).trim());
  const file = join(common, 'patchgate', 'baselines', `${key}.json`);
  try {
    const cached = JSON.parse(await readFile(file, 'utf8')) as { tree: string; tests: string[] };
    if (cached.tree === tree && Array.isArray(cached.tests)) return { ids: cached.tests, cached: true };
  } catch { /* not cached yet */ }
  const kind = runnerKind(o.cmd).kind;
  const run = await sealedRun(o, baseId, 'baseline', { collectOnly: kind === 'pytest', quiet: true });
  const s = run.stream;
  if (!s || !s.started || !s.ended) return { ids: [], cached: false, problem: `the trusted tree's tests could not be listed (${kind} reporter stream ${s ? 'incomplete' : 'absent'})` };
  const ids = kind === 'pytest' ? s.collected : s.tests.filter((t) => t.status !== 'skipped').map((t) => t.id);
  if (kind === 'pytest' && s.collectErrors.length) return { ids: [], cached: false, problem: `collection fails on the trusted tree: ${s.collectErrors.slice(0, 3).join(', ')}` };
  await mkdir(join(common, 'patchgate', 'baselines'), { recursive: true });
  await writeFile(file, JSON.stringify({ tree, base: baseId, tests: ids }, null, 2) + '\n');
  return { ids, cached: false };
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
