// The policy file (`ci/patchgate.json`): its schema, its defaults, and how it is read.
// It is always read from the trusted revision, never from the pushed tree, and it passes
// one validation step: an unknown key or a wrong type is a ConfigError naming the key path.

import { z } from 'zod';
import { ConfigError } from '../errors.js';
import type { Git } from '../git/git.js';

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
};

/** Validate a parsed policy object. Throws ConfigError naming the first bad key path. */
export function parsePolicy(raw: unknown, source = POLICY_PATH): Policy {
  const r = PolicySchema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    let key = issue.path.map(String).join('.');
    let msg = issue.message;
    if (issue.code === 'unrecognized_keys') {
      key = [...issue.path.map(String), issue.keys[0]].join('.');
      msg = 'unknown key';
    }
    throw new ConfigError(`${source}: ${key || '(root)'}`, msg);
  }
  const p = r.data;
  for (const root of p.contract.roots) {
    if (root.startsWith('/') || root.split('/').includes('..')) throw new ConfigError(`${source}: contract.roots`, `not a relative path: ${root}`);
  }
  const oracleFiles = [POLICY_PATH, p.contract.allowFile, p.fixtures.lock, p.ledger.path];
  return { ...p, oracleFiles, source };
}

export function defaultPolicy(): Policy {
  return parsePolicy({}, '(defaults)');
}

/** Read the policy from `rev` (the trusted revision). Absent file: defaults. Bad JSON or schema: ConfigError. */
export async function loadPolicy(git: Git, rev: string | null): Promise<Policy> {
  if (!rev) return defaultPolicy();
  const blob = await git.readBlob(`${rev}:${POLICY_PATH}`);
  if (!blob) return defaultPolicy();
  let raw: unknown;
  try {
    raw = JSON.parse(blob.toString('utf8'));
  } catch (e) {
    throw new ConfigError(`${POLICY_PATH}@${rev.slice(0, 12)}`, `not valid JSON: ${(e as Error).message}`, { cause: e });
  }
  return parsePolicy(raw, `${POLICY_PATH}@${rev.slice(0, 12)}`);
}
