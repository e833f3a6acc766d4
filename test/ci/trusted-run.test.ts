// Issue 25, "green on real projects", on small real pytest and node:test projects: the
// baseline is the trusted tree's run (a test skipped there may stay skipped), the judged
// tree's src/ is what gets imported (a project module from elsewhere is not-the-judged-code),
// failures beat oracle-shrank, the log is a summary (--verbose: everything), a missing command
// is one line, and `npm test` runs the script of the TRUSTED package.json, directly.

import t from 'tap';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ci, exits, tempDir, NODE, T0 } from './project.js';
import { pythonWithPytest } from './pyproject.js';
import { TestRepo } from '../helpers/repo.js';

const PY = pythonWithPytest();
if (!PY && process.env.CI) t.fail('pytest is missing: .ci/run installs python3-pytest');
const py = PY ?? 'python3';
const skip = !PY;
type Tap = Parameters<typeof tempDir>[0];

function reportOf(d: string): { verdict: string; row: string; fired: string[]; reasons: Array<{ kind: string; row: string; message: string; test?: string }>; baseline: { skippedThere?: number } | null; modules?: Record<string, string> } {
  return JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));
}

const CALC = `def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n`;
const TESTS = `import sys
import pytest
import calc
from calc import add, mul


def test_adds():
    assert add(2, 3) == 5


@pytest.mark.skipif(not getattr(calc, "HAS_MUL", True), reason="no mul in this build")
def test_muls():
    assert mul(2, 3) == 6


@pytest.mark.skipif(sys.platform != "win32", reason="Windows only")
def test_windows_only():
    assert add(1, 1) == 2
`;

/** A src-layout package (src/calc/__init__.py) whose main is green, one test skipped off Windows. */
function pkgProject(t: Tap, extra: Record<string, string | null> = {}): TestRepo {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', { 'src/calc/__init__.py': CALC, 'tests/test_calc.py': TESTS, ...extra });
  return r;
}

function agent(r: TestRepo, files: Record<string, string | null>): TestRepo {
  r.checkout('main').checkout('agent', true).commit('agent patch', files);
  return r;
}

const pytest = (...more: string[]) => [py, '-m', 'pytest', 'tests', ...more];

t.test('a test skipped on the trusted tree may stay skipped: trusted vs trusted is green, and src/ is what was imported', { skip }, async (t) => {
  const r = pkgProject(t);
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, base: 'main', head: 'main', seed: '5', report: join(d, 'r.json'), cmd: pytest() });
  exits(t, res, 0);
  const rep = reportOf(d);
  t.same(rep.fired, ['accept']);
  t.equal(rep.baseline?.skippedThere, 1, 'the Windows-only test was skipped on the trusted tree too');
  t.match(res.text, /all 2 test\(s\) that ran on the trusted tree ran here \(1 skipped there too\)/);
  t.match(rep.modules?.calc ?? '', /\/src\/calc\/__init__\.py$/, 'calc came from the sealed src/');
  t.notOk(rep.modules?.calc?.startsWith(r.dir), 'the sealed copy, not the checkout');
  // The baseline is cached per trusted tree: the second run does not run the trusted tree again.
  const again = await ci({ repo: r.dir, base: 'main', head: 'main', seed: '5', runs: 1, cmd: pytest() });
  exits(t, again, 0);
  t.notMatch(again.text, /running the trusted tree/);
  t.match(res.text, /running the trusted tree/);
});

t.test('a test that ran on the trusted tree and is skipped here: oracle-shrank', { skip }, async (t) => {
  const r = agent(pkgProject(t), { 'src/calc/__init__.py': CALC + `\nHAS_MUL = False\n` });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, base: 'main', head: 'agent', seed: '5', runs: 1, report: join(d, 'r.json'), cmd: pytest() });
  exits(t, res, 1);
  const rep = reportOf(d);
  t.equal(rep.row, 'oracle-shrank');
  t.ok(rep.reasons.some((x) => x.kind === 'skipped' && x.test === 'tests/test_calc.py::test_muls'));
  t.notOk(rep.reasons.some((x) => x.test === 'tests/test_calc.py::test_windows_only'), 'skipped there, skipped here: fine');
});

t.test('real failures beat oracle-shrank; the summary names the failure by its first line, entities decoded', { skip }, async (t) => {
  // add is broken (a real failure) and mul's test is skipped (the oracle shrank): the failure decides.
  const r = agent(pkgProject(t), { 'src/calc/__init__.py': CALC.replace('return a + b', 'return a * b + 99') + `\nHAS_MUL = False\n` });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, base: 'main', head: 'agent', seed: '5', runs: 1, report: join(d, 'r.json'), cmd: pytest() });
  exits(t, res, 1);
  const rep = reportOf(d);
  t.ok(rep.fired.includes('oracle-shrank') && rep.fired.includes('contract-red'), rep.fired.join(','));
  t.equal(rep.row, 'contract-red', 'the failure is the most specific row');
  const fail = res.out.find((l) => l.startsWith('patchgate: FAIL tests/test_calc.py::test_adds'));
  t.ok(fail, 'the failure is named');
  t.match(fail!, /assert 105 == 5/);
  t.notMatch(fail!, /&#10;|&lt;|&gt;|&quot;/, 'no XML entities left');
  // A summary: only the fired rows, not the whole table, and none of pytest's own output.
  const rows = res.out.filter((l) => l.startsWith('>> ') || /^ {3}\S/.test(l));
  t.same(rows.map((l) => l.slice(0, 3)), ['>> ', '>> '], 'two fired rows and no other table line');
  t.notOk(res.text.includes('short test summary info'), "pytest's output is not relayed");
  // The replay keeps --runs (issue 49), and the number of runs is said before the first.
  t.match(res.text, /replay: patchgate ci --base [0-9a-f]{12} --head [0-9a-f]{12} --seed 5 --runs 1 -- /);
  t.match(res.text, /patchgate: the suite runs 1 time\(s\)(, and once on the trusted tree for the baseline \(cached per trusted tree\))?: [12] run\(s\) in all; --runs 1 runs it once\n/);
  // --verbose: the whole table and the runner's output.
  const v = await ci({ repo: r.dir, base: 'main', head: 'agent', seed: '5', runs: 1, verbose: true, cmd: pytest() });
  exits(t, v, 1);
  t.ok(v.out.filter((l) => /^ {3}\S/.test(l)).length > 20, 'the whole table');
  t.ok(v.text.includes('short test summary info'), "pytest's own output");
});

