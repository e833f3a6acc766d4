// Issue 11, "node:test by file order": the shuffled second run of a node:test suite. Real
// node:test projects in real git repositories, run by `patchgate ci` in sealed copies: a call
// counter kept in a file of the tree makes a test pass only when another file ran first, and
// the per-file rerun in an order shuffled from the seed catches it as order-dependent; an
// honest project of several files stays green; ids do not depend on the order files ran in.

import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ci, exits, tempDir, EMPTY_DIGEST, NODE, T0, type Tap } from './project.js';
import { TestRepo } from '../helpers/repo.js';
import { mergeStreams, nodeTestShape, shuffleOrder } from '../../src/ci/node-order.js';
import { parseStream } from '../../src/ci/channel.js';
import { shuffleSeed } from '../../src/ci/strict.js';

type Report = { verdict: string; row: string; fired: string[]; reasons: Array<{ kind: string; row: string; message: string; test?: string }> };
const reportOf = (d: string): Report => JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));

const FILES = ['tests/a.test.mjs', 'tests/b.test.mjs', 'tests/c.test.mjs'];
const CMD = [NODE, '--test', '--test-concurrency=1', 'tests/'];

/** The buggy main: add subtracts. */
const BUGGY = 'export function add(a, b) {\n  return a - b;\n}\n';
/** The honest fix. */
const FIXED = 'export function add(a, b) {\n  return a + b;\n}\n';
/**
 * The cheat: a call counter in a file of the work tree (each test file runs in its own
 * process, so the state has to live outside it). The first call answers 5, later calls 0:
 * right for a.test (2 + 3) when it runs first, then right for b.test (0 + 0).
 */
const COUNTER = `import { readFileSync, writeFileSync } from 'node:fs';

function calls() {
  let n = 0;
  try {
    n = Number(readFileSync('.calls', 'utf8'));
  } catch {}
  writeFileSync('.calls', String(n + 1));
  return n + 1;
}

export function add(a, b) {
  return calls() === 1 ? 5 : 0;
}
`;

const testFile = (name: string, call: string, want: number) =>
  `import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.mjs';\n\ntest('${name}', () => {\n  assert.equal(${call}, ${want});\n});\n`;

/** main: three test files (c never calls add), the buggy calc; `extra` files too (policy, ledger). */
function nodeProject(t: Tap, extra: Record<string, string> = {}): TestRepo {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', {
    'src/calc.mjs': BUGGY,
    'tests/a.test.mjs': testFile('five', 'add(2, 3)', 5),
    'tests/b.test.mjs': testFile('zero', 'add(0, 0)', 0),
    'tests/c.test.mjs': "import test from 'node:test';\n\ntest('other', () => {});\n",
    ...extra,
  });
  return r;
}

function withAgent(r: TestRepo, calc: string): TestRepo {
  r.checkout('main').checkout('agent', true).commit('agent patch', { 'src/calc.mjs': calc });
  return r;
}

/** A seed whose shuffled order for `run` puts b before a (or, with `aFirst`, a before b). */
function seedWhere(run: number, bFirst: boolean, from = 1): number {
  for (let s = from; s < from + 10000; s++) {
    const o = shuffleOrder(FILES, shuffleSeed(s, run));
    if ((o.indexOf(FILES[1]!) < o.indexOf(FILES[0]!)) === bFirst) return s;
  }
  throw new Error('no seed found');
}

t.test('the shuffle: deterministic per seed, a permutation, never the given order for two or more files', async (t) => {
  for (let seed = 0; seed < 300; seed++) {
    for (const n of [2, 3, 5]) {
      const items = Array.from({ length: n }, (_, i) => `f${i}`);
      const o = shuffleOrder(items, seed);
      t.same(o, shuffleOrder(items, seed), 'same seed, same order');
      t.same([...o].sort(), items, 'a permutation');
      t.notSame(o, items, `seed ${seed}, ${n} files: not the first run's order`);
    }
  }
  t.same(shuffleOrder(['only'], 9), ['only']);
  const orders = new Set(Array.from({ length: 50 }, (_, s) => shuffleOrder(FILES, s).join(',')));
  t.ok(orders.size > 2, `seeds give different orders (${orders.size} of the 5 non-identity ones)`);
});

