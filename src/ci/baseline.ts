// The trusted baseline of `patchgate ci`: the ids of the tests that ran in the last green run
// of the base. A patch may not shrink the oracle: a baseline test that vanished from the
// report, or that the report skipped, is red even when everything that did run passed.
// Without a baseline file, the baseline is the trusted tree's own run (trustedRun below).

import { readFile, writeFile, mkdir, rename } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { UsageError, errorMessage } from '../errors.js';
import type { TestResult } from './reports.js';

export interface Baseline {
  tests: string[];
}

export interface BaselineComparison {
  /** Baseline tests the report does not mention at all. */
  vanished: string[];
  /** Baseline tests the report lists as skipped (or TODO). */
  skipped: string[];
}

/** Read `{"tests": ["id", ...]}`; other keys are kept for people and ignored here. Throws UsageError. */
export async function readBaseline(path: string): Promise<Baseline> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new UsageError(`--baseline: cannot read ${path}: ${errorMessage(e)}`, { cause: e });
  }
  return parseBaseline(text, path);
}

export function parseBaseline(text: string, source: string): Baseline {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`--baseline: ${source} is not JSON: ${errorMessage(e)}`, { cause: e });
  }
  const tests = (raw as { tests?: unknown } | null)?.tests;
  if (!raw || typeof raw !== 'object' || !Array.isArray(tests) || !tests.every((t) => typeof t === 'string' && t.length > 0)) {
    throw new UsageError(`--baseline: ${source} must be {"tests": ["test id", ...]}`);
  }
  return { tests: tests as string[] };
}

/** A test ran when it passed or failed; skipped and TODO tests did not judge anything. */
export function ran(t: TestResult): boolean {
  return t.status === 'passed' || t.status === 'failed';
}

export function compareBaseline(baseline: Baseline, results: TestResult[]): BaselineComparison {
  const byId = new Map(results.map((r) => [r.id, r]));
  const vanished: string[] = [];
  const skipped: string[] = [];
  for (const id of new Set(baseline.tests)) {
    const r = byId.get(id);
    if (!r) vanished.push(id);
    else if (!ran(r)) skipped.push(id);
  }
  return { vanished, skipped };
}

/** Write the baseline of a green run (atomically: a half-written baseline is never read). */
export async function writeBaseline(path: string, results: TestResult[], meta: Record<string, unknown>): Promise<string[]> {
  const tests = [...new Set(results.filter(ran).map((r) => r.id))].sort();
  const body = JSON.stringify({ ...meta, tests }, null, 2) + '\n';
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, body);
  await rename(tmp, path);
  return tests;
}

// ------------------------------------------------------------------ the trusted tree's run

/** One test of the trusted tree's run: its id and how it ended there. */
export interface TrustedTest {
  id: string;
  status: TestResult['status'];
}

export interface TrustedRun {
  tests: TrustedTest[];
  cached: boolean;
  /** The cache file (under the repository's git folder). */
  file: string;
  problem?: string;
}

/** What a run of the trusted tree streamed: enough to cache and compare. */
export interface TrustedStream {
  started: boolean;
  ended: boolean;
  tests: TrustedTest[];
  collectErrors: string[];
}

/** The cache format; bump it when what is stored changes meaning (v1 held --collect-only ids). */
const TRUSTED_FORMAT = 'trusted-run:2';

/**
 * The baseline without a green run (ci.baseline "auto"): the trusted tree run under the same
 * command, runner and environment, its ids *and outcomes* kept. Cached per trusted tree id and
 * command (and whatever else `key` holds, e.g. the sandbox) under the repository's git folder,
 * so a trusted tree runs once however many patches are judged against it.
 */
export async function trustedRun(o: { cacheDir: string; tree: string; base: string; key: unknown[] }, run: () => Promise<TrustedStream | null>): Promise<TrustedRun> {
  const key = createHash('sha256').update(JSON.stringify([TRUSTED_FORMAT, o.tree, ...o.key])).digest('hex').slice(0, 32);
  const file = join(o.cacheDir, `${key}.json`);
  try {
    const c = JSON.parse(await readFile(file, 'utf8')) as { format?: string; tree?: string; tests?: unknown };
    if (c.format === TRUSTED_FORMAT && c.tree === o.tree && Array.isArray(c.tests) && c.tests.every(isTrustedTest)) return { tests: c.tests as TrustedTest[], cached: true, file };
  } catch { /* not cached yet, or unreadable: run it again */ }
  const s = await run();
  if (!s || !s.started || !s.ended) return { tests: [], cached: false, file, problem: `the trusted tree's run did not report (patchgate's reporter stream ${s ? 'incomplete' : 'absent'})` };
  if (s.collectErrors.length) return { tests: [], cached: false, file, problem: `collection fails on the trusted tree: ${s.collectErrors.slice(0, 3).join(', ')}` };
  const tests = s.tests.map((t) => ({ id: t.id, status: t.status }));
  await mkdir(o.cacheDir, { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, JSON.stringify({ format: TRUSTED_FORMAT, tree: o.tree, base: o.base, written: new Date().toISOString(), tests }, null, 2) + '\n');
  await rename(tmp, file);
  return { tests, cached: false, file };
}

function isTrustedTest(t: unknown): boolean {
  const x = t as TrustedTest | null;
  return !!x && typeof x.id === 'string' && (x.status === 'passed' || x.status === 'failed' || x.status === 'skipped');
}

/**
 * The oracle shrank only where a test that *ran* on the trusted tree (passed or failed there)
 * did not run here: it is missing, or skipped. A test the trusted tree skipped too (click's
 * Windows-only tests off Windows) may stay skipped.
 */
export function compareTrusted(trusted: TrustedTest[], here: Array<{ id: string; status: TestResult['status'] }>): BaselineComparison & { ran: number; skippedThere: number } {
  const now = new Map(here.map((t) => [t.id, t.status]));
  const vanished: string[] = [];
  const skipped: string[] = [];
  let ran = 0;
  let skippedThere = 0;
  for (const t of trusted) {
    if (t.status === 'skipped') {
      skippedThere++;
      continue;
    }
    ran++;
    const s = now.get(t.id);
    if (s === undefined) vanished.push(t.id);
    else if (s === 'skipped') skipped.push(t.id);
  }
  return { vanished, skipped, ran, skippedThere };
}
