// A restart with an upstream configured: the server fetches upstream's trusted branch at
// start and warms the contract cache for it in the background, so the first agent push after
// the restart parses only what it changed, not the whole tree a person merged upstream.

import t from 'tap';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '../../src/server/app.js';
import { parsePool } from '../../src/contract/parse-pool.js';
import { runRepoCreateUpstream } from '../../src/commands/upstream.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn } from '../helpers/gate.js';
import { startUpstream } from '../helpers/upstream.js';

t.test('the first push after a restart judges without parsing the whole trusted tree', async (t) => {
  const up = await startUpstream(t);
  const w = TestRepo.init(t);
  const files: Record<string, string> = {};
  for (let i = 0; i < 60; i++) files[`src/m${i}.py`] = `def f${i}(a, b=${i}):\n    return a + b\n`;
  w.commit('base', files);
  await up.create('app', w.dir);
  const data = tempDir('pg-data-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const cred = join(data, '..', `cred-${Date.now()}`);
  writeFileSync(cred, up.secret);
  t.teardown(() => rmSync(cred, { force: true }));
  await runRepoCreateUpstream({ data, name: 'app', trusted: 'main', upstream: up.url('app'), credentialFile: cred });

  const first = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: () => {} });
  await first.hooks.warmed;
  const agent = first.tokens.create('agent-1', 'agent');
  await first.close();

  // While the gate is down, a person merges upstream: a new trusted tip the gate never saw.
  const changed: Record<string, string> = {};
  for (let i = 0; i < 40; i++) changed[`src/m${i}.py`] = `def f${i}(a, b=${i}, c=0):\n    return a + b + c\n`;
  const merged = w.commit('person changes 40 modules', changed);
  t.equal((await gitAsync(w.dir, ['push', up.urlWithCredential('app'), 'main'])).code, 0);

  const srv = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: () => {} });
  t.teardown(() => srv.close());
  await srv.hooks.warmed;
  t.equal(await refIn(bareDir({ data } as never, 'app'), 'refs/heads/main'), merged, 'the start fetched upstream\'s new main');

  let parsed = 0;
  const rows = parsePool.rows.bind(parsePool);
  parsePool.rows = ((...a: Parameters<typeof rows>) => {
    parsed++;
    return rows(...a);
  }) as typeof parsePool.rows;
  t.teardown(() => {
    parsePool.rows = rows;
  });
  w.checkout('agent/one', true);
  const head = w.commit('one change', { 'src/m3.py': 'def f3(a, b=3, c=0):\n    return c + b + a\n' });
  const r = await gitAsync(w.dir, ['push', `http://agent-1:${agent}@127.0.0.1:${srv.port}/app.git`, 'agent/one']);
  t.equal(r.code, 0, r.stderr);
  t.equal(await refIn(up.dir('app'), 'refs/heads/agent/one'), head, 'forwarded');
  t.ok(parsed <= 2, `the push parsed ${parsed} file(s) of 60, not the 40 merged upstream while the gate was down`);
});
