// Issue 25: the strict run inside a real bubblewrap. Each tampering vector whose names the
// static scan cannot see (computed names, aliases, attribute reads) is caught by the run's own
// tripwire row, `runtime-tamper`; the token in the gate's environment, the data folder, the
// agent's checkout and the parent's /proc are out of the tested code's reach; honest fixes that
// log their caller or clean up in atexit stay green; `--sandbox none` says "not sandboxed".

import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ci, exits, tempDir, NODE, T0 } from './project.js';
import { bwrapWorks, FIXED, needTools, pyAgent, pyProject, pytestCmd, pythonWithPytest } from './pyproject.js';
import { TestRepo } from '../helpers/repo.js';

const PY = pythonWithPytest();
const BWRAP = bwrapWorks();
const skip = !needTools(t, [[PY, 'pytest', 'python3-pytest'], [BWRAP, 'bubblewrap', 'bubblewrap']]);
const py = PY ?? 'python3';

type Report = { verdict: string; row: string; fired: string[]; sandbox?: string | null; reasons: Array<{ kind: string; row: string; message: string; test?: string }> };
const reportOf = (d: string): Report => JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));

/** The static scan off, so each vector reaches the run and the tripwire itself must catch it. */
const SCAN_OFF = JSON.stringify({ tamperScan: { checks: Object.fromEntries(['runner-internals', 'interpreter-walk', 'env-read', 'exit', 'report-write', 'constant-eq', 'package-metadata'].map((k) => [k, 'off'])) } });

async function pyRun(t: Tap, files: Record<string, string>, o: { scanOff?: boolean; sandbox?: 'bwrap' | 'none'; data?: string } = {}) {
  const r = pyAgent(pyProject(t, o.scanOff === false ? {} : { 'ci/patchgate.json': SCAN_OFF }), files);
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '7', report: join(d, 'r.json'), cmd: pytestCmd(py), ...(o.sandbox ? { sandbox: o.sandbox } : {}), ...(o.data ? { data: o.data } : {}) });
  return { res, rep: reportOf(d), r };
}
type Tap = Parameters<typeof pyProject>[0];

