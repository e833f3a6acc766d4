// End-to-end tests of `patchgate ci`, one per decision-table row it can fire, on a real git
// repository whose tests run under node's own test runner writing JUnit XML. Each asserts
// the exit code, the row marked in the printed table and the JSON report.

import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixtureDigest } from '../../src/fixtures/lock.js';
import { sha256Hex } from '../../src/fixtures/lock.js';
import { AuditStore } from '../../src/audit/store.js';
import { CALC, CALC_TEST, DAY, T0, agent, ci, exits, junitCmd, ledgerRow, markedRows, markerCmd, nodeTestJunitCmd, project, tempDir } from './project.js';

const FLAKY_ONLY = 'tests/flaky.test.mjs';

t.test('green: the seed comes first, is exported, and the run is reported, baselined and audited', async (t) => {
  const r = agent(project(t), { 'src/calc.mjs': CALC('b + a') });
  const d = tempDir(t);
  const junit = join(d, 'junit.xml');
  const res = await ci({ repo: r.dir, seed: '42', junit, cmd: nodeTestJunitCmd(junit), report: join(d, 'report.json'), writeBaseline: join(d, 'baseline.json'), data: join(d, 'data') });
  exits(t, res, 0);
  t.equal(res.out[0], 'patchgate: seed 42', 'the seed is the first line');
  t.same(markedRows(res.out).map((l) => l.split('  ')[0]), ['no row fired']);
  const rep = JSON.parse(readFileSync(join(d, 'report.json'), 'utf8'));
  t.equal(rep.verdict, 'green');
  t.equal(rep.seed, 42);
  t.same(rep.fired, ['accept']);
  t.equal(rep.check.verdict, 'accept');
  const adds = rep.tests.find((x: { id: string }) => x.id === 'test::adds');
  t.same({ status: adds.status, seed: adds.seed }, { status: 'passed', seed: '42' });
  t.equal(rep.tests.find((x: { id: string }) => x.id === 'test::seed is exported').status, 'passed', 'PATCHGATE_SEED and PYTHONHASHSEED reached the tests');
  t.equal(rep.tests.find((x: { id: string }) => x.id === 'test::group > inner').status, 'passed');
  const base = JSON.parse(readFileSync(join(d, 'baseline.json'), 'utf8'));
  t.same(base.tests, ['test::adds', 'test::extra', 'test::feature', 'test::flaky', 'test::group > inner', 'test::seed is exported']);
  const store = AuditStore.open(join(d, 'data', 'patchgate.db'));
  t.teardown(() => store.close());
  const rows = store.query({ kind: 'ci' });
  t.equal(rows.length, 1);
  t.equal(rows[0]!.verdict, 'accept');
  t.equal(rows[0]!.head, r.head());
  t.match(rows[0]!.detail, { seed: 42, row: 'accept' });
  t.equal(store.verify().ok, true);
});

t.test('contract unchanged, a property red, no freeze: contract-red', async (t) => {
  const r = agent(project(t), { 'src/calc.mjs': CALC('a - b') });
  const d = tempDir(t);
  const junit = join(d, 'junit.xml');
  const res = await ci({ repo: r.dir, seed: '42', junit, cmd: junitCmd(junit), report: join(d, 'r.json'), writeBaseline: join(d, 'b.json') });
  exits(t, res, 1);
  t.match(res.text, /FAIL test::adds \(seed 42\)/);
  t.match(markedRows(res.out)[0], /^contract digest unchanged, properties red/);
  const rep = JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));
  t.same([rep.verdict, rep.row], ['red', 'contract-red']);
  t.same(rep.ledger.applications.map((a: { nodeid: string; outcome: string }) => [a.nodeid, a.outcome]), [['test::adds', 'not-frozen'], ['test::group > inner', 'not-frozen']]);
  t.notOk(existsSync(join(d, 'b.json')), 'a red run writes no baseline');
});

