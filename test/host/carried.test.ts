// Issue 20 inside a git host: the same engine judges what an agent's ref carries. A person's
// WIP branch pushed again by an agent is refused although receive-pack got no new object, and
// an accept (written before the shim is answered, src/server/hook/decision-log.ts) lets the next
// push of the same branch judge only its new commits.

import t from 'tap';
import { join } from 'node:path';
import { installHostHooks } from '../../src/host/install.js';
import { refIn } from '../helpers/gate.js';
import { gitWithEnv, seededBare, startTestDaemon } from '../helpers/host.js';

const env = (user: string) => ({ GL_USERNAME: user, GL_ID: 'user-17', GL_PROTOCOL: 'ssh', GL_REPOSITORY: 'project-3', GL_PROJECT_PATH: 'team/app' });

t.test('gitlab: a carried WIP is refused; a long agent branch re-judges only new commits', async (t) => {
  const { d, cfg } = await startTestDaemon(t);
  const { bare, w } = await seededBare(t);
  await installHostHooks('gitlab', cfg, [bare]);
  const hp = await gitWithEnv(bare, ['config', 'core.hooksPath', join(bare, 'custom_hooks')], {});
  t.equal(hp.code, 0, hp.stderr);

  w.checkout('wip', true);
  const wip = w.commit('wip', { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  const person = await gitWithEnv(w.dir, ['push', bare, 'wip'], env('alice'));
  t.equal(person.code, 0, person.stderr);
  const carried = await gitWithEnv(w.dir, ['push', bare, 'wip:refs/heads/agent/x'], env('agent-1'));
  t.not(carried.code, 0, 'the agent may not carry a person\'s test edit');
  t.match(carried.stderr, new RegExp(`commit ${wip.slice(0, 12)} modifies protected path tests/test_app.py`));
  t.equal(await refIn(bare, 'refs/heads/agent/x'), null);

  w.checkout('main');
  w.checkout('agent/long', true);
  for (let i = 0; i < 5; i++) w.commit(`step ${i}`, { [`src/m${i}.py`]: `X = ${i}\n` });
  const first = await gitWithEnv(w.dir, ['push', bare, 'agent/long'], env('agent-1'));
  t.equal(first.code, 0, first.stderr);
  w.commit('step 5', { 'src/m5.py': 'X = 5\n' });
  const second = await gitWithEnv(w.dir, ['push', bare, 'agent/long'], env('agent-1'));
  t.equal(second.code, 0, second.stderr);
  const rows = d.audit.query({ kind: 'ref' }).filter((r) => r.ref === 'refs/heads/agent/long');
  const trace = rows.map((r) => (r.rules as Array<{ rule: string; details?: { commits: number; reused: number } }>).find((o) => o.rule === 'write-block')!.details);
  t.same(trace.map((x) => [x!.commits, x!.reused]), [[1, 5], [5, 0]], 'newest first: the second push judged one commit and reused five');
});
