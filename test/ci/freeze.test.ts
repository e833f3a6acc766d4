// Tests of `patchgate ledger freeze` on real repositories: a failure that reproduces twice is
// refused, a flaky one is frozen with the work tree's fixture digest and a bounded expiry,
// too long an expiry and a third freeze of one triple are refused, and the row it writes
// is the one `patchgate ci` then honours.

import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixtureDigest, sha256Hex } from '../../src/fixtures/lock.js';
import { CALC, DAY, NODE, T0, agent, ci, exits, freeze, junitCmd, ledgerRow, markerCmd, project, tempDir } from './project.js';

const FIXTURE = '{"cents": 5}\n';
const LOCK = JSON.stringify({ 'tests/fixtures/a.json': sha256Hex(FIXTURE) }) + '\n';
const DIGEST = fixtureDigest(new Map([['tests/fixtures/a.json', sha256Hex(FIXTURE)]]));

/** Fails on its first run and passes after, and only passes when it was given seed 4241. */
function flakyRerun(counter: string): string[] {
  return [NODE, '-e', `
    const fs = require('fs');
    const n = fs.existsSync(${JSON.stringify(counter)}) ? Number(fs.readFileSync(${JSON.stringify(counter)}, 'utf8')) : 0;
    fs.writeFileSync(${JSON.stringify(counter)}, String(n + 1));
    if (process.env.PATCHGATE_SEED !== '4241') process.exit(5);
    process.exit(n === 0 ? 1 : 0);
  `];
}

t.test('a failure that reproduces on both re-runs is refused', async (t) => {
  const r = project(t, { 'tests/fixtures/a.json': FIXTURE, 'ci/fixtures.lock': LOCK });
  const res = await freeze({ repo: r.dir, nodeid: 'test::adds', seed: '4242', rerun: [NODE, '-e', 'process.exit(1)'] });
  exits(t, res, 1);
  t.match(res.text, /reproduces: a defect, not a flake/);
  t.match(res.text, /re-run 1\/2 failed \(exit 1\)[^]*re-run 2\/2 failed \(exit 1\)/);
  t.notOk(existsSync(join(r.dir, 'ci/flake-ledger.jsonl')), 'nothing was written');
});

t.test('a flaky failure is frozen, bound to the fixtures, and honoured by ci', async (t) => {
  const r = project(t, { 'tests/fixtures/a.json': FIXTURE, 'ci/fixtures.lock': LOCK });
  const d = tempDir(t);
  const res = await freeze({ repo: r.dir, nodeid: 'test::flaky', seed: '4243', rerun: flakyRerun(join(d, 'count-a')), reason: 'odd seeds race the clock' });
  exits(t, res, 1);
  t.match(res.text, /re-run 1\/2 failed \(exit 5\)/, 'the seed reached the re-run (the script refuses any seed but 4241)');

  const ok = await freeze({ repo: r.dir, nodeid: 'test::flaky', seed: '4241', rerun: flakyRerun(join(d, 'count-b')), reason: 'odd seeds race the clock' });
  exits(t, ok, 0);
  t.match(ok.text, /re-run 1\/2 failed \(exit 1\)[^]*re-run 2\/2 passed/);
  t.equal(readFileSync(join(d, 'count-b'), 'utf8'), '2', 'the re-run ran twice');
  const rows = readFileSync(join(r.dir, 'ci/flake-ledger.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  t.same(rows, [{ nodeid: 'test::flaky', seed: 4241, fixture_digest: DIGEST, expires: '2026-12-05', reason: 'odd seeds race the clock' }], 'today + 30 days, the work tree lock digest');

  // A person commits the freeze; an agent's patch then meets the flake under that seed.
  r.at(T0 + 4 * DAY).commit('freeze flake');
  agent(r, { 'src/calc.mjs': CALC('b + a') });
  const junit = join(d, 'junit.xml');
  const run = await ci({ repo: r.dir, seed: '4241', junit, cmd: junitCmd(junit, 'tests/flaky.test.mjs') });
  exits(t, run, 0);
  t.match(run.text, /frozen flake skipped once: test::flaky seed 4241 .*expires 2026-12-05/);
});

t.test('an expiry beyond the policy maximum is refused before anything runs', async (t) => {
  const r = project(t, { 'ci/patchgate.json': JSON.stringify({ ledger: { maxDays: 10 } }) });
  const d = tempDir(t);
  const marker = join(d, 'ran');
  const res = await freeze({ repo: r.dir, nodeid: 'test::flaky', seed: '7', expires: '2026-11-16', rerun: markerCmd(marker) });
  exits(t, res, 2);
  t.match(res.text, /--expires 2026-11-16 is beyond the policy's maximum of 10 days; the latest allowed is 2026-11-15/);
  t.notOk(existsSync(marker));
  const fine = await freeze({ repo: r.dir, nodeid: 'test::flaky', seed: '7', expires: '2026-11-15', rerun: [NODE, '-e', ''] });
  exits(t, fine, 0);
  t.match(readFileSync(join(r.dir, 'ci/flake-ledger.jsonl'), 'utf8'), /"expires":"2026-11-15"/);
  t.match(readFileSync(join(r.dir, 'ci/flake-ledger.jsonl'), 'utf8'), /"fixture_digest":"e3b0c442/, 'no lock: the empty lock digest');
});

t.test('a triple frozen twice already is not frozen a third time', async (t) => {
  const r = project(t, { 'ci/flake-ledger.jsonl': ledgerRow({}) + '\n' });
  r.at(T0 + 25 * DAY).commit('drop', { 'ci/flake-ledger.jsonl': '' });
  r.commit('revive', { 'ci/flake-ledger.jsonl': ledgerRow({ expires: '2026-12-20' }) + '\n' });
  r.commit('drop', { 'ci/flake-ledger.jsonl': '' });
  const d = tempDir(t);
  const marker = join(d, 'ran');
  const res = await freeze({ repo: r.dir, nodeid: 'test::flaky', seed: '777', today: '2026-12-22', rerun: markerCmd(marker) });
  exits(t, res, 1);
  t.match(res.text, /was frozen 2 times already; a triple may be revived at most once/);
  t.notOk(existsSync(marker));
  const other = await freeze({ repo: r.dir, nodeid: 'test::flaky', seed: '779', today: '2026-12-22', rerun: [NODE, '-e', ''] });
  exits(t, other, 0);
});

t.test('usage errors', async (t) => {
  const r = project(t);
  exits(t, await freeze({ repo: r.dir, nodeid: 'x', seed: 'abc', rerun: [NODE, '-e', ''] }), 2);
  exits(t, await freeze({ repo: r.dir, nodeid: 'x', seed: '1', reason: ' ', rerun: [NODE, '-e', ''] }), 2);
  exits(t, await freeze({ repo: r.dir, nodeid: 'x', seed: '1', rerun: [] }), 2);
  exits(t, await freeze({ repo: r.dir, nodeid: 'x', seed: '1', expires: '2026-11-01', rerun: [NODE, '-e', ''] }), 2);
});