t.test('a project module imported from outside the sealed tree: not-the-judged-code, with the fix', { skip }, async (t) => {
  // The trusted conftest puts another copy of the package first (as an installed copy would be);
  // inside the sandbox only the sealed tree, the toolchains and a private /tmp are there, so the
  // conftest writes the copy into that /tmp.
  const r = pkgProject(t, { 'tests/conftest.py': `import os, sys\nd = "/tmp/pg-other-copy"\nos.makedirs(d + "/calc", exist_ok=True)\nopen(d + "/calc/__init__.py", "w").write(${JSON.stringify(CALC)})\nsys.path.insert(0, d)\n` });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, base: 'main', head: 'main', seed: '5', runs: 1, report: join(d, 'r.json'), cmd: pytest() });
  exits(t, res, 1);
  const rep = reportOf(d);
  t.equal(rep.row, 'not-the-judged-code');
  const why = rep.reasons.find((x) => x.kind === 'not-judged-code');
  t.match(why?.message ?? '', /calc was imported from \/tmp\/pg-other-copy\/calc\/__init__\.py, not from the judged tree's src\/calc\//);
  t.match(why?.message ?? '', /Fix: /);
});

t.test('a command that is not there: one line, exit 2, no table and no "retry"', async (t) => {
  const r = pkgProject(t);
  const res = await ci({ repo: r.dir, base: 'main', head: 'main', seed: '5', cmd: ['no-such-runner-xyz', 'tests'] });
  exits(t, res, 2);
  const mentions = [...res.out, ...res.err].filter((l) => l.includes('no-such-runner-xyz'));
  t.equal(mentions.length, 2, 'the "running" line and the one line that says why');
  t.match(res.err.join('\n'), /cannot run no-such-runner-xyz: .*ENOENT.*nothing was judged/);
  t.notOk(res.out.some((l) => l.startsWith('>> ') || /retry/.test(l)), res.text);
});

const NODE_TEST = `import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.mjs';\n\ntest('adds', () => assert.equal(add(2, 3), 5));\ntest('adds zero', () => assert.equal(add(0, 0), 0));\n`;

t.test("npm test runs the TRUSTED package.json script directly, not the checkout's", async (t) => {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', {
    'package.json': JSON.stringify({ name: 'calc', type: 'module', scripts: { test: 'npm run spec', spec: 'node --test --test-reporter=tap tests/' } }, null, 2),
    'src/calc.mjs': 'export function add(a, b) {\n  return a + b;\n}\n', 'tests/calc.test.mjs': NODE_TEST,
  });
  r.checkout('agent', true).commit('agent patch', { 'src/calc.mjs': 'export function add(a, b) {\n  return a - b;\n}\n' });
  // The checkout's package.json (what npm itself would read) says something else entirely.
  writeFileSync(join(r.dir, 'package.json'), JSON.stringify({ scripts: { test: 'node -e "process.exit(0)"' } }));
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, base: 'main', head: 'agent', seed: '5', runs: 1, report: join(d, 'r.json'), cmd: ['npm', 'test'] });
  exits(t, res, 1);
  t.match(res.text, /npm test runs "test: npm run spec" -> "spec: node --test --test-reporter=tap tests\/" in package.json at the trusted revision [0-9a-f]{12}/);
  t.match(res.text, /patchgate: FAIL adds/);
  const green = await ci({ repo: r.dir, base: 'main', head: 'main', seed: '5', runs: 1, cmd: ['npm', 'run', 'spec'] });
  exits(t, green, 0);
  const shell = await ci({ repo: r.dir, base: 'main', head: 'main', seed: '5', cmd: ['yarn', 'lint'] });
  exits(t, shell, 2);
  t.match(shell.err.join('\n'), /package\.json has no script "lint"/);
});

t.test('a script that needs a shell is refused in one line, naming the operator', async (t) => {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', { 'package.json': JSON.stringify({ scripts: { test: 'tsc && node --test' } }), 'src/a.mjs': 'export const a = 1;\n' });
  const res = await ci({ repo: r.dir, base: 'main', head: 'main', seed: '5', cmd: ['pnpm', 'test'] });
  exits(t, res, 2);
  t.match(res.err.join('\n'), /needs a shell \("&&"\)/);
});
void NODE;
