// The `patchgate ci` job: the static policy as an agent's push, then the test command with a
// recorded seed, results from a structured report only, the trusted baseline (the oracle may
// not shrink), the flake ledger, and one verdict that names the decision-table row that fired.

import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { checkJson, runCheck } from '../commands/check.js';
import { errorMessage, UsageError } from '../errors.js';
import { fixtureDigest, readLock } from '../fixtures/lock.js';
import { Git } from '../git/git.js';
import { dayOf, parseDay } from '../ledger/ledger.js';
import { loadPolicy } from '../policy/config.js';
import { DECISION_TABLE } from '../policy/decision-table.js';
import { renderDecision } from '../policy/engine.js';
import type { RefDecision } from '../policy/types.js';
import { applyLedger, loadLedgerAt, type LedgerApplication } from './apply-ledger.js';
import { compareBaseline, compareTrusted, readBaseline, trustedRun, writeBaseline, type Baseline } from './baseline.js';
import { parseSeed, randomSeed, runCommand, seedEnv, showArgv, withSeed } from './process.js';
import { parseJestJson, parseJUnitReport, parseTap, type ParsedReport, type TestResult } from './reports.js';
import { runnerKind } from './channel.js';
import { foreignMessage, foreignModules, isRunnerModule, projectModules, runnerFromTree, runnerShadows } from './judged-code.js';
import { resolveCommand } from './command-line.js';
import { capped, decidingRow, FAILURE_KINDS, Tail } from './summary.js';
export { decidingRow, printVerdict } from './summary.js';
import { heldOutStage, type HoldoutCounts, type SealedCounts } from './holdout-run.js';
import { sandboxAvailable, type SandboxMode } from './sandbox.js';
import { evidenceStage, type EvidenceCounts, type EvidenceFinding } from './evidence.js';
import type { RunProgressOut } from './run-progress.js';
import { checkStream, environmentRun, laterRun, orderChanges, sealedRun, type SealedRun, type StrictFinding, type StrictOptions } from './strict.js';

export interface CiOptions {
  repo: string;
  base: string;
  head: string;
  seed?: string;
  junit?: string;
  report?: string;
  baseline?: string;
  writeBaseline?: string;
  data?: string;
  /** The audit log of `data` (`--audit`; else PATCHGATE_AUDIT_URL, else the one the folder records): src/commands/folder-log.ts. */
  audit?: string;
  cmd: string[];
  today?: string;
  /** Held-out tests (issue 11): a git URL, a bare repository or a folder (src/ci/holdout.ts), run against the judged src/ after the visible suite. */
  holdout?: string;
  /** Runs of the suite (default: the policy's ci.runs); later runs are shuffled. */
  runs?: number;
  /** Show everything: the runner's output, the whole decision table, every reason. */
  verbose?: boolean;
  /** `--sandbox bwrap|none` (pinned in DESIGN.md; the bubblewrap work reads it). Tests that measured a run unsandboxed say `none`. */
  sandbox?: SandboxMode;
  /** `--class`: judge the static policy under this agent class (a test author's push: `--class test-author`). */
  agentClass?: string;
  /** `--evidence` (issue 50): instead of the suite, the push's new and changed tests must fail on the trusted tip and weaken no test (evidence.ts). */
  evidence?: boolean;
}

export interface CiIo {
  out(line: string): void;
  err(line: string): void;
  /** Each strict run's progress past 2 s (src/ci/run-progress.ts); the CLI gives stderr. None without it. */
  progress?: RunProgressOut;
}

export type ReasonKind =
  | 'check' | 'ledger-invalid' | 'failed' | 'new-seed' | 'expired' | 'fixture-mismatch'
  | 'no-report' | 'stale-report' | 'unreadable-report' | 'incomplete-report' | 'empty-report'
  | 'seed-file' | 'command-failed' | 'vanished' | 'skipped' | 'error' | 'not-judged-code' | 'command-not-found' | 'sandbox-missing' | 'runtime-tamper' | 'runner-shadowed'
  | StrictFinding['kind'] | EvidenceFinding['kind'];

export interface CiReason {
  kind: ReasonKind;
  row: string;
  message: string;
  test?: string;
}