// A broken add (a - b) made green by each trick: the tripwire must still make the run red.
const PY_VECTORS: Array<[string, string, RegExp]> = [
  ['gc.get_objects through computed names', `import importlib\n\ndef add(a, b):\n    getattr(importlib.import_module("g" + "c"), "get_" + "objects")()\n    return a + b\n`, /gc\.get_objects at src\/calc\.py:4/],
  ['sys._current_frames through getattr', `import sys\n\ndef add(a, b):\n    getattr(sys, "_current_" + "frames")()\n    return a + b\n`, /sys\._current_frames at src\/calc\.py:4/],
  ['a rebound inspect.stack alias that reads the test source', `import inspect\n\ns = inspect.stack\n\ndef add(a, b):\n    s()\n    return a + b\n`, /open at src\/calc\.py:6: read the test source tests\/test_calc\.py while walking the stack/],
  ["a caught error's traceback frame", `def add(a, b):\n    try:\n        raise ValueError()\n    except ValueError as e:\n        e.__traceback__.tb_frame\n    return a + b\n`, /object\.__getattr__ at src\/calc\.py:5: read a traceback's frame/],
  ["a test function's __code__.co_consts", `import sys\n\ndef add(a, b):\n    m = sys.modules.get("test_" + "calc")\n    if m is not None:\n        m.test_adds.__code__.co_consts\n    return a + b\n`, /read the code object of the test function test_adds/],
  ["pytest's reports patched through sys.modules", `import sys\n\nm = sys.modules.get("_py" + "test.reports")\nm.BaseReport.passed = property(lambda self: True)\n\ndef add(a, b):\n    return a + b\n`, /_pytest\.reports\.BaseReport\.passed was replaced/],
  ['builtins.__import__ replaced with setattr', `import builtins\n\n_i = builtins.__import__\nsetattr(builtins, "__imp" + "ort__", lambda *a, **k: _i(*a, **k))\n\ndef add(a, b):\n    return a + b\n`, /builtins\.__import__ was replaced/],
  ["unittest's assertEqual replaced", `import unittest\n\nunittest.TestCase.assertEqual = lambda self, a, b, msg=None: None\n\ndef add(a, b):\n    return a + b\n`, /unittest\.case\.TestCase\.assertEqual was replaced/],
  ['a tracing hook', `import sys\n\ndef add(a, b):\n    getattr(sys, "set" + "trace")(None)\n    return a + b\n`, /sys\.settrace at src\/calc\.py:4/],
];

for (const [name, src, where] of PY_VECTORS) {
  t.test(`pytest: ${name}: runtime-tamper`, { skip }, async (t) => {
    const { res, rep } = await pyRun(t, { 'src/calc.py': src });
    exits(t, res, 1);
    t.ok(rep.fired.includes('runtime-tamper'), `runtime-tamper fired (${rep.fired.join(', ')})`);
    t.equal(rep.sandbox, 'bwrap');
    t.match(rep.reasons.filter((r) => r.kind === 'runtime-tamper').map((r) => r.message).join('\n'), where);
  });
}

t.test('the token, the data folder, the checkout and the parent /proc are out of reach; the code is not root (65534 in run 1, another uid in run 2) and has no network', { skip }, async (t) => {
  const data = tempDir(t, 'pg-data-');
  process.env.PATCHGATE_HOLDOUT_TOKEN = 'pgt_sandbox_secret_0123456789';
  t.teardown(() => { delete process.env.PATCHGATE_HOLDOUT_TOKEN; });
  // add() is right only when nothing of the gate can be seen: any leak makes the suite red.
  const probe = `import glob, os, socket\n\ndef _leaks():\n    found = []\n    for k, v in os.environ.items():\n        if "pgt_" in v or k.startswith("PATCHGATE_"):\n            found.append("env " + k)\n    for p in glob.glob("/proc/[0-9]*/environ") + glob.glob("/proc/[0-9]*/cmdline"):\n        try:\n            if b"pgt_sandbox" in open(p, "rb").read():\n                found.append(p)\n        except OSError:\n            pass\n    for p in (${JSON.stringify(data)}, REPO, "/work", "/root/.ssh", "/root/.cargo/env", "/root/.cargo/credentials.toml"):\n        if os.path.exists(p):\n            found.append("sees " + p)\n    if os.getuid() == 0 or os.getgid() == 0:\n        found.append("uid %d" % os.getuid())\n    try:\n        socket.create_connection(("1.1.1.1", 53), timeout=1)\n        found.append("network")\n    except OSError:\n        pass\n    return found\n\nLEAKS = _leaks()\n\ndef add(a, b):\n    if LEAKS:\n        raise RuntimeError("LEAKS %r" % LEAKS)\n    return a + b\n`;
  const r = pyAgent(pyProject(t, { 'ci/patchgate.json': SCAN_OFF }), { 'src/calc.py': 'REPO = "?"\n' });
  r.commit('probe', { 'src/calc.py': probe.replace('REPO,', `${JSON.stringify(r.dir)},`) });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '7', report: join(d, 'r.json'), cmd: pytestCmd(py), data });
  exits(t, res, 0);
  t.same(reportOf(d).fired, ['accept']);
  t.match(res.text, /sandboxed by bubblewrap/);
  t.notMatch(res.text, /pgt_sandbox_secret/, 'the token is never printed');
  // the same probe unsandboxed sees the checkout (so the probe can fail)
  const d2 = tempDir(t);
  const open = await ci({ repo: r.dir, seed: '7', report: join(d2, 'r.json'), cmd: pytestCmd(py), data, sandbox: 'none' });
  exits(t, open, 1);
  t.equal(reportOf(d2).sandbox, 'none');
  t.match(open.text, /NOT SANDBOXED/);
  t.match(open.text, /not sandboxed\)/, 'the verdict line says so');
});

