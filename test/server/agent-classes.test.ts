// Issue 50 through a real server: separation of duties between agents. Two agent tokens of
// different classes on one repository; each class's allowed push accepted and its forbidden push
// refused (naming the class in the refusal, the patchgate-json line and the audit row); a commit
// accepted for one class and carried onto the other's branch judged again under the pusher's
// class and refused (both ways); a token of a class the policy lacks refused; a person's push of
// a policy that gives one class both roles refused, and `policy check` on it exits invalid.

import t from 'tap';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gitAsync, refIn, seededGate } from '../helpers/gate.js';
import { tablePage } from '../../src/audit/insights.js';
import { runPolicyCheck } from '../../src/commands/policy.js';
import { removeTree } from '../helpers/repo.js';

const POLICY = {
  classes: {
    implementer: { writable: ['src/**'] },
    'test-author': { writable: ['tests/**'], protected: ['src/**', 'package-lock.json'] },
  },
};
const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
  'ci/patchgate.json': JSON.stringify(POLICY, null, 2) + '\n',
};
const BOTH = JSON.stringify({ classes: { ...POLICY.classes, lazy: { writable: ['src/**', 'tests/**'], protected: [] } } }, null, 2) + '\n';

type Rules = Array<{ rule: string; status: string; details?: Record<string, unknown> }>;