t.test('which node commands can be rewritten into one run per file', async (t) => {
  const paths = new Set(['tests/', 'tests/a.test.mjs', 'setup.mjs']);
  const isPath = async (a: string) => paths.has(a);
  t.same(await nodeTestShape([NODE, '--test', '--import', 'setup.mjs', '--test-reporter=tap', 'tests/'], isPath), { options: ['--test', '--import', 'setup.mjs', '--test-reporter=tap'], paths: ['tests/'] });
  t.match(await nodeTestShape([NODE, 'tests/a.test.mjs'], isPath), { why: /not `node --test/ });
  t.match(await nodeTestShape([NODE, '--test', '--some-new-flag', 'value', 'tests/'], isPath), { why: /"value" is neither a node option patchgate knows nor a file/ });
  t.match(await nodeTestShape([NODE, '-e', 'x', '--test'], isPath), { why: /uses -e/ });
});

t.test('ids do not depend on the order the files ran in (repeated names across files, subtests)', async (t) => {
  const rec = (root: string, file: string, path: string[], status: string) => JSON.stringify({ t: 'test', path, file: `${root}/${file}`, status });
  const fileA = (root: string) => [rec(root, 'tests/a.test.mjs', ['adds'], 'passed'), rec(root, 'tests/a.test.mjs', ['group', 'inner'], 'passed'), rec(root, 'tests/a.test.mjs', ['group'], 'passed')];
  const fileB = (root: string) => [rec(root, 'tests/b.test.mjs', ['adds'], 'failed'), rec(root, 'tests/b.test.mjs', ['adds'], 'passed')];
  const wrap = (lines: string[]) => [JSON.stringify({ t: 'start' }), ...lines, JSON.stringify({ t: 'end' })].join('\n');
  const first = parseStream(wrap([...fileA('/run1'), ...fileB('/run1')]), 'node', '/run1');
  // Run 2: each file in its own invocation, b before a, in another sealed copy.
  const shuffled = mergeStreams([parseStream(wrap(fileB('/run2')), 'node', '/run2'), parseStream(wrap(fileA('/run2')), 'node', '/run2')]);
  const byKey = (s: typeof first) => Object.fromEntries(s.tests.map((x) => [x.key, `${x.id}=${x.status}`]));
  t.same(byKey(shuffled), byKey(first), 'every test keeps its id and outcome');
  t.same(first.tests.map((x) => x.id), ['adds', 'group > inner', 'adds #2', 'adds #3']);
  t.ok(shuffled.started && shuffled.ended);
});

t.test('a call counter in a file of the tree: green in file order, order-dependent when b runs before a', async (t) => {
  const r = withAgent(nodeProject(t), COUNTER);
  const d = tempDir(t);
  const seed = seedWhere(2, true);
  const order = shuffleOrder(FILES, shuffleSeed(seed, 2));
  const res = await ci({ repo: r.dir, seed: String(seed), report: join(d, 'r.json'), cmd: CMD });
  exits(t, res, 1);
  const rep = reportOf(d);
  t.equal(rep.row, 'order-dependent');
  t.match(res.text, /TAP on stdout: 3 test\(s\), 3 passed, 0 failed/, 'run 1 (file order a, b, c) passes every test');
  t.match(res.text, `run 2 of 2, files one by one in an order shuffled with seed ${shuffleSeed(seed, 2)}: ${order.join(', ')}`);
  const od = rep.reasons.filter((x) => x.kind === 'order-dependent');
  t.same(od.map((x) => x.test).sort(), ['five', 'zero']);
  t.ok(od.every((x) => /passed in run 1 but failed in run 2/.test(x.message)), 'each names the change');

  // The order really is the computed one: a seed that keeps a before b (c anywhere) lets the counter through.
  const lucky = seedWhere(2, false);
  const ok = await ci({ repo: r.dir, seed: String(lucky), report: join(d, 'r.json'), cmd: CMD });
  exits(t, ok, 0);
});

t.test('--runs 3 reaches node:test: a seed whose run 2 keeps a first and run 3 does not is red in run 3', async (t) => {
  let seed = 1;
  while (!(seedWhere(2, false, seed) === seed && seedWhere(3, true, seed) === seed)) seed++;
  const r = withAgent(nodeProject(t), COUNTER);
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: String(seed), report: join(d, 'r.json'), cmd: CMD, runs: 3 });
  exits(t, res, 1);
  const od = reportOf(d).reasons.filter((x) => x.kind === 'order-dependent');
  t.ok(od.length > 0 && od.every((x) => /in run 3/.test(x.message)), 'only run 3 changed outcomes');
  t.match(res.text, /run 2 of 3, files one by one/);
});

t.test('the policy key ci.runs: 1 turns the rerun off for node:test too', async (t) => {
  const r = withAgent(nodeProject(t, { 'ci/patchgate.json': JSON.stringify({ ci: { runs: 1 } }) + '\n' }), COUNTER);
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: String(seedWhere(2, true)), report: join(d, 'r.json'), cmd: CMD });
  exits(t, res, 0);
  t.notMatch(res.text, /run 2 of/);
});

t.test('the ledger freezes an order-dependent test only for its exact triple (the same code as pytest)', async (t) => {
  const seed = seedWhere(2, true);
  const row = (nodeid: string, s: number) => JSON.stringify({ nodeid, seed: s, fixture_digest: EMPTY_DIGEST, expires: '2026-11-20', reason: 'counter race, tracked' });
  const r = withAgent(nodeProject(t, { 'ci/flake-ledger.jsonl': `${row('five', seed)}\n${row('zero', seed + 1)}\n` }), COUNTER);
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: String(seed), report: join(d, 'r.json'), cmd: CMD });
  exits(t, res, 1);
  t.match(res.text, /five changed outcome in run 2, frozen in the ledger until 2026-11-20/);
  t.same(reportOf(d).reasons.filter((x) => x.kind === 'order-dependent').map((x) => x.test), ['zero'], 'zero is frozen under another seed only: still red');
});

t.test('an honest fix across several files stays green through the shuffled rerun, and a real failure is not order-dependent', async (t) => {
  // Repeated names across files and a subtest group: their ids must not depend on file order.
  const extra = {
    'tests/d.test.mjs': "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.mjs';\n\ntest('five', () => {\n  assert.equal(add(1, 4), 5);\n});\n\ntest('group', async (t) => {\n  await t.test('inner', () => assert.equal(add(1, 1), 2));\n});\n",
  };
  const r = withAgent(nodeProject(t, extra), FIXED);
  const d = tempDir(t);
  // A seed whose run 2 runs d.test before a.test: numbering "five #2" by run order would swap the two.
  const all = [...FILES, 'tests/d.test.mjs'];
  let seed = 1;
  while (shuffleOrder(all, shuffleSeed(seed, 2)).indexOf('tests/d.test.mjs') > shuffleOrder(all, shuffleSeed(seed, 2)).indexOf('tests/a.test.mjs')) seed++;
  const res = await ci({ repo: r.dir, seed: String(seed), report: join(d, 'r.json'), cmd: CMD });
  exits(t, res, 0);
  const order = shuffleOrder(all, shuffleSeed(seed, 2));
  t.match(res.text, `files one by one in an order shuffled with seed ${shuffleSeed(seed, 2)}: ${order.join(', ')}`);
  t.match(res.text, /all 5 test\(s\) that ran on the trusted tree ran here/);

  // A half-fix that fails only the first "five": the failure is real, the same in both runs, not order-dependent.
  r.checkout('main').checkout('half', true).commit('half fix', { 'src/calc.mjs': 'export function add(a, b) {\n  return a === 2 ? a - b : a + b;\n}\n' });
  const half = await ci({ repo: r.dir, seed: String(seed), report: join(d, 'r.json'), cmd: CMD });
  exits(t, half, 1);
  const rep = reportOf(d);
  t.equal(rep.row, 'contract-red');
  t.notOk(rep.fired.includes('order-dependent'), 'no order-dependence from the file order itself');
  t.same(rep.reasons.filter((x) => x.kind === 'failed').map((x) => x.test), ['five']);
});

t.test('a node command that cannot be rewritten runs again unchanged and says why', async (t) => {
  const r = withAgent(nodeProject(t, { 'tests/all.mjs': "import './a.test.mjs';\n" }), FIXED);
  const d = tempDir(t);
  const res = await ci({ repo: r.dir, seed: '5', report: join(d, 'r.json'), cmd: [NODE, 'tests/all.mjs'] });
  exits(t, res, 0);
  t.match(res.text, /run 2 of 2, same order: not shuffled, because the command is not `node --test \.\.\.`/);
});
