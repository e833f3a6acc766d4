// Issue 46, item 6, in a real bubblewrap: run 2 varies the conditions code can key on (the clock
// years ahead through Debian's libfaketime, uid/gid, HOME, the temp folder, the hostname,
// PYTHONHASHSEED, the order of the variables). A function correct only before a date is red
// `environment-dependent`, naming the tests; an order-dependent one is still `order-dependent`.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ci, exits, tempDir } from './project.js';
import { bwrapWorks, needTools, pyAgent, pyProject, pytestCmd, pythonWithPytest } from './pyproject.js';
import { faketimeLibrary } from '../../src/ci/vary.js';

const PY = pythonWithPytest();
const FAKETIME = faketimeLibrary();
const skip = !needTools(t, [[PY, 'pytest', 'python3-pytest'], [bwrapWorks(), 'bubblewrap', 'bubblewrap'], [FAKETIME, 'libfaketime', 'libfaketime']]);
const py = PY ?? 'python3';

type Report = { row: string; fired: string[]; reasons: Array<{ kind: string; message: string; test?: string }>; variation?: Array<{ run: number; clock: string | null; uid: number | null; hostname: string | null; home: string }> };

async function run(t: Parameters<typeof pyProject>[0], src: string, seed = '7') {
  const r = pyAgent(pyProject(t), { 'src/calc.py': src });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed, report: join(d, 'r.json'), cmd: pytestCmd(py) });
  return { res, rep: JSON.parse(readFileSync(join(d, 'r.json'), 'utf8')) as Report };
}

t.test('a function right only before a date is red, environment-dependent, naming the tests', { skip }, async (t) => {
  const { res, rep } = await run(t, 'import datetime\n\n\ndef add(a, b):\n    return a + b if datetime.date.today().year < 2028 else a - b\n');
  exits(t, res, 1);
  t.equal(rep.row, 'environment-dependent', rep.fired.join(','));
  t.same(rep.reasons.filter((r) => r.kind === 'environment-dependent').map((r) => r.test), ['tests/test_calc.py::test_adds']);
  t.notOk(rep.fired.includes('order-dependent'), 'not blamed on the order');
  t.match(res.text, /run 2 of 2, order shuffled with seed \d+; environment varied: clock \+\d+ years \(libfaketime\), uid\/gid \d+, hostname pg-[0-9a-f]+, HOME \/tmp\/home-[0-9a-f]+/);
  t.match(rep.variation?.[0], { run: 2, clock: /^\+\d+y$/ });
});

t.test('code keyed on the uid, HOME or hostname of the sandbox is red too; an honest fix is green', { skip }, async (t) => {
  const keyed = 'import os\nimport socket\n\n\ndef add(a, b):\n    same = os.getuid() == 65534 and os.environ.get("HOME") == "/tmp/home" and socket.gethostname() == "patchgate-ci"\n    return a + b if same else a - b\n';
  const bad = await run(t, keyed);
  exits(t, bad.res, 1);
  t.ok(bad.rep.fired.includes('environment-dependent'), bad.rep.fired.join(','));
  const ok = await run(t, 'def add(a, b):\n    return a + b\n');
  exits(t, ok.res, 0);
  t.same(ok.rep.fired, ['accept']);
});

t.test('a test that depends on the one before it is still order-dependent, not environment-dependent', { skip }, async (t) => {
  // add() is right only until test_zero ran (state kept in the process): run 1's order passes.
  const src = '_calls = []\n\n\ndef add(a, b):\n    _calls.append((a, b))\n    return a - b if (0, 0) in _calls[:-1] else a + b\n';
  // Seed 1 shuffles run 2 to test_zero, test_adds (seed 7 keeps the two in place).
  const { res, rep } = await run(t, src, '1');
  t.equal(rep.row, 'order-dependent', rep.fired.join(','));
  t.same(rep.reasons.filter((r) => r.kind === 'order-dependent').map((r) => r.test), ['tests/test_calc.py::test_adds']);
  t.notOk(rep.fired.includes('environment-dependent'), 'the environment is not blamed');
  exits(t, res, 1);
});
