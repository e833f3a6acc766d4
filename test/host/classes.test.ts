// Issue 50 inside a git host: the daemon's config maps the host's user names to agent classes
// of the policy (`classes`), and a real `git receive-pack` runs the generic shim with
// PATCHGATE_USER set as the host would. Each class's allowed push is accepted and its forbidden
// one refused, the refusal naming the class; a person's push is judged as a person's whatever
// the mapping says; a bad class name in the config stops the daemon's config from loading.

import t from 'tap';
import { installHostHooks } from '../../src/host/install.js';
import { parseDaemonConfig } from '../../src/host/config.js';
import { refIn } from '../helpers/gate.js';
import { gitWithEnv, seededBare, startTestDaemon } from '../helpers/host.js';

const POLICY = JSON.stringify({
  classes: {
    implementer: { writable: ['src/**'] },
    'test-author': { writable: ['tests/**'], protected: ['src/**'] },
  },
}, null, 2) + '\n';

t.test('host user names map to agent classes', async (t) => {
  const { d, cfg } = await startTestDaemon(t, { classes: { 'agent-test*': 'test-author', 'agent-impl*': 'implementer', 'alice': 'test-author' } });
  const { bare, w } = await seededBare(t);
  await installHostHooks('generic', cfg, [bare]);
  const as = (user: string) => ({ PATCHGATE_USER: user, PATCHGATE_REPO: 'app' });
  w.commit('the policy', { 'ci/patchgate.json': POLICY });
  const seed = await gitWithEnv(w.dir, ['push', bare, 'main'], as('alice'));
  t.equal(seed.code, 0, seed.stderr);
  const main = (await refIn(bare, 'refs/heads/main'))!;

  w.git('checkout', '-q', '-b', 'agent/tests', main);
  const test = w.commit('a test', { 'tests/test_more.py': 'def test_more():\n    assert 1 == 1\n' });
  const ok = await gitWithEnv(w.dir, ['push', bare, 'agent/tests'], as('agent-test-1'));
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stderr, /ACCEPT refs\/heads\/agent\/tests .* for agent-test-1 \(class test-author\)/);
  // The same commit pushed by the implementer's account: refused for its test edit.
  const no = await gitWithEnv(w.dir, ['push', bare, 'agent/tests:refs/heads/agent/impl'], as('agent-impl-1'));
  t.not(no.code, 0, 'the implementer may not carry the test author\'s commit');
  t.match(no.stderr, new RegExp(`\\[write-block\\] commit ${test.slice(0, 12)} adds protected path tests/test_more\\.py`));
  t.match(no.stderr, /patchgate-json \{.*"class":"implementer"/);
  t.equal(await refIn(bare, 'refs/heads/agent/impl'), null);

  w.git('checkout', '-q', '-b', 'agent/impl', main);
  w.commit('commute', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const impl = await gitWithEnv(w.dir, ['push', bare, 'agent/impl'], as('agent-impl-1'));
  t.equal(impl.code, 0, impl.stderr);
  const tester = await gitWithEnv(w.dir, ['push', bare, 'agent/impl:refs/heads/agent/t2'], as('agent-test-1'));
  t.not(tester.code, 0, 'the test author may not write src/');
  t.match(tester.stderr, /modifies protected path src\/app\.py \(matches src\/\*\*\)/);

  // A person named in the mapping is still a person (humans wins): tests and code in one push.
  w.git('checkout', '-q', 'main');
  w.commit('person', { 'tests/test_app.py': 'def test_add():\n    assert 2 == 2\n', 'src/app.py': 'def add(a, b):\n    return a + b  # person\n' });
  const person = await gitWithEnv(w.dir, ['push', bare, 'main'], as('alice'));
  t.equal(person.code, 0, person.stderr);

  const rows = d.audit.query({ kind: 'ref' }).map((r) => r as unknown as { actor: string; verdict: string; rules: Array<{ rule: string; details?: { class?: string } }> });
  const classes = (actor: string) => [...new Set(rows.filter((r) => r.actor === actor).map((r) => r.rules.find((x) => x.rule === 'write-block')?.details?.class ?? null))];
  t.same(classes('agent-test-1'), ['test-author']);
  t.same(classes('agent-impl-1'), ['implementer']);
  t.same(classes('alice'), [null], 'a person\'s rows carry no class');
});

t.test('a class name that is not one is a config error', async (t) => {
  t.throws(() => parseDaemonConfig({ data: '/tmp/x', classes: { 'agent-*': 'Test Author' } }), /classes\.agent-\*: not a class name/);
});