t.test('runs do not share /tmp: a marker written by run 1 is not there in run 2', { skip }, async (t) => {
  const src = `import os\n\n_SEEN = os.path.exists("/tmp/pg-run-marker")\nopen("/tmp/pg-run-marker", "w").write("x")\n\ndef add(a, b):\n    return a - b if _SEEN else a + b\n`;
  const { res, rep } = await pyRun(t, { 'src/calc.py': src });
  exits(t, res, 0);
  t.same(rep.fired, ['accept']);
});

t.test('honest fixes stay green with the static scan at its defaults: logging the caller, cleaning up in atexit', { skip }, async (t) => {
  const honest = `import atexit, inspect, logging, os, shutil, tempfile\n\n_tmp = tempfile.mkdtemp()\natexit.register(shutil.rmtree, _tmp, True)\n\ndef add(a, b):\n    logging.getLogger(__name__).debug("called by %s", inspect.currentframe().f_back.f_code.co_name)\n    return a + b\n`;
  const { res, rep } = await pyRun(t, { 'src/calc.py': honest }, { scanOff: false });
  exits(t, res, 0);
  t.same(rep.fired, ['accept']);
  t.notMatch(res.text, /tripwire/);
});

t.test('the plain honest fix is green in the sandbox and leaves no plugin module behind', { skip }, async (t) => {
  // add() is wrong while patchgate's plugin can be found by name in sys.modules.
  const src = `import sys\n\ndef add(a, b):\n    return a - b if "patchgate_channel" in sys.modules else a + b\n`;
  const { res, rep } = await pyRun(t, { 'src/calc.py': src });
  exits(t, res, 0);
  t.same(rep.fired, ['accept']);
});

t.test('a strict run without bubblewrap on PATH is red with one line naming the package', { skip }, async (t) => {
  const bin = tempDir(t, 'pg-bin-');
  for (const tool of ['git', py]) {
    const w = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
    symlinkSync(w, join(bin, tool.split('/').pop()!));
  }
  const r = pyAgent(pyProject(t), { 'src/calc.py': FIXED });
  const cli = join(process.cwd(), 'dist', 'cli.js');
  const res = spawnSync(NODE, [cli, 'ci', '--repo', r.dir, '--base', 'main', '--head', 'HEAD', '--', 'python3', '-m', 'pytest', 'tests'], { encoding: 'utf8', env: { PATH: bin, HOME: process.env.HOME ?? '/tmp' } });
  t.equal(res.status, 1, res.stdout + res.stderr);
  t.match(res.stdout, /install the Debian package bubblewrap/);
  t.match(res.stdout, /RED: the strict run could not be sandboxed/);
});

// --- node: the preload (channel/patchgate-preload.mjs) under node:test
const NODE_TEST = "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.mjs';\n\ntest('adds', () => {\n  assert.equal(add(2, 3), 5);\n});\n";
async function nodeRun(t: Tap, src: string) {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', { 'src/calc.mjs': 'export function add(a, b) {\n  return a - b;\n}\n', 'tests/calc.test.mjs': NODE_TEST, 'ci/patchgate.json': SCAN_OFF });
  r.checkout('agent', true).commit('agent', { 'src/calc.mjs': src });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '3', report: join(d, 'r.json'), cmd: [NODE, '--test', 'tests/'] });
  return { res, rep: reportOf(d) };
}

