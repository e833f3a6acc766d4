// The channel `patchgate ci` owns: patchgate's own reporter (a pytest plugin, a node:test
// reporter module), written to a folder outside the work tree and attached to the test
// command, streams each test's outcome to the gate on a pipe (fd 3). The tested code can
// rewrite a JUnit file; it does not own this pipe. This module attaches the reporter to an
// argv, parses the stream and cross-checks it against the runner's report and exit status.

import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { numberIds } from './node-order.js';
import { pluginModules, pythonSourceRoots } from './judged-code.js';
import { attachJs, jsRunnerAt } from './runners/js.js';
import type { TestResult } from './reports.js';
import type { Stream, Tamper } from './stream.js';

export type RunnerKind = 'pytest' | 'node' | 'vitest' | 'jest' | 'unknown';

/** The fd of the child the reporter writes to. */
export const CHANNEL_FD = 3;

export function pluginDir(): string {
  const here = fileURLToPath(new URL('./channel/', import.meta.url));
  return existsSync(here) ? here : fileURLToPath(new URL('../../src/ci/channel/', import.meta.url));
}

export interface Attached {
  kind: RunnerKind;
  argv: string[];
  /** Extra environment for the child (PYTHONPATH with the plugin's folder). */
  env: Record<string, string>;
  /** Where the gate itself asked the runner to write JUnit (pytest without --junit). */
  junit: string | null;
}

export interface AttachOptions {
  /** A folder of the gate's, outside the work tree. */
  dir: string;
  seed: number;
  /** Shuffle the order from this seed (pytest). */
  shuffle?: number;
  /** `-p NAME` plugins the trusted policy allows (autoload is off). */
  plugins: string[];
  /** True when the caller reads JUnit itself (--junit given). */
  haveReport: boolean;
  /** Collect only (the baseline of the trusted tree). */
  collectOnly?: boolean;
  /** pytest: run only the test of this node id (ledger freeze's re-run). */
  only?: string;
  /** The sealed tree: its Python source roots go first on PYTHONPATH, so the judged code is what is imported. */
  root?: string;
}

export function runnerKind(argv: string[]): { kind: RunnerKind; at: number } {
  const js = jsRunnerAt(argv);
  if (js) return js;
  for (let i = 0; i < argv.length; i++) {
    const b = basename(argv[i]!);
    if (/^(py\.test|pytest(-3)?)$/.test(b)) return { kind: 'pytest', at: i + 1 };
    if (argv[i] === '-m' && argv[i + 1] === 'pytest' && i > 0 && /^python[\d.]*$/.test(basename(argv[0]!))) return { kind: 'pytest', at: i + 2 };
  }
  if (argv[0] && (argv[0] === process.execPath || /^node(js)?\d*$/.test(basename(argv[0])))) return { kind: 'node', at: 1 };
  return { kind: 'unknown', at: 0 };
}

