// Issue 25, "the runners teams use": real vitest and jest, installed from the npm registry into
// a temp project (once per runner for the whole file), in real git repositories. `npm test`
// runs the trusted package.json's script directly, patchgate's reporter module streams the
// outcomes beside the runner's own report, and the seed and shuffle go on the command line.

import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ci, exits, NPM_BEFORE, tempDir, T0 } from './project.js';
import { TestRepo } from '../helpers/repo.js';

const VERSIONS = { vitest: ['vitest@4.1.12', 'vite@8.3.8'], jest: ['jest@30.5.2'] } as const;

/** One `npm install --no-save` per runner into a temp folder; its node_modules is linked into each project. */
function install(t: Tap, which: keyof typeof VERSIONS): string | null {
  const d = tempDir(t, `pg-${which}-`);
  writeFileSync(join(d, 'package.json'), JSON.stringify({ name: `deps-${which}`, private: true }));
  const r = spawnSync('npm', ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--ignore-scripts', NPM_BEFORE, ...VERSIONS[which]], { cwd: d, encoding: 'utf8', timeout: 240_000 });
  if (r.status !== 0) {
    t.fail(`npm install ${VERSIONS[which].join(' ')} failed: ${(r.stderr ?? '').slice(-800)}`);
    return null;
  }
  return join(d, 'node_modules');
}
type Tap = Parameters<typeof tempDir>[0];

function reportOf(d: string): { row: string; fired: string[]; command: { argv: string[] }; results: { format: string; total: number; passed: number; failed: number; skipped: number }; tests: Array<{ id: string; status: string }> } {
  return JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));
}

/** The static scan off: the tripwire vectors below must be caught by the run itself. */
const SCAN_OFF = JSON.stringify({ tamperScan: { checks: Object.fromEntries(['runner-internals', 'interpreter-walk', 'env-read', 'exit', 'report-write', 'constant-eq', 'package-metadata'].map((k) => [k, 'off'])) } });

function jsProject(t: Tap, deps: string, files: Record<string, string>, broken: Record<string, string>, tamper?: Record<string, string>): TestRepo {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', { ...files, 'ci/patchgate.json': SCAN_OFF });
  r.checkout('agent', true).commit('agent patch', broken);
  if (tamper) r.checkout('main').checkout('tamper', true).commit('tamper', tamper);
  r.checkout('main');
  // The dependencies CI installed: untracked, beside the tree, as after `npm ci`.
  symlinkSync(deps, join(r.dir, 'node_modules'));
  return r;
}

const ADD = 'export function add(a, b) {\n  return a + b;\n}\n';
const BROKEN_ADD = 'export function add(a, b) {\n  return a - b;\n}\n';

