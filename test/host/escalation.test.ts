// Escalation inside a git host (issue 21): `hook install` turns on receive.advertisePushOptions
// in the repository, the host shim forwards GIT_PUSH_OPTION_* to the daemon (control
// characters made spaces, at most 16), and the daemon records the escalation row and POSTs the
// config's notifyUrl. Real git receive-pack (a local push) running the `--host generic` shim.

import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { installHostHooks } from '../../src/host/install.js';
import { listEscalations } from '../../src/audit/escalation.js';
import { gitAsync } from '../helpers/gate.js';
import { gitWithEnv, seededBare, startTestDaemon } from '../helpers/host.js';

t.test('generic host: push options reach the daemon, the escalation is recorded and announced', async (t) => {
  const bodies: string[] = [];
  let arrived: () => void = () => {};
  const got = new Promise<void>((r) => (arrived = r));
  const srv = http.createServer((req, res) => {
    let b = '';
    req.on('data', (c) => (b += String(c)));
    req.on('end', () => (bodies.push(b), res.writeHead(200).end('ok'), arrived()));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())));
  const { d, cfg } = await startTestDaemon(t, { notifyUrl: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/n` });
  const { bare, w } = await seededBare(t);
  const out = await installHostHooks('generic', cfg, [bare]);
  t.match(out.join('\n'), /set receive\.advertisePushOptions in /);
  t.equal((await gitAsync(bare, ['config', '--get', 'receive.advertisePushOptions'])).stdout.trim(), 'true');
  w.checkout('agent/fix', true);
  w.commit('weaken', { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  const r = await gitWithEnv(w.dir, ['push', '-o', 'ci.skip', '-o', 'patchgate.escalate=add(1, 2) should be 4 per the spec', bare, 'agent/fix'], { PATCHGATE_USER: 'agent-1', PATCHGATE_REPO: 'app' });
  t.not(r.code, 0, 'still refused');
  t.match(r.stderr, /remote: patchgate: escalation \d+ recorded: a person will look at it/);
  const list = await listEscalations(d.audit);
  t.equal(list.length, 1);
  t.match(list[0], { open: true, actor: 'agent-1', ref: 'refs/heads/agent/fix', verdict: 'reject', text: 'add(1, 2) should be 4 per the spec' });
  await got;
  t.match(JSON.parse(bodies[0]!), { type: 'patchgate.escalation', id: list[0]!.id, actor: 'agent-1' });
});
