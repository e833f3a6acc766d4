// `--mechanisms` (issue 47, item 10): does each mechanism on the push path earn its place? Each
// is one more reading of the push to keep in agreement with git, so each must show a gain beyond
// the noise. Measurement (2) runs once with all on (the ordinary run), then once with each
// mechanism off (PATCHGATE_PUSH_PATH_OFF on the gate's serve process, src/server/push-path.ts),
// then once more with all on: that last run's difference from the first is the run-to-run drift
// on this machine, printed as a row of its own. Each run is gate / plain node-git-server in the
// same run, alternating A,B / B,A, as (2) always is.
//
// How "outside the noise" is decided: the rounds of a run are pairs (the same commit pushed to
// the gate and to plain git back to back). A bootstrap resamples each run's pairs with
// replacement (B times, seeded), recomputes each run's ratio (median gate / median plain) and the
// difference off - all on; the 2.5 and 97.5 percentiles of those differences are the 95 %
// interval. A difference is outside the noise when that interval does not hold 0. The paired
// margin (median of per-pair gate - plain, ms) is printed beside it for the same two runs.

import { MECHANISMS, MECHANISM_NAMES, PUSH_PATH_ENV, type Mechanism } from '../../dist/server/push-path.js';
import type { GeneratedRepo } from './gen.js';
import { pushBench, type PushBenchOptions, type PushBenchResult } from './push.js';
import { median, Rng } from './util.js';

/** Bootstrap resamples per comparison. */
const RESAMPLES = 2000;

export interface MechanismRow {
  /** The mechanism switched off, or `control` (all on, run again after the others). */
  off: Mechanism | 'control';
  what: string;
  ratioOff: number;
  ratioOn: number;
  /** ratioOff - ratioOn: positive when the push is slower without the mechanism (it earns something). */
  diff: number;
  /** The 95 % bootstrap interval of diff. */
  low: number;
  high: number;
  outside: boolean;
  /** Median per-pair gate - plain (ms), this run and the all-on run. */
  pairedOffMs: number;
  pairedOnMs: number;
  pairs: number;
  errors: number;
}

export interface MechanismsResult {
  size: string;
  resamples: number;
  rows: MechanismRow[];
}

type Pair = [gate: number, plain: number];

function pairsOf(p: PushBenchResult): Pair[] {
  const b = p.baseWall.samples;
  return p.gateWall.samples.slice(0, b.length).map((g, i) => [g, b[i]!]);
}

function ratioOf(ps: readonly Pair[]): number {
  return median(ps.map((p) => p[0])) / median(ps.map((p) => p[1]));
}

function pairedOf(ps: readonly Pair[]): number {
  return median(ps.map((p) => p[0] - p[1]));
}

function resample(ps: readonly Pair[], rng: Rng): Pair[] {
  return ps.map(() => ps[Math.floor(rng.next() * ps.length)]!);
}

/** The comparison of one run (`off`) with the all-on run. */
export function compareRuns(off: PushBenchResult, on: PushBenchResult, seed = 47): Omit<MechanismRow, 'off' | 'what'> {
  const a = pairsOf(off);
  const b = pairsOf(on);
  const rng = new Rng(seed);
  const diffs: number[] = [];
  for (let i = 0; i < RESAMPLES; i++) diffs.push(ratioOf(resample(a, rng)) - ratioOf(resample(b, rng)));
  diffs.sort((x, y) => x - y);
  const low = diffs[Math.floor(RESAMPLES * 0.025)]!;
  const high = diffs[Math.ceil(RESAMPLES * 0.975) - 1]!;
  const ratioOff = ratioOf(a);
  const ratioOn = ratioOf(b);
  return { ratioOff, ratioOn, diff: ratioOff - ratioOn, low, high, outside: low > 0 || high < 0, pairedOffMs: pairedOf(a), pairedOnMs: pairedOf(b), pairs: a.length, errors: off.errors };
}

/** Measurement (2) on one size with each mechanism off, then all on again; `allOn` is this size's ordinary (2) run. */
export async function mechanismsBench(size: string, gen: GeneratedRepo, iterations: number, opts: PushBenchOptions, allOn: PushBenchResult): Promise<MechanismsResult> {
  const rows: MechanismRow[] = [];
  const runs: Array<[Mechanism | 'control', string]> = [...MECHANISM_NAMES.map((m) => [m, MECHANISMS[m]] as [Mechanism, string]), ['control', 'none (all on, run again)']];
  for (const [off, what] of runs) {
    opts.log(`(2, mechanisms) ${size}: ${off === 'control' ? 'all on again (the drift between runs)' : `${what} off (${PUSH_PATH_ENV}=${off})`}`);
    const r = await pushBench(size, gen, iterations, { ...opts, strace: false, saveCache: false, gateEnv: off === 'control' ? {} : { [PUSH_PATH_ENV]: off } });
    rows.push({ off, what: off === 'prewarm' ? `${what} (and so the judgement ahead)` : what, ...compareRuns(r, allOn) });
  }
  return { size, resamples: RESAMPLES, rows };
}

/** The table's lines: mechanism off, ratio off, ratio all on, difference [95 % interval], paired margins, verdict. */
export function mechanismsTable(results: readonly MechanismsResult[]): string[] {
  const r2 = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');
  const sign = (x: number): string => (x >= 0 ? '+' : '') + r2(x);
  const head = ['size', 'switched off', 'ratio off', 'ratio all on', 'difference [95% interval]', 'paired gate-plain off / on', 'outside the noise?'];
  const rows = results.flatMap((res) => res.rows.map((r) => [
    res.size, r.what, r2(r.ratioOff), r2(r.ratioOn), `${sign(r.diff)} [${sign(r.low)}, ${sign(r.high)}]`,
    `${Math.round(r.pairedOffMs)} / ${Math.round(r.pairedOnMs)} ms`,
    (r.outside ? (r.diff > 0 ? 'yes: slower without it' : 'yes: faster without it') : 'no') + (r.errors ? ` (${r.errors} failed pushes)` : ''),
  ]));
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((x) => x[i]!.length)));
  const line = (c: string[]): string => c.map((x, i) => x.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line),
    `(each row: measurement (2) with that mechanism off, against the first all-on run; interval: ${results[0]?.resamples ?? RESAMPLES} bootstrap resamples of each run's pairs; outside the noise when it does not hold 0)`];
}
