// One server per data folder, and a start that cannot bind its port exits: real
// `node dist/cli.js serve` processes. A second serve on the same folder exits 2 with a clear
// message and leaves the first one serving pushes; after kill -9 the lock is not stale; a
// busy port exits non-zero instead of hanging.

import t from 'tap';
import { readFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync, refIn } from '../helpers/gate.js';
import { cli, serve, serveExpectingExit } from '../helpers/serve.js';

t.test('a second serve on the same data folder exits 2; the first still serves; kill -9 leaves no stale lock', async (t) => {
  const data = tempDir('pg-lock-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  cli('repo', 'create', 'app', '--data', data);
  const human = cli('token', 'create', 'alice', '--role', 'human', '--data', data);
  const first = await serve(data);
  t.teardown(() => void first.child.kill('SIGKILL'));

  const second = await serveExpectingExit(data, ['--port', '0']);
  t.equal(second.code, 2, 'the second serve exits 2');
  t.match(second.output, new RegExp(`patchgate: data folder .* is in use by another patchgate serve \\(pid ${first.child.pid}\\); stop it first`));
  t.ok(existsSync(join(data, 'hook.endpoint')), 'the first server\'s hook.endpoint is still there');

  const w = TestRepo.init(t);
  const tip = w.commit('base', { 'src/app.py': 'x = 1\n' });
  const r = await gitAsync(w.dir, ['push', `http://alice:${human}@127.0.0.1:${first.port}/app.git`, 'main']);
  t.equal(r.code, 0, r.code ? r.stderr : 'a push to the first server after the second exited lands');
  t.equal(await refIn(join(data, 'repos', 'app.git'), 'refs/heads/main'), tip);

  first.child.kill('SIGKILL');
  await first.exited;
  const third = await serve(data);
  t.teardown(() => void third.child.kill('SIGKILL'));
  t.ok(third.port > 0, 'a serve after kill -9 of the holder starts (the lock died with it)');
  const health = await fetch(`http://127.0.0.1:${third.port}/healthz`);
  t.equal(health.status, 200, 'and it is healthy');
  third.child.kill('SIGTERM');
  t.equal(await third.exited, 0, 'SIGTERM stops it cleanly');
  t.notOk(existsSync(join(data, 'serve.pid')), 'a clean stop removes serve.pid');
});

t.test('a busy port makes serve exit non-zero, naming the address', async (t) => {
  const a = tempDir('pg-lock-');
  const b = tempDir('pg-lock-');
  t.teardown(() => {
    rmSync(a, { recursive: true, force: true });
    rmSync(b, { recursive: true, force: true });
  });
  const holder = await serve(a);
  t.teardown(() => void holder.child.kill('SIGKILL'));
  const busy = await serveExpectingExit(b, ['--port', String(holder.port)]);
  t.equal(busy.code, 2, 'serve exits 2 on a busy port');
  t.match(busy.output, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${holder.port}: EADDRINUSE: the address is in use`));
  t.notMatch(busy.output, /admin token was created/, 'the failed start minted no admin token it could not show');
  t.notOk(existsSync(join(b, 'admin-token')), 'and wrote no token file');
  t.notOk(existsSync(join(b, 'hook.endpoint')), 'the failed start left no hook.endpoint behind');
  const again = await serve(b);
  t.teardown(() => void again.child.kill('SIGKILL'));
  for (let i = 0; i < 100 && !/admin token was created/.test(again.out()); i++) await new Promise((r) => setTimeout(r, 100));
  t.match(again.out(), /an admin token was created and written to .*admin-token/, 'the next start on that folder still mints the first admin token');
  t.match(readFileSync(join(b, 'admin-token'), 'utf8'), /^pg_/, 'into the token file');
});
