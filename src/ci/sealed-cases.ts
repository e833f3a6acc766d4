// Sealed expectations (issue 46): held-out checks whose expected values never enter the
// sandbox. A held-out source may hold `*.sealed.json` files of cases (a module, a function,
// arguments, and the value or exception expected). The gate takes them out of the held-out
// folder before anything is copied into a sealed tree, hands the sandbox only the calls, and
// compares the results here, in the gate's own process: a report written from inside cannot
// pass without knowing values it never saw. The format and the canonical result encoding are
// documented in docs/ci.md ("Sealed expectations").

import { mkdir, readdir, readFile, rename } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { z } from 'zod';
import { SealedCaseError } from '../errors.js';

export type SealedLanguage = 'python' | 'node';

/** One case as the gate keeps it: what the sandbox gets (the call) and what it never gets (the expectation). */
export interface SealedCase {
  /** `file#index` or `file#index (id)`: how every message names the case. */
  label: string;
  file: string;
  index: number;
  language: SealedLanguage;
  call: { module: string; function: string; args: unknown[]; kwargs?: Record<string, unknown> };
  expect: { value: unknown; tolerance?: number } | { raises: { type: string; message?: string } };
}

/** A file name that holds sealed cases, anywhere in the held-out source. */
export const SEALED_FILE = /\.sealed\.json$/;

const PY_MODULE = /^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$/;
const JS_MODULE = /^(?!\/)(?!.*(^|\/)\.\.(\/|$))[^\0]+\.(m?js|cjs|mts|cts|ts|jsx|tsx)$/;
const FUNCTION = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/;

const FileSchema = z.object({
  version: z.literal(1),
  language: z.enum(['python', 'node']).optional(),
  cases: z.array(z.unknown()).min(1, 'a sealed file needs at least one case'),
}).strict();

const CaseSchema = z.object({
  id: z.string().min(1).max(200).optional(),
  module: z.string().min(1).max(500),
  function: z.string().regex(FUNCTION, 'a name or a dotted path of names (Class.method)'),
  args: z.array(z.unknown()).default([]),
  kwargs: z.record(z.string(), z.unknown()).optional(),
  expect: z.unknown().optional(),
  raises: z.object({ type: z.string().min(1).max(200), message: z.string().optional() }).strict().optional(),
  tolerance: z.number().finite().nonnegative().optional(),
}).strict();

function zodLine(e: z.ZodError): string {
  const i = e.issues[0];
  if (!i) return 'invalid';
  return `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`;
}

/** Validate one sealed file's text. Throws SealedCaseError naming the file and, for a bad case, its index. */
export function parseSealedFile(file: string, text: string): SealedCase[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new SealedCaseError(file, null, `not JSON: ${(e as Error).message}`, { cause: e });
  }
  const top = FileSchema.safeParse(raw);
  if (!top.success) throw new SealedCaseError(file, null, zodLine(top.error), { cause: top.error });
  const language = top.data.language ?? null;
  const ids = new Set<string>();
  return top.data.cases.map((rawCase, index) => {
    const c = CaseSchema.safeParse(rawCase);
    if (!c.success) throw new SealedCaseError(file, index, zodLine(c.error), { cause: c.error });
    const hasExpect = Object.prototype.hasOwnProperty.call(rawCase, 'expect');
    if (hasExpect === !!c.data.raises) throw new SealedCaseError(file, index, 'give exactly one of "expect" (the value) and "raises" (the exception)');
    if (c.data.tolerance !== undefined && !hasExpect) throw new SealedCaseError(file, index, '"tolerance" applies to an expected value, not to "raises"');
    if (hasExpect) checkCanonical(c.data.expect, file, index);
    if (language === 'node' && c.data.kwargs) throw new SealedCaseError(file, index, '"kwargs" are Python keyword arguments; a node function takes "args" only');
    const py = language === 'python' || (language === null && PY_MODULE.test(c.data.module));
    if (py ? !PY_MODULE.test(c.data.module) : !JS_MODULE.test(c.data.module)) {
      throw new SealedCaseError(file, index, `module ${JSON.stringify(c.data.module)}: ${py ? 'a dotted Python module name (calc, pkg.sub)' : 'a path of the tree, relative to its root, ending in .js/.mjs/.cjs/.ts (src/calc.mjs)'}`);
    }
    if (c.data.id !== undefined) {
      if (ids.has(c.data.id)) throw new SealedCaseError(file, index, `the id ${JSON.stringify(c.data.id)} is used twice in the file`);
      ids.add(c.data.id);
    }
    return {
      label: `${file}#${index}${c.data.id !== undefined ? ` (${c.data.id})` : ''}`,
      file, index, language: language ?? (py ? 'python' : 'node'),
      call: { module: c.data.module, function: c.data.function, args: c.data.args, ...(c.data.kwargs ? { kwargs: c.data.kwargs } : {}) },
      expect: hasExpect ? { value: c.data.expect, ...(c.data.tolerance !== undefined ? { tolerance: c.data.tolerance } : {}) } : { raises: c.data.raises! },
    };
  });
}

/** An expected value must be one the runners can return: JSON, with `{"$repr": "..."}` for the rest. */
function checkCanonical(v: unknown, file: string, index: number, path = 'expect'): void {
  if (v === null || typeof v === 'boolean' || typeof v === 'string' || typeof v === 'number') return;
  if (Array.isArray(v)) return v.forEach((x, i) => checkCanonical(x, file, index, `${path}[${i}]`));
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.includes('$repr') && (keys.length !== 1 || typeof o.$repr !== 'string')) throw new SealedCaseError(file, index, `${path}: {"$repr": "..."} takes one string and no other key`);
  for (const k of keys) if (k !== '$repr') checkCanonical(o[k], file, index, `${path}.${k}`);
}

