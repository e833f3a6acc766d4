// A small Python project tested by real pytest, in a real git repository, whose main is red
// (the bug is real): for the issue-11 tests of patchgate ci's integrity (sealed run, the
// gate's own reporter stream, the trusted baseline, shuffled reruns, held-out tests).

import { spawnSync } from 'node:child_process';
import { TestRepo } from '../helpers/repo.js';
import { T0, type Tap } from './project.js';

/** True when bubblewrap makes its namespaces here (the strict runs' sandbox). */
export function bwrapWorks(): boolean {
  return spawnSync('bwrap', ['--unshare-all', '--ro-bind', '/', '/', 'true']).status === 0;
}

/**
 * The tools a test file needs, each [present, what, Debian package]: a missing one fails the
 * file under CI=true (.ci/run installs it) and is a skip comment by hand. True when all are there.
 */
export function needTools(t: { fail(message: string): unknown; comment(message: string): unknown }, tools: ReadonlyArray<readonly [unknown, string, string]>): boolean {
  for (const [ok, what, pkg] of tools) {
    if (ok) continue;
    if (process.env.CI) t.fail(`${what} is missing: .ci/run installs ${pkg}`);
    else t.comment(`skip: ${what} is not installed; .ci/run installs ${pkg}`);
  }
  return tools.every(([ok]) => !!ok);
}

/** The interpreter with pytest, or null (the test then skips by hand and fails in CI). */
export function pythonWithPytest(): string | null {
  for (const py of ['python3', 'python']) {
    const r = spawnSync(py, ['-c', 'import pytest'], { stdio: 'ignore' });
    if (r.status === 0) return py;
  }
  return null;
}

export const BUGGY = `def add(a, b):\n    return a - b\n`;
export const FIXED = `def add(a, b):\n    return a + b\n`;

export const TESTS = `from calc import add


def test_adds():
    assert add(2, 3) == 5


def test_zero():
    assert add(0, 0) == 0
`;

export const PYPROJECT = `[tool.pytest.ini_options]\npythonpath = ["src"]\n`;

/** main: the buggy calc, its tests (red on main), extra files. */
export function pyProject(t: Tap, extra: Record<string, string | null> = {}): TestRepo {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', { 'src/calc.py': BUGGY, 'tests/test_calc.py': TESTS, 'pyproject.toml': PYPROJECT, ...extra });
  return r;
}

export function pyAgent(r: TestRepo, files: Record<string, string | null>, branch = 'agent'): TestRepo {
  r.checkout('main').checkout(branch, true).commit('agent patch', files);
  return r;
}

export function pytestCmd(py: string, ...more: string[]): string[] {
  return [py, '-m', 'pytest', 'tests', ...more];
}
