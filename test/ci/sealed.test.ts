// Issue 46, items 1 and 3, in a real bubblewrap with real python3/pytest and node: sealed
// expectations (`*.sealed.json` in the held-out source; the sandbox gets the calls only, the
// gate compares) pass honest code and fail a wrong function, a forged all-pass report and a
// missing result, naming the case, on small projects and on packaging from shared/corpus;
// held-out accounting (the trusted tree lists the ids, each must come back once from a run that
// exited 0) makes a short or non-zero run red, naming the id.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ci, exits, tempDir, NODE, T0 } from './project.js';
import { bwrapWorks, needTools, pyAgent, pyProject, pytestCmd, pythonWithPytest } from './pyproject.js';
import { TestRepo } from '../helpers/repo.js';
import { cloneCorpus } from '../helpers/corpus.js';
import { AuditStore } from '../../src/audit/store.js';
import { judgeSealed, parseSealedFile, sameValue } from '../../src/ci/sealed-cases.js';
import { SealedCaseError } from '../../src/errors.js';

const PY = pythonWithPytest();
const BWRAP = bwrapWorks();
const skip = !needTools(t, [[PY, 'pytest', 'python3-pytest'], [BWRAP, 'bubblewrap', 'bubblewrap']]);
const py = PY ?? 'python3';

type Reason = { kind: string; row: string; message: string; test?: string };
type Report = { verdict: string; row: string; fired: string[]; reasons: Reason[]; sealed?: { files: number; cases: number; ran: number; passed: number } | null; holdout?: { handed: number | null; returned: number; passed: number } | null };
const reportOf = (d: string): Report => JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));
const kinds = (rep: Report, k: string) => rep.reasons.filter((r) => r.kind === k);

/** The static scan off, so every forgery reaches the run and the gate's comparison must catch it. */
const SCAN_OFF = JSON.stringify({ tamperScan: { checks: Object.fromEntries(['runner-internals', 'interpreter-walk', 'env-read', 'exit', 'report-write', 'constant-eq', 'package-metadata'].map((k) => [k, 'off'])) } });

// A value that is only ever in an expectation: the honest code checks that nothing in its reach holds it
// (its own source spells it in two halves).
const MARK = 'zq-sealed-4c1e';

const PY_CASES = {
  version: 1,
  cases: [
    { id: 'adds', module: 'calc', function: 'add', args: [10, 20], expect: 30 },
    { id: 'floats', module: 'calc', function: 'add', args: [0.1, 0.2], expect: 0.3, tolerance: 1e-9 },
    { id: 'tuple', module: 'calc', function: 'pair', args: [1, 2], expect: { $repr: '(1, 2)' } },
    { id: 'tags', module: 'calc', function: 'tag', args: ['zq'], expect: MARK },
    { id: 'set', module: 'calc', function: 'letters', args: ['banana'], expect: { $repr: "{'a', 'b', 'n'}" } },
    { id: 'zero', module: 'calc', function: 'ratio', args: [1, 0], raises: { type: 'ArithmeticError', message: 'division' } },
  ],
};

// Honest: right for every input, and red if any file, variable or argument in its reach holds MARK.
const PY_HONEST = `import os, sys


def _leak():
    needle = ("zq-sealed" + "-4c1e").encode()
    for top in (os.getcwd(), "/tmp"):
        for d, _, files in os.walk(top):
            for f in files:
                try:
                    if needle in open(os.path.join(d, f), "rb").read():
                        return os.path.join(d, f)
                except OSError:
                    pass
    for p in ("/proc/self/cmdline", "/proc/self/environ"):
        if needle in open(p, "rb").read():
            return p
    return None


LEAK = _leak()


def add(a, b):
    return a + b


def pair(a, b):
    return (a, b)


def tag(s):
    if LEAK:
        raise RuntimeError("expected value seen in " + LEAK)
    return s + "-sealed-4c1e"


def letters(s):
    return set(s)


def ratio(a, b):
    return a / b
`;

/** main holds `trusted` (the same public API, so the static contract check lets the patch through); the agent's branch `src`. */
async function pyRun(t: Tap, src: string, hold: Record<string, string>, o: { runs?: number; trusted?: string; data?: string } = {}) {
  const r = pyAgent(pyProject(t, { 'ci/patchgate.json': SCAN_OFF, ...(o.trusted ? { 'src/calc.py': o.trusted } : {}) }), { 'src/calc.py': src });
  const h = tempDir(t, 'pg-hold-');
  for (const [f, body] of Object.entries(hold)) writeFileSync(join(h, f), body);
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '7', runs: o.runs ?? 1, report: join(d, 'r.json'), cmd: pytestCmd(py), holdout: h, ...(o.data ? { data: o.data } : {}) });
  return { res, rep: reportOf(d) };
}
type Tap = Parameters<typeof pyProject>[0];

