// A person's push is never held, or refused, by the rules whose findings are waived for a
// person (issue 47): they hold the answer for a budget at most (serve's waivedWaitMs, default a
// quarter of the hook time limit), then the push is answered, and the rule still running is
// audited as deferred. Here the budget is 0, so every waived rule that reads anything is
// deferred: a person's first push of a tree with hundreds of Python files lands at once, while
// an agent's push on the same gate is judged in full and refused for its test edit as before.

import t from 'tap';
import { gitAsync, refIn, seededGate } from '../helpers/gate.js';

type RuleRow = { rule: string; status: string; findings: unknown[]; details?: Record<string, unknown> };

t.test('a person\'s push does not wait for the waived rules past the budget; an agent\'s does', async (t) => {
  const files: Record<string, string> = { 'tests/test_app.py': 'def test_x():\n    assert True\n' };
  for (let i = 0; i < 300; i++) files[`src/pkg/m${i}.py`] = Array.from({ length: 20 }, (_, j) => `def f${j}(a, b=${j}):\n    return a + b\n`).join('\n');
  const { gate, agent, w, bare } = await seededGate(t, files, { waivedWaitMs: 0 });
  const [row] = gate.srv.audit.query({ kind: 'ref', actor: 'alice', limit: 1 });
  t.equal(row?.verdict, 'accept', 'the person\'s seed landed');
  const rules = row!.rules as RuleRow[];
  const contract = rules.find((o) => o.rule === 'contract');
  t.equal(contract?.status, 'waived');
  t.match(String(contract?.details?.deferred ?? ''), /not finished within 0 ms; its findings are waived for a person/, 'the contract of 300 files was deferred, and the row says so');
  for (const o of rules.filter((x) => x.rule === 'limits' || x.rule === 'fixtures' || x.rule === 'ledger' || x.rule === 'policy')) {
    t.equal(o.details?.deferred, undefined, `${o.rule} applies to everyone and was waited for`);
  }

  // The agent's push on the same gate: every rule waited for, the test edit refused.
  w.commit('make it green', { 'tests/test_app.py': 'def test_x():\n    pass\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'HEAD:refs/heads/agent/x']);
  t.not(r.code, 0);
  t.match(r.stderr, /\[write-block\] commit \w+ modifies protected path tests\/test_app\.py/);
  t.equal(await refIn(bare, 'refs/heads/agent/x'), null);
  const [arow] = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1', limit: 1 });
  t.ok((arow!.rules as RuleRow[]).every((o) => o.details?.deferred === undefined), 'nothing of an agent\'s push is deferred');
});
