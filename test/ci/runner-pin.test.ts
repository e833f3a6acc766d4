// Issue 46, item 2: a runner the project cannot shadow. A judged tree that ships its own
// `pytest` (at the root, where `python -m` looks first, and in src/, first on PYTHONPATH) and
// `_pytest`, each a fake that writes a passing stream and JUnit file, is still run and judged by
// the real pytest in a real bubblewrap; the report names the project's copies as not imported.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ci, exits, tempDir } from './project.js';
import { bwrapWorks, needTools, pyAgent, pyProject, pytestCmd, pythonWithPytest } from './pyproject.js';

const PY = pythonWithPytest();
const BWRAP = bwrapWorks();
const skip = !needTools(t, [[PY, 'pytest', 'python3-pytest'], [BWRAP, 'bubblewrap', 'bubblewrap']]);
const py = PY ?? 'python3';

/** A fake pytest: every collected-looking test passes, on the gate's fd 3 and in the JUnit file. */
const FAKE = `import json, os, sys

def console_main():
    junit = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml=")), None)
    recs = [{"t": "start", "pytest": "9.0.3"}, {"t": "collected", "id": "tests/test_calc.py::test_adds"}, {"t": "collected", "id": "tests/test_calc.py::test_zero"},
            {"t": "test", "id": "tests/test_calc.py::test_adds", "status": "passed"}, {"t": "test", "id": "tests/test_calc.py::test_zero", "status": "passed"}, {"t": "end", "exitstatus": 0}]
    try:
        os.write(3, "".join(json.dumps(r) + "\\n" for r in recs).encode())
    except OSError:
        pass
    if junit:
        open(junit, "w").write('<testsuites><testsuite name="pytest" tests="2"><testcase classname="tests.test_calc" name="test_adds"/><testcase classname="tests.test_calc" name="test_zero"/></testsuite></testsuites>')
    return 0

main = console_main
`;
const MAIN = 'import sys\nfrom . import console_main\nsys.exit(console_main())\n';

t.test("a project shipping its own pytest and _pytest is still judged by the real runner, and the report says so", { skip }, async (t) => {
  // The project (main) ships them; the patch leaves add() broken: only a fake runner could make this run green.
  const shipped = {
    'pytest/__init__.py': FAKE, 'pytest/__main__.py': MAIN,
    'src/pytest/__init__.py': FAKE, 'src/pytest/__main__.py': MAIN,
    'src/_pytest/__init__.py': 'raise SystemExit(0)\n',
    'src/pluggy.py': 'raise SystemExit(0)\n',
  };
  const r = pyAgent(pyProject(t, shipped), { 'src/calc.py': '# still broken\ndef add(a, b):\n    return a - b\n' });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '7', report: join(d, 'r.json'), cmd: pytestCmd(py) });
  exits(t, res, 1);
  const rep = JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));
  t.equal(rep.row, 'contract-red', rep.fired.join(','));
  t.match(res.text, /FAIL tests\/test_calc\.py::test_adds/);
  t.same(rep.runner.shadowed, ['pytest/', 'src/_pytest/', 'src/pluggy.py', 'src/pytest/']);
  t.notMatch(rep.runner.modules.pytest, /\/tree\//, `pytest came from outside the sealed tree (${rep.runner.modules.pytest})`);
  t.match(rep.runner.modules._pytest, /_pytest/);
  t.match(res.text, /the judged tree's pytest\/, src\/_pytest\/, src\/pluggy\.py, src\/pytest\/ are named like the test runner's modules and were not imported in their place/);
  t.notOk(rep.fired.includes('not-the-judged-code'), 'a runner-named package is not "the judged code imported from elsewhere"');
  // The fixed add is green beside the same packages.
  r.commit('fix', { 'src/calc.py': 'def add(a, b):\n    return a + b\n' });
  const d2 = tempDir(t);
  const ok = await ci({ repo: r.dir, seed: '7', report: join(d2, 'r.json'), cmd: pytestCmd(py) });
  exits(t, ok, 0);
});
