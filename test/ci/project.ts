// A small JavaScript project in a real git repository, tested by node's own test runner, for
// the `patchgate ci` and `ledger freeze` tests: one source file the agent may change, test
// files only a person may change, and helpers to run the ci command and capture its log.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCi, runLedgerFreeze, type CiArgs, type FreezeArgs } from '../../src/ci/command.js';
import { TestRepo } from '../helpers/repo.js';

export const NODE = process.execPath;

/** 2026-11-01, the commit clock of every project (freezes are judged against it). */
export const T0 = Date.UTC(2026, 10, 1) / 1000;
export const DAY = 86400;
/**
 * The npm installs of the runner tests resolve their dependencies as the registry stood on this
 * day (`npm install --before`): without a lock file a publish after it (seen 4 December 2026:
 * an @babel release listed before the versions it depends on) broke the install of a pinned jest.
 * Every version the tests pin is older.
 */
export const NPM_BEFORE = '--before=2026-11-20';
export const TODAY = '2026-11-05';

/** sha256 of the empty lock: the fixture digest when there is no ci/fixtures.lock. */
export const EMPTY_DIGEST = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

export const CALC = (body = 'a + b', feature = 'true', extra = 'true'): string => `// calc: the code under test
export function add(a, b) {
  return ${body};
}

export function featureOn() {
  return ${feature};
}

export function registerExtra() {
  return ${extra};
}
`;

export const CALC_TEST = `import test from 'node:test';
import assert from 'node:assert/strict';
import { add, featureOn, registerExtra } from '../src/calc.mjs';

test('adds', () => {
  assert.equal(add(2, 3), 5);
});

test('seed is exported', () => {
  assert.match(process.env.PATCHGATE_SEED ?? '', /^[0-9]+$/);
  assert.equal(process.env.PYTHONHASHSEED, process.env.PATCHGATE_SEED);
});

test('feature', { skip: !featureOn() }, () => {
  assert.ok(featureOn());
});

if (registerExtra()) {
  test('extra', () => {
    assert.ok(true);
  });
}

test('group', async (t) => {
  await t.test('inner', () => {
    assert.equal(add(1, 1), 2);
  });
});
`;

/** Fails exactly when the run seed is odd. */
export const FLAKY_TEST = `import test from 'node:test';

test('flaky', () => {
  const seed = Number(process.env.PATCHGATE_SEED);
  if (seed % 2 === 1) throw new Error('odd seed ' + seed);
});
`;

export const TEST_FILES = ['tests/calc.test.mjs', 'tests/flaky.test.mjs'];

/** One entry that loads every test file: node runs it in-process, without --test's extra process. */
export const ALL_TESTS = `import './calc.test.mjs';\nimport './flaky.test.mjs';\n`;

export interface Tap {
  teardown(fn: () => void): void;
}

export function tempDir(t: Tap, prefix = 'pg-ci-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

/** The policy of the pre-issue-11 run: in the checkout, PATCHGATE_SEED exported, no reporter stream. */
export const LEGACY_POLICY = JSON.stringify({ ci: { integrity: 'off' } }) + '\n';

/** The project on `main` (a person's commit at T0), plus `extra` files. */
export function project(t: Tap, extra: Record<string, string | null> = {}): TestRepo {
  const r = TestRepo.init(t).at(T0);
  // These tests cover the in-checkout run (ci.integrity "off"); test/ci/integrity.test.ts covers the strict default.
  r.commit('project', { 'src/calc.mjs': CALC(), 'tests/calc.test.mjs': CALC_TEST, 'tests/flaky.test.mjs': FLAKY_TEST, 'tests/all.test.mjs': ALL_TESTS, 'ci/patchgate.json': LEGACY_POLICY, ...extra });
  return r;
}

/** An agent's branch off main with one commit. */
export function agent(r: TestRepo, files: Record<string, string | null>, branch = 'agent'): TestRepo {
  r.checkout('main').checkout(branch, true).commit('agent patch', files);
  return r;
}

export function ledgerRow(o: Record<string, unknown>): string {
  return JSON.stringify({ nodeid: 'test::flaky', seed: 777, fixture_digest: EMPTY_DIGEST, expires: '2026-11-20', reason: 'odd seeds race the clock', ...o });
}

/** `node --test` over the test files, JUnit to `file`. */
export function nodeTestJunitCmd(file: string, tests = TEST_FILES): string[] {
  return [NODE, '--test', '--test-reporter=junit', `--test-reporter-destination=${file}`, ...tests];
}

/** node's test runner on one entry file in-process (half the start-up of --test), JUnit to `file`. */
export function junitCmd(file: string, entry = 'tests/all.test.mjs'): string[] {
  return [NODE, '--test-reporter=junit', `--test-reporter-destination=${file}`, entry];
}

export function tapCmd(tests = TEST_FILES): string[] {
  return [NODE, '--test', '--test-reporter=tap', ...tests];
}

/** Assert an exit code; the whole log is the message only when it is wrong. */
export function exits(t: { equal(a: unknown, b: unknown, m: string): unknown }, res: Captured, code: number): void {
  t.equal(res.code, code, res.code === code ? `exit ${code}` : res.text);
}

/** A command that leaves a marker file when it runs. */
export function markerCmd(marker: string): string[] {
  return [NODE, '-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`];
}

export interface Captured {
  code: number;
  out: string[];
  err: string[];
  text: string;
}

export async function ci(args: Partial<CiArgs> & { repo: string; cmd: string[] }): Promise<Captured> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCi({ base: 'main', head: 'HEAD', today: TODAY, ...args }, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err, text: [...out, ...err].join('\n') };
}

export async function freeze(args: Partial<FreezeArgs> & { repo: string; nodeid: string; seed: string; rerun: string[] }): Promise<Captured> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runLedgerFreeze({ reason: 'flaky on CI', today: TODAY, ...args }, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err, text: [...out, ...err].join('\n') };
}

/** The line of the printed decision table that is marked as fired. */
export function markedRows(lines: string[]): string[] {
  return lines.filter((l) => l.startsWith('>> ')).map((l) => l.slice(3).trim());
}

export function writeFile(path: string, text: string): void {
  writeFileSync(path, text);
}