/** What `--report FILE` holds (and, shortened, what the audit log keeps). */
export interface CiReport {
  version: 1;
  seed: number;
  verdict: 'green' | 'red' | 'error';
  exitCode: 0 | 1 | 2;
  /** The deciding row: the first failing row in table order, else 'accept'. */
  row: string;
  /** Every row that fired (marked in the printed table). */
  fired: string[];
  reasons: CiReason[];
  repo: string;
  base: string;
  head: string;
  today: string;
  check: Record<string, unknown> | null;
  command: { argv: string[]; exitCode: number | null; signal: string | null; ms: number } | null;
  results: { format: ParsedReport['format']; source: string; total: number; passed: number; failed: number; skipped: number; duplicates: string[] } | null;
  tests: Array<TestResult & { seed: string; ledger?: LedgerApplication['outcome'] }>;
  ledger: { path: string; rows: number; applications: LedgerApplication[] } | null;
  fixtureDigest: string | null;
  baseline: { path: string; tests: number; vanished: string[]; skipped: string[]; skippedThere?: number } | null;
  /** Held-out tests: the ids the trusted tree listed and handed to the run, the results that came back, how many passed (holdout-run.ts). */
  holdout?: HoldoutCounts | null;
  /** Sealed expectations: cases in the held-out `*.sealed.json` files, how many ran and passed (judged by the gate). */
  sealed?: SealedCounts | null;
  /** `--evidence`: the merge base compared with, the test files, new and changed test ids, those that failed on the trusted tip. */
  evidence?: EvidenceCounts | null;
  /** pytest: where each of the project's own modules was imported from (the judged tree's, or not). */
  modules?: Record<string, string>;
  /** pytest: where the runner's own modules (pytest, _pytest, pluggy, ...) were imported from, and the judged tree's modules named like them, which were not (issue 46). */
  runner?: { modules: Record<string, string>; shadowed: string[] };
  /** The conditions each later run varied (vary.ts): clock offset (null: libfaketime missing), uid, hostname (null: not sandboxed), HOME, hash seed. */
  variation?: Array<{ run: number; clock: string | null; uid: number | null; hostname: string | null; home: string; pythonHashSeed: number }>;
  /** How the strict run's test processes ran: `bwrap` (sandboxed), `none` (the explicit opt-out, "not sandboxed"); null: not a strict run. */
  sandbox?: SandboxMode | null;
  /** Set when the command could not start: one line says why, and nothing else is printed. */
  notRun?: string;
  wroteBaseline: string | null;
  audit: { id: number } | null;
  startedAt: string;
  ms: number;
}

function todayOf(s: string | undefined): Date {
  const d = s === undefined ? parseDay(dayOf(new Date())) : parseDay(s);
  if (!d) throw new UsageError(`--today: ${JSON.stringify(s)} is not a date YYYY-MM-DD`);
  return d;
}

/** The tests must run on the commit that was judged: the work tree must be at head, tracked files unmodified. */
async function assertWorkTree(git: Git, headId: string): Promise<void> {
  const inside = (await git.run(['rev-parse', '--is-inside-work-tree'], { okExit: [128] })).stdout.toString('utf8').trim();
  if (inside !== 'true') throw new UsageError(`--repo ${git.dir}: not a work tree; check out --head there and run again`);
  const at = (await git.text(['rev-parse', '--verify', 'HEAD'])).trim();
  if (at !== headId) throw new UsageError(`the work tree ${git.dir} is at ${at.slice(0, 12)}, not at --head ${headId.slice(0, 12)}: the tests would not run on the judged commit; check out --head first`);
  const dirty = (await git.run(['status', '--porcelain=v1', '-z', '--untracked-files=no', '--ignore-submodules=none'])).stdout.toString('utf8').split('\0').filter(Boolean);
  if (dirty.length) {
    const shown = dirty.slice(0, 10).map((l) => l.slice(3)).join(', ');
    throw new UsageError(`the work tree ${git.dir} has modified tracked files (${shown}${dirty.length > 10 ? ', ...' : ''}): the tests would not run on the judged commit`);
  }
}

/** Per-test seeds a runner wrote to PATCHGATE_SEED_FILE: {"<test id>": seed}. Absent: none. */
export async function readSeedFile(path: string): Promise<{ seeds: Map<string, string>; problem?: string }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { seeds: new Map() };
    return { seeds: new Map(), problem: `cannot read the seed file: ${errorMessage(e)}` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { seeds: new Map(), problem: `the seed file is not JSON: ${errorMessage(e)}` };
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return { seeds: new Map(), problem: 'the seed file must be a JSON object {"<test id>": seed}' };
  const seeds = new Map<string, string>();
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof v === 'number' && Number.isSafeInteger(v)) seeds.set(k, String(v));
    else if (typeof v === 'string' && v.length > 0 && v.length <= 200) seeds.set(k, v);
    else return { seeds: new Map(), problem: `the seed file gives ${JSON.stringify(k)} a seed that is neither an integer nor a string: ${JSON.stringify(v)}` };
  }
  return { seeds };
}

interface Ctx {
  args: CiOptions;
  io: CiIo;
  report: CiReport;
  started: number;
}