/** Attach patchgate's reporter to the command. An unknown runner gets none (and its run is red). */
export async function attachChannel(argv: string[], o: AttachOptions): Promise<Attached> {
  const { kind, at } = runnerKind(argv);
  await mkdir(o.dir, { recursive: true });
  if (kind === 'pytest') {
    await copyFile(join(pluginDir(), 'patchgate_channel.py'), join(o.dir, 'patchgate_channel.py'));
    // site.py's sitecustomize/usercustomize: patchgate's stand-in, first on PYTHONPATH (channel/sitecustomize.py).
    for (const name of ['sitecustomize.py', 'usercustomize.py']) await copyFile(join(pluginDir(), 'sitecustomize.py'), join(o.dir, name));
    // The policy's -p plugins are the runner's too: the stand-in pins them outside the tree.
    await writeFile(join(o.dir, 'patchgate-runner.txt'), pluginModules(o.plugins).map((n) => `${n}\n`).join(''));
    const extra = ['-p', 'patchgate_channel', `--patchgate-fd=${CHANNEL_FD}`, `--patchgate-seed=${o.seed}`, '-p', 'no:cacheprovider'];
    for (const p of o.plugins) extra.push('-p', p);
    if (o.shuffle !== undefined) extra.push(`--patchgate-shuffle=${o.shuffle}`);
    if (o.only !== undefined) extra.push(`--patchgate-only=${o.only}`);
    let junit: string | null = null;
    if (o.collectOnly) extra.push('--collect-only', '-q');
    else if (!o.haveReport) {
      junit = join(o.dir, 'junit.xml');
      extra.push(`--junitxml=${junit}`);
    }
    // The sealed tree's source roots first: an installed copy of the project must not be what runs.
    const pp = [o.dir, ...(o.root ? pythonSourceRoots(o.root) : [])].join(':');
    return { kind, argv: [...argv.slice(0, at), ...extra, ...argv.slice(at)], env: { PYTHONPATH: pp }, junit };
  }
  // The node tripwire (channel/patchgate-preload.mjs), loaded before the first line of tested code.
  const preload = join(o.dir, 'patchgate-preload.mjs');
  if (kind !== 'unknown') await copyFile(join(pluginDir(), 'patchgate-preload.mjs'), preload);
  if (kind === 'node') {
    const reporter = join(o.dir, 'patchgate-reporter.mjs');
    await copyFile(join(pluginDir(), 'patchgate-reporter.mjs'), reporter);
    const rest = argv.slice(1);
    const reporters = rest.filter((a) => a === '--test-reporter' || a.startsWith('--test-reporter=')).length;
    const dests = rest.filter((a) => a === '--test-reporter-destination' || a.startsWith('--test-reporter-destination=')).length;
    const extra = [`--import=${preload}`, `--test-reporter=${reporter}`, `--test-reporter-destination=/dev/null`];
    const tail: string[] = [];
    // node pairs reporters with destinations by position: ours first, the project's after.
    if (reporters === 0) tail.push('--test-reporter=tap', '--test-reporter-destination=stdout');
    else for (let i = dests; i < reporters; i++) tail.push('--test-reporter-destination=stdout');
    // Options must come before the script/test paths: put the tail right after ours. Child
    // processes get the preload through NODE_OPTIONS (it runs once per thread; Workers: the preload itself).
    return { kind, argv: [argv[0]!, ...extra, ...tail, ...rest], env: { NODE_OPTIONS: `--import=${JSON.stringify(preload)}` }, junit: null };
  }
  if (kind === 'vitest' || kind === 'jest') {
    const file = kind === 'vitest' ? 'patchgate-vitest-reporter.mjs' : 'patchgate-jest-reporter.cjs';
    const reporter = join(o.dir, file);
    await copyFile(join(pluginDir(), file), reporter);
    const a = attachJs(kind, argv, at, { dir: o.dir, reporter, seed: o.seed, ...(o.shuffle !== undefined ? { shuffle: o.shuffle } : {}), haveReport: o.haveReport });
    return { kind, argv: a.argv, env: { NODE_OPTIONS: `--import=${preload}` }, junit: a.report };
  }
  return { kind, argv, env: {}, junit: null };
}

export type { Stream, StreamTest, Tamper } from './stream.js';

/** The line the node preload writes on stderr when a tripwire fires (the reporters and the gate read it). */
export const TRIPWIRE_MARK = 'patchgate-tripwire ';

/** A tripwire record, or null when `r` is not a well-formed one. */
export function tamperOf(r: Record<string, unknown>): Tamper | null {
  if (typeof r.event !== 'string') return null;
  return { event: r.event.slice(0, 80), file: typeof r.file === 'string' ? r.file.slice(0, 300) : '', line: typeof r.line === 'number' ? r.line : 0, detail: typeof r.detail === 'string' ? r.detail.slice(0, 300) : '' };
}

/** Tripwire records in the command's own output lines (the node preload writes them on stderr). */
export function tampersInOutput(lines: string[]): Tamper[] {
  const out: Tamper[] = [];
  for (const l of lines) {
    const i = l.indexOf(TRIPWIRE_MARK);
    if (i < 0) continue;
    try {
      const t = tamperOf(JSON.parse(l.slice(i + TRIPWIRE_MARK.length)) as Record<string, unknown>);
      if (t) out.push(t);
    } catch {
      /* a cut line: the stream's own record (if any) still counts */
    }
  }
  return out;
}

