// No size makes a rule crash (issue 47): a person's first push of a tree with 200k public
// definitions used to be refused with "rule contract: Maximum call stack size exceeded" (its
// findings were spread into one call), and a contract diff that size took time quadratic in it.
// Here the person's answer waits for the contract (waivedWaitMs: the contract runs to its end),
// so a crash would show; then an agent's one-file push on that tree is judged as usual.

import t from 'tap';
import { gitAsync, refIn, seededGate } from '../helpers/gate.js';

type RuleRow = { rule: string; status: string; findings: unknown[]; details?: Record<string, unknown>; cut?: { findings: number } };

t.test('a person\'s first push of 200k public definitions, then an agent\'s one-file push', async (t) => {
  const files: Record<string, string> = { 'tests/test_app.py': 'def test_x():\n    assert True\n' };
  for (let i = 0; i < 500; i++) files[`src/pkg/m${i}.py`] = Array.from({ length: 400 }, (_, j) => `def f${j}(a):\n    return a\n`).join('');
  const { gate, agent, w, bare } = await seededGate(t, files, { hookTimeoutMs: 900_000, waivedWaitMs: 900_000 });
  const [row] = gate.srv.audit.query({ kind: 'ref', actor: 'alice', limit: 1 });
  t.equal(row?.verdict, 'accept');
  const contract = (row!.rules as RuleRow[]).find((o) => o.rule === 'contract')!;
  t.equal(contract.status, 'waived', 'the contract ran to its end and was waived, not an error');
  t.equal(contract.details?.error, undefined);
  t.ok((contract.cut?.findings ?? contract.findings.length) >= 200_000, `every definition is a finding (${contract.cut?.findings})`);

  w.commit('one signature', { 'src/pkg/m7.py': files['src/pkg/m7.py']!.replace('def f3(a):', 'def f3(a, b=1):') });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'HEAD:refs/heads/agent/x']);
  t.not(r.code, 0, 'the moved contract is refused for the agent');
  t.match(r.stderr, /\[contract\]/);
  t.match(r.stderr, /src\/pkg\/m7\.py::def f3\(a\)  =>  src\/pkg\/m7\.py::def f3\(a, b=1\)/, 'naming the one row that moved');
  t.notMatch(r.stderr, /call stack|gate error/);
  t.equal(await refIn(bare, 'refs/heads/agent/x'), null);
});
