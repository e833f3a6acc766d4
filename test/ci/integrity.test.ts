// Issue 11: a green run of `patchgate ci` that is evidence. Real pytest and node:test projects
// in real git repositories; each tampering vector is caught for the reason named in its own
// decision row, and honest fixes stay green (one on a red main, with no --baseline).

import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
  t.match(res.text, /all 2 test\(s\) of the trusted tree ran/);
  t.match(res.text, /in agreement with the report and the exit status/);
});

t.test('main stays red without the fix: contract-red, not green', { skip }, async (t) => {
  const r = pyAgent(pyProject(t), { 'src/other.py': 'X = 1\n' });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '7', report: join(d, 'r.json'), cmd: pytestCmd(py) });
  exits(t, res, 1);
  t.equal(reportOf(d).row, 'contract-red');
});
