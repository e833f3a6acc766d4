// A server stopped with SIGSTOP in the middle of an agent's work, as a real process: the push
// made while it is stopped is not accepted (the client gives up; nothing moves), and after
// SIGCONT the server answers again, a good push lands and `audit verify` passes.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync, refIn } from '../helpers/gate.js';
import { CLI, cli, serve } from '../helpers/serve.js';

t.test('a push against a stopped server is not accepted; after SIGCONT it serves and the chain verifies', async (t) => {
  const data = tempDir('pg-stop-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  cli('repo', 'create', 'app', '--data', data);
  const human = cli('token', 'create', 'alice', '--role', 'human', '--data', data);
  const agent = cli('token', 'create', 'agent-1', '--role', 'agent', '--data', data);
  const srv = await serve(data);
  t.teardown(() => {
    srv.child.kill('SIGCONT');
    srv.child.kill('SIGKILL');
  });
  const url = (user: string, secret: string) => `http://${user}:${secret}@127.0.0.1:${srv.port}/app.git`;
  const bare = join(data, 'repos', 'app.git');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'x = 1\n' });
  t.equal((await gitAsync(w.dir, ['push', url('alice', human), 'main'])).code, 0, 'a person seeds main');

  w.checkout('agent/stopped', true);
  w.commit('fix', { 'src/app.py': 'x = 2\n' });
  srv.child.kill('SIGSTOP');
  // The client gives up after 3 s without progress (the server cannot answer while stopped).
  const stopped = await gitAsync(w.dir, ['-c', 'http.lowSpeedLimit=1', '-c', 'http.lowSpeedTime=3', 'push', url('agent-1', agent), 'agent/stopped']);
  t.not(stopped.code, 0, 'the push against the stopped server failed');
  srv.child.kill('SIGCONT');

  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    status = await fetch(`http://127.0.0.1:${srv.port}/healthz`).then((r) => r.status, () => 0);
    if (status !== 200) await new Promise((r) => setTimeout(r, 200));
  }
  t.equal(status, 200, 'healthz is ok after SIGCONT');
  t.equal(await refIn(bare, 'refs/heads/agent/stopped'), null, 'the push made while stopped did not move a ref');

  w.checkout('main').checkout('agent/after', true);
  const tip = w.commit('after', { 'src/app.py': 'x = 3\n' });
  const after = await gitAsync(w.dir, ['push', url('agent-1', agent), 'agent/after']);
  t.equal(after.code, 0, after.code ? after.stderr : 'a push after SIGCONT lands');
  t.equal(await refIn(bare, 'refs/heads/agent/after'), tip);
  const verify = execFileSync(process.execPath, [CLI, 'audit', 'verify', '--data', data], { encoding: 'utf8' });
  t.match(verify, /ok|intact/i, 'audit verify passes');
  t.equal(srv.child.exitCode, null, 'the server is still running');
});