t.test('the ledger on the flaky test', async (t) => {
  const r = project(t, { 'ci/flake-ledger.jsonl': ledgerRow({}) + '\n' });
  agent(r, { 'src/calc.mjs': CALC('b + a') });
  const d = tempDir(t);
  const junit = join(d, 'junit.xml');
  const run = (seed: string, today = '2026-11-05') => ci({ repo: r.dir, seed, today, junit, cmd: junitCmd(junit, FLAKY_ONLY), report: join(d, `r-${seed}-${today}.json`) });

  t.test('same nodeid, seed and digest before expiry: skipped once, expiry printed', async (t) => {
    const res = await run('777');
    exits(t, res, 0);
    t.match(res.text, /frozen flake skipped once: test::flaky seed 777 .*expires 2026-11-20/);
    t.match(res.text, /GREEN \(seed 777\); 1 frozen flake\(s\) skipped once, expiring 2026-11-20/);
    t.match(markedRows(res.out)[0], /^same nodeid\+seed\+digest, before expiry/);
    const rep = JSON.parse(readFileSync(join(d, 'r-777-2026-11-05.json'), 'utf8'));
    t.same(rep.fired, ['frozen-flake', 'accept']);
    t.equal(rep.tests[0].ledger, 'frozen');
  });

  t.test('same nodeid, another seed: a new defect', async (t) => {
    const res = await run('779');
    exits(t, res, 1);
    t.match(res.text, /frozen only under seed 777: a new seed is a new defect/);
    t.same(markedRows(res.out).map((l) => l.split('  ')[0]), ['same nodeid, new seed']);
    t.equal(JSON.parse(readFileSync(join(d, 'r-779-2026-11-05.json'), 'utf8')).row, 'new-seed');
  });

  t.test('the freeze has expired: red', async (t) => {
    const res = await run('777', '2026-11-21');
    exits(t, res, 1);
    t.match(res.text, /expired on 2026-11-20/);
    const rep = JSON.parse(readFileSync(join(d, 'r-777-2026-11-21.json'), 'utf8'));
    t.same([rep.row, rep.reasons[0].kind], ['contract-red', 'expired']);
  });

  t.test('an even seed passes without the ledger', async (t) => {
    exits(t, await run('778'), 0);
  });
});

t.test('a freeze whose fixtures changed does not apply', async (t) => {
  const v1 = '{"cents": 1}\n';
  const v2 = '{"cents": 2}\n';
  const lock = (s: string) => JSON.stringify({ 'tests/fixtures/invoice.json': sha256Hex(s) }) + '\n';
  const oldDigest = fixtureDigest(new Map([['tests/fixtures/invoice.json', sha256Hex(v1)]]));
  const r = project(t, { 'tests/fixtures/invoice.json': v1, 'ci/fixtures.lock': lock(v1), 'ci/flake-ledger.jsonl': ledgerRow({ fixture_digest: oldDigest }) + '\n' });
  r.commit('a person swaps the fixture bytes', { 'tests/fixtures/invoice.json': v2, 'ci/fixtures.lock': lock(v2) });
  agent(r, { 'src/calc.mjs': CALC('b + a') });
  const d = tempDir(t);
  const junit = join(d, 'junit.xml');
  const res = await ci({ repo: r.dir, seed: '777', junit, cmd: junitCmd(junit, FLAKY_ONLY), report: join(d, 'r.json') });
  exits(t, res, 1);
  t.match(res.text, /fixture bytes changed, so the freeze does not apply/);
  const rep = JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));
  t.same([rep.row, rep.reasons[0].kind], ['contract-red', 'fixture-mismatch']);
  t.equal(rep.fixtureDigest, fixtureDigest(new Map([['tests/fixtures/invoice.json', sha256Hex(v2)]])));
});

t.test('a triple revived twice makes the ledger invalid; the command never runs', async (t) => {
  const r = project(t, { 'ci/flake-ledger.jsonl': ledgerRow({}) + '\n' });
  r.at(T0 + 25 * DAY).commit('drop', { 'ci/flake-ledger.jsonl': '' });
  r.commit('revive', { 'ci/flake-ledger.jsonl': ledgerRow({ expires: '2026-12-20' }) + '\n' });
  r.commit('drop', { 'ci/flake-ledger.jsonl': '' });
  r.commit('revive again', { 'ci/flake-ledger.jsonl': ledgerRow({ expires: '2026-12-21' }) + '\n' });
  agent(r, { 'src/calc.mjs': CALC('b + a') });
  const d = tempDir(t);
  const marker = join(d, 'ran');
  const res = await ci({ repo: r.dir, seed: '777', cmd: markerCmd(marker), today: '2026-11-27', report: join(d, 'r.json') });
  exits(t, res, 1);
  t.match(res.text, /frozen 3 times/);
  t.same(markedRows(res.out).map((l) => l.split('  ')[0]), ['flake ledger row invalid (no digest or expiry, too far, revived)']);
  t.notOk(existsSync(marker), 'the test command did not run');
  t.equal(JSON.parse(readFileSync(join(d, 'r.json'), 'utf8')).row, 'ledger-invalid');
});

