// The audit page's queries on a real SQLite log: keyset pages walk every row exactly once,
// filters narrow, bad filters are refused naming the field, the charts count what was
// written, and the queries run on the covering index (migration 3), not a table scan.

import t from 'tap';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { AuditStore } from '../../src/audit/store.js';
import { overview, tablePage, PAGE_SIZE } from '../../src/audit/insights.js';
import { tempDir } from '../helpers/repo.js';

const hex = (i: number) => i.toString(16).padStart(40, '0');

function seeded(t: { teardown(fn: () => void): void }, n: number): AuditStore {
  const dir = tempDir('pg-insights-');
  const s = AuditStore.open(join(dir, 'patchgate.db'));
  t.teardown(() => { s.close(); rmSync(dir, { recursive: true, force: true }); });
  const t0 = Date.parse('2026-03-01T00:00:00Z');
  for (let i = 0; i < n; i++) {
    const reject = i % 3 === 0;
    s.recordPush({
      pushId: `p${i}`, time: new Date(t0 + Math.floor(i / 2) * 3_600_000).toISOString(), repo: i % 2 ? 'app' : 'lib', actor: `agent-${i % 4}`, role: 'agent', verdict: reject ? 'reject' : 'accept',
      refs: [{ ref: 'refs/heads/agent/x', old: hex(i), new: hex(i + 1), verdict: reject ? 'reject' : 'accept', decision: reject ? 'test-tree-write' : 'accept',
        rules: [{ rule: 'refs', status: 'pass', findings: [], ms: 1 }, { rule: 'write-block', status: reject ? 'fail' : 'pass', findings: reject ? [{ messageId: 'x', data: {}, message: 'protected', path: `tests/t${i % 5}.py` }] : [], ms: 1 }] }],
    });
  }
  return s;
}

t.test('keyset pages cover every row once, newest first; filters narrow', async (t) => {
  const s = seeded(t, 130);
  const seen: number[] = [];
  let before: string | undefined;
  let pages = 0;
  do {
    const p = await tablePage(s, { before });
    t.ok(p.rows.length <= PAGE_SIZE);
    seen.push(...p.rows.map((r) => r.id));
    before = p.next ?? undefined;
    pages++;
  } while (before);
  t.equal(pages, 3);
  t.equal(new Set(seen).size, 130, 'every ref row once');
  const sorted = [...seen].sort((a, b) => b - a);
  t.same(seen, sorted, 'newest first');
  const rejects = await tablePage(s, { verdict: 'reject', actor: 'agent-0' });
  t.ok(rejects.rows.length > 0 && rejects.rows.every((r) => r.verdict === 'reject' && r.actor === 'agent-0'));
  t.same([...new Set((await tablePage(s, { rule: 'write-block' })).rows.map((r) => r.rule))], ['write-block'], 'rule filter through its decision row');
  await t.rejects(tablePage(s, { verdict: 'maybe' }), /verdict: must be/);
  await t.rejects(tablePage(s, { rule: 'nope' }), /rule: unknown rule/);
  await t.rejects(tablePage(s, { before: 'garbage' }), /before: not a page cursor/);
  await t.rejects(tablePage(s, { since: 'yesterday' }), /since: not an ISO date/);
});

t.test('the charts count what was written, on the covering index', async (t) => {
  const s = seeded(t, 60);
  const o = await overview(s, { now: new Date('2026-03-02T12:00:00Z'), days: 7 });
  t.equal(o.refusals, 20);
  t.same(o.byRow, [{ key: 'test-tree-write', n: 20 }]);
  t.same(o.byRule, [{ key: 'write-block', n: 20 }]);
  t.equal(o.topPaths.reduce((a, p) => a + p.n, 0), 20);
  const days = o.days.counts;
  t.equal(days.accept!.reduce((a, b) => a + b, 0) + days.reject!.reduce((a, b) => a + b, 0), 60, 'every push in a day bucket');
  t.equal(o.days.buckets.length, 7);
  t.equal(o.hours.buckets.length, 48);
  const plan = (s.db.prepare("EXPLAIN QUERY PLAN SELECT decision, count(*) FROM events INDEXED BY events_kind_time_cover WHERE kind = 'ref' AND time >= ? AND verdict = 'reject' GROUP BY decision").all('2026-01-01') as Array<{ detail: string }>).map((r) => r.detail).join('\n');
  t.match(plan, /USING COVERING INDEX events_kind_time_cover/, 'no table access for the counts');
  const tablePlan = (s.db.prepare("EXPLAIN QUERY PLAN SELECT e.id FROM events e WHERE e.kind = 'ref' ORDER BY e.time DESC, e.id DESC LIMIT 51").all() as Array<{ detail: string }>).map((r) => r.detail).join('\n');
  t.notMatch(tablePlan, /SCAN e$|SCAN events$/m, `the table page does not scan the log: ${tablePlan}`);
});

t.test('refusals by rule and by decision-table row count the same refusals: upstream has a rule, two failing rules count once', async (t) => {
  const dir = tempDir('pg-insights-');
  const s = AuditStore.open(join(dir, 'patchgate.db'));
  t.teardown(() => { s.close(); rmSync(dir, { recursive: true, force: true }); });
  const push = (i: number, decision: string, rules: Array<{ rule: string; status: 'pass' | 'fail' }>) => s.recordPush({
    pushId: `q${i}`, time: `2026-03-01T0${i}:00:00.000Z`, repo: 'app', actor: 'agent-0', role: 'agent', verdict: 'reject',
    refs: [{ ref: 'refs/heads/agent/x', old: hex(i), new: hex(i + 1), verdict: 'reject', decision, rules: rules.map((r) => ({ ...r, findings: [], ms: 1 })) }],
  });
  push(1, 'upstream-refused', [{ rule: 'refs', status: 'pass' }, { rule: 'write-block', status: 'pass' }]);
  push(2, 'test-tree-write', [{ rule: 'write-block', status: 'fail' }, { rule: 'contract', status: 'fail' }]);
  push(3, 'contract-moved', [{ rule: 'contract', status: 'fail' }]);
  const o = await overview(s, { now: new Date('2026-03-02T12:00:00Z'), days: 7 });
  const sum = (xs: Array<{ n: number }>) => xs.reduce((a, x) => a + x.n, 0);
  t.equal(o.refusals, 3);
  t.equal(sum(o.byRule), 3, 'each refusal once by rule');
  t.equal(sum(o.byRow), 3, 'each refusal once by row');
  t.same(Object.fromEntries(o.byRule.map((x) => [x.key, x.n])), { upstream: 1, 'write-block': 1, contract: 1 });
});