export interface SealedSet {
  /** The sealed files, relative to the held-out source. */
  files: string[];
  cases: SealedCase[];
}

/**
 * Take every `*.sealed.json` out of the held-out folder `dir` (moved to `aside`, a folder no
 * sandbox mounts), so no copy of the held-out tests ever carries an expected value, and read
 * their cases. Throws SealedCaseError for the first bad file or case.
 */
export async function extractSealed(dir: string, aside: string): Promise<SealedSet> {
  const files: string[] = [];
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile() || !SEALED_FILE.test(e.name)) continue;
    files.push(relative(dir, join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)));
  }
  files.sort();
  const cases: SealedCase[] = [];
  for (const f of files) {
    await mkdir(dirname(join(aside, f)), { recursive: true });
    await rename(join(dir, f), join(aside, f));
  }
  for (const f of files) cases.push(...parseSealedFile(f, await readFile(join(aside, f), 'utf8')));
  return { files, cases };
}

// ------------------------------------------------------------------------ results

const Raised = z.object({ type: z.string(), mro: z.array(z.string()).default([]), message: z.string().default('') });
const ResultSchema = z.union([
  z.object({ i: z.number().int().nonnegative(), value: z.unknown() }).strict(),
  z.object({ i: z.number().int().nonnegative(), raised: Raised }).strict(),
  z.object({ i: z.number().int().nonnegative(), unencodable: z.string() }).strict(),
]);
export type SealedResult = z.infer<typeof ResultSchema>;

/** The runner's lines (fd 3): one result per case, then `{"t": "end"}`. Lines that are neither are listed as problems. */
export function parseResults(text: string): { results: SealedResult[]; ended: boolean; problems: string[] } {
  const results: SealedResult[] = [];
  const problems: string[] = [];
  let ended = false;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      problems.push(`a line is not JSON: ${JSON.stringify(line.slice(0, 60))}`);
      continue;
    }
    if (raw && typeof raw === 'object' && (raw as { t?: unknown }).t === 'end' && Object.keys(raw).length === 1) {
      if (ended) problems.push('the end record came twice');
      ended = true;
      continue;
    }
    const r = ResultSchema.safeParse(raw);
    if (!r.success) problems.push(`a line is not a result record: ${JSON.stringify(line.slice(0, 60))}`);
    else if (ended) problems.push(`a result for case ${r.data.i} came after the end record`);
    else results.push(r.data);
  }
  return { results, ended, problems };
}

/** Whether `actual` (canonical, from a runner) is `expected`; numbers within `tol` when one is declared. */
export function sameValue(expected: unknown, actual: unknown, tol?: number): boolean {
  if (typeof expected === 'number' && typeof actual === 'number') return tol === undefined ? expected === actual : Math.abs(expected - actual) <= tol;
  if (expected === null || typeof expected !== 'object') return expected === actual;
  if (actual === null || typeof actual !== 'object') return false;
  if (Array.isArray(expected)) return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => sameValue(e, actual[i], tol));
  if (Array.isArray(actual)) return false;
  const e = expected as Record<string, unknown>;
  const a = actual as Record<string, unknown>;
  const ek = Object.keys(e);
  return ek.length === Object.keys(a).length && ek.every((k) => Object.prototype.hasOwnProperty.call(a, k) && sameValue(e[k], a[k], tol));
}

/** What a result was, in words that never show the expected value (the log may reach the agent). */
function outcome(r: SealedResult): string {
  if ('value' in r) return 'returned a value';
  if ('raised' in r) return `raised ${r.raised.type}`;
  return `returned a value the runner could not encode (${r.unencodable.slice(0, 80)})`;
}

export interface SealedVerdict {
  passed: string[];
  /** One line per case that is red, naming it; `test` is its label. */
  failures: Array<{ kind: 'sealed-failed' | 'sealed-missing' | 'sealed-extra'; test: string; message: string }>;
  ran: number;
}

/**
 * Judge the results against the cases, in the gate: every case must have exactly one result;
 * a result for no case, or a second one, is red. Expected values are never put in a message.
 */
export function judgeSealed(cases: SealedCase[], results: SealedResult[]): SealedVerdict {
  const byIndex = new Map<number, SealedResult[]>();
  for (const r of results) byIndex.set(r.i, [...(byIndex.get(r.i) ?? []), r]);
  const v: SealedVerdict = { passed: [], failures: [], ran: 0 };
  cases.forEach((c, i) => {
    const got = byIndex.get(i) ?? [];
    if (!got.length) {
      v.failures.push({ kind: 'sealed-missing', test: c.label, message: `sealed case ${c.label}: no result came back (the process died or exited before it, or its result was removed)` });
      return;
    }
    v.ran++;
    if (got.length > 1) {
      v.failures.push({ kind: 'sealed-extra', test: c.label, message: `sealed case ${c.label}: ${got.length} results came back for one call: the results are not evidence` });
      return;
    }
    const r = got[0]!;
    const e = c.expect;
    let ok: boolean;
    if ('value' in e) ok = 'value' in r && sameValue(e.value, r.value, e.tolerance);
    else ok = 'raised' in r && (r.raised.type === e.raises.type || r.raised.mro.includes(e.raises.type)) && (e.raises.message === undefined || r.raised.message.includes(e.raises.message));
    if (ok) v.passed.push(c.label);
    else v.failures.push({ kind: 'sealed-failed', test: c.label, message: `sealed case ${c.label} (${c.call.module} ${c.call.function}) ${outcome(r)} that does not match its sealed expectation` });
  });
  for (const [i] of byIndex) {
    if (i >= cases.length) v.failures.push({ kind: 'sealed-extra', test: `#${i}`, message: `a result came back for case #${i}, which was never handed to the run: the results are not evidence` });
  }
  return v;
}
