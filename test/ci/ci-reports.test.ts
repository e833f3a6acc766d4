// End-to-end tests of how `patchgate ci` reads results: TAP from node's runner and from
// node-tap (TAP 14) on stdout, a pytest-style JUnit file with per-test seeds in the sidecar
// file, and every way a report can fail to prove anything (forged text, stale, empty,
// truncated, or contradicted by the exit code), each of which must be red.

import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CALC, EMPTY_DIGEST, NODE, agent, ci, exits, junitCmd, markedRows, project, tapCmd, tempDir } from './project.js';

const TAP_URL = import.meta.resolve('tap');

const TAP_LIB_TEST = `import t from '${TAP_URL}';
import { add } from '../src/calc.mjs';

t.test('calc', async (t) => {
  t.equal(add(2, 3), 5, 'adds');
  t.test('nested', async (t) => {
    t.equal(add(1, 1), 2, 'doubles');
  });
});
t.test('later', { skip: 'not yet' }, async () => {});
`;

/**
 * A stand-in for a runner like pytest with --junitxml: it "runs" two property tests, each
 * with its own seed derived from the one on its command line, writes the JUnit file and
 * the per-test seeds, and exits 1 when a test failed.
 */
const PY_RUNNER = `import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
const [out, seedArg] = process.argv.slice(2);
const runSeed = Number(seedArg.replace('--seed=', ''));
const propSeed = runSeed + 5000;
const failed = propSeed === 5151;
const seeds = { 'tests/test_calc.py::test_prop': propSeed, 'tests/test_calc.py::TestCalc::test_add': runSeed };
if (process.env.PATCHGATE_SEED_FILE) writeFileSync(process.env.PATCHGATE_SEED_FILE, JSON.stringify(seeds));
mkdirSync(dirname(out), { recursive: true });
const fail = failed ? '<failure message="Falsifying example: cents=-1">AssertionError</failure>' : '';
writeFileSync(out, '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="' + (failed ? 1 : 0) + '" skipped="0" tests="3" time="0.1" timestamp="2026-11-05T10:00:00" hostname="ci">'
  + '<testcase classname="tests.test_calc" name="test_prop" time="0.01">' + fail + '</testcase>'
  + '<testcase classname="tests.test_calc.TestCalc" name="test_add" time="0.01"/>'
  + '<testcase classname="tests.helpers" name="test_other" time="0.01"/>'
  + '</testsuite></testsuites>');
process.exit(failed ? 1 : 0);
`;

t.test('TAP from node --test on stdout', async (t) => {
  const r = project(t);
  const d = tempDir(t);
  const green = await ci({ repo: r.dir, seed: '10', cmd: tapCmd(), report: join(d, 'g.json') });
  exits(t, green, 0);
  const rep = JSON.parse(readFileSync(join(d, 'g.json'), 'utf8'));
  t.same(rep.results.format, 'tap');
  t.same(rep.tests.map((x: { id: string }) => x.id).sort(), ['adds', 'extra', 'feature', 'flaky', 'group > inner', 'seed is exported']);
  agent(r, { 'src/calc.mjs': CALC('a * b') });
  const red = await ci({ repo: r.dir, seed: '10', cmd: tapCmd(), report: join(d, 'r.json') });
  exits(t, red, 1);
  t.match(red.text, /FAIL group > inner \(seed 10\): /);
  t.match(red.text, /FAIL adds \(seed 10\)/);
  t.equal(JSON.parse(readFileSync(join(d, 'r.json'), 'utf8')).row, 'contract-red');
});

t.test('TAP 14 from node-tap', async (t) => {
  const r = project(t, { 'tests/calc.tap.mjs': TAP_LIB_TEST });
  const d = tempDir(t);
  const cmd = [NODE, 'tests/calc.tap.mjs'];
  const green = await ci({ repo: r.dir, seed: '3', cmd, report: join(d, 'g.json') });
  exits(t, green, 0);
  const rep = JSON.parse(readFileSync(join(d, 'g.json'), 'utf8'));
  t.same(rep.tests.map((x: { id: string; status: string }) => `${x.id}=${x.status}`), ['calc > adds=passed', 'calc > nested > doubles=passed', 'later=skipped']);
  agent(r, { 'src/calc.mjs': CALC('a - b') });
  const red = await ci({ repo: r.dir, seed: '3', cmd });
  exits(t, red, 1);
  t.match(red.text, /FAIL calc > adds \(seed 3\)/);
  t.match(red.text, /FAIL calc > nested > doubles \(seed 3\)/);
});

