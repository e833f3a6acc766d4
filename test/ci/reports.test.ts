// Unit tests for the parts of `patchgate ci` that need no process: the JUnit and TAP readers
// and the test-id scheme, the ledger precedence, the baseline comparison, seeds and the
// deciding row. The samples are shaped like what real runners write (node 20, node-tap 21,
// pytest, jest-junit, vitest).

import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyLedger, isExpired } from '../../src/ci/apply-ledger.js';
import { compareBaseline, parseBaseline } from '../../src/ci/baseline.js';
import { parseSeed, withSeed, seedEnv } from '../../src/ci/process.js';
import { parseJUnit, parseJUnitReport, parseTap, pytestCandidates } from '../../src/ci/reports.js';
import { decidingRow, readSeedFile } from '../../src/ci/run.js';
import { parseDay, type LedgerRow } from '../../src/ledger/ledger.js';

const by = (tests: Array<{ id: string; status: string }>): Record<string, string> => Object.fromEntries(tests.map((x) => [x.id, x.status]));

const NODE_TAP = `TAP version 13
# ok 99 - printed by a test file, turned into a comment by node
# Subtest: adds
ok 1 - adds
  ---
  duration_ms: 1.6
  ...
# Subtest: group
    # Subtest: inner ok
    ok 1 - inner ok
      ---
      duration_ms: 0.2
      ...
    # Subtest: inner skip
    ok 2 - inner skip # SKIP
      ---
      duration_ms: 0.1
      ...
    # Subtest: inner fail
    not ok 3 - inner fail
      ---
      duration_ms: 1.2
      failureType: 'testCodeFailure'
      error: '1 == 2'
      stack: |-
        TestContext.<anonymous> (file:///tmp/a.test.mjs:7:45)
        ...
      ...
    1..3
not ok 2 - group
  ---
  failureType: 'subtestsFailed'
  error: '1 subtest failed'
  ...
# Subtest: todo
ok 3 - todo # TODO
1..3
# tests 6
`;

const TAP14 = `> demo@1.0.0 test
> node tests/t.test.mjs

TAP version 14
# Subtest: outer
    ok 1 - p1
    # Subtest: inner
        ok 1 - eq
        1..1
    ok 2 - inner # time=2.718ms
    
    1..2
ok 1 - outer # time=7.722ms

ok 2 - skipped # SKIP nope
ok 3 - a \\# b # todo later
ok 4 - top level assertion
1..4
# { total: 5, pass: 4, skip: 1 }
`;

t.test('TAP from node 20: subtests become paths, groups are not tests, YAML gives the message', async (t) => {
  const r = parseTap(NODE_TAP);
  t.same(r.problems, []);
  t.same(by(r.tests), { adds: 'passed', 'group > inner ok': 'passed', 'group > inner skip': 'skipped', 'group > inner fail': 'failed', todo: 'skipped' });
  t.equal(r.tests.find((x) => x.id === 'group > inner fail')!.message, '1 == 2');
  t.equal(r.tests.find((x) => x.id === 'todo')!.todo, true);
});

t.test('TAP 14 from node-tap: banner ignored, nested subtests, directives and escapes', async (t) => {
  const r = parseTap(TAP14);
  t.same(r.problems, []);
  t.same(by(r.tests), { 'outer > p1': 'passed', 'outer > inner > eq': 'passed', skipped: 'skipped', 'a # b': 'skipped', 'top level assertion': 'passed' });
});

t.test('a group that fails after its subtests passed is a failed test of its own', async (t) => {
  const r = parseTap('TAP version 13\n# Subtest: grp\n    ok 1 - kid\n    1..1\nnot ok 1 - grp\n  ---\n  error: \'after kids\'\n  ...\n1..1\n');
  t.same(by(r.tests), { 'grp > kid': 'passed', grp: 'failed' });
  t.equal(r.tests[1]!.message, 'after kids');
});

t.test('a forged summary line is not a TAP report', async (t) => {
  const r = parseTap('collected 1 item\n\n1 passed in 0.01s\nok 1 - fine\n');
  t.same(r.tests, []);
  t.match(r.problems[0], /no TAP stream/);
});

t.test('incomplete TAP streams are problems', async (t) => {
  t.match(parseTap('TAP version 14\nok 1 - a\n').problems, [/no top-level plan/]);
  t.match(parseTap('TAP version 14\n1..2\nok 1 - a\n').problems, [/plan 1\.\.2 at depth 0 but 1/]);
  t.match(parseTap('TAP version 14\n1..2\nok 1 - a\nBail out! db down\nok 2 - b\n').problems, [/Bail out! \(db down\)/]);
  t.match(parseTap('TAP version 14\n1..1\n# Subtest: s\n    ok 1 - a\n    1..1\n').problems, [/no closing test point/]);
  t.same(parseTap('TAP version 14\n1..0 # SKIP nothing here\n').problems, []);
});

