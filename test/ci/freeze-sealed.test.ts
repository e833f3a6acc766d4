// Issue 49: `ledger freeze tests/x.py::test_y` re-ran the whole command in the unsealed work tree
// without src/ on the import path; every test failed and the named one, which passed, was
// blamed. Under the default (strict) policy the re-runs are patchgate ci's: a sealed copy of
// HEAD, src/ on the path, the sandbox, only the named test (pytest), its own outcome. Real git,
// real pytest, real bubblewrap, on a src-layout project with no pytest path configuration.

import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exits, freeze, T0 } from './project.js';
import { bwrapWorks, needTools, pythonWithPytest } from './pyproject.js';
import { TestRepo } from '../helpers/repo.js';

const PY = pythonWithPytest();
const ready = needTools(t, [[PY, 'pytest (python3 -m pytest)', 'python3-pytest'], [bwrapWorks(), 'bubblewrap', 'bubblewrap']]);

const CALC = `def add(a, b):\n    return a + b\n`;
const TESTS = `from calc import add\n\n\ndef test_adds():\n    assert add(2, 3) == 5\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n`;
const BROKEN = `from calc import add\n\n\ndef test_broken():\n    assert add(1, 1) == 3\n`;

/** src/calc/__init__.py with no pytest path settings: only a run with src/ on the path imports it. */
function project(t: Parameters<typeof TestRepo.init>[0]): TestRepo {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', { 'src/calc/__init__.py': CALC, 'tests/test_calc.py': TESTS, 'tests/test_other.py': BROKEN });
  return r;
}

const cmd = () => [PY!, '-m', 'pytest', 'tests'];

t.test('the named test alone, sealed, with src/ on the path: it passed, so it is not blamed', { skip: !ready }, async (t) => {
  const r = project(t);
  const res = await freeze({ repo: r.dir, nodeid: 'tests/test_calc.py::test_adds', seed: '4242', rerun: cmd() });
  exits(t, res, 0);
  t.match(res.text, /re-run 1\/2 of tests\/test_calc\.py::test_adds alone: .* in a sealed copy of HEAD [0-9a-f]{12}, as patchgate ci runs it/);
  t.match(res.text, /re-run 1\/2: tests\/test_calc\.py::test_adds passed[^]*re-run 2\/2: tests\/test_calc\.py::test_adds passed/);
  t.notMatch(res.text, /test_broken|test_zero/, 'no other test ran, and none is named');
  t.match(res.text, /0 of 2 re-runs failed/);
  const row = JSON.parse(readFileSync(join(r.dir, 'ci/flake-ledger.jsonl'), 'utf8').trim());
  t.equal(row.nodeid, 'tests/test_calc.py::test_adds');
  t.equal(row.seed, 4242);
});

t.test('a named test that fails on both sealed re-runs is a defect; an id that names no test is an error, nothing written', { skip: !ready }, async (t) => {
  const r = project(t);
  const bad = await freeze({ repo: r.dir, nodeid: 'tests/test_other.py::test_broken', seed: '7', rerun: cmd() });
  exits(t, bad, 1);
  t.match(bad.text, /re-run 1\/2: tests\/test_other\.py::test_broken failed[^]*re-run 2\/2: tests\/test_other\.py::test_broken failed/);
  t.match(bad.text, /reproduces: a defect, not a flake/);
  const none = await freeze({ repo: r.dir, nodeid: 'tests/test_calc.py::test_nothing', seed: '7', rerun: cmd() });
  exits(t, none, 2);
  t.match(none.text, /tests\/test_calc\.py::test_nothing did not run in the re-run \(no test ran\): name the test by its id as patchgate ci prints it/);
  t.notOk(existsSync(join(r.dir, 'ci/flake-ledger.jsonl')), 'nothing was written');
});