t.test('format: a bad case is named by file and index; the comparison never needs the sandbox', async (t) => {
  let caught: unknown = null;
  try {
    parseSealedFile('a.sealed.json', '{"version":1,"cases":[{"module":"calc","function":"add","args":[1],"expect":1},{"module":"calc","function":"add"}]}');
  } catch (e) {
    caught = e;
  }
  t.ok(caught instanceof SealedCaseError && caught.file === 'a.sealed.json' && caught.index === 1, 'a SealedCaseError with the file and the index');
  t.match((caught as Error | null)?.message ?? '', /^a\.sealed\.json case #1: give exactly one of "expect"/);
  t.throws(() => parseSealedFile('b.sealed.json', '{"version":1,"cases":[{"module":"calc","function":"add","raises":{"type":"X"},"tolerance":1}]}'), /b\.sealed\.json case #0: "tolerance" applies/);
  t.throws(() => parseSealedFile('c.sealed.json', '{"version":1,"cases":[{"module":"../x.mjs","function":"f","expect":1}]}'), /c\.sealed\.json case #0: module/);
  t.throws(() => parseSealedFile('d.sealed.json', '{"version":2,"cases":[]}'), /^d\.sealed\.json: version/);
  t.throws(() => parseSealedFile('e.sealed.json', 'nope'), /e\.sealed\.json: not JSON/);
  const cases = parseSealedFile('f.sealed.json', JSON.stringify(PY_CASES));
  t.same(cases.map((c) => c.label), ['f.sealed.json#0 (adds)', 'f.sealed.json#1 (floats)', 'f.sealed.json#2 (tuple)', 'f.sealed.json#3 (tags)', 'f.sealed.json#4 (set)', 'f.sealed.json#5 (zero)']);
  t.ok(sameValue(0.3, 0.30000000000000004, 1e-9) && !sameValue(0.3, 0.30000000000000004), 'tolerance only where declared');
  t.notOk(sameValue([1, 2], { $repr: '(1, 2)' }), 'a list is not a tuple');
  const v = judgeSealed(cases.slice(0, 2), [{ i: 0, value: 30 }, { i: 0, value: 30 }, { i: 7, value: 1 }]);
  t.same(v.failures.map((f) => [f.kind, f.test]), [['sealed-extra', 'f.sealed.json#0 (adds)'], ['sealed-missing', 'f.sealed.json#1 (floats)'], ['sealed-extra', '#7']]);
});

t.test('python: honest code passes every sealed case; no expected value is within its reach', { skip }, async (t) => {
  const data = tempDir(t, 'pg-data-');
  const { res, rep } = await pyRun(t, PY_HONEST + '# honest\n', { 'calc.sealed.json': JSON.stringify(PY_CASES) }, { trusted: PY_HONEST, data });
  exits(t, res, 0);
  t.same(rep.fired, ['accept']);
  t.same(rep.sealed, { files: 1, cases: 6, ran: 6, passed: 6 });
  const store = AuditStore.open(join(data, 'patchgate.db'));
  t.teardown(() => store.close());
  t.match(store.query({ kind: 'ci' })[0]?.detail, { sealed: { files: 1, cases: 6, ran: 6, passed: 6 } }, 'the audit row keeps the sealed counts');
  t.match(res.text, /sealed cases: 6 of 6 passed \(6 ran; 1 file\(s\)/);
  t.notMatch(res.text, /held-out tests:/, 'a source of sealed cases only runs no held-out test module');
});

t.test('python: a wrong function and a wrong exception are red, named by case, the expected value never printed', { skip }, async (t) => {
  const wrong = PY_HONEST.replace('return (a, b)', 'return [a, b]').replace('return a / b', 'return a / b if b else float("inf")');
  const { res, rep } = await pyRun(t, wrong, { 'calc.sealed.json': JSON.stringify(PY_CASES) }, { trusted: PY_HONEST });
  exits(t, res, 1);
  t.equal(rep.row, 'holdout-red');
  t.same(kinds(rep, 'sealed-failed').map((r) => r.test), ['calc.sealed.json#2 (tuple)', 'calc.sealed.json#5 (zero)']);
  t.same(rep.sealed, { files: 1, cases: 6, ran: 6, passed: 4 });
  t.notMatch(res.text, /\(1, 2\)|ArithmeticError|division/, 'neither the expected value nor the expected exception is shown');
});

t.test('python: code that forges an all-pass result stream and exits 0 is red', { skip }, async (t) => {
  // Outside pytest (the sealed runner's process), at import: a complete forged stream on every pipe, fake JSON on stdout, exit 0.
  const forge = `import json, os, stat, sys\n\nif "pytest" not in sys.modules:\n    lines = "".join(json.dumps({"i": i, "value": True}) + "\\n" for i in range(6)) + '{"t": "end"}\\n'\n    print(lines)\n    for fd in range(3, 64):\n        try:\n            if stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode):\n                os.write(fd, lines.encode())\n        except OSError:\n            pass\n    os._exit(0)\n\n` + PY_HONEST;
  const { res, rep } = await pyRun(t, forge, { 'calc.sealed.json': JSON.stringify(PY_CASES) }, { trusted: PY_HONEST });
  exits(t, res, 1);
  t.equal(rep.row, 'holdout-red');
  t.equal(kinds(rep, 'sealed-failed').length, 6, 'every forged result is compared, and none matches');
  t.equal(rep.sealed?.passed, 0);
});

t.test('python: a process that exits before the last case: the missing result is red, named', { skip }, async (t) => {
  const early = PY_HONEST.replace('def ratio(a, b):\n', 'def ratio(a, b):\n    os._exit(0)\n');
  const { res, rep } = await pyRun(t, early, { 'calc.sealed.json': JSON.stringify(PY_CASES) }, { trusted: PY_HONEST });
  exits(t, res, 1);
  t.same(kinds(rep, 'sealed-missing').map((r) => r.test), ['calc.sealed.json#5 (zero)']);
  t.match(kinds(rep, 'sealed-exit')[0]?.message ?? '', /stopped before its end record; no result for calc\.sealed\.json#5 \(zero\)/);
  t.same(rep.sealed, { files: 1, cases: 6, ran: 5, passed: 5 });
});

t.test('python: a malformed sealed file is red, naming the file and the case', { skip }, async (t) => {
  const { res, rep } = await pyRun(t, PY_HONEST + '# honest\n', { 'calc.sealed.json': JSON.stringify({ version: 1, cases: [PY_CASES.cases[0], { module: 'calc', function: 'add', args: [1, 2] }] }) }, { trusted: PY_HONEST });
  exits(t, res, 1);
  t.equal(rep.row, 'holdout-red');
  t.same(kinds(rep, 'sealed-invalid').map((r) => r.test), ['calc.sealed.json#1']);
  t.match(res.text, /calc\.sealed\.json case #1: give exactly one of "expect"/);
});

// --- node
const JS_HONEST = `export function add(a, b) {\n  return a + b;\n}\n\nexport function range(n) {\n  return Array.from({ length: n }, (_, i) => i);\n}\n\nexport async function half(x) {\n  if (x < 0) throw new RangeError('negative input');\n  return x / 2;\n}\n\nexport const stats = { mean(xs) { return xs.reduce((a, b) => a + b, 0) / xs.length; } };\n`;
const JS_CASES = {
  version: 1,
  language: 'node',
  cases: [
    { id: 'adds', module: 'src/calc.mjs', function: 'add', args: [10, 20], expect: 30 },
    { id: 'range', module: 'src/calc.mjs', function: 'range', args: [3], expect: [0, 1, 2] },
    { id: 'half', module: 'src/calc.mjs', function: 'half', args: [5], expect: 2.5 },
    { id: 'negative', module: 'src/calc.mjs', function: 'half', args: [-1], raises: { type: 'RangeError', message: 'negative' } },
    { id: 'mean', module: 'src/calc.mjs', function: 'stats.mean', args: [[0.1, 0.2]], expect: 0.15, tolerance: 1e-12 },
    { id: 'nan', module: 'src/calc.mjs', function: 'add', args: [{ $eval: 'NaN' }, 1], expect: { $repr: 'NaN' } },
  ],
};
const NODE_TEST = "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.mjs';\n\ntest('adds', () => {\n  assert.equal(add(2, 3), 5);\n});\n";

async function jsRun(t: Tap, src: string, hold: Record<string, string>) {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', { 'src/calc.mjs': JS_HONEST.replace('return a + b', 'return a - b'), 'tests/calc.test.mjs': NODE_TEST, 'ci/patchgate.json': SCAN_OFF });
  r.checkout('agent', true).commit('agent', { 'src/calc.mjs': src });
  const h = tempDir(t, 'pg-hold-');
  for (const [f, body] of Object.entries(hold)) writeFileSync(join(h, f), body);
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, head: 'agent', seed: '3', runs: 1, report: join(d, 'r.json'), cmd: [NODE, '--test', 'tests/'], holdout: h });
  return { res, rep: reportOf(d) };
}

t.test('node: honest code passes; a wrong function is red naming the case; a forged stream is red', { skip: !BWRAP }, async (t) => {
  const ok = await jsRun(t, JS_HONEST, { 'calc.sealed.json': JSON.stringify(JS_CASES) });
  exits(t, ok.res, 0);
  t.same(ok.rep.sealed, { files: 1, cases: 6, ran: 6, passed: 6 });

  const wrong = await jsRun(t, JS_HONEST.replace("throw new RangeError('negative input')", 'return 0'), { 'calc.sealed.json': JSON.stringify(JS_CASES) });
  exits(t, wrong.res, 1);
  t.same(kinds(wrong.rep, 'sealed-failed').map((r) => r.test), ['calc.sealed.json#3 (negative)']);
  t.match(kinds(wrong.rep, 'sealed-failed')[0]!.message, /returned a value that does not match/);

  // Outside node:test's test processes (no NODE_TEST_CONTEXT): forged results on fd 3 and stdout, exit 0.
  const forge = `import { writeSync } from 'node:fs';\nif (!process.env.NODE_TEST_CONTEXT) {\n  const lines = [0, 1, 2, 3, 4, 5].map((i) => JSON.stringify({ i, value: 1 })).join('\\n') + '\\n{"t":"end"}\\n';\n  console.log(lines);\n  try { writeSync(3, lines); } catch {}\n  process.exit(0);\n}\n` + JS_HONEST;
  const forged = await jsRun(t, forge, { 'calc.sealed.json': JSON.stringify(JS_CASES) });
  exits(t, forged.res, 1);
  t.equal(forged.rep.row, 'holdout-red');
  t.equal(kinds(forged.rep, 'sealed-failed').length, 6);
});

// --- held-out accounting (pytest)
const HELD = 'from calc import add\n\n\ndef test_one():\n    assert add(1, 2) == 3\n\n\ndef test_two():\n    assert add(10, 20) == 30\n\n\ndef test_three():\n    assert add(-1, 1) == 0\n';
const FIXED_ADD = 'def add(a, b):\n    return a + b\n';
const IDS = ['.patchgate-holdout/test_props.py::test_one', '.patchgate-holdout/test_props.py::test_two', '.patchgate-holdout/test_props.py::test_three'];

t.test('accounting: every held-out id handed comes back once: honest code is green, "3 of 3"', { skip }, async (t) => {
  const { res, rep } = await pyRun(t, FIXED_ADD, { 'test_props.py': HELD });
  exits(t, res, 0);
  t.same(rep.holdout, { handed: 3, returned: 3, passed: 3 });
  t.match(res.text, /held-out tests: 3 of 3 passed \(3 handed to the run, 3 result\(s\) came back\)/);
});

t.test('accounting: a forged complete stream with one passing id: the two ids that never came back are red, named', { skip }, async (t) => {
  // In the held-out run only: a whole stream (start, one test, end) on every pipe, then exit 0.
  const forge = `import json, os, stat, sys\n\nif "pytest" in sys.modules and os.path.isdir(".patchgate-holdout"):\n    lines = "".join(json.dumps(r) + "\\n" for r in ({"t": "start"}, {"t": "test", "id": ${JSON.stringify(IDS[0])}, "status": "passed"}, {"t": "end", "exitstatus": 0}))\n    for fd in range(3, 64):\n        try:\n            if stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode):\n                os.write(fd, lines.encode())\n        except OSError:\n            pass\n    os._exit(0)\n\n` + FIXED_ADD;
  const { res, rep } = await pyRun(t, forge, { 'test_props.py': HELD });
  exits(t, res, 1);
  t.ok(rep.fired.includes('holdout-red'), rep.fired.join(', '));
  t.same(kinds(rep, 'holdout-missing').map((r) => r.test), IDS.slice(1));
  t.same(rep.holdout, { handed: 3, returned: 1, passed: 1 });
  t.notMatch(res.text, /held-out tests: 1 of 1 passed/);
});

t.test('accounting: a held-out run that exits non-zero with every test passed is red, naming the last id', { skip }, async (t) => {
  const exit3 = `import atexit, os\n\nif os.path.isdir(".patchgate-holdout"):\n    atexit.register(lambda: os._exit(3))\n\n` + FIXED_ADD;
  const { res, rep } = await pyRun(t, exit3, { 'test_props.py': HELD });
  exits(t, res, 1);
  const why = kinds(rep, 'holdout-exit');
  t.equal(why.length, 1);
  t.match(why[0]!.message, /the held-out run exited 3 although no held-out test failed \(last result: \.patchgate-holdout\/test_props\.py::test_\w+\)/);
  t.ok(IDS.includes(why[0]!.test ?? ''), 'names a held-out id');
});

// --- a real project: packaging (shared/corpus), its own functions, values copied from a run of the trusted tree
t.test('packaging (corpus): sealed cases green at its own HEAD, red naming the case on a broken canonicalize_name', { skip }, async (t) => {
  const repo = cloneCorpus(t as unknown as Parameters<typeof cloneCorpus>[0], 'packaging');
  if (!repo) return;
  const git = (...a: string[]) => execFileSync('git', ['-C', repo, '-c', 'user.name=Agent', '-c', 'user.email=agent@example.com', '-c', 'commit.gpgsign=false', ...a], { encoding: 'utf8' });
  git('checkout', '-q', '-B', 'main');
  git('checkout', '-q', '-b', 'agent');
  const file = join(repo, 'src/packaging/utils.py');
  writeFileSync(file, readFileSync(file, 'utf8').replace('value = name.lower().replace("_", "-")', 'value = name.replace("_", "-")'));
  git('commit', '-q', '-am', 'break canonicalize_name');
  git('checkout', '-q', 'main');
  const hold = tempDir(t, 'pg-hold-');
  writeFileSync(join(hold, 'packaging.sealed.json'), JSON.stringify({
    version: 1,
    cases: [
      { id: 'canonical name', module: 'packaging.utils', function: 'canonicalize_name', args: ['Foo_Bar.baz'], expect: 'foo-bar-baz' },
      { id: 'version', module: 'packaging.version', function: 'parse', args: ['1.0rc1'], expect: { $repr: "<Version('1.0rc1')>" } },
      { id: 'canonical version', module: 'packaging.utils', function: 'canonicalize_version', args: ['1.0.0'], expect: '1' },
      { id: 'invalid', module: 'packaging.version', function: 'parse', args: ['not a version'], raises: { type: 'ValueError', message: 'Invalid version' } },
    ],
  }));
  const cmd = [py, '-m', 'pytest', 'tests/test_utils.py', 'tests/test_errors.py'];
  const d = tempDir(t);
  const green = await ci({ repo, base: 'main', head: 'main', seed: '11', runs: 1, report: join(d, 'r.json'), cmd, holdout: hold });
  exits(t, green, 0);
  t.same(reportOf(d).sealed, { files: 1, cases: 4, ran: 4, passed: 4 });
  const red = await ci({ repo, base: 'main', head: 'agent', seed: '11', runs: 1, report: join(d, 'r.json'), cmd, holdout: hold });
  exits(t, red, 1);
  t.same(kinds(reportOf(d), 'sealed-failed').map((r) => r.test), ['packaging.sealed.json#0 (canonical name)']);
});

t.test('accounting: a held-out run killed by a signal mid-way is red, naming the ids that never came back and the last that did', { skip }, async (t) => {
  const kill = `import os, signal\n\ndef add(a, b):\n    if (a, b) == (10, 20) and os.path.isdir(".patchgate-holdout"):\n        os.kill(os.getpid(), signal.SIGKILL)\n    return a + b\n`;
  const { res, rep } = await pyRun(t, kill, { 'test_props.py': HELD });
  exits(t, res, 1);
  t.same(kinds(rep, 'holdout-missing').map((r) => r.test), IDS.slice(1));
  t.match(kinds(rep, 'holdout-exit')[0]?.message ?? '', /the held-out run was killed by SIGKILL \(exit status 137\) after \.patchgate-holdout\/test_props\.py::test_one/);
  t.same(rep.holdout, { handed: 3, returned: 1, passed: 1 });
});