t.test('repeated ids are numbered, never merged', async (t) => {
  const r = parseTap('TAP version 14\nnot ok 1 - dup\nok 2 - dup\n1..2\n');
  t.same(by(r.tests), { dup: 'failed', 'dup #2': 'passed' });
  t.same(r.duplicates, ['dup']);
});

const NODE_JUNIT = `<?xml version="1.0" encoding="utf-8"?>
<testsuites>
	<testcase name="adds" time="0.001" classname="test"/>
	<testsuite name="group" time="0.002" disabled="0" errors="0" tests="3" failures="1" skipped="1" hostname="vm">
		<testcase name="inner ok" time="0.0002" classname="test"/>
		<testcase name="inner skip" time="0.0001" classname="test">
			<skipped type="skipped" message="true"/>
		</testcase>
		<testcase name="inner fail" time="0.001" classname="test" failure="1 == 2">
			<failure type="testCodeFailure" message="1 == 2">
Error [ERR_TEST_FAILURE]: 1 == 2
    at TestContext.&lt;anonymous> (file:///tmp/a.test.mjs:7:11)
			</failure>
		</testcase>
		<testsuite name="deeper" time="0.001" disabled="0" errors="0" tests="1" failures="0" skipped="0" hostname="vm">
			<testcase name="x" time="0.0007" classname="test"/>
		</testsuite>
	</testsuite>
	<!-- tests 5 -->
</testsuites>
`;

const noFiles = async (): Promise<boolean> => false;

t.test('JUnit from node 20: timestamp-less suites are test groups', async (t) => {
  const r = await parseJUnitReport(NODE_JUNIT, noFiles);
  t.same(by(r.tests), { 'test::adds': 'passed', 'test::group > inner ok': 'passed', 'test::group > inner skip': 'skipped', 'test::group > inner fail': 'failed', 'test::group > deeper > x': 'passed' });
  t.equal(r.tests.find((x) => x.status === 'failed')!.message, '1 == 2');
});

const PYTEST_JUNIT = `<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5" time="0.1" timestamp="2026-11-05T10:00:00.000000" hostname="ci">
<testcase classname="tests.test_x" name="test_y[1-2]" time="0.001"/>
<testcase classname="tests.test_x.TestA" name="test_z" time="0.001"><failure message="assert 1 == 2">def test_z(): ...</failure></testcase>
<testcase classname="pkg.missing" name="test_q" time="0.001"><skipped type="pytest.skip" message="no db">skip</skipped></testcase>
<testcase classname="tests.test_x" name="test_err" time="0.001"><error message="fixture 'db' not found">E</error></testcase>
<testcase classname="" name="tests.test_broken" time="0.0"><error message="collection failure">ImportError</error></testcase>
</testsuite></testsuites>`;

t.test('JUnit from pytest: dotted classnames become pytest node ids when the file exists', async (t) => {
  const files = new Set(['tests/test_x.py']);
  const asked: string[] = [];
  const r = await parseJUnitReport(PYTEST_JUNIT, async (p) => (asked.push(p), files.has(p)));
  t.same(by(r.tests), {
    'tests/test_x.py::test_y[1-2]': 'passed',
    'tests/test_x.py::TestA::test_z': 'failed',
    'pkg.missing::test_q': 'skipped',
    'tests/test_x.py::test_err': 'failed',
    'tests.test_broken': 'failed',
  });
  t.ok(asked.includes('tests/test_x/TestA.py') && asked.includes('tests/test_x.py'), 'tries the longest module path first');
  t.same(pytestCandidates('a-b.c'), [], 'not a dotted module path');
});

t.test('JUnit from jest-junit and vitest: per-file suites are containers', async (t) => {
  const jest = await parseJUnitReport(`<testsuites name="jest tests" tests="1"><testsuite name="calc" errors="0" failures="0" skipped="0" timestamp="2026-11-05T10:00:00" time="0.3" tests="1"><testcase classname="calc adds" name="calc adds" time="0.001"></testcase></testsuite></testsuites>`, noFiles);
  t.same(by(jest.tests), { 'calc adds::calc adds': 'passed' });
  const vitest = await parseJUnitReport(`<?xml version="1.0" encoding="UTF-8" ?><testsuites name="vitest tests" tests="1"><testsuite name="tests/a.test.ts" timestamp="2026-11-05T10:00:00.000Z" hostname="ci" tests="1" failures="0" errors="0" skipped="0" time="0.01"><testcase classname="tests/a.test.ts" name="group &gt; inner" time="0.001"></testcase></testsuite></testsuites>`, noFiles);
  t.same(by(vitest.tests), { 'tests/a.test.ts::group > inner': 'passed' });
  const lone = await parseJUnitReport(`<testsuite name="s"><testcase classname="k" name="n"/></testsuite>`, noFiles);
  t.same(by(lone.tests), { 'k::s > n': 'passed' }, 'a lone root suite without timestamp is a group');
});

