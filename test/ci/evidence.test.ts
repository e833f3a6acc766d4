// Issue 50, item 4: `patchgate ci --evidence --class test-author` on a real project (click, from
// the corpus bundle): a test author's new test that fails on main is accepted, one that already
// passes there is flagged, and a push that deletes a test or removes an assertion is refused,
// each naming the test id and path with a next step that runs as printed. Also: the TS/JS side
// of the test inventory on zustand's own test file, and a check that cannot judge fails closed.

import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ci, tempDir } from './project.js';
import { bwrapWorks, needTools, pythonWithPytest } from './pyproject.js';
import { inventory } from '../../src/ci/test-inventory.js';

const CORPUS = existsSync('/work/shared/corpus') ? '/work/shared/corpus' : resolve(process.cwd(), '../../shared/corpus');
const PY = pythonWithPytest();
const skip = !needTools(t, [[PY, 'pytest', 'python3-pytest'], [bwrapWorks(), 'bubblewrap', 'bubblewrap'], [existsSync(join(CORPUS, 'click.bundle')), 'the corpus bundle click.bundle', 'the shared corpus']]);
const CLI = resolve('dist/cli.js');
t.setTimeout(600_000);

const POLICY = JSON.stringify({
  writable: ['src/**'],
  classes: { implementer: { writable: ['src/**'] }, 'test-author': { writable: ['tests/**'], protected: ['src/**', '*.lock'] } },
}, null, 2) + '\n';

