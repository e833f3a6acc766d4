// Table tests for the ledger rule: bounded freezes only, revived at most once.

import t from 'tap';
import { runCheck } from '../../src/commands/check.js';
import { TestRepo } from '../helpers/repo.js';

const D = 'd'.repeat(64);
const DAY = 86400;
const T0 = Date.UTC(2026, 10, 1) / 1000; // 2026-11-01
const row = (o: Record<string, unknown>) => JSON.stringify({ nodeid: 'tests/test_a.py::test_x', seed: 417221, fixture_digest: D, expires: '2026-11-20', reason: 'tz boundary', ...o });

const cases: Array<{ name: string; ledger: string; ids: string[] }> = [
  { name: 'a valid row', ledger: row({}) + '\n', ids: [] },
  { name: 'a row without fixture_digest', ledger: row({ fixture_digest: undefined }) + '\n', ids: ['missingField'] },
  { name: 'a row without expires', ledger: row({ expires: undefined }) + '\n', ids: ['missingField'] },
  { name: 'a bad date', ledger: row({ expires: '2026-02-30' }) + '\n', ids: ['badDate'] },
  { name: 'an expiry beyond 30 days', ledger: row({ expires: '2027-01-15' }) + '\n', ids: ['tooFar'] },
  { name: 'not JSON', ledger: '{nodeid: x}\n', ids: ['badJson'] },
  { name: 'a short digest', ledger: row({ fixture_digest: 'abc' }) + '\n', ids: ['badField'] },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const r = TestRepo.init(t).at(T0);
    r.commit('base', { 'src/a.py': 'x = 1\n' });
    r.checkout('human', true).commit('freeze', { 'ci/flake-ledger.jsonl': c.ledger });
    const d = await runCheck({ repo: r.dir, base: 'main', head: 'human', role: 'human' });
    const lg = d.outcomes.find((o) => o.rule === 'ledger')!;
    t.same(lg.findings.map((f) => f.messageId), c.ids, lg.findings.map((f) => f.message).join(' | '));
    t.equal(d.verdict, c.ids.length ? 'reject' : 'accept');
    if (c.ids.length) t.equal(d.row, 'ledger-invalid');
  });
}

t.test('a triple revived more than once is refused; once is fine', async (t) => {
  const r = TestRepo.init(t).at(T0);
  r.commit('base', { 'src/a.py': 'x = 1\n' });
  r.checkout('human', true);
  r.commit('freeze 1', { 'ci/flake-ledger.jsonl': row({}) + '\n' });
  r.at(T0 + 25 * DAY).commit('drop', { 'ci/flake-ledger.jsonl': '' });
  r.commit('revive once', { 'ci/flake-ledger.jsonl': row({ expires: '2026-12-20' }) + '\n' });
  let d = await runCheck({ repo: r.dir, base: 'main', head: 'human', role: 'human' });
  t.equal(d.verdict, 'accept', d.reasons.map((x) => x.message).join(' | '));
  r.commit('drop', { 'ci/flake-ledger.jsonl': '' });
  r.commit('revive twice', { 'ci/flake-ledger.jsonl': row({ expires: '2026-12-21' }) + '\n' });
  d = await runCheck({ repo: r.dir, base: 'main', head: 'human', role: 'human' });
  t.equal(d.verdict, 'reject');
  t.same(d.outcomes.find((o) => o.rule === 'ledger')!.findings.map((f) => f.messageId), ['revived']);
});

t.test('the expiry limit counts from the day the row was added', async (t) => {
  const r = TestRepo.init(t).at(T0);
  r.commit('base', { 'src/a.py': 'x = 1\n' });
  r.checkout('human', true).commit('freeze', { 'ci/flake-ledger.jsonl': row({ expires: '2026-12-01' }) + '\n' });
  r.at(T0 + 20 * DAY).commit('later src', { 'src/a.py': 'x = 2\n' });
  const ok = await runCheck({ repo: r.dir, base: 'main', head: 'human', role: 'human' });
  t.equal(ok.verdict, 'accept', '30 days after 2026-11-01 is 2026-12-01');
  r.commit('stretch', { 'ci/flake-ledger.jsonl': row({ expires: '2026-12-02' }) + '\n' });
  const late = await runCheck({ repo: r.dir, base: 'main', head: 'human', role: 'human' });
  t.equal(late.verdict, 'accept', 'a new row added on 2026-11-21 may run to 2026-12-21');
  r.commit('stretch more', { 'ci/flake-ledger.jsonl': row({ expires: '2026-12-22' }) + '\n' });
  const bad = await runCheck({ repo: r.dir, base: 'main', head: 'human', role: 'human' });
  t.equal(bad.verdict, 'reject');
});

t.test("an agent's new branch off the trusted tip reuses the tip's ledger history", async (t) => {
  const { Git } = await import('../../src/git/git.js');
  const { judgeUpdate } = await import('../../src/policy/engine.js');
  const r = TestRepo.init(t).at(T0);
  r.commit('base', { 'src/a.py': 'x = 1\n', 'ci/flake-ledger.jsonl': row({}) + '\n' });
  const main = r.head();
  r.checkout('agent/one', true);
  const one = r.commit('edit', { 'src/a.py': 'x = 2\n' });
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const cache = new Map<string, unknown>();
  const zero = '0'.repeat(40);
  const d = await judgeUpdate({ git, role: 'agent', mode: 'push', trustedTip: main, cache, mainStore: git }, { ref: 'refs/heads/agent/one', oldId: zero, newId: one });
  t.equal(d.verdict, 'accept', d.reasons.map((x) => x.message).join(' | '));
  const key = (id: string) => `mem:ledger-history:${id}:ci/flake-ledger.jsonl`;
  t.ok(cache.get(key(main)), "the trusted tip's answer is kept for the next branch");
  t.equal(cache.get(key(one)), cache.get(key(main)), 'the branch (which does not touch the ledger) has the same history');
});
