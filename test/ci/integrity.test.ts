// Issue 11: a green run of `patchgate ci` that is evidence. Real pytest and node:test projects
// in real git repositories; each tampering vector is caught for the reason named in its own
// decision row, and honest fixes stay green (one on a red main, with no --baseline).

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ci, exits, tempDir, NODE, T0 } from './project.js';
import { FIXED, pyAgent, pyProject, pytestCmd, pythonWithPytest } from './pyproject.js';
import { TestRepo } from '../helpers/repo.js';

const PY = pythonWithPytest();
if (!PY) {
  if (process.env.CI) t.fail('pytest is missing: .ci/run installs python3-pytest');
  else t.comment('skip: pytest is not installed (python3 -m pytest); .ci/run installs it');
}

function reportOf(d: string): { verdict: string; row: string; fired: string[]; reasons: Array<{ kind: string; row: string; message: string; test?: string }> } {
  return JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));
}

const py = PY ?? 'python3';
const skip = !PY;

t.test('an honest fix on a branch whose main is red, no --baseline: green', { skip }, async (t) => {
  const r = pyAgent(pyProject(t), { 'src/calc.py': FIXED });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '7', report: join(d, 'r.json'), cmd: pytestCmd(py) });
  exits(t, res, 0);
  const rep = reportOf(d);
  t.same(rep.fired, ['accept']);
  t.match(res.text, /all 2 test\(s\) that ran on the trusted tree ran here/);
  t.match(res.text, /in agreement with the report and the exit status/);
});

t.test('main stays red without the fix: contract-red, not green', { skip }, async (t) => {
  const r = pyAgent(pyProject(t), { 'src/other.py': 'X = 1\n' });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '7', report: join(d, 'r.json'), cmd: pytestCmd(py) });
  exits(t, res, 1);
  t.equal(reportOf(d).row, 'contract-red');
});

/** The static tamper scan off, so each vector reaches the run and the run itself must catch it. */
const SCAN_OFF = JSON.stringify({ tamperScan: { checks: Object.fromEntries(['runner-internals', 'interpreter-walk', 'env-read', 'exit', 'report-write', 'constant-eq', 'package-metadata'].map((k) => [k, 'off'])) } });

async function vector(t: Tap, files: Record<string, string>, more: { seed?: string; holdout?: string; runs?: number } = {}) {
  const r = pyAgent(pyProject(t, { 'ci/patchgate.json': SCAN_OFF }), files);
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: more.seed ?? '7', report: join(d, 'r.json'), cmd: pytestCmd(py), ...(more.holdout ? { holdout: more.holdout } : {}), ...(more.runs ? { runs: more.runs } : {}) });
  return { res, rep: reportOf(d), r };
}
type Tap = Parameters<typeof pyProject>[0];

