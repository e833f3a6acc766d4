// The policy file (`ci/patchgate.json`): its schema, its defaults, and how it is read.
// It is always read from the trusted revision, never from the pushed tree, and it passes
// one validation step: an unknown key or a wrong type is a ConfigError naming the key path
// (read from text, a PolicyFileError that also names the line). A push that would make it
// fail is refused (rule `policy`); a trusted branch whose policy fails anyway is judged as
// ./trusted-policy.ts says.

import { z } from 'zod';
import { ConfigError, PolicyFileError } from '../errors.js';
import type { Git } from '../git/git.js';
import { keyLine, parseErrorLine } from './json-lines.js';

export const POLICY_PATH = 'ci/patchgate.json';

/** Protected by default: the test tree, the oracle's files and every test-runner configuration. */
export const DEFAULT_PROTECTED: readonly string[] = [
  'tests/**', 'test/**', 'ci/**', '.ci/**', '.github/**',
  'conftest.py', '**/conftest.py', 'pytest.ini', 'tox.ini', 'setup.cfg', 'pyproject.toml', 'package.json',
  'jest.config.*', 'vitest.config.*', '.mocharc*', '.taprc', 'Makefile',
  '**/.gitattributes', '.gitmodules',
  '**/*.test.*', '**/*.spec.*', '**/__tests__/**', '**/__mocks__/**', '**/test_*.py', '**/*_test.py',
  '**/setupTests.*', '**/sitecustomize.py', '**/usercustomize.py', '**/*.pth',
];

const globList = z.array(z.string().min(1));

/** A class's name (`test-author`): lower case, as token names and host mappings spell it. `default` is the top level. */
export const CLASS_NAME_RE = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** The class of a credential that names none: the policy's top-level `writable`, `protected`, contract and fixtures. */
export const DEFAULT_CLASS = 'default';

/**
 * One agent class (issue 50): what its credentials may write and what its pushes are held to.
 * `writable` is required (a class says what it is for); the rest falls back to the top level,
 * so an unset `protected` protects the tests as the default class does (fail closed).
 */
const ClassSchema = z.strictObject({
  writable: globList,
  protected: globList.optional(),
  contract: z.strictObject({
    roots: globList.optional(),
    allowFile: z.string().min(1).optional(),
  }).optional(),
  fixtures: z.strictObject({
    lock: z.string().min(1).optional(),
  }).optional(),
});
export type AgentClassSpec = z.infer<typeof ClassSchema>;

/**
 * Push size limits by default. Generous for a person seeding a repository, far below what
 * would hurt the server; a person lowers or raises them in the policy file. The server's own
 * git caps (receive.maxInputSize, core.bigFileThreshold) are in src/server/repos.ts.
 */
export const DEFAULT_LIMITS = {
  maxPushBytes: 512 * 1024 * 1024,
  maxObjects: 500_000,
  maxBlobBytes: 32 * 1024 * 1024,
} as const;

/**
 * `contract.maxSourceBytes` default: 1 MiB. Hand-written modules stay far below it; cold parsing
 * runs at 1 to 2 MB/s here (docs/performance.md), so one file at the limit costs about a second
 * of a worker, well inside the hook time limit. Generated bundles belong outside the roots.
 */
export const DEFAULT_MAX_SOURCE_BYTES = 1024 * 1024;
/** The highest value the policy may set (64 MiB): beyond it a parse is not bounded by anything sensible. */
const MAX_SOURCE_BYTES_CEILING = 64 * 1024 * 1024;

const PolicySchema = z.strictObject({
  trustedBranch: z.string().min(1).default('main'),
  writable: globList.default(['src/**']),
  protected: globList.default([...DEFAULT_PROTECTED]),
  allowSymlinks: z.boolean().default(false),
  allowSubmodules: z.boolean().default(false),
  /** Agent classes by name (src/policy/classes.ts); the top-level writable/protected/contract/fixtures are the default class. */
  classes: z.record(z.string(), ClassSchema).default({}),
  refs: z.strictObject({
    protectedBranches: globList.default(['release/**']),
    allowDeletes: z.boolean().default(false),
    allowNonFastForward: z.boolean().default(false),
    allowTags: z.boolean().default(false),
    allowOutsideHeads: z.boolean().default(false),
  }).prefault({}),
  contract: z.strictObject({
    roots: globList.default(['src/']),
    allowFile: z.string().min(1).default('ci/contract.allow'),
    format: z.enum(['v1', 'seed']).default('v1'),
    /** Largest contract file the gate parses; a bigger one is refused from its size, before any parse. */
    maxSourceBytes: z.number().int().positive().max(MAX_SOURCE_BYTES_CEILING).default(DEFAULT_MAX_SOURCE_BYTES),
  }).prefault({}),
  fixtures: z.strictObject({
    lock: z.string().min(1).default('ci/fixtures.lock'),
  }).prefault({}),
  ledger: z.strictObject({
    path: z.string().min(1).default('ci/flake-ledger.jsonl'),
    maxDays: z.number().int().positive().max(3650).default(30),
  }).prefault({}),
  // --- patchgate ci's integrity (issue 11): the sealed run, patchgate's own reporter, reruns, the baseline.
  ci: z.strictObject({
    /** strict: sealed tree, gate-owned reporter stream, scrubbed env. off: the run as before issue 11 (in the checkout). */
    integrity: z.enum(['strict', 'off']).default('strict'),
    /** Runs of the suite; the second and later in an order shuffled from the seed (pytest: items; node:test: files, one process per file). */
    runs: z.number().int().min(1).max(10).default(2),
    /** pytest plugins loaded with -p (entry-point autoload is off). */
    pytestPlugins: globList.default([]),
    /** auto: the test ids of the trusted tree are the baseline when no --baseline is given. */
    baseline: z.enum(['auto', 'off']).default('auto'),
  }).prefault({}),
  /** Rule tamper-scan: each check 'refuse' (default), 'advisory' (audited, not refused) or 'off'. */
  tamperScan: z.strictObject({
    checks: z.record(z.string(), z.enum(['refuse', 'advisory', 'off'])).default({}),
  }).prefault({}),
  // --- end of ci integrity
  // --- push size limits (pack bombs): checked first, for everyone, before any rule reads a blob.
  limits: z.strictObject({
    /** Bytes a push may bring (its pack, as stored in the quarantine). git's receive.maxInputSize is the hard cap above it. */
    maxPushBytes: z.number().int().positive().default(DEFAULT_LIMITS.maxPushBytes),
    /** Objects a push may bring. */
    maxObjects: z.number().int().positive().default(DEFAULT_LIMITS.maxObjects),
    /** Size of any one new blob, inflated (what reading it would cost). */
    maxBlobBytes: z.number().int().positive().default(DEFAULT_LIMITS.maxBlobBytes),
  }).prefault({}),
  // --- end of push size limits
});