/** Parse the reporter's JSON lines. `root` is the sealed tree (node's file ids are made relative to it). */
export function parseStream(text: string, kind: RunnerKind, root: string): Stream {
  const s: Stream = { started: false, ended: false, exitstatus: null, collected: [], collectErrors: [], tests: [], problems: [], modules: {}, tampers: [] };
  const nodeRecs: Array<{ path: string[]; file: string | null; status: TestResult['status'] }> = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let r: Record<string, unknown>;
    try {
      r = JSON.parse(line) as Record<string, unknown>;
    } catch {
      s.problems.push(`a line of the stream is not JSON: ${JSON.stringify(line.slice(0, 80))}`);
      continue;
    }
    if (r.t === 'tamper') {
      // A tripwire counts wherever it is in the stream (an exit handler can fire one after the end).
      const t = tamperOf(r);
      if (t) s.tampers.push(t);
      continue;
    }
    if (s.ended) {
      s.problems.push('the stream goes on after its end record');
      continue;
    }
    const st = r.status === 'passed' || r.status === 'failed' || r.status === 'skipped' ? r.status : null;
    if (r.t === 'start') {
      if (s.started) s.problems.push('the stream started twice');
      s.started = true;
    } else if (r.t === 'end') {
      s.ended = true;
      s.exitstatus = typeof r.exitstatus === 'number' ? r.exitstatus : null;
    } else if (r.t === 'collected' && typeof r.id === 'string') s.collected.push(r.id);
    else if (r.t === 'collect-error' && typeof r.id === 'string') s.collectErrors.push(r.id);
    else if (r.t === 'modules' && r.files && typeof r.files === 'object') {
      for (const [k, v] of Object.entries(r.files as Record<string, unknown>)) if (typeof v === 'string') s.modules[k] = v;
    } else if (r.t === 'test' && st && kind !== 'node' && typeof r.id === 'string') s.tests.push({ id: r.id, status: st });
    else if (r.t === 'test' && st && kind === 'node' && Array.isArray(r.path) && r.path.every((x) => typeof x === 'string')) {
      const file = typeof r.file === 'string' ? r.file : null;
      const path = (r.path as string[]).map((n, i) => (i === 0 && file && n === file ? relative(root, file) : n));
      nodeRecs.push({ path, file, status: st });
    } else s.problems.push(`an unknown stream record: ${JSON.stringify(line.slice(0, 80))}`);
  }
  if (kind === 'node') {
    // A test with subtests is a group, as in TAP: it counts only when it failed while its subtests passed.
    const key = (r: { path: string[]; file: string | null }) => `${r.file}\0${r.path.join('\0')}`;
    const children = new Map<string, Array<TestResult['status']>>();
    for (const r of nodeRecs) {
      for (let n = 1; n < r.path.length; n++) {
        const k = key({ file: r.file, path: r.path.slice(0, n) });
        children.set(k, [...(children.get(k) ?? []), r.status]);
      }
    }
    for (const r of nodeRecs) {
      const kids = children.get(key(r));
      if (kids && !(r.status === 'failed' && !kids.includes('failed'))) continue;
      const id = r.path.join(' > ');
      s.tests.push({ id, name: id, status: r.status, ...(r.file ? { file: relative(root, r.file) } : {}) });
    }
  }
  // As in the reports: no result can hide another.
  numberIds(s.tests, false);
  return s;
}

export interface CrossCheck {
  /** One line per disagreement (capped by the caller). */
  mismatches: string[];
  noStream: string | null;
}

/** Normalise a report id to the stream's form: JUnit `classname::name` of node becomes `name`; the sealed root is dropped. */
function reportKeys(id: string, root: string): string[] {
  const noRoot = id.split(root + '/').join('');
  const keys = [noRoot];
  const i = noRoot.indexOf('::');
  if (i >= 0) keys.push(noRoot.slice(i + 2));
  return keys;
}

/** The stream against the runner's report and exit status. Any disagreement is listed. */
export function crossCheck(stream: Stream | null, kind: RunnerKind, report: TestResult[] | null, exit: { code: number | null; signal: string | null }, root: string): CrossCheck {
  const out: CrossCheck = { mismatches: [], noStream: null };
  if (kind === 'unknown') {
    out.noStream = 'the command is not pytest, node, vitest or jest (nor an npm/yarn/pnpm script that names one), so patchgate could not attach its own reporter and cannot vouch for the results; run the runner directly after --, not through a shell script';
    return out;
  }
  if (!stream || !stream.started) {
    out.noStream = `patchgate's ${kind} reporter sent nothing: the run never reached the runner's reporting (the process died, exited early, or the reporter was removed)`;
    return out;
  }
  if (!stream.ended) {
    out.noStream = `patchgate's ${kind} reporter stream has no end record: the run stopped before the runner finished (an exit at import or in a test?)`;
    return out;
  }
  for (const p of stream.problems) out.mismatches.push(`the stream is damaged: ${p}`);
  const streamed = new Map(stream.tests.map((t) => [t.id, t.status]));
  const failedStream = stream.tests.filter((t) => t.status === 'failed').length;
  if (kind === 'pytest' && stream.exitstatus !== null && exit.signal === null && exit.code !== stream.exitstatus) {
    out.mismatches.push(`pytest finished with exit status ${stream.exitstatus} but the process exited ${exit.code}: something changed the exit code after the session ended`);
  }
  if (failedStream > 0 && exit.code === 0) out.mismatches.push(`${failedStream} test(s) failed by patchgate's reporter, but the command exited 0`);
  if (stream.collectErrors.length) out.mismatches.push(`collection failed for ${stream.collectErrors.slice(0, 5).join(', ')}`);
  if (report) {
    const matched = new Set<string>();
    for (const r of report) {
      const k = reportKeys(r.id, root).find((x) => streamed.has(x));
      if (k === undefined) {
        out.mismatches.push(`the report lists ${r.id} (${r.status}) but patchgate's reporter never saw it run`);
        continue;
      }
      matched.add(k);
      if (streamed.get(k) !== r.status) out.mismatches.push(`the report says ${r.id} ${r.status}, patchgate's reporter saw it ${streamed.get(k)}`);
    }
    for (const t of stream.tests) if (!matched.has(t.id)) out.mismatches.push(`patchgate's reporter saw ${t.id} ${t.status}, but the report does not list it`);
  }
  return out;
}