t.test('a forged report: the JUnit file rewritten in an exit handler, the exit code forced to 0: report-forged', { skip }, async (t) => {
  const { res, rep } = await vector(t, {
    'src/calc.py': `import atexit, os, sys\n\ndef add(a, b):\n    return a - b\n\ndef _forge():\n    for a in sys.argv:\n        if a.startswith('--junitxml='):\n            p = a.split('=', 1)[1]\n            open(p, 'w').write('<?xml version="1.0"?><testsuites><testsuite name="pytest" timestamp="x"><testcase classname="tests.test_calc" name="test_adds"/><testcase classname="tests.test_calc" name="test_zero"/></testsuite></testsuites>')\n    os._exit(0)\n\natexit.register(_forge)\n`,
  });
  exits(t, res, 1);
  t.equal(rep.row, 'report-forged');
  t.ok(rep.reasons.some((x) => x.kind === 'report-mismatch' && /test_adds passed, patchgate's reporter saw it failed/.test(x.message)), 'the report and the stream disagree on test_adds');
  t.ok(rep.reasons.some((x) => /exit status 1 but the process exited 0/.test(x.message)), 'the exit code was changed after the session');
});

t.test("behaviour keyed to the gate's variables: they are not in the test process, the bug shows: contract-red", { skip }, async (t) => {
  const { res, rep } = await vector(t, { 'src/calc.py': `import os\n\ndef add(a, b):\n    if any(k.startswith('PATCHGATE_') for k in os.environ):\n        return {(2, 3): 5, (0, 0): 0}[(a, b)]\n    return a - b\n` });
  exits(t, res, 1);
  t.equal(rep.row, 'contract-red');
  t.ok(rep.reasons.some((x) => x.kind === 'failed' && /test_adds/.test(x.test ?? '')));
});

t.test('a call counter passes in file order and fails shuffled: order-dependent', { skip }, async (t) => {
  const { res, rep } = await vector(t, { 'src/calc.py': `_calls = [0]\n\ndef add(a, b):\n    _calls[0] += 1\n    return 5 if _calls[0] == 1 else 0\n` }, { seed: '1' });
  exits(t, res, 1);
  t.equal(rep.row, 'order-dependent');
  t.ok(rep.reasons.some((x) => x.kind === 'order-dependent' && /passed in run 1 but failed in run 2/.test(x.message)));
});

t.test('a test file rewritten during the run and restored at exit: tree-tampered', { skip }, async (t) => {
  const { res, rep } = await vector(t, {
    'src/calc.py': `import atexit, os, stat\n\n_p = os.path.join(os.path.dirname(__file__), '..', 'tests', 'test_calc.py')\n_orig = open(_p).read()\nos.chmod(_p, 0o644)\nopen(_p, 'w').write(_orig.replace('== 5', '== -1'))\natexit.register(lambda: open(_p, 'w').write(_orig))\n\ndef add(a, b):\n    return a - b\n`,
  });
  exits(t, res, 1);
  t.ok(rep.fired.includes('tree-tampered'), 'tree-tampered fired');
  t.ok(rep.reasons.some((x) => x.kind === 'tree-tampered' && /tests\/test_calc\.py/.test(x.message)), 'names the file');
});

t.test('a skip raised from inside the function under test, no --baseline: oracle-shrank (skipped)', { skip }, async (t) => {
  const { res, rep } = await vector(t, { 'src/calc.py': `def add(a, b):\n    import pytest\n    pytest.skip('not today')\n` });
  exits(t, res, 1);
  t.equal(rep.row, 'oracle-shrank');
  t.same(rep.reasons.filter((x) => x.kind === 'skipped').map((x) => x.test).sort(), ['tests/test_calc.py::test_adds', 'tests/test_calc.py::test_zero']);
});

t.test('exact-input special-casing passes the visible suite, a held-out test turns it red', { skip }, async (t) => {
  const hold = tempDir(t);
  writeFileSync(join(hold, 'test_props.py'), 'from calc import add\n\n\ndef test_commutes_on_other_inputs():\n    assert add(10, 20) == 30\n');
  const special = { 'src/calc.py': `def add(a, b):\n    return {(2, 3): 5, (0, 0): 0}.get((a, b), 0)\n` };
  const visible = await vector(t, special);
  exits(t, visible.res, 0);
  const { res, rep } = await vector(t, special, { holdout: hold });
  exits(t, res, 1);
  t.equal(rep.row, 'holdout-red');
  t.same(rep.reasons.filter((x) => x.kind === 'holdout-failed').map((x) => x.test), ['.patchgate-holdout/test_props.py::test_commutes_on_other_inputs']);
  t.notMatch(res.text, /add\(10, 20\)/, 'the held-out source is never shown');
});

t.test('node:test: process.exit(0) at import makes the tests vanish; no --baseline: oracle-shrank (vanished)', async (t) => {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', {
    'src/calc.mjs': 'export function add(a, b) {\n  return a - b;\n}\n',
    'tests/calc.test.mjs': "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.mjs';\n\ntest('adds', () => {\n  assert.equal(add(2, 3), 5);\n});\n",
    'ci/patchgate.json': SCAN_OFF,
  });
  r.checkout('agent', true).commit('agent', { 'src/calc.mjs': 'process.exit(0);\nexport function add(a, b) {\n  return a - b;\n}\n' });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '3', report: join(d, 'r.json'), cmd: [NODE, '--test', 'tests/'] });
  exits(t, res, 1);
  const rep = reportOf(d);
  t.equal(rep.row, 'oracle-shrank');
  t.same(rep.reasons.filter((x) => x.kind === 'vanished').map((x) => x.test), ['adds']);
  // and the honest fix is green with the same command
  r.checkout('main').checkout('fix', true).commit('fix', { 'src/calc.mjs': 'export function add(a, b) {\n  return a + b;\n}\n' });
  const ok = await ci({ repo: r.dir, seed: '3', report: join(d, 'r.json'), cmd: [NODE, '--test', 'tests/'] });
  exits(t, ok, 0);
});

t.test('a command patchgate cannot attach its reporter to is red, even when it exits 0 with a passing report: report-forged (no-stream)', async (t) => {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', { 'src/calc.mjs': 'export const x = 1;\n', 'tests/x.test.mjs': "import test from 'node:test';\ntest('x', () => {});\n" });
  r.checkout('agent', true).commit('agent', { 'src/calc.mjs': 'export const x = 1; // honest\n' });
  const d = tempDir(t);
  const tap = 'TAP version 13\nok 1 - x\n1..1\n';
  const res = await ci({ repo: r.dir, seed: '3', report: join(d, 'r.json'), cmd: ['/bin/sh', '-c', `printf '${tap.replace(/\n/g, '\\n')}'`] });
  exits(t, res, 1);
  const rep = reportOf(d);
  t.equal(rep.row, 'report-forged');
  t.ok(rep.reasons.some((x) => x.kind === 'no-stream' && /is not pytest, node, vitest or jest/.test(x.message)));
});

t.test('with the tamper scan on (the default), the same exit-handler forgery never reaches the run: src-tamper', { skip }, async (t) => {
  const r = pyAgent(pyProject(t), { 'src/calc.py': 'import atexit, os\n\ndef add(a, b):\n    return a - b\n\natexit.register(lambda: os._exit(0))\n' });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '7', report: join(d, 'r.json'), cmd: pytestCmd(py) });
  exits(t, res, 1);
  const rep = reportOf(d);
  t.equal(rep.row, 'src-tamper');
  t.match(res.text, /src\/calc\.py:6: os\._exit\(\) \(exit\)/);
  t.match(res.text, /the tests were not run/);
});
