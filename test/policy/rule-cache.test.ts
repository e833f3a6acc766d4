// Issue 24, cache by blob id (src/cache/rule-results.ts): the fixtures rule's drift is kept by
// the lock blob and the locked folders' tree ids, the ledger rule's problems by the ledger
// blob and its history. A cached answer equals the uncached one, and a change of a fixture's
// bytes (same lock blob) or of the ledger is judged again and still refused.

import t from 'tap';
import { createHash } from 'node:crypto';
import { runCheck } from '../../src/commands/check.js';
import { ruleResults } from '../../src/cache/rule-results.js';
import { TestRepo } from '../helpers/repo.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const INVOICE = '{"cents": 100, "currency": "USD"}\n';
const LOCK = JSON.stringify({ 'tests/fixtures/invoice.json': sha(INVOICE), 'tests/fixtures/deep/rate.json': sha('1\n') });
const D = 'd'.repeat(64);
const T0 = Date.UTC(2026, 10, 1) / 1000;
const LEDGER = JSON.stringify({ nodeid: 'tests/test_a.py::test_x', seed: 1, fixture_digest: D, expires: '2026-11-20', reason: 'tz' }) + '\n';

const outcome = (d: Awaited<ReturnType<typeof runCheck>>, rule: string) => {
  const o = d.outcomes.find((x) => x.rule === rule)!;
  return { status: o.status, findings: o.findings.map((f) => [f.messageId, f.path, f.message]), details: o.details };
};

t.test('fixtures: a hit equals the uncached answer; changed bytes under an unchanged lock still refuse', async (t) => {
  const r = TestRepo.init(t).at(T0);
  r.commit('base', { 'src/a.py': 'x = 1\n', 'tests/fixtures/invoice.json': INVOICE, 'tests/fixtures/deep/rate.json': '1\n', 'ci/fixtures.lock': LOCK });
  r.checkout('work', true).commit('src only', { 'src/a.py': 'x = 2\n' });
  ruleResults.clear();
  const cache = new Map<string, unknown>();
  const cold = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'agent' }, cache);
  t.equal(ruleResults.stats.fixtureMisses, 1);
  const warm = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'agent' }, cache);
  t.equal(ruleResults.stats.fixtureHits, 1, 'the second judgement was a lookup');
  t.same(outcome(warm, 'fixtures'), outcome(cold, 'fixtures'));
  t.equal(warm.verdict, 'accept');

  // Same lock blob, one fixture's bytes changed (its folder's tree id changes): judged again.
  r.commit('swap bytes', { 'tests/fixtures/deep/rate.json': '2\n' });
  const swapped = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'agent' }, cache);
  t.equal(swapped.verdict, 'reject');
  t.same(outcome(swapped, 'fixtures').findings.map((f) => [f[0], f[1]]), [['changed', 'tests/fixtures/deep/rate.json']]);
  t.equal(ruleResults.stats.fixtureMisses, 2);
  // An unlocked file added to a locked folder: judged again too.
  r.commit('restore', { 'tests/fixtures/deep/rate.json': '1\n' });
  r.commit('add', { 'tests/fixtures/extra.json': '{}' });
  const added = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'agent' }, cache);
  t.same(outcome(added, 'fixtures').findings.map((f) => f[0]), ['unlocked']);
  // The refusal, cached, is the same refusal again; and equals a cold one.
  const again = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'agent' }, cache);
  t.same(outcome(again, 'fixtures'), outcome(added, 'fixtures'));
  ruleResults.clear();
  const uncached = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'agent' }, new Map());
  t.same(outcome(uncached, 'fixtures'), outcome(added, 'fixtures'));
  t.equal(ruleResults.stats.fixtureHits, 0);
});

t.test('fixtures: a bad lock is refused every time (never kept)', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'src/a.py': 'x = 1\n', 'ci/fixtures.lock': '{"a.json": "nothex"}' });
  r.checkout('work', true).commit('c', { 'src/a.py': 'x = 2\n' });
  const cache = new Map<string, unknown>();
  for (let i = 0; i < 2; i++) {
    const d = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'agent' }, cache);
    t.equal(d.verdict, 'reject');
    t.match(d.reasons[0]!.message, /CONFIG: ci\/fixtures.lock@[0-9a-f]+: a.json/);
  }
});

t.test('ledger: a hit equals the uncached answer; a changed ledger is judged again', async (t) => {
  const r = TestRepo.init(t).at(T0);
  r.commit('base', { 'src/a.py': 'x = 1\n', 'ci/flake-ledger.jsonl': LEDGER });
  r.checkout('work', true).commit('src', { 'src/a.py': 'x = 2\n' });
  ruleResults.clear();
  const cache = new Map<string, unknown>();
  const cold = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'human' }, cache);
  const warm = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'human' }, cache);
  t.equal(ruleResults.stats.ledgerHits, 1, 'the same ledger blob and history: a lookup');
  t.same(outcome(warm, 'ledger'), outcome(cold, 'ledger'));
  t.equal(warm.verdict, 'accept');
  r.commit('stretch', { 'ci/flake-ledger.jsonl': LEDGER.replace('2026-11-20', '2027-03-01') });
  const late = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'human' }, cache);
  t.equal(late.verdict, 'reject');
  t.same(outcome(late, 'ledger').findings.map((f) => f[0]), ['tooFar']);
  ruleResults.clear();
  const uncached = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'human' }, new Map());
  t.same(outcome(uncached, 'ledger'), outcome(late, 'ledger'));
});