const NODE_VECTORS: Array<[string, string, RegExp]> = [
  ["node:assert patched through createRequire and a computed name", "import { createRequire } from 'node:module';\nconst a = createRequire(import.meta.url)('node:' + 'assert');\ntry { a.strict.equal = () => {}; } catch {}\nexport function add(a, b) {\n  return a + b;\n}\n", /node:assert\/strict\.equal was assigned/],
  ['Error.prepareStackTrace set through a computed name', "Error['prepare' + 'StackTrace'] = (e, s) => s;\nexport function add(a, b) {\n  return a + b;\n}\n", /Error\.prepareStackTrace at src\/calc\.mjs:1/],
  ['captureStackTrace(this) in a class', "class Probe { constructor() { Error.captureStackTrace(this); } }\nexport function add(a, b) {\n  new Probe();\n  return a + b;\n}\n", /Error\.captureStackTrace at src\/calc\.mjs:1/],
  ['the test source read from the code', "import { readFileSync } from 'node:fs';\nexport function add(a, b) {\n  readFileSync(new URL('../tests/calc.test.mjs', import.meta.url), 'utf8');\n  return a + b;\n}\n", /open at src\/calc\.mjs:3: opened the test source tests\/calc\.test\.mjs/],
  ['process.argv read through a computed key', "export function add(a, b) {\n  process['ar' + 'gv'];\n  return a + b;\n}\n", /process\.argv at src\/calc\.mjs:2/],
];

for (const [name, src, where] of NODE_VECTORS) {
  t.test(`node:test: ${name}: runtime-tamper`, { skip: !BWRAP }, async (t) => {
    const { res, rep } = await nodeRun(t, src);
    exits(t, res, 1);
    t.ok(rep.fired.includes('runtime-tamper'), `runtime-tamper fired (${rep.fired.join(', ')})`);
    t.match(rep.reasons.filter((r) => r.kind === 'runtime-tamper').map((r) => r.message).join('\n'), where);
  });
}

t.test('node:test: the honest fix is green under the preload', { skip: !BWRAP }, async (t) => {
  const { res, rep } = await nodeRun(t, 'export function add(a, b) {\n  return a + b;\n}\n');
  exits(t, res, 0);
  t.same(rep.fired, ['accept']);
});



t.test('held-out tests are handed over from memory: the tested code finds no file of theirs, and they still decide', { skip }, async (t) => {
  const hold = tempDir(t);
  writeFileSync(join(hold, 'test_props.py'), 'from calc import add\n\n\ndef test_commutes_on_other_inputs():\n    assert add(10, 20) == 30\n');
  // add() is right only while no held-out file can be found on disk.
  const src = `import glob\n\nFOUND = glob.glob("/tmp/**/test_props.py", recursive=True) + glob.glob("**/test_props.py", recursive=True)\n\ndef add(a, b):\n    return a - b if FOUND else a + b\n`;
  const r = pyAgent(pyProject(t, { 'ci/patchgate.json': SCAN_OFF }), { 'src/calc.py': src });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '7', report: join(d, 'r.json'), cmd: pytestCmd(py), holdout: hold });
  exits(t, res, 0);
  t.match(res.text, /held-out tests: 1 of 1 passed/);
  t.match(res.text, /handed to the runner from memory/);
  // and a wrong add is still caught by them
  r.commit('special-case', { 'src/calc.py': `def add(a, b):\n    return {(2, 3): 5, (0, 0): 0}.get((a, b), 0)\n` });
  const d2 = tempDir(t);
  const bad = await ci({ repo: r.dir, seed: '7', report: join(d2, 'r.json'), cmd: pytestCmd(py), holdout: hold });
  exits(t, bad, 1);
  t.same(reportOf(d2).reasons.filter((x) => x.kind === 'holdout-failed').map((x) => x.test), ['.patchgate-holdout/test_props.py::test_commutes_on_other_inputs']);
});

t.test("an agent's src/sitecustomize/ package never runs: patchgate's stand-in is first on the path", { skip }, async (t) => {
  // add() is right only when the agent's sitecustomize ran at interpreter start.
  const { res, rep } = await pyRun(t, {
    'src/sitecustomize/__init__.py': 'import builtins\nbuiltins.PG_SITE = True\n',
    'src/calc.py': 'import builtins\n\ndef add(a, b):\n    return a + b if getattr(builtins, "PG_SITE", False) else a - b\n',
  });
  exits(t, res, 1);
  t.equal(rep.row, 'contract-red', rep.fired.join(','));
  t.match(res.text, /FAIL tests\/test_calc\.py::test_adds/);
});