t.test('the oracle may not shrink', async (t) => {
  const r = project(t);
  const d = tempDir(t);
  const junit = join(d, 'junit.xml');
  const baseline = join(d, 'baseline.json');
  const onMain = await ci({ repo: r.dir, head: 'main', seed: '2', junit, cmd: junitCmd(junit), writeBaseline: baseline });
  exits(t, onMain, 0);

  t.test('a test that vanished', async (t) => {
    agent(r, { 'src/calc.mjs': CALC('a + b', 'true', 'false') }, 'vanish');
    const res = await ci({ repo: r.dir, seed: '2', junit, cmd: junitCmd(junit), baseline, report: join(d, 'v.json') });
    exits(t, res, 1);
    t.match(res.text, /test::extra ran in the baseline but is missing from this run: the oracle shrank/);
    const rep = JSON.parse(readFileSync(join(d, 'v.json'), 'utf8'));
    t.same(rep.baseline.vanished, ['test::extra']);
    t.same(rep.baseline.skipped, []);
    t.equal(rep.row, 'oracle-shrank', 'its own row, not "properties red"');
  });

  t.test('a test the baseline ran is skipped now', async (t) => {
    agent(r, { 'src/calc.mjs': CALC('a + b', 'false') }, 'skip');
    const res = await ci({ repo: r.dir, seed: '2', junit, cmd: junitCmd(junit), baseline, report: join(d, 's.json') });
    exits(t, res, 1);
    t.match(res.text, /test::feature ran in the baseline but was skipped in this run/);
    const rep = JSON.parse(readFileSync(join(d, 's.json'), 'utf8'));
    t.same(rep.baseline.skipped, ['test::feature']);
    t.equal(rep.row, 'oracle-shrank');
  });

  t.test('the same tree against its own baseline is green', async (t) => {
    r.checkout('main');
    const res = await ci({ repo: r.dir, head: 'main', seed: '4', junit, cmd: junitCmd(junit), baseline });
    exits(t, res, 0);
    t.match(res.text, /baseline: all 6 baseline test\(s\) ran/);
  });
});

t.test('a test edit is refused by the static policy before the command runs', async (t) => {
  const r = agent(project(t), { 'tests/calc.test.mjs': CALC_TEST.replace('add(2, 3), 5', 'add(2, 3), -1') });
  const d = tempDir(t);
  const marker = join(d, 'ran');
  const res = await ci({ repo: r.dir, seed: '9', cmd: markerCmd(marker), report: join(d, 'r.json') });
  exits(t, res, 1);
  t.equal(res.out[0], 'patchgate: seed 9');
  t.match(res.text, /REJECT/);
  t.match(res.text, /tests\/calc\.test\.mjs/);
  t.same(markedRows(res.out).map((l) => l.split('  ')[0]), ['tests/ in the agent diff']);
  t.notOk(existsSync(marker), 'the test command did not run');
  const rep = JSON.parse(readFileSync(join(d, 'r.json'), 'utf8'));
  t.same([rep.verdict, rep.row, rep.command], ['red', 'test-tree-write', null]);
});

t.test('the tests must run on the judged commit', async (t) => {
  const r = agent(project(t), { 'src/calc.mjs': CALC('b + a') });
  const d = tempDir(t);
  const marker = join(d, 'ran');
  r.write('tests/calc.test.mjs', '// edited in the work tree after the check\n');
  const dirty = await ci({ repo: r.dir, seed: '9', cmd: markerCmd(marker) });
  exits(t, dirty, 2);
  t.match(dirty.text, /modified tracked files \(tests\/calc\.test\.mjs\)/);
  r.git('checkout', '--', 'tests/calc.test.mjs');
  r.checkout('main');
  const elsewhere = await ci({ repo: r.dir, head: 'agent', seed: '9', cmd: markerCmd(marker) });
  exits(t, elsewhere, 2);
  t.match(elsewhere.text, /not at --head/);
  t.notOk(existsSync(marker));
});