function git(dir: string, ...args: string[]): string {
  const r = spawnSync('git', ['-C', dir, '-c', 'user.name=Agent', '-c', 'user.email=agent@example.com', '-c', 'commit.gpgsign=false', ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A branch off main with `edit` applied to files of the work tree, committed; back on main after. */
function branch(dir: string, name: string, edit: (f: (p: string, change: (text: string) => string) => void) => void): void {
  git(dir, 'checkout', '-q', '-b', name, 'main');
  edit((p, change) => writeFileSync(join(dir, p), change(readFileSync(join(dir, p), 'utf8'))));
  git(dir, 'commit', '-q', '-am', `test author: ${name}`);
  git(dir, 'checkout', '-q', 'main');
}

const FILENAME_TESTS = 'tests/test_utils/test_format_filename.py';
const CONFIRM_TESTS = 'tests/test_utils/test_confirm.py';

t.test('click: new evidence accepted, a passing test flagged, a weakened test refused', { skip }, async (t) => {
  const d = join(tempDir(t, 'pg-evidence-'), 'click');
  const c = spawnSync('git', ['clone', '-q', join(CORPUS, 'click.bundle'), d], { encoding: 'utf8' });
  if (c.status !== 0) throw new Error(`git clone click: ${c.stderr}`);
  git(d, 'checkout', '-q', '-B', 'main');
  // A person puts the two-class policy on main.
  mkdirSync(join(d, 'ci'), { recursive: true });
  writeFileSync(join(d, 'ci', 'patchgate.json'), POLICY);
  git(d, 'add', 'ci/patchgate.json');
  git(d, 'commit', '-q', '-m', 'policy: implementer and test-author');
  const main = git(d, 'rev-parse', 'main').trim();
  // click has no format_filename(max_length=...): a test of it fails on main (TypeError).
  branch(d, 'agent/tests-new', (f) => f(FILENAME_TESTS, (s) => `${s}\n\ndef test_format_filename_max_length():\n    assert click.format_filename("/x/very_long_name.txt", shorten=True, max_length=8) == "very_..."\n`));
  branch(d, 'agent/tests-pass', (f) => f(FILENAME_TESTS, (s) => `${s}\n\ndef test_format_filename_bytes_again():\n    assert click.format_filename(b"a.txt") == "a.txt"\n`));
  branch(d, 'agent/tests-weak', (f) => {
    f(FILENAME_TESTS, (s) => s.replace(/\n\s*assert click\.format_filename\("\/x\/foo\.txt", shorten=True\) == "foo\.txt"/, ''));
    f(CONFIRM_TESTS, (s) => {
      const at = s.indexOf('def test_confirm_repeat');
      const next = s.indexOf('\ndef ', at + 4);
      return s.slice(0, at) + (next < 0 ? '' : s.slice(next + 1));
    });
  });
  const cmd = [PY!, '-m', 'pytest', 'tests'];
  const dir = tempDir(t);
  const run = (head: string) => ci({ repo: d, base: 'main', head, evidence: true, agentClass: 'test-author', seed: '5', report: join(dir, 'r.json'), cmd });
  const report = () => JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8')) as { row: string; reasons: Array<{ kind: string; row: string; test?: string; message: string }>; evidence: { new: string[]; changed: string[]; failOnTip: string[]; mergeBase: string } };

  const ok = await run('agent/tests-new');
  t.equal(ok.code, 0, `a new test that fails on main is new evidence:\n${ok.text}`);
  const newId = `${FILENAME_TESTS}::test_format_filename_max_length`;
  t.same(report().evidence.new, [newId], 'the new test is found by its pytest node id');
  t.same(report().evidence.failOnTip, [newId], 'and it failed on the trusted tip');
  t.equal(report().evidence.mergeBase, main);

  // A new test file that imports a name main does not have yet cannot even be collected there: that is failing.
  git(d, 'checkout', '-q', '-b', 'agent/tests-import', 'main');
  writeFileSync(join(d, 'tests/test_shorten.py'), 'from click.utils import shorten_words\n\n\ndef test_shorten_words():\n    assert shorten_words("a b c", 1) == "a..."\n');
  git(d, 'add', 'tests/test_shorten.py');
  git(d, 'commit', '-q', '-m', 'test author: a test of a function to come');
  git(d, 'checkout', '-q', 'main');
  const imports = await run('agent/tests-import');
  t.equal(imports.code, 0, `a test file that cannot be collected on main is new evidence:\n${imports.text}`);
  t.same(report().evidence.failOnTip, ['tests/test_shorten.py::test_shorten_words']);
  t.match(imports.text, /tests\/test_shorten\.py cannot be collected on the trusted tip/, 'and the log says why it counts as failing');

  const flagged = await run('agent/tests-pass');
  t.equal(flagged.code, 1, 'a new test that already passes on main is red');
  const passId = `${FILENAME_TESTS}::test_format_filename_bytes_again`;
  const p = report();
  t.equal(p.row, 'not-evidence');
  t.same(p.reasons.map((r) => [r.kind, r.test]), [['passes-on-tip', passId]], 'one finding, naming the test');
  t.match(p.reasons[0]!.message, `${passId} (${FILENAME_TESTS}:`, 'the id and the path with its line');
  t.match(p.reasons[0]!.message, 'passes on the trusted tip', 'what is wrong');

  const weak = await run('agent/tests-weak');
  t.equal(weak.code, 1, 'a weakened test is refused');
  const w = report();
  t.equal(w.row, 'test-weakened');
  const byKind = Object.fromEntries(w.reasons.map((r) => [r.kind, r]));
  t.equal(byKind['test-deleted']?.test, `${CONFIRM_TESTS}::test_confirm_repeat`, 'the deleted test, by id');
  t.equal(byKind['assertions-removed']?.test, `${FILENAME_TESTS}::test_filename_formatting`, 'the test that lost an assertion, by id');
  t.match(byKind['assertions-removed']?.message ?? '', /has 4 assertion\(s\), 5 at [0-9a-f]{12}/, 'with the counts');
  t.notOk(weak.text.includes('evidence: running'), 'a weakened push is refused before anything runs');
  // The next steps run as printed: git show the deleted test; the rerun gives the same verdict.
  const show = /\(git show ([0-9a-f]{12}:\S+) shows it\)/.exec(byKind['test-deleted']?.message ?? '');
  t.ok(show, 'the deletion names a git show command');
  t.match(git(d, 'show', show![1]!), /def test_confirm_repeat/, 'which shows the deleted test');
  const rerun = /then run again: (patchgate ci .*)$/.exec(byKind['test-deleted']?.message ?? '')?.[1] ?? '';
  t.match(rerun, `--evidence --class test-author --repo ${d} --base main --head agent/tests-weak -- ${PY} -m pytest tests`);
  const again = spawnSync('sh', ['-c', rerun.replace(/^patchgate /, `${process.execPath} ${CLI} `)], { encoding: 'utf8', cwd: tempDir(t) });
  t.equal(again.status, 1, 'the printed command runs and refuses again');
  t.match(again.stdout, /test_confirm_repeat .* is deleted by this push/);

  // Without --class the test author's push meets the default class, which may not write tests.
  const noClass = await ci({ repo: d, base: 'main', head: 'agent/tests-new', evidence: true, seed: '5', cmd });
  t.equal(noClass.code, 1);
  t.match(noClass.text, /add --class, e\.g\. --class test-author/, 'and says to name the class');

  // A check that cannot judge fails closed with one line (no runner it can select tests with).
  const closed = await ci({ repo: d, base: 'main', head: 'agent/tests-new', evidence: true, agentClass: 'test-author', seed: '5', cmd: ['true'] });
  t.equal(closed.code, 2, 'exit 2: nothing was judged');
  t.match(closed.err.join('\n'), /^patchgate: gate error: --evidence runs the new tests with pytest, node --test, vitest or jest/m);
});

t.test('the TS side of the inventory: zustand\'s test ids and assertion counts, typescript-estree', { skip: existsSync(join(CORPUS, 'zustand.bundle')) ? false : (process.env.CI ? false : 'no corpus') }, async (t) => {
  const d = join(tempDir(t, 'pg-evidence-ts-'), 'zustand');
  const c = spawnSync('git', ['clone', '-q', '--depth', '1', `file://${join(CORPUS, 'zustand.bundle')}`, d], { encoding: 'utf8' });
  if (c.status !== 0) spawnSync('git', ['clone', '-q', join(CORPUS, 'zustand.bundle'), d]);
  const file = readdirSync(join(d, 'tests')).filter((f) => /\.test\.tsx?$/.test(f)).sort()[0]!;
  const path = `tests/${file}`;
  const text = readFileSync(join(d, path), 'utf8');
  const inv = await inventory(path, text);
  t.notOk(inv.problem, 'the file parses');
  t.ok(inv.tests.length > 2, `${inv.tests.length} tests found in ${path}`);
  for (const x of inv.tests) t.match(x.id, new RegExp(`^${path.replace(/\./g, '\\.')}::`), 'ids are path::[group > ]name');
  const target = inv.tests.find((x) => x.assertions > 0)!;
  t.ok(target, 'a test with assertions');
  // Turn that test's first expect(...) into Object(...): the file still parses, its count drops by one.
  const lines = text.split('\n');
  const at = lines.findIndex((l, i) => i >= target.line - 1 && /\bexpect\(/.test(l));
  lines[at] = lines[at]!.replace(/\bexpect\(/, 'Object(');
  const after = await inventory(path, lines.join('\n'));
  t.notOk(after.problem, 'the edited file parses');
  t.equal(after.tests.find((x) => x.id === target.id)?.assertions, target.assertions - 1, `${target.id} lost one assertion`);
  t.same(after.tests.filter((x) => x.id !== target.id).map((x) => x.assertions), inv.tests.filter((x) => x.id !== target.id).map((x) => x.assertions), 'the other tests keep their counts');
  const bad = await inventory(path, `${text}\n test('x', () => {`);
  t.match(bad.problem ?? '', /does not parse/, 'a file that does not parse says so, with no tests counted');
});
