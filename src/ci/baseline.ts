// The trusted baseline of `patchgate ci`: the ids of the tests that ran in the last green run
// of the base. A patch may not shrink the oracle: a baseline test that vanished from the
// report, or that the report skipped, is red even when everything that did run passed.

import { readFile, writeFile, mkdir, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
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
