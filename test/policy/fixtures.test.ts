// Table tests for the fixtures rule: the lock binds bytes, not names, for agents and people.

import t from 'tap';
import { createHash } from 'node:crypto';
import { runCheck } from '../../src/commands/check.js';
import { fixtureDigest } from '../../src/fixtures/lock.js';
import { TestRepo } from '../helpers/repo.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const INVOICE = '{"cents": 100, "currency": "USD"}\n';
const LOCK = JSON.stringify({ 'tests/fixtures/invoice.json': sha(INVOICE) });

const cases: Array<{ name: string; role: 'agent' | 'human'; files: Record<string, string | null>; verdict: 'accept' | 'reject'; ids: string[] }> = [
  { name: 'untouched fixtures', role: 'agent', files: { 'src/a.py': 'x = 2\n' }, verdict: 'accept', ids: [] },
  { name: 'a person swaps fixture bytes without the lock', role: 'human', files: { 'tests/fixtures/invoice.json': '{"cents": 1}\n' }, verdict: 'reject', ids: ['changed'] },
  { name: 'a person deletes a locked fixture', role: 'human', files: { 'tests/fixtures/invoice.json': null }, verdict: 'reject', ids: ['missing'] },
  { name: 'a person adds an unlocked file to a locked folder', role: 'human', files: { 'tests/fixtures/extra.json': '{}' }, verdict: 'reject', ids: ['unlocked'] },
  {
    name: 'a person changes the fixture and the lock together', role: 'human',
    files: { 'tests/fixtures/invoice.json': '{"cents": 1}\n', 'ci/fixtures.lock': JSON.stringify({ 'tests/fixtures/invoice.json': sha('{"cents": 1}\n') }) },
    verdict: 'accept', ids: [],
  },
  { name: 'an agent swaps fixture bytes', role: 'agent', files: { 'tests/fixtures/invoice.json': '{"cents": 1}\n' }, verdict: 'reject', ids: ['changed'] },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const r = TestRepo.init(t);
    r.commit('base', { 'src/a.py': 'x = 1\n', 'tests/fixtures/invoice.json': INVOICE, 'ci/fixtures.lock': LOCK });
    r.checkout('work', true).commit('change', c.files);
    const d = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: c.role });
    const fx = d.outcomes.find((o) => o.rule === 'fixtures')!;
    t.equal(d.verdict, c.verdict, d.reasons.map((x) => x.message).join(' | '));
    t.same(fx.findings.map((f) => f.messageId), c.ids);
    if (c.role === 'human' && c.verdict === 'reject') {
      t.equal(d.row, 'fixture-drift');
      t.match(d.remediation, /patchgate fixtures lock tests\/fixtures/);
    }
  });
}

t.test('a bad lock file is a rejection, not a crash', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'src/a.py': 'x = 1\n', 'ci/fixtures.lock': '{"a.json": "nothex"}' });
  r.checkout('work', true).commit('c', { 'src/a.py': 'x = 2\n' });
  const d = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'agent' });
  t.equal(d.verdict, 'reject');
  t.equal(d.reasons[0]!.rule, 'error');
  t.match(d.reasons[0]!.message, /CONFIG: ci\/fixtures.lock@[0-9a-f]+: a.json/);
});

t.test('fixture digest is sha256 over sorted path<TAB>sha<LF> lines', async (t) => {
  const lock = new Map([['b', 'b'.repeat(64)], ['a', 'a'.repeat(64)]]);
  t.equal(fixtureDigest(lock), sha(`a\t${'a'.repeat(64)}\nb\t${'b'.repeat(64)}\n`));
});
