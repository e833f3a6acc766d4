// Issue 46, item 4, in a real bubblewrap: node's held-out tests are never files in the sandbox
// (they reach a module hook over stdin and are served from memory), and Worker threads and child
// processes of a node test run get patchgate's preload too (a Worker started with `execArgv: []`,
// a child started with an empty environment).

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ci, exits, tempDir, NODE, T0 } from './project.js';
import { TestRepo } from '../helpers/repo.js';
import { bwrapWorks, needTools } from './pyproject.js';

const BWRAP = needTools(t, [[bwrapWorks(), 'bubblewrap', 'bubblewrap']]);

const SCAN_OFF = JSON.stringify({ tamperScan: { checks: Object.fromEntries(['runner-internals', 'interpreter-walk', 'env-read', 'exit', 'report-write', 'constant-eq', 'package-metadata'].map((k) => [k, 'off'])) } });
const VISIBLE = "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.mjs';\n\ntest('adds', () => {\n  assert.equal(add(2, 3), 5);\n});\n";
const HELD = "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.mjs';\n\ntest('adds other inputs', () => {\n  assert.equal(add(10, 20), 30);\n});\n";
type Report = { verdict: string; row: string; fired: string[]; holdout?: { handed: number | null; returned: number; passed: number }; reasons: Array<{ kind: string; message: string; test?: string }> };

async function nodeCi(t: Parameters<typeof TestRepo.init>[0], src: string, holdout?: string) {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', { 'src/calc.mjs': 'export function add(a, b) {\n  return a - b;\n}\n', 'tests/calc.test.mjs': VISIBLE, 'ci/patchgate.json': SCAN_OFF });
  r.checkout('agent', true).commit('agent', { 'src/calc.mjs': src });
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '3', report: join(d, 'r.json'), cmd: [NODE, '--test', 'tests/'], ...(holdout ? { holdout } : {}) });
  return { res, rep: JSON.parse(readFileSync(join(d, 'r.json'), 'utf8')) as Report, r };
}

t.test("node's held-out tests are not readable from the sandbox's files, and they still decide", { skip: !BWRAP }, async (t) => {
  const hold = tempDir(t);
  writeFileSync(join(hold, 'props.test.mjs'), HELD);
  // add() is right only while no held-out file can be found on disk, under the tree or /tmp.
  const src = `import { readdirSync } from 'node:fs';\nconst seen = (dir) => { try { return readdirSync(dir, { recursive: true }).some((f) => String(f).includes('props.test')); } catch { return false; } };\nconst FOUND = seen(process.cwd()) || seen('/tmp');\nexport function add(a, b) {\n  return FOUND ? a - b : a + b;\n}\n`;
  const { res, rep, r } = await nodeCi(t, src, hold);
  exits(t, res, 0);
  t.same(rep.fired, ['accept']);
  t.match(res.text, /held-out tests handed to the runner from memory/);
  t.match(res.text, /held-out tests: 1 of 1 passed \(1 handed to the run, 1 result\(s\) came back\)/);
  // A wrong add is still caught by the held-out test served from memory.
  r.commit('special-case', { 'src/calc.mjs': 'export function add(a, b) {\n  return a === 2 && b === 3 ? 5 : 0;\n}\n' });
  const d2 = tempDir(t);
  const bad = await ci({ repo: r.dir, seed: '3', report: join(d2, 'r.json'), cmd: [NODE, '--test', 'tests/'], holdout: hold });
  exits(t, bad, 1);
  const rep2 = JSON.parse(readFileSync(join(d2, 'r.json'), 'utf8')) as Report;
  t.same(rep2.reasons.filter((x) => x.kind === 'holdout-failed').map((x) => x.test), ['adds other inputs']);
});

t.test('a Worker started without execArgv and a child started with an empty environment get the preload', { skip: !BWRAP }, async (t) => {
  // add() is right only when both have patchgate's preload (its Error guard is non-configurable).
  const src = `import { Worker } from 'node:worker_threads';\nimport { spawnSync } from 'node:child_process';\nconst probe = "Object.getOwnPropertyDescriptor(Error, 'captureStackTrace').configurable ? 'bare' : 'guarded'";\nconst child = spawnSync(process.execPath, ['-p', probe], { env: {}, encoding: 'utf8' }).stdout.trim();\nconst worker = await new Promise((res) => new Worker("require('node:worker_threads').parentPort.postMessage(" + probe + ")", { eval: true, execArgv: [] }).once('message', res));\nconst GUARDED = child === 'guarded' && worker === 'guarded';\nexport function add(a, b) {\n  return GUARDED ? a + b : a - b;\n}\n`;
  const { res, rep } = await nodeCi(t, src);
  exits(t, res, 0);
  t.same(rep.fired, ['accept']);
});