export type Policy = z.infer<typeof PolicySchema> & {
  /** Files that guard the oracle; protected whatever `protected` says. */
  oracleFiles: string[];
  /** Where the policy came from, for messages. */
  source: string;
  /** Set when this is one agent class's view of the policy (src/policy/classes.ts policyForClass); absent: the default class. */
  agentClass?: string;
  /** Set when the trusted tip's own policy does not validate and this one stands in for it (./trusted-policy.ts). */
  fallback?: PolicyFallback;
};

/** The trusted tip's policy is broken: what is wrong with it, and what is applied instead. */
export interface PolicyFallback {
  /** The trusted tip whose policy does not validate. */
  tip: string;
  /** The file and line at fault, and the error. */
  path: string;
  line: number | null;
  error: string;
  /** The commit of the trusted branch whose policy is applied instead; null: the documented defaults. */
  under: string | null;
}

type Invalid = { keyPath: Array<string | number>; message: string };

function validate(raw: unknown, source: string): Policy | Invalid {
  const r = PolicySchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const keyPath = issue.path.map((k) => (typeof k === 'number' ? k : String(k)));
    if (issue.code === 'unrecognized_keys') return { keyPath: [...keyPath, issue.keys[0]!], message: 'unknown key' };
    return { keyPath, message: issue.message };
  }
  const p = r.data;
  for (const [i, root] of p.contract.roots.entries()) {
    if (root.startsWith('/') || root.split('/').includes('..')) return { keyPath: ['contract', 'roots', i], message: `not a relative path: ${root}` };
  }
  for (const [name, c] of Object.entries(p.classes)) {
    if (!CLASS_NAME_RE.test(name)) return { keyPath: ['classes', name], message: `not a class name: ${JSON.stringify(name)} (lower case letters, digits, . _ -; at most 64)` };
    if (name === DEFAULT_CLASS) return { keyPath: ['classes', name], message: `"${DEFAULT_CLASS}" is the top level's writable, protected, contract and fixtures; give this class another name` };
    for (const [i, root] of (c.contract?.roots ?? []).entries()) {
      if (root.startsWith('/') || root.split('/').includes('..')) return { keyPath: ['classes', name, 'contract', 'roots', i], message: `not a relative path: ${root}` };
    }
  }
  // Every class's allow file and lock guard the oracle too: no class may write any of them.
  const classFiles = Object.values(p.classes).flatMap((c) => [c.contract?.allowFile, c.fixtures?.lock]).filter((x): x is string => !!x);
  const oracleFiles = [...new Set([POLICY_PATH, p.contract.allowFile, p.fixtures.lock, p.ledger.path, ...classFiles])];
  return { ...p, oracleFiles, source };
}

const keyName = (keyPath: ReadonlyArray<string | number>): string => keyPath.map(String).join('.') || '(root)';

/** Validate a parsed policy object. Throws ConfigError naming the first bad key path. */
export function parsePolicy(raw: unknown, source = POLICY_PATH): Policy {
  const r = validate(raw, source);
  if ('keyPath' in r) throw new ConfigError(`${source}: ${keyName(r.keyPath)}`, r.message);
  return r;
}

/**
 * Parse and validate the policy file's text. Throws PolicyFileError: its message is
 * `CONFIG: <source>: <key path>: <problem> (line N)`, and it carries the file and the line.
 */
export function policyFromText(text: string, source: string, path = POLICY_PATH): Policy {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new PolicyFileError(source, `not valid JSON: ${(e as Error).message}`, { path, line: parseErrorLine(text, e) }, { cause: e });
  }
  const r = validate(raw, source);
  if ('keyPath' in r) throw new PolicyFileError(source, `${keyName(r.keyPath)}: ${r.message}`, { path, line: keyLine(text, r.keyPath) });
  return r;
}

export function defaultPolicy(): Policy {
  return parsePolicy({}, '(defaults)');
}

/**
 * Read the policy from `rev` (the trusted revision). Absent file: defaults. Bad JSON or schema,
 * or something other than a file at its path: PolicyFileError (a ConfigError) with the line.
 */
export async function loadPolicy(git: Git, rev: string | null): Promise<Policy> {
  if (!rev) return defaultPolicy();
  const source = `${POLICY_PATH}@${rev.slice(0, 12)}`;
  const at = await git.pathId(rev, POLICY_PATH);
  if (!at) return defaultPolicy();
  if (at.type !== 'blob') throw new PolicyFileError(source, `a ${at.type}, not a file`, { path: POLICY_PATH, line: null });
  const blob = await git.readBlob(at.id);
  if (!blob) return defaultPolicy();
  return policyFromText(blob.toString('utf8'), source);
}
