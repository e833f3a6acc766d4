// Held-out repositories (issue 11): `repo create NAME-holdout --holdout-of NAME` keeps tests
// agents never see. Over real HTTP with the real git client: an agent token whose grant
// covers every repository can neither clone nor list (ls-remote) it, a person's token can,
// and `patchgate ci --holdout` runs its tests from that clone.

import t from 'tap';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { runRepoCreate } from '../../src/commands/admin.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';

t.test('an agent token cannot clone or list the held-out repository; a person can', async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  await runRepoCreate({ data: gate.data, name: 'app-holdout', trusted: 'main', holdoutOf: 'app' });
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent', '*');
  const w = TestRepo.init(t);
  w.commit('held-out tests', { 'test_props.py': 'from calc import add\n\ndef test_big():\n    assert add(10, 20) == 30\n' });
  const pushed = await gitAsync(w.dir, ['push', gate.remote('app-holdout', 'alice', human), 'HEAD:refs/heads/main']);
  t.equal(pushed.code, 0, pushed.stderr);

  const dest = tempDir('pg-clone-');
  t.teardown(() => {});
  const agentClone = await gitAsync(dest, ['clone', gate.remote('app-holdout', 'agent-1', agent), 'a']);
  t.not(agentClone.code, 0, 'the agent cannot clone it');
  t.match(agentClone.stderr, /not found|404/i);
  t.notOk(existsSync(join(dest, 'a', 'test_props.py')));
  const agentList = await gitAsync(dest, ['ls-remote', gate.remote('app-holdout', 'agent-1', agent)]);
  t.not(agentList.code, 0, 'the agent cannot list its refs');
  t.notMatch(agentList.stdout, /refs\/heads/);
  t.notMatch(agentClone.stderr + agentList.stderr, new RegExp(agent), 'the token never appears in output');
  const okApp = await gitAsync(dest, ['ls-remote', gate.remote('app', 'agent-1', agent)]);
  t.equal(okApp.code, 0, 'the same token still reaches the ordinary repository');

  const humanClone = await gitAsync(dest, ['clone', gate.remote('app-holdout', 'alice', human), 'h']);
  t.equal(humanClone.code, 0, humanClone.stderr);
  t.ok(existsSync(join(dest, 'h', 'test_props.py')), 'a person clones the held-out tests');
});

t.test('--holdout-of names an existing repository', async (t) => {
  const gate = await startGate(t);
  await t.rejects(runRepoCreate({ data: gate.data, name: 'x-holdout', trusted: 'main', holdoutOf: 'nope' }), /no repository nope/);
});