function finish(ctx: Ctx, extraFired: string[] = []): CiReport {
  const { report } = ctx;
  const fired = [...new Set([...report.reasons.map((r) => r.row), ...extraFired])];
  const row = decidingRow(fired, report.reasons.filter((r) => FAILURE_KINDS.has(r.kind)).map((r) => r.row));
  if (report.verdict !== 'error') report.verdict = row === 'accept' ? 'green' : 'red';
  if (row === 'accept' && !fired.includes('accept')) fired.push('accept');
  report.fired = DECISION_TABLE.map((r) => r.id).filter((id) => fired.includes(id));
  report.row = report.verdict === 'error' ? 'gate-error' : row;
  if (report.verdict === 'error' && !report.fired.includes('gate-error')) report.fired.unshift('gate-error');
  report.exitCode = report.verdict === 'green' ? 0 : report.verdict === 'red' ? 1 : 2;
  report.ms = Date.now() - ctx.started;
  return report;
}

function red(ctx: Ctx, kind: ReasonKind, row: string, message: string, test?: string): void {
  ctx.report.reasons.push({ kind, row, message, ...(test !== undefined ? { test } : {}) });
}

/** The whole job. Returns the report; never throws for a red run, only for usage errors before anything ran. */
export async function executeCi(args: CiOptions, io: CiIo): Promise<CiReport> {
  const started = Date.now();
  const seed = args.seed !== undefined && args.seed !== '' ? parseSeed(args.seed) : randomSeed();
  // The seed comes first, so a log cut short still says how to replay the run.
  io.out(`patchgate: seed ${seed}`);
  const today = todayOf(args.today);
  if (!args.cmd.length) throw new UsageError('name the test command after --, e.g. patchgate ci --base main --head HEAD -- node --test');
  const repo = resolve(args.repo);
  const report: CiReport = {
    version: 1, seed, verdict: 'red', exitCode: 1, row: 'gate-error', fired: [], reasons: [], repo, base: args.base, head: args.head,
    today: dayOf(today), check: null, command: null, results: null, tests: [], ledger: null, fixtureDigest: null,
    baseline: null, wroteBaseline: null, audit: null, startedAt: new Date(started).toISOString(), ms: 0,
  };
  const ctx: Ctx = { args, io, report, started };
  let tmp: string | null = null;
  try {
    // 1. The static policy, exactly as an agent's push meets it.
    const d: RefDecision = await runCheck({ repo, base: args.base, head: args.head, role: 'agent', ...(args.agentClass !== undefined ? { agentClass: args.agentClass } : {}) });
    report.check = checkJson(d);
    if (d.verdict === 'reject') {
      for (const l of renderDecision(d)) io.out(l);
      if (d.row === 'gate-error') report.verdict = 'error';
      for (const r of d.reasons) red(ctx, r.rule === 'error' ? 'error' : 'check', d.row, r.message);
      if (!d.reasons.length) red(ctx, 'check', d.row, d.action);
      io.out(`patchgate: the static policy refused the patch; the tests were not run${args.evidence && args.agentClass === undefined ? ' (a test author\'s push is judged under its class: add --class, e.g. --class test-author)' : ''}`);
      return finish(ctx);
    }
    io.out(`patchgate: static policy: ACCEPT (contract ${d.contract.head ? d.contract.head.slice(0, 12) : 'n/a'})`);

    const git = new Git({ dir: repo });
    let runArgv: string[];
    let seedFile: string;
    let junitPath: string | null;
    let baseline: Baseline | null = null;
    let digest: string;
    let ledgerRows: Awaited<ReturnType<typeof loadLedgerAt>>['rows'];
    try {
      const baseId = await git.resolveCommit(args.base);
      const headId = await git.resolveCommit(args.head);
      report.base = baseId;
      report.head = headId;
      const policy = await loadPolicy(git, baseId);
      const strict = policy.ci.integrity === 'strict';
      const sandbox: SandboxMode = args.sandbox ?? 'bwrap';
      report.sandbox = strict ? sandbox : null;
      if ((strict || args.evidence) && sandbox === 'bwrap') {
        const can = sandboxAvailable();
        if (!can.ok) {
          red(ctx, 'sandbox-missing', 'sandbox-missing', `the tests were not run: ${can.why}`);
          io.out(`patchgate: ${can.why}; the tests were not run`);
          return finish(ctx);
        }
      } else if (strict) io.out('patchgate: --sandbox none: the tests run NOT SANDBOXED (the report and the verdict say so)');
      // npm test and friends: the script the trusted package.json names, run directly.
      const resolved = await resolveCommand(git, baseId, args.cmd, repo);
      if (resolved.note) io.out(`patchgate: ${resolved.note}`);
      const cmd = resolved.argv;
      // Held-out tests run only in the sealed (strict) run: asked for without it, the run cannot vouch for them.
      if (args.holdout !== undefined && !strict) red(ctx, 'holdout-unavailable', 'holdout-red', `--holdout needs ci.integrity "strict" in the policy on the trusted branch (it is "${policy.ci.integrity}"): the held-out tests were not run`);
      // A sealed run reads the judged tree from git objects; only the old in-checkout run needs the checkout at head.
      if (!strict && !args.evidence) await assertWorkTree(git, headId);

      // 2. The ledger of the judged revision, revalidated, and the fixture digest it binds to.
      const ledger = await loadLedgerAt(git, headId, policy.ledger.path, policy.ledger.maxDays);
      report.ledger = { path: ledger.path, rows: ledger.rows.length, applications: [] };
      if (ledger.problems.length) {
        for (const p of ledger.problems) red(ctx, 'ledger-invalid', 'ledger-invalid', `${ledger.path}:${p.line}: ${p.messageId}: ${p.detail}`);
        for (const r of report.reasons) io.out(`patchgate: ${r.message}`);
        io.out('patchgate: the flake ledger is invalid; the tests were not run');
        return finish(ctx);
      }
      ledgerRows = ledger.rows;
      const lock = await readLock(git, headId, policy.fixtures.lock);
      digest = fixtureDigest(lock ?? new Map());
      report.fixtureDigest = digest;
      if (args.baseline) {
        baseline = await readBaseline(resolve(args.baseline));
        report.baseline = { path: resolve(args.baseline), tests: baseline.tests.length, vanished: [], skipped: [] };
      }

      // 3. Run the command: no shell, in the repository, with the seed exported.
      tmp = await mkdtemp(join(tmpdir(), 'patchgate-ci-'));
      seedFile = join(tmp, 'seeds.json');
      junitPath = args.junit ? resolve(repo, args.junit) : null;
      // A report from an earlier run must never be read as this run's: remove it first.
      if (junitPath) await rm(junitPath, { force: true });
      if (args.junit && isAbsolute(args.junit)) await rm(args.junit, { force: true });
      runArgv = withSeed(cmd, seed);
      report.results = null;
      const runStarted = Date.now();
      // The runner's own output is kept for the end of a run that died; --verbose shows it all.
      const tail = new Tail();
      const relay = args.verbose ? io : { out: tail.push, err: tail.push };
      // The dependencies CI installed in the checkout (node_modules) are linked into the sealed copy.
      const links = existsSync(join(repo, 'node_modules')) ? [{ name: 'node_modules', target: join(repo, 'node_modules') }] : [];
      const hidden = [repo, ...(args.data ? [resolve(args.data)] : [])];
      const plan = { runs: args.runs ?? policy.ci.runs, baseline: policy.ci.baseline === 'auto' && !baseline };
      const so: StrictOptions = { git, policy, repo, cmd, seed, tmp, ...(args.junit ? { junit: args.junit } : {}), io, relay, links, sandbox, hidden, plan, ...(io.progress ? { progress: io.progress } : {}) };
      // --evidence: the push's new and changed tests, on the trusted tip, in place of the suite (evidence.ts).
      if (args.evidence) {
        report.evidence = await evidenceStage(so, { baseId, headId }, evidenceRerun(args), (f) => red(ctx, f.kind, f.row, f.message, f.test));
        printReasons(ctx);
        return finish(ctx);
      }
      let sealed: SealedRun | null = null;
      let res;
      if (strict) {
        // How many times the suite runs, said before the first (issue 49): each run can take minutes.
        const { runs, baseline: withBaseline } = plan;
        io.out(`patchgate: the suite runs ${runs} time(s)${runs > 1 ? ` (run 1 in order, then ${runs - 1} shuffled, to catch tests that depend on order or conditions)` : ''}${withBaseline ? ', and once on the trusted tree for the baseline (cached per trusted tree)' : ''}: ${runs + (withBaseline ? 1 : 0)} run(s) in all; --runs 1 runs it once`);
        sealed = await sealedRun(so, headId, 'run1');
        res = sealed.res;
        runArgv = sealed.argv;
        junitPath = sealed.junit;
      } else {
        io.out(`patchgate: running ${showArgv(runArgv)} (cwd ${repo}, PATCHGATE_SEED=${seed})`);
        res = await runCommand(runArgv, { cwd: repo, env: seedEnv(seed, seedFile), onStdout: relay.out, onStderr: relay.err, capture: !junitPath });
      }
      report.command = { argv: runArgv, exitCode: res.code, signal: res.signal, ms: res.ms };
      if (res.spawnError) {
        // One line: the command is not there. Nothing ran, so there is no table to show.
        report.verdict = 'error';
        report.notRun = res.spawnError;
        red(ctx, 'command-not-found', 'gate-error', res.spawnError);
        io.err(`patchgate: ${res.spawnError}; nothing was judged: install it, or fix the command after -- (exit 2)`);
        return finish(ctx);
      }
      io.out(`patchgate: the command ${res.signal ? `was killed by ${res.signal}` : `exited ${res.code}`} after ${res.ms} ms`);

      // 4. Results from the structured report only.
      let parsed: ParsedReport | null = null;
      const exists = async (p: string): Promise<boolean> => (await git.pathId(headId, p))?.type === 'blob';
      if (junitPath) {
        const st = await stat(junitPath).catch(() => null);
        if (!st) red(ctx, 'no-report', 'report-missing', `no JUnit report at ${junitPath}: the command did not write one, so nothing shows the tests passed`);
        else if (st.mtimeMs < runStarted - 2000) red(ctx, 'stale-report', 'report-missing', `the JUnit report ${junitPath} is older than this run`);
        else {
          try {
            const text = await readFile(junitPath, 'utf8');
            // jest has no JUnit of its own: patchgate asks it for its --json report (runners/js.ts).
            parsed = sealed && junitPath.endsWith('.jest.json') ? parseJestJson(text, sealed.root) : await parseJUnitReport(text, exists);
          } catch (e) {
            red(ctx, 'unreadable-report', 'report-missing', `the JUnit report ${junitPath} cannot be read: ${errorMessage(e)}`);
          }
        }
      } else {
        parsed = parseTap(res.stdout);
      }
      if (parsed) {
        for (const p of parsed.problems) red(ctx, 'incomplete-report', 'report-missing', `the ${parsed.format === 'tap' ? 'TAP stream' : 'JUnit report'} is incomplete: ${p}`);
        const counts = { passed: 0, failed: 0, skipped: 0 };
        for (const t of parsed.tests) counts[t.status]++;
        report.results = { format: parsed.format, source: junitPath ?? 'stdout', total: parsed.tests.length, ...counts, duplicates: parsed.duplicates };
        io.out(`patchgate: ${parsed.format === 'junit' ? `JUnit report ${junitPath}` : parsed.format === 'jest-json' ? `jest's report ${junitPath}` : 'TAP on stdout'}: ${parsed.tests.length} test(s), ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
        if (parsed.duplicates.length) io.out(`patchgate: note: ${parsed.duplicates.length} test id(s) occur more than once; later copies are named "id #2", ...: ${parsed.duplicates.slice(0, 5).join(', ')}`);
        if (!parsed.tests.length && !parsed.problems.length) red(ctx, 'empty-report', 'report-missing', `the ${parsed.format === 'tap' ? 'TAP stream' : 'JUnit report'} lists no tests: an empty run shows nothing`);
      }

      // 4b. The strict run: the gate's own stream, the sealed tree, shuffled reruns, the trusted ids, held-out tests.
      if (sealed) await strictChecks(ctx, so, sealed, parsed, { headId, baseId, ledgerRows, digest, today, policyRuns: policy.ci.runs, autoBaseline: policy.ci.baseline === 'auto' && !baseline });

      // 5. Seeds per test, then the ledger for each failure.
      const sidecar = await readSeedFile(seedFile);
      if (sidecar.problem) red(ctx, 'seed-file', 'contract-red', `${sidecar.problem} (PATCHGATE_SEED_FILE)`);
      const tests = parsed?.tests ?? [];
      const seedOf = (id: string): string => sidecar.seeds.get(id) ?? String(seed);
      const failures = tests.filter((t) => t.status === 'failed').map((t) => ({ id: t.id, seed: seedOf(t.id) }));
      const apps = applyLedger(failures, ledgerRows, digest, today);
      report.ledger.applications = apps;
      const byId = new Map(apps.map((a) => [a.nodeid, a]));
      report.tests = tests.map((t) => ({ ...t, seed: seedOf(t.id), ...(byId.has(t.id) ? { ledger: byId.get(t.id)!.outcome } : {}) }));
      const failLines: string[] = [];
      for (const t of tests.filter((x) => x.status === 'failed')) {
        const a = byId.get(t.id)!;
        failLines.push(`patchgate: FAIL ${t.id} (seed ${a.seed})${t.message ? `: ${t.message}` : ''}`);
        if (a.outcome === 'frozen') failLines.push(`patchgate: ${a.message}; calendar the expiry: ${a.ledger!.expires}`);
        else red(ctx, a.outcome === 'not-frozen' ? 'failed' : a.outcome, a.row, a.message, t.id);
      }
      capped(io, failLines, !!args.verbose, 'failure line(s)', 20);
      const frozen = apps.filter((a) => a.outcome === 'frozen');
      if (res.signal) red(ctx, 'command-failed', 'contract-red', `the command was killed by ${res.signal}`);
      else if (res.code !== 0 && parsed && failures.length === 0) {
        red(ctx, 'command-failed', 'contract-red', `the command exited ${res.code} but the report shows no failing test: the report does not account for the failure`);
      }

      // 6. The oracle may not shrink.
      if (baseline && report.baseline) {
        const cmp = compareBaseline(baseline, tests);
        report.baseline.vanished = cmp.vanished;
        report.baseline.skipped = cmp.skipped;
        for (const id of cmp.vanished) red(ctx, 'vanished', 'oracle-shrank', `${id} ran in the baseline but is missing from this run: the oracle shrank`, id);
        for (const id of cmp.skipped) red(ctx, 'skipped', 'oracle-shrank', `${id} ran in the baseline but was skipped in this run: the oracle shrank`, id);
        if (!cmp.vanished.length && !cmp.skipped.length) io.out(`patchgate: baseline: all ${new Set(baseline.tests).size} baseline test(s) ran`);
      }
      printReasons(ctx);
      // A run that died or wrote no report: its own last lines say why.
      const lost = report.reasons.some((r) => r.kind === 'no-stream' || r.row === 'report-missing');
      const last = tail.take();
      if (lost && last.length && !args.verbose) {
        io.out(`patchgate: the command's last ${last.length} line(s):`);
        for (const l of last) io.out(`  ${l}`);
      }

      finish(ctx, frozen.length ? ['frozen-flake'] : []);
      if (report.verdict === 'green' && args.writeBaseline) {
        const path = resolve(args.writeBaseline);
        const written = await writeBaseline(path, tests, { head: headId, seed, format: parsed!.format, written: new Date().toISOString() });
        report.wroteBaseline = path;
        io.out(`patchgate: wrote the baseline ${path} (${written.length} test(s))`);
      } else if (args.writeBaseline) {
        io.out(`patchgate: the run is not green; the baseline ${resolve(args.writeBaseline)} was not written`);
      }
      return report;
    } finally {
      git.close();
    }
  } catch (e) {
    if (e instanceof UsageError) throw e;
    report.verdict = 'error';
    red(ctx, 'error', 'gate-error', `gate error: ${errorMessage(e).split('\n')[0]}`);
    io.err(`patchgate: gate error: ${errorMessage(e).split('\n')[0]}`);
    return finish(ctx);
  } finally {
    if (tmp) await rm(tmp, { recursive: true, force: true }).catch(() => {});
  }
}

async function strictChecks(ctx: Ctx, so: StrictOptions, first: SealedRun, parsed: ParsedReport | null, o: { headId: string; baseId: string; ledgerRows: Awaited<ReturnType<typeof loadLedgerAt>>['rows']; digest: string; today: Date; policyRuns: number; autoBaseline: boolean }): Promise<void> {
  const { io, args } = ctx;
  const add = (f: StrictFinding) => red(ctx, f.kind, f.row, f.message, f.test);
  first.findings.forEach(add);
  const streamFindings = checkStream(first, parsed?.tests ?? null);
  streamFindings.forEach(add);
  const ok = first.stream && !streamFindings.some((f) => f.kind === 'no-stream');
  if (ok) io.out(`patchgate: patchgate's reporter: ${first.stream!.tests.length} test(s) streamed${streamFindings.length ? `, ${streamFindings.length} disagreement(s) with the report` : ', in agreement with the report and the exit status'}`);
  // Order and repetition: later runs shuffled from the seed (pytest through patchgate's plugin, node:test by file order).
  const runs = args.runs ?? o.policyRuns;
  for (let i = 2; ok && i <= runs; i++) {
    const again = await laterRun(so, o.headId, i, first.stream!);
    io.out(`patchgate: run ${i} of ${runs}, ${again.how}; environment varied: ${again.varied}`);
    ctx.report.variation = [...(ctx.report.variation ?? []), { run: i, clock: again.vary.faketime ? `+${again.vary.years}y` : null, uid: so.sandbox === 'none' ? null : again.vary.uid, hostname: so.sandbox === 'none' ? null : again.vary.hostname, home: again.vary.home, pythonHashSeed: again.vary.hashSeed }];
    if (!again.vary.faketime) io.out(`patchgate: note: run ${i}'s clock is not varied: libfaketime is not installed (Debian: apt-get install libfaketime); the other conditions are`);
    again.findings.forEach(add);
    if (!again.stream?.ended) continue;
    const changes = orderChanges(first.stream!, again.stream);
    // Order or environment: the same conditions in run 1's order tell them apart (only when something changed).
    let byEnv = new Set<string>();
    if (changes.length) {
      const env = await environmentRun(so, o.headId, i, again.vary);
      env.findings.forEach(add);
      if (env.stream?.ended) byEnv = new Set(orderChanges(first.stream!, env.stream).map((c) => c.id));
    }
    for (const c of changes) {
      const app = applyLedger([{ id: c.id, seed: String(so.seed) }], o.ledgerRows, o.digest, o.today)[0];
      if (app?.outcome === 'frozen') {
        io.out(`patchgate: ${c.id} changed outcome in run ${i}, frozen in the ledger until ${app.ledger!.expires}`);
        continue;
      }
      if (byEnv.has(c.id)) red(ctx, 'environment-dependent', 'environment-dependent', `${c.id} ${c.from} in run 1 but ${c.to} in run ${i}, also in run 1's order: its outcome depends on the conditions of the run (${again.varied}), not on the code's inputs; replay: patchgate ci --seed ${so.seed} ...`, c.id);
      else red(ctx, 'order-dependent', 'order-dependent', `${c.id} ${c.from} in run 1 but ${c.to} in run ${i} (${again.how}): its outcome depends on the tests before it (state carried between tests); replay: patchgate ci --seed ${so.seed} ...`, c.id);
    }
  }
  // The tested code must be the judged tree's: where pytest imported the project's own modules from.
  if (ok && Object.keys(first.stream!.modules).length) {
    ctx.report.modules = {};
    const project = await projectModules(so.git, o.headId);
    for (const [name] of project) if (first.stream!.modules[name]) ctx.report.modules[name] = first.stream!.modules[name]!;
    const plugins = so.policy.ci.pytestPlugins;
    for (const m of foreignModules(first.stream!.modules, project, first.root, plugins)) red(ctx, 'not-judged-code', 'not-the-judged-code', foreignMessage(m), m.name);
    await runnerCheck(ctx, so, first, o.headId);
  }
  // The baseline without a green run: the trusted tree's own run, under the same command.
  if (ok && o.autoBaseline) await trustedBaseline(ctx, so, first, o.baseId);
  // Held-out tests (ids only, never their source or output) and sealed expectations (holdout-run.ts).
  if (ok && args.holdout !== undefined) {
    const stage = await heldOutStage(so, args.holdout, { headId: o.headId, baseId: o.baseId }, add);
    ctx.report.holdout = stage.holdout;
    ctx.report.sealed = stage.sealed;
  }
}

/**
 * The runner is not the project's (issue 46): pytest and its plugins were imported from outside
 * the sealed tree (channel/sitecustomize.py pins them); the judged tree's modules named like
 * them are listed as not imported. A runner module from inside the tree means the pin failed:
 * the run is not evidence.
 */
async function runnerCheck(ctx: Ctx, so: StrictOptions, first: SealedRun, headId: string): Promise<void> {
  const plugins = so.policy.ci.pytestPlugins;
  const imported = first.stream!.modules;
  const shadowed = await runnerShadows(so.git, headId, plugins);
  const modules = Object.fromEntries(Object.entries(imported).filter(([n]) => isRunnerModule(n, plugins)));
  ctx.report.runner = { modules, shadowed };
  for (const m of runnerFromTree(imported, first.root, plugins)) {
    red(ctx, 'runner-shadowed', 'report-forged', `the runner's module ${m.name} was imported from the judged tree's ${m.file}: the project ran its own test runner, so the run is not evidence; rename the project's module`, m.name);
  }
  if (shadowed.length) {
    ctx.io.out(`patchgate: the judged tree's ${shadowed.join(', ')} ${shadowed.length > 1 ? 'are' : 'is'} named like the test runner's module${shadowed.length > 1 ? 's' : ''} and ${shadowed.length > 1 ? 'were' : 'was'} not imported in ${shadowed.length > 1 ? 'their' : 'its'} place: pytest, its plugins and patchgate's plugin load from outside the sealed tree${imported.pytest ? ` (pytest from ${imported.pytest})` : ''}`);
  }
}

/**
 * The oracle may not shrink: every test that ran (passed or failed) on the trusted tree, under
 * the same command, runs here too. One the trusted tree skipped may stay skipped.
 */
async function trustedBaseline(ctx: Ctx, so: StrictOptions, first: SealedRun, baseId: string): Promise<void> {
  const { io } = ctx;
  const tree = await so.git.commitTree(baseId);
  const common = resolve(so.repo, (await so.git.text(['rev-parse', '--git-common-dir'])).trim());
  const t = await trustedRun({ cacheDir: join(common, 'patchgate', 'baselines'), tree, base: baseId, key: [so.cmd, so.policy.ci.pytestPlugins, runnerKind(so.cmd).kind, so.sandbox ?? 'bwrap'] }, async () => {
    io.out(`patchgate: running the trusted tree ${baseId.slice(0, 12)} under the same command for the baseline (cached per trusted tree)`);
    return (await sealedRun(so, baseId, 'baseline', { quiet: true })).stream;
  });
  if (t.problem) {
    red(ctx, 'no-stream', 'report-forged', `${t.problem}: without the trusted run nothing shows the oracle did not shrink (give --baseline FILE, or fix the trusted branch)`);
    return;
  }
  const cmp = compareTrusted(t.tests, first.stream!.tests);
  ctx.report.baseline = { path: `(trusted tree ${baseId.slice(0, 12)}${t.cached ? ', cached' : ''}: ${t.file})`, tests: cmp.ran, vanished: cmp.vanished, skipped: cmp.skipped, skippedThere: cmp.skippedThere };
  for (const id of cmp.vanished) red(ctx, 'vanished', 'oracle-shrank', `${id} ran on the trusted tree but did not run here: the oracle shrank (did the code exit, skip or fail to import?)`, id);
  for (const id of cmp.skipped) red(ctx, 'skipped', 'oracle-shrank', `${id} ran on the trusted tree but was skipped or xfailed here: the oracle shrank`, id);
  if (!cmp.vanished.length && !cmp.skipped.length) io.out(`patchgate: baseline: all ${cmp.ran} test(s) that ran on the trusted tree ran here${cmp.skippedThere ? ` (${cmp.skippedThere} skipped there too)` : ''}`);
}

/** The command that runs the evidence check again, as the user gave it (the next step of every finding). */
function evidenceRerun(a: CiOptions): string {
  const q = (s: string) => (/^[\w./:=@+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
  return ['patchgate', 'ci', '--evidence', ...(a.agentClass ? ['--class', a.agentClass] : []), ...(resolve(a.repo) !== process.cwd() ? ['--repo', resolve(a.repo)] : []), '--base', a.base, '--head', a.head, ...(a.sandbox === 'none' ? ['--sandbox', 'none'] : []), '--', ...a.cmd].map(q).join(' ');
}

/** The reasons, failures last; in the summary at most a few per kind (the JSON report has all). */
function printReasons(ctx: Ctx): void {
  const verbose = !!ctx.args.verbose;
  const byKind = new Map<string, string[]>();
  for (const r of ctx.report.reasons) byKind.set(r.kind, [...(byKind.get(r.kind) ?? []), `patchgate: ${r.message}`]);
  const kinds = [...byKind.keys()];
  for (const k of [...kinds.filter((x) => !FAILURE_KINDS.has(x)), ...kinds.filter((x) => FAILURE_KINDS.has(x))]) capped(ctx.io, byKind.get(k)!, verbose, `"${k}" reason(s)`);
}

export async function writeJsonReport(path: string, report: CiReport): Promise<void> {
  const abs = resolve(path);
  await mkdir(dirname(abs), { recursive: true });
  await writeFile(abs, JSON.stringify(report, null, 2) + '\n');
}

/** Add the run to the data folder's audit log (the one the server uses: src/commands/folder-log.ts). Returns the row id. */
export async function auditCi(dataDir: string, report: CiReport, audit?: string): Promise<number> {
  const { withFolderLog } = await import('../commands/folder-log.js');
  return withFolderLog({ data: dataDir, ...(audit !== undefined ? { audit } : {}) }, (store) => store.appendCi({
      repo: basename(report.repo) || report.repo,
      base: report.base,
      head: report.head,
      verdict: report.verdict === 'green' ? 'accept' : 'reject',
      actor: process.env.PATCHGATE_ACTOR ?? null,
      detail: {
        seed: report.seed, outcome: report.verdict, row: report.row, fired: report.fired, exitCode: report.exitCode, sandbox: report.sandbox ?? null,
        repoPath: report.repo, today: report.today,
        reasons: report.reasons.slice(0, 200),
        command: report.command, results: report.results,
        ledger: report.ledger ? { path: report.ledger.path, rows: report.ledger.rows, applications: report.ledger.applications.slice(0, 200) } : null,
        fixtureDigest: report.fixtureDigest,
        baseline: report.baseline,
        holdout: report.holdout ?? null,
        sealed: report.sealed ?? null,
        ...(report.evidence ? { evidence: report.evidence } : {}),
        check: report.check ? { verdict: report.check.verdict, row: report.check.row, contract: report.check.contract } : null,
      },
    }));
}