t.test('pytest-style JUnit: node ids from module paths, per-test seeds from the sidecar file', async (t) => {
  const r = project(t, {
    'tests/test_calc.py': 'def test_prop():\n    pass\n',
    'tests/run_props.mjs': PY_RUNNER,
    'ci/flake-ledger.jsonl': JSON.stringify({ nodeid: 'tests/test_calc.py::test_prop', seed: 5151, fixture_digest: EMPTY_DIGEST, expires: '2026-11-10', reason: 'shrinker timeout on CI' }) + '\n',
  });
  agent(r, { 'src/calc.mjs': CALC('b + a') });
  const d = tempDir(t);
  const junit = 'build/junit.xml';
  const cmd = [NODE, 'tests/run_props.mjs', join(r.dir, junit), '--seed={seed}'];
  const res = await ci({ repo: r.dir, seed: '151', junit, cmd, report: join(d, 'r.json') });
  exits(t, res, 0);
  t.match(res.text, /running \S+ tests\/run_props\.mjs \S+ --seed=151 /, '{seed} in the command line became the seed');
  t.match(res.text, /frozen flake skipped once: tests\/test_calc\.py::test_prop seed 5151 .*expires 2026-11-10/);
  const rep = JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));
  t.same(rep.tests.map((x: { id: string; seed: string; status: string }) => [x.id, x.seed, x.status]), [
    ['tests/test_calc.py::test_prop', '5151', 'failed'],
    ['tests/test_calc.py::TestCalc::test_add', '151', 'passed'],
    ['tests.helpers::test_other', '151', 'passed'],
  ]);
  t.same(rep.fired, ['frozen-flake', 'accept']);
  const other = await ci({ repo: r.dir, seed: '152', junit, cmd });
  exits(t, other, 0);
  t.notMatch(other.text, /frozen flake/);
});

t.test('reports that prove nothing are red', async (t) => {
  const r = project(t);
  const d = tempDir(t);
  const junit = join(d, 'junit.xml');
  const node = (js: string): string[] => [NODE, '-e', js];

  t.test('a forged summary on stdout and no report', async (t) => {
    const res = await ci({ repo: r.dir, seed: '1', cmd: node(`console.log('===== 1 passed in 0.01s =====')`), report: join(d, 'f.json') });
    exits(t, res, 1);
    t.match(res.text, /no TAP stream on stdout/);
    t.same(markedRows(res.out).map((l) => l.split('  ')[0]), ['no usable test report (missing, stale, unreadable, incomplete or empty)'], 'its own row, not "properties red"');
    t.equal(JSON.parse(readFileSync(join(d, 'f.json'), 'utf8')).reasons[0].kind, 'incomplete-report');
  });

  t.test('--junit named but never written, with a stale report from an earlier run in place', async (t) => {
    writeFileSync(junit, '<testsuites><testsuite name="s" timestamp="x"><testcase classname="test" name="adds"/></testsuite></testsuites>');
    const res = await ci({ repo: r.dir, seed: '1', junit, cmd: node(`console.log('1 passed')`), report: join(d, 's.json') });
    exits(t, res, 1);
    t.match(res.text, /no JUnit report at/);
    t.notOk(existsSync(junit), 'the stale report was removed before the run');
    t.equal(JSON.parse(readFileSync(join(d, 's.json'), 'utf8')).reasons[0].kind, 'no-report');
  });

  t.test('a report with zero tests', async (t) => {
    const res = await ci({ repo: r.dir, seed: '1', junit, cmd: node(`require('fs').writeFileSync(${JSON.stringify(junit)}, '<testsuites tests="0"/>')`) });
    exits(t, res, 1);
    t.match(res.text, /lists no tests/);
    const tap = await ci({ repo: r.dir, seed: '1', cmd: node(`console.log('TAP version 14\\n1..0')`) });
    exits(t, tap, 1);
    t.match(tap.text, /lists no tests/);
  });

  t.test('a truncated report', async (t) => {
    const res = await ci({ repo: r.dir, seed: '1', junit, cmd: node(`require('fs').writeFileSync(${JSON.stringify(junit)}, '<testsuites><testcase classname="test" name="adds">')`) });
    exits(t, res, 1);
    t.match(res.text, /cannot be read: not well-formed XML/);
  });

  t.test('a failing exit code that the report does not account for', async (t) => {
    const res = await ci({ repo: r.dir, seed: '1', junit, cmd: node(`require('fs').writeFileSync(${JSON.stringify(junit)}, '<testsuites><testcase classname="test" name="adds"/></testsuites>'); process.exit(3)`) });
    exits(t, res, 1);
    t.match(res.text, /exited 3 but the report shows no failing test/);
  });

  t.test('the real runner on the same project is green (the cases above fail for their own reason)', async (t) => {
    exits(t, await ci({ repo: r.dir, seed: '2', junit, cmd: junitCmd(junit) }), 0);
  });

  t.test('a command that cannot start is an error, said in one line (no table, no "retry")', async (t) => {
    const res = await ci({ repo: r.dir, seed: '1', cmd: ['patchgate-no-such-command-here'] });
    exits(t, res, 2);
    t.match(res.text, /cannot run patchgate-no-such-command-here: .*nothing was judged/);
    t.same(markedRows(res.out), []);
    t.notMatch(res.text, /retry/);
  });

  t.test('usage errors', async (t) => {
    exits(t, await ci({ repo: r.dir, seed: 'abc', cmd: ['x'] }), 2);
    exits(t, await ci({ repo: r.dir, seed: '1', cmd: [] }), 2);
    exits(t, await ci({ repo: r.dir, seed: '1', baseline: join(d, 'missing.json'), cmd: ['x'] }), 2);
    exits(t, await ci({ repo: r.dir, base: 'no-such-branch', seed: '1', cmd: ['x'] }), 2);
  });
});