t.test('two agent classes on one repository', async (t) => {
  const { gate, human, w, bare } = await seededGate(t, BASE, {}, []);
  const token = (name: string, agentClass?: string) => gate.srv.tokens.create(name, 'agent', agentClass ? { agentClass } : {}) as string;
  const impl = gate.remote('app', 'impl-1', token('impl-1', 'implementer'));
  const tester = gate.remote('app', 'tester-1', token('tester-1', 'test-author'));
  const ghost = gate.remote('app', 'ghost-1', token('ghost-1', 'docs-writer'));
  const main = (await refIn(bare, 'refs/heads/main'))!;
  const lastRow = (actor: string) => gate.srv.audit.query({ kind: 'ref', actor }).sort((x, y) => y.id - x.id)[0] as unknown as { decision: string; verdict: string; rules: Rules };
  const classOfRow = (actor: string) => lastRow(actor).rules.find((r) => r.rule === 'write-block')?.details?.class;

  t.same(gate.srv.tokens.list().filter((x) => x.role === 'agent').map((x) => [x.name, x.class]), [['impl-1', 'implementer'], ['tester-1', 'test-author'], ['ghost-1', 'docs-writer']], 'token list names the class');
  t.throws(() => gate.srv.tokens.create('bob', 'human', { agentClass: 'implementer' }), /only an agent token has a class/);
  t.throws(() => gate.srv.tokens.create('x-1', 'agent', { agentClass: 'Not A Class' }), /--class: must be a class name/);

  // The test author adds a test: accepted, judged under its class.
  w.git('checkout', '-q', '-b', 'agent/tests', main);
  const testCommit = w.commit('a failing test for sub', { 'tests/test_sub.py': 'from src.app import sub\n\ndef test_sub():\n    assert sub(3, 1) == 2\n' });
  let r = await gitAsync(w.dir, ['push', tester, 'agent/tests']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /ACCEPT refs\/heads\/agent\/tests .* for tester-1 \(class test-author\)/);
  t.equal(classOfRow('tester-1'), 'test-author', 'the audit row names the class');

  // ...and may not touch the code.
  w.commit('and the code', { 'src/app.py': 'def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n' });
  r = await gitAsync(w.dir, ['push', tester, 'agent/tests']);
  t.not(r.code, 0, 'a test author writing src/ is refused');
  t.match(r.stderr, /\[write-block\] commit [0-9a-f]{12} modifies protected path src\/app\.py \(matches src\/\*\*\)/);
  t.match(r.stderr, /patchgate-json \{.*"class":"test-author"/);
  t.equal(await refIn(bare, 'refs/heads/agent/tests'), testCommit);
  t.equal(lastRow('tester-1').verdict, 'reject');

  // The implementer writes the code: accepted; a test edit of its own is refused.
  w.git('checkout', '-q', '-b', 'agent/impl', main);
  const implCommit = w.commit('add, commuted', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  r = await gitAsync(w.dir, ['push', impl, 'agent/impl']);
  t.equal(r.code, 0, r.stderr);
  t.equal(classOfRow('impl-1'), 'implementer');
  w.commit('weaken the test', { 'tests/test_app.py': 'def test_add():\n    pass\n' });
  r = await gitAsync(w.dir, ['push', impl, 'agent/impl']);
  t.not(r.code, 0);
  t.match(r.stderr, /\[write-block\] commit [0-9a-f]{12} modifies protected path tests\/test_app\.py/);
  t.match(r.stderr, /"code":"PG-TEST-TREE".*"class":"implementer"|"class":"implementer".*"code":"PG-TEST-TREE"/);
  t.equal(await refIn(bare, 'refs/heads/agent/impl'), implCommit);

  // Carried across classes: the test author's accepted commit under the implementer's branch is
  // judged as the implementer's and refused for its test edit (the cache keys on the class).
  w.git('checkout', '-q', '-b', 'agent/impl-carry', testCommit);
  w.commit('add, commuted', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  r = await gitAsync(w.dir, ['push', impl, 'agent/impl-carry']);
  t.not(r.code, 0, 'a test author\'s commit carried by the implementer is refused');
  t.match(r.stderr, new RegExp(`\\[write-block\\] commit ${testCommit.slice(0, 12)} adds protected path tests/test_sub\\.py`));
  t.equal(await refIn(bare, 'refs/heads/agent/impl-carry'), null);
  // And the reverse: the implementer's accepted commit carried by the test author.
  w.git('checkout', '-q', '-b', 'agent/tests-carry', implCommit);
  w.commit('another test', { 'tests/test_more.py': 'def test_more():\n    assert True\n' });
  r = await gitAsync(w.dir, ['push', tester, 'agent/tests-carry']);
  t.not(r.code, 0, 'an implementer\'s commit carried by the test author is refused');
  t.match(r.stderr, new RegExp(`\\[write-block\\] commit ${implCommit.slice(0, 12)} modifies protected path src/app\\.py`));
  t.equal(await refIn(bare, 'refs/heads/agent/tests-carry'), null);

  // A token whose class the policy lacks moves nothing.
  w.git('checkout', '-q', '-b', 'agent/docs', main);
  w.commit('docs', { 'src/app.py': '# doc\ndef add(a, b):\n    return a + b\n' });
  r = await gitAsync(w.dir, ['push', ghost, 'agent/docs']);
  t.not(r.code, 0);
  t.match(r.stderr, /\[policy\] this credential is of agent class docs-writer, which ci\/patchgate\.json@[0-9a-f]{12} does not define \(its classes: default, implementer, test-author\)/);
  t.match(r.stderr, /"code":"PG-AGENT-CLASS"/);
  t.equal(lastRow('ghost-1').decision, 'agent-class');

  // The audit table (the page's rows) names the class.
  const page = await tablePage(gate.srv.audit, {});
  t.ok(page.rows.some((x) => x.actor === 'tester-1' && x.agentClass === 'test-author'), 'the page row names the class');

  // A person's push of a policy giving one class both roles is refused, naming the class and line.
  w.git('checkout', '-q', 'main');
  w.commit('a lazy class', { 'ci/patchgate.json': BOTH });
  r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.not(r.code, 0, 'the policy is refused');
  t.match(r.stderr, /\[policy\] commit [0-9a-f]{12}: ci\/patchgate\.json:\d+: classes\.lazy\.writable: class lazy may write both the contract root src\/ .* and the test or oracle path tests\//);
  t.match(r.stderr, /"code":"PG-POLICY-INVALID"/);
  t.equal(await refIn(bare, 'refs/heads/main'), main);

  // `patchgate policy check` says the same of the work tree before anyone pushes.
  const check = await runPolicyCheck({ repo: w.dir });
  t.equal(check.ok, false);
  t.match(check.lines[0], /^ci\/patchgate\.json:\d+: classes\.lazy\.writable: class lazy may write both/);
  const good = mkdtempSync(join(tmpdir(), 'pg-classes-'));
  t.teardown(() => removeTree(good));
  mkdirSync(join(good, 'ci'));
  writeFileSync(join(good, 'ci/patchgate.json'), BASE['ci/patchgate.json']);
  t.equal((await runPolicyCheck({ repo: good })).ok, true, 'the two-class policy is valid');
});