t.test('malformed or rootless JUnit is unreadable', async (t) => {
  t.throws(() => parseJUnit('<testsuites><testcase name="a" classname="b">'), /not well-formed/);
  t.throws(() => parseJUnit('<?xml version="1.0"?><results><testcase name="a"/></results>'), /no <testsuites>/);
  t.throws(() => parseJUnit('1 passed'), /not well-formed|no <testsuites>/);
  t.throws(() => parseJUnit('<!DOCTYPE x [<!ENTITY a "aaaa">]><testsuites><testcase classname="a" name="&a;"/></testsuites>'), /DOCTYPE/);
  t.same(parseJUnit('<testsuites/>'), [], 'well-formed and empty: zero tests, which the ci command refuses');
});

const D1 = 'a'.repeat(64);
const D2 = 'b'.repeat(64);
const row = (o: Partial<LedgerRow>): LedgerRow => ({ line: 1, nodeid: 'n', seed: '7', fixture_digest: D1, expires: '2026-11-20', reason: 'r', ...o });

t.test('ledger precedence: exact live triple, expired, other fixtures, other seed, nothing', async (t) => {
  const today = parseDay('2026-11-20')!;
  const rows = [row({ line: 1 }), row({ line: 2, nodeid: 'old', expires: '2026-11-19' }), row({ line: 3, nodeid: 'fx', fixture_digest: D2 }), row({ line: 4, nodeid: 'seedy', seed: '8' })];
  const apps = applyLedger([{ id: 'n', seed: '7' }, { id: 'old', seed: '7' }, { id: 'fx', seed: '7' }, { id: 'seedy', seed: '7' }, { id: 'none', seed: '7' }, { id: 'n', seed: '9' }], rows, D1, today);
  t.same(apps.map((a) => [a.nodeid, a.outcome, a.row]), [
    ['n', 'frozen', 'frozen-flake'],
    ['old', 'expired', 'contract-red'],
    ['fx', 'fixture-mismatch', 'contract-red'],
    ['seedy', 'new-seed', 'new-seed'],
    ['none', 'not-frozen', 'contract-red'],
    ['n', 'new-seed', 'new-seed'],
  ]);
  t.equal(isExpired({ expires: '2026-11-20' }, today), false, 'a row is live on its expiry day');
  t.equal(isExpired({ expires: '2026-11-19' }, today), true);
});

t.test('baseline: vanished and skipped tests are reported, new tests are fine', async (t) => {
  const cmp = compareBaseline({ tests: ['a', 'b', 'c', 'd'] }, [{ id: 'a', status: 'passed' }, { id: 'b', status: 'skipped' }, { id: 'd', status: 'skipped', todo: true }, { id: 'e', status: 'passed' }]);
  t.same(cmp, { vanished: ['c'], skipped: ['b', 'd'] });
  t.throws(() => parseBaseline('{"tests": "a"}', 'x'), /must be/);
  t.throws(() => parseBaseline('nope', 'x'), /not JSON/);
  t.same(parseBaseline('{"tests": ["a"], "head": "abc"}', 'x'), { tests: ['a'] });
});

t.test('seeds: 31-bit integers, {seed} in argv, the variables runners read', async (t) => {
  t.equal(parseSeed('0'), 0);
  t.equal(parseSeed('2147483647'), 2147483647);
  t.throws(() => parseSeed('2147483648'));
  t.throws(() => parseSeed('-1'));
  t.throws(() => parseSeed('1e3'));
  t.same(withSeed(['pytest', '--randomly-seed={seed}', '--hypothesis-seed={seed}'], 12), ['pytest', '--randomly-seed=12', '--hypothesis-seed=12']);
  t.same(Object.keys(seedEnv(1, '/f')).sort(), ['PATCHGATE_SEED', 'PATCHGATE_SEED_FILE', 'PYTHONHASHSEED']);
});

t.test('the seed file: absent is fine, malformed is a problem', async (t) => {
  const d = mkdtempSync(join(tmpdir(), 'pg-seed-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  t.same((await readSeedFile(join(d, 'none.json'))).seeds.size, 0);
  writeFileSync(join(d, 'a.json'), '{"t::a": 5, "t::b": "99"}');
  t.same([...(await readSeedFile(join(d, 'a.json'))).seeds], [['t::a', '5'], ['t::b', '99']]);
  writeFileSync(join(d, 'b.json'), '[1]');
  t.match((await readSeedFile(join(d, 'b.json'))).problem, /JSON object/);
  writeFileSync(join(d, 'c.json'), '{"t::a": 1.5}');
  t.match((await readSeedFile(join(d, 'c.json'))).problem, /neither an integer/);
});

t.test('the deciding row is the first failing row in table order', async (t) => {
  t.equal(decidingRow(['new-seed', 'contract-red']), 'contract-red');
  t.equal(decidingRow(['frozen-flake']), 'accept');
  t.equal(decidingRow(['frozen-flake', 'new-seed']), 'new-seed');
  t.equal(decidingRow([]), 'accept');
});
