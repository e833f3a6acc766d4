// The patchgate-json line on its own (issue 21): real decisions from the engine on a real
// repository, and its size cap with thousands of findings. The push-level checks (one line per
// refused ref, codes of every refusal kind, fix = printed commands) are in
// test/server/remediation.test.ts.

import t from 'tap';
import { TestRepo } from '../helpers/repo.js';
import { Git } from '../../src/git/git.js';
import { judgeUpdate } from '../../src/policy/engine.js';
import { DECISION_TABLE, ROW_CODES, rowCode } from '../../src/policy/decision-table.js';
import { MACHINE_LINE_MAX, MACHINE_PREFIX, fixCommands, machineLine } from '../../src/policy/machine-line.js';
import type { RefDecision } from '../../src/policy/types.js';

t.test('every decision-table row has one code of its own, PG-…', async (t) => {
  const codes = DECISION_TABLE.map((r) => rowCode(r.id));
  t.equal(new Set(codes).size, codes.length, 'no two rows share a code');
  for (const c of codes) t.match(c, /^PG-[A-Z0-9-]+$/);
  t.equal(rowCode('test-tree-write'), 'PG-TEST-TREE');
  t.equal(rowCode('contract-moved'), 'PG-CONTRACT');
  t.equal(rowCode('outside-writable'), 'PG-WRITE-BLOCK');
  for (const id of Object.keys(ROW_CODES)) t.ok(DECISION_TABLE.some((r) => r.id === id), `${id} is a row of the table`);
});

async function decide(t: Parameters<Parameters<typeof t.test>[1]>[0], files: Record<string, string>): Promise<RefDecision> {
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'def test_add():\n    pass\n' });
  const base = w.head();
  w.checkout('agent/x', true);
  w.commit('agent', files);
  const git = new Git({ dir: w.dir });
  try {
    return await judgeUpdate({ git, role: 'agent', mode: 'check', trustedTip: base, exclude: [base] }, { ref: 'refs/heads/agent/x', oldId: base, newId: w.head() });
  } finally {
    git.close();
  }
}

t.test('a real refusal: valid JSON on one line, coded reasons with commit and path, fix = the $ lines', async (t) => {
  const d = await decide(t, { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  t.equal(d.verdict, 'reject');
  const line = machineLine(d, { verdict: 'reject', mode: 'enforce', pushId: 'p-1' });
  t.ok(line.startsWith(MACHINE_PREFIX));
  t.notOk(line.includes('\n'), 'one line');
  const o = JSON.parse(line.slice(MACHINE_PREFIX.length));
  t.equal(o.code, 'PG-TEST-TREE');
  t.equal(o.reasons[0].code, 'PG-TEST-TREE');
  t.equal(o.reasons[0].rule, 'write-block');
  t.equal(o.reasons[0].path, 'tests/test_app.py');
  t.match(o.reasons[0].commit, /^[0-9a-f]{7,40}$/);
  t.same(o.fix, fixCommands(d.remediation));
  t.ok(o.fix.length > 0);
  const would = JSON.parse(machineLine(d, { verdict: 'would-reject', mode: 'evaluate', pushId: 'p-1' }).slice(MACHINE_PREFIX.length));
  t.same(would.fix, [], 'a would-be refusal that was accepted gets no fix commands');
  t.equal(would.mode, 'evaluate');
});

t.test('thousands of findings: cut to 4 KiB, still valid JSON, and it says how many there were', async (t) => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 3000; i++) files[`tests/gen/test_${i}_${'x'.repeat(40)}.py`] = `def test_${i}():\n    pass\n`;
  const d = await decide(t, files);
  t.ok(d.reasons.length >= 3000, `${d.reasons.length} reasons`);
  const line = machineLine(d, { verdict: 'reject', mode: 'enforce', pushId: 'p-2' });
  t.ok(Buffer.byteLength(line) <= MACHINE_LINE_MAX, `${Buffer.byteLength(line)} bytes`);
  const o = JSON.parse(line.slice(MACHINE_PREFIX.length));
  t.equal(o.cut.reasons, d.reasons.length, 'the full count is kept');
  t.ok(o.reasons.length > 0 && o.reasons.length < d.reasons.length, 'the first reasons are kept');
  t.equal(o.reasons[0].path, d.reasons[0]!.path);
});
