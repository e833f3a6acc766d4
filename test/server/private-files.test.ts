// The data folder is the server user's alone: a new one is created 0700 and every file the
// gate makes in it 0600 (the audit log and its -wal/-shm, the cache, the lock, the endpoint,
// the intent journal), whether the server, the CLI or a host daemon creates it, whatever the umask.

import t from 'tap';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, TestRepo } from '../helpers/repo.js';
import { gitAsync } from '../helpers/gate.js';
import { cliRun } from '../helpers/serve.js';
import { startServer } from '../../src/server/app.js';
import { createRepo } from '../../src/server/repos.js';
import { startDaemon } from '../../src/host/daemon.js';
import { daemonConfig } from '../helpers/host.js';

const mode = (p: string) => statSync(p).mode & 0o777;

type TT = Parameters<Parameters<typeof t.test>[1]>[0];

function checkTree(t: TT, data: string, what: string): void {
  t.equal(mode(data), 0o700, `${what}: the data folder is 0700`);
  const files = readdirSync(data, { withFileTypes: true });
  t.ok(files.some((f) => f.name === 'patchgate.db'), `${what}: patchgate.db is there`);
  for (const f of files) {
    const p = join(data, f.name);
    if (f.isDirectory()) {
      if (['intents', 'repo-settings'].includes(f.name)) t.equal(mode(p), 0o700, `${what}: ${f.name}/ is 0700`);
      continue;
    }
    t.equal(mode(p), 0o600, `${what}: ${f.name} is 0600`);
  }
}

t.test('serve on a new data folder, with a loose umask: 0700 folder, 0600 files', async (t) => {
  const old = process.umask(0o022);
  t.teardown(() => void process.umask(old));
  const root = tempDir('pg-private-');
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const data = join(root, 'data');
  const srv = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: () => {} });
  t.teardown(() => srv.close());
  await createRepo(data, 'app');
  const human = srv.tokens.create('alice', 'human');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n' });
  const r = await gitAsync(w.dir, ['push', `http://alice:${human}@127.0.0.1:${srv.port}/app.git`, 'main']);
  t.equal(r.code, 0, r.stderr);
  t.ok(readdirSync(data).includes('patchgate.db-wal'), 'the WAL exists (written by the push)');
  checkTree(t, data, 'serve');
});

t.test('the CLI and a host daemon create their data folders private too', async (t) => {
  const old = process.umask(0o022);
  t.teardown(() => void process.umask(old));
  const root = tempDir('pg-private-');
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const cliData = join(root, 'cli-data');
  const made = await cliRun(['repo', 'create', 'app', '--data', cliData]);
  t.equal(made.code, 0, made.stderr);
  const tok = await cliRun(['token', 'create', 'agent-1', '--role', 'agent', '--data', cliData]);
  t.equal(tok.code, 0, tok.stderr);
  checkTree(t, cliData, 'CLI');
  const hostData = join(root, 'host-data');
  const d = await startDaemon(daemonConfig(hostData), { log: () => {} });
  t.teardown(() => d.close());
  checkTree(t, hostData, 'daemon');
});
