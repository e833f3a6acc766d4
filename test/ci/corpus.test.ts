// Issue 25: `patchgate ci` on real projects (git bundles in shared/corpus, cloned into temp
// folders): at their own HEAD a trusted-vs-trusted run is GREEN, and a patch that breaks one of
// their functions is RED and names the failed tests. pytest projects use the Python packages
// the machine has (click: pytest only; attrs: the hypothesis-free test files; packaging: the
// test files that need neither pretend nor tomli_w); zustand runs vitest with the test
// dependencies of its package.json installed from the npm registry (one install).

import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ci, exits, NPM_BEFORE, tempDir } from './project.js';
import { pythonWithPytest } from './pyproject.js';

const CORPUS = resolve(process.cwd(), '../../shared/corpus');
const corpus = existsSync(CORPUS) ? CORPUS : '/work/shared/corpus';
const PY = pythonWithPytest();
// Real suites on a shared 2-core machine: the file's time is the suites' time, not a limit on it.
t.setTimeout(1_800_000);
type Tap = Parameters<typeof tempDir>[0];

function git(dir: string, ...args: string[]): string {
  const r = spawnSync('git', ['-C', dir, '-c', 'user.name=Agent', '-c', 'user.email=agent@example.com', '-c', 'commit.gpgsign=false', ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Clone NAME.bundle; its HEAD is `main`. `agent` gets one commit replacing `from` by `to` in `file`. */
function cloneWithPatch(t: Tap, name: string, file: string, from: string, to: string): string {
  const d = join(tempDir(t, `pg-corpus-${name}-`), name);
  const r = spawnSync('git', ['clone', '-q', join(corpus, `${name}.bundle`), d], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git clone ${name}: ${r.stderr}`);
  git(d, 'checkout', '-q', '-B', 'main');
  git(d, 'checkout', '-q', '-b', 'agent');
  const text = readFileSync(join(d, file), 'utf8');
  if (!text.includes(from)) throw new Error(`${name}: ${file} no longer has ${JSON.stringify(from)}`);
  writeFileSync(join(d, file), text.replace(from, to));
  git(d, 'commit', '-q', '-am', `break ${file}`);
  git(d, 'checkout', '-q', 'main');
  return d;
}

function reportOf(d: string): { row: string; fired: string[]; reasons: Array<{ kind: string; test?: string }>; results: { total: number; failed: number; skipped: number }; modules?: Record<string, string> } {
  return JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));
}

interface Case {
  name: string;
  module: string;
  tests: string[];
  file: string;
  from: string;
  to: string;
  /** A test the broken patch must fail. */
  fails: RegExp;
}

const PY_CASES: Case[] = [
  // click: three of its test modules (358 tests, about a fifth of its suite) hold the test the
  // broken function fails; the whole suite, run three times here, was this file's 300 s.
  { name: 'click', module: 'click', tests: ['tests/test_utils', 'tests/test_basic.py', 'tests/test_formatting.py'], file: 'src/click/utils.py', from: 'words = help.split()', to: 'words = help.split()[:1]', fails: /FAIL tests\/test_utils\/test_make_default_short_help\.py::test_make_default_short_help/ },
  { name: 'attrs', module: 'attr', tests: ['tests/test_validators.py', 'tests/test_filters.py', 'tests/test_cmp.py'], file: 'src/attr/validators.py', from: 'if not isinstance(value, self.type):', to: 'if isinstance(value, self.type):', fails: /FAIL tests\/test_validators\.py::TestInstanceOf::test_success/ },
  { name: 'packaging', module: 'packaging', tests: ['tests/test_utils.py', 'tests/test_errors.py'], file: 'src/packaging/utils.py', from: 'value = name.lower().replace("_", "-")', to: 'value = name.replace("_", "-")', fails: /FAIL tests\/test_utils\.py::test_canonicalize_name/ },
];

for (const c of PY_CASES) {
  t.test(`${c.name} (pytest): green at its own HEAD, red on a broken function`, { skip: !PY }, async (t) => {
    const repo = cloneWithPatch(t, c.name, c.file, c.from, c.to);
    const cmd = [PY ?? 'python3', '-m', 'pytest', ...c.tests];
    const d = tempDir(t);
    const started = Date.now();
    // One run each (the shuffled reruns are covered on small projects): the trusted tree's run, then the judged one.
    const green = await ci({ repo, base: 'main', head: 'main', seed: '11', runs: 1, report: join(d, 'r.json'), cmd });
    t.comment(`${c.name} green run (trusted run + 1 run): ${Math.round((Date.now() - started) / 1000)} s`);
    exits(t, green, 0);
    const rep = reportOf(d);
    t.same(rep.fired, ['accept']);
    t.ok(rep.results.total > 50, `${rep.results.total} tests ran`);
    t.match(rep.modules?.[c.module] ?? '', new RegExp(`/src/${c.module}/__init__\\.py$`), `${c.module} came from the sealed src/, not site-packages`);
    t.ok(green.out.length < 60, `a summary: ${green.out.length} lines`);
    const s2 = Date.now();
    const red = await ci({ repo, base: 'main', head: 'agent', seed: '11', runs: 1, report: join(d, 'r.json'), cmd });
    t.comment(`${c.name} red run (cached baseline, 1 run): ${Math.round((Date.now() - s2) / 1000)} s`);
    exits(t, red, 1);
    t.equal(reportOf(d).row, 'contract-red');
    t.match(red.text, c.fails);
    t.ok(red.out.length < 120, `a summary: ${red.out.length} lines`);
  });
}

t.test('zustand (vitest): green at its own HEAD, red on a broken setState', async (t) => {
  const repo = cloneWithPatch(t, 'zustand', 'src/vanilla.ts', 'if (!Object.is(nextState, state)) {', 'if (Object.is(nextState, state)) {');
  // The test dependencies of zustand's package.json, at the versions of its lock (vitest: the
  // version its range allows that runs on Node 20), installed once from the npm registry.
  const deps = tempDir(t, 'pg-zdeps-');
  writeFileSync(join(deps, 'package.json'), JSON.stringify({ name: 'zustand-test-deps', private: true }));
  const inst = spawnSync('npm', ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--ignore-scripts', NPM_BEFORE, 'vitest@4.1.12', 'vite@8.3.8', 'jsdom@29.1.1', '@testing-library/jest-dom@6.9.1', '@testing-library/react@16.3.2', '@testing-library/dom@10.4.1', 'react@19.2.7', 'react-dom@19.2.7', 'immer@11.1.8', 'use-sync-external-store@1.6.0'], { cwd: deps, encoding: 'utf8', timeout: 300_000 });
  if (inst.status !== 0) {
    t.fail(`npm install failed: ${(inst.stderr ?? '').slice(-800)}`);
    return;
  }
  symlinkSync(join(deps, 'node_modules'), join(repo, 'node_modules'));
  // zustand's own script (`test:spec`: vitest run), on its store tests in node's environment.
  const cmd = ['npm', 'run', 'test:spec', '--', 'tests/vanilla', '--environment=node'];
  const d = tempDir(t);
  const green = await ci({ repo, base: 'main', head: 'main', seed: '11', runs: 1, report: join(d, 'r.json'), cmd });
  exits(t, green, 0);
  t.same(reportOf(d).fired, ['accept']);
  t.match(green.text, /npm run test:spec -- tests\/vanilla --environment=node runs "test:spec: vitest run"/);
  const red = await ci({ repo, base: 'main', head: 'agent', seed: '11', runs: 1, report: join(d, 'r.json'), cmd });
  exits(t, red, 1);
  t.equal(reportOf(d).row, 'contract-red');
  t.match(red.text, /FAIL tests\/vanilla\/basic\.test\.ts::/);
});