t.test('vitest', async (t) => {
  const deps = install(t, 'vitest');
  if (!deps) return;
  const r = jsProject(t, deps, {
    'package.json': JSON.stringify({ name: 'vcalc', type: 'module', private: true, scripts: { test: 'vitest run' } }, null, 2),
    'src/calc.js': ADD,
    'tests/calc.test.js': `import { describe, expect, it } from 'vitest';\nimport { add } from '../src/calc.js';\n\ndescribe('calc', () => {\n  it('adds', () => expect(add(2, 3)).toBe(5));\n  it.skip('later', () => expect(1).toBe(2));\n});\n\nit('adds zero', () => expect(add(0, 0)).toBe(0));\n`,
    'tests/more.test.js': `import { expect, it } from 'vitest';\nimport { add } from '../src/calc.js';\n\nit('adds negatives', () => expect(add(-1, -2)).toBe(-3));\n`,
  }, { 'src/calc.js': BROKEN_ADD }, { 'src/calc.js': "Error['prepare' + 'StackTrace'] = (e, s) => s;\n" + ADD });

  await t.test('npm test on the trusted tree: green, with the seed on the command line and a shuffled second run', async (t) => {
    const d = tempDir(t);
    const res = await ci({ repo: r.dir, base: 'main', head: 'main', seed: '4242', report: join(d, 'r.json'), cmd: ['npm', 'test'] });
    exits(t, res, 0);
    const rep = reportOf(d);
    t.same(rep.fired, ['accept']);
    t.match(res.text, /npm test runs "test: vitest run" in package\.json at the trusted revision/);
    t.ok(rep.command.argv.includes('--sequence.seed=4242'), rep.command.argv.join(' '));
    t.equal(rep.results.format, 'junit', "vitest's own JUnit report");
    t.match(res.text, /run 2 of 2, order shuffled with seed \d+/);
    t.same({ total: rep.results.total, passed: rep.results.passed, skipped: rep.results.skipped }, { total: 4, passed: 3, skipped: 1 });
    t.ok(rep.tests.some((x) => x.id === 'tests/calc.test.js::calc > adds' && x.status === 'passed'), JSON.stringify(rep.tests));
    t.match(res.text, /patchgate's reporter: 4 test\(s\) streamed, in agreement with the report/);
  });

  await t.test('a patch that breaks add: red, naming the failed tests', async (t) => {
    const d = tempDir(t);
    const res = await ci({ repo: r.dir, base: 'main', head: 'agent', seed: '7', runs: 1, report: join(d, 'r.json'), cmd: ['npm', 'test'] });
    exits(t, res, 1);
    const rep = reportOf(d);
    t.equal(rep.row, 'contract-red');
    t.match(res.text, /FAIL tests\/calc\.test\.js::calc > adds \(seed 7\): .*expected -1 to be 5/);
    t.match(res.text, /FAIL tests\/more\.test\.js::adds negatives/);
  });

  await t.test('the node tripwire reaches vitest (NODE_OPTIONS preload): Error.prepareStackTrace set by the code is runtime-tamper', async (t) => {
    const d = tempDir(t);
    const res = await ci({ repo: r.dir, base: 'main', head: 'tamper', seed: '7', runs: 1, report: join(d, 'r.json'), cmd: ['npm', 'test'] });
    exits(t, res, 1);
    t.ok(reportOf(d).fired.includes('runtime-tamper'), reportOf(d).fired.join(','));
    t.match(res.text, /tripwire \(run1\): Error\.prepareStackTrace at src\/calc\.js:\d+/);
  });
});

t.test('jest', async (t) => {
  const deps = install(t, 'jest');
  if (!deps) return;
  const CJS_ADD = 'function add(a, b) {\n  return a + b;\n}\nmodule.exports = { add };\n';
  const r = jsProject(t, deps, {
    'package.json': JSON.stringify({ name: 'jcalc', private: true, scripts: { test: 'jest' } }, null, 2),
    'src/calc.js': CJS_ADD,
    'tests/calc.test.js': `const { add } = require('../src/calc.js');\n\ndescribe('calc', () => {\n  test('adds', () => expect(add(2, 3)).toBe(5));\n  test.skip('later', () => expect(1).toBe(2));\n});\n\ntest('adds zero', () => expect(add(0, 0)).toBe(0));\n`,
    'tests/more.test.js': `const { add } = require('../src/calc.js');\n\ntest('adds negatives', () => expect(add(-1, -2)).toBe(-3));\n`,
  }, { 'src/calc.js': CJS_ADD.replace('a + b', 'a * b') }, { 'src/calc.js': "const a = require('node:' + 'assert');\ntry { a.strict.equal = () => {}; } catch {}\n" + CJS_ADD });

  await t.test('yarn test on the trusted tree: green, jest --seed, a --randomize second run', async (t) => {
    const d = tempDir(t);
    const res = await ci({ repo: r.dir, base: 'main', head: 'main', seed: '99', report: join(d, 'r.json'), cmd: ['yarn', 'test'] });
    exits(t, res, 0);
    const rep = reportOf(d);
    t.same(rep.fired, ['accept']);
    t.ok(rep.command.argv.includes('--seed=99'), rep.command.argv.join(' '));
    t.equal(rep.results.format, 'jest-json');
    t.same({ total: rep.results.total, passed: rep.results.passed, skipped: rep.results.skipped }, { total: 4, passed: 3, skipped: 1 });
    t.ok(rep.tests.some((x) => x.id === 'tests/calc.test.js::calc > adds'), JSON.stringify(rep.tests));
    t.match(res.text, /run 2 of 2, order shuffled with seed \d+/);
  });

  await t.test('a patch that breaks add: red, naming the failed tests', async (t) => {
    const d = tempDir(t);
    const res = await ci({ repo: r.dir, base: 'main', head: 'agent', seed: '7', runs: 1, report: join(d, 'r.json'), cmd: ['npx', 'jest'] });
    exits(t, res, 1);
    t.equal(reportOf(d).row, 'contract-red');
    t.match(res.text, /FAIL tests\/calc\.test\.js::calc > adds \(seed 7\): .*expect\(received\)\.toBe\(expected\)/);
    t.match(res.text, /FAIL tests\/more\.test\.js::adds negatives/);
  });

  // jest runs each test file in a vm context of its own: its Error is that realm's, which a
  // preload cannot reach; node:assert is the process's one module, so its lock holds there.
  await t.test('the node tripwire reaches jest: node:assert patched by the code is runtime-tamper', async (t) => {
    const d = tempDir(t);
    const res = await ci({ repo: r.dir, base: 'main', head: 'tamper', seed: '7', runs: 1, report: join(d, 'r.json'), cmd: ['npx', 'jest'] });
    exits(t, res, 1);
    t.ok(reportOf(d).fired.includes('runtime-tamper'), reportOf(d).fired.join(','));
    t.match(res.text, /tripwire \(run1\): patched at src\/calc\.js:\d+: node:assert\/strict\.equal was assigned/);
  });
});
