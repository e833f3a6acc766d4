// The pinned CLI forms for upstreams, run as the built `node dist/cli.js` (asynchronously: the
// upstream server runs in this process): repo create --upstream/--mode, repo upstream, repo
// sync, repo mode, audit --verdict would-reject. The credential is in no output.

import t from 'tap';

import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliRun } from '../helpers/serve.js';
import { TestRepo, processesDone, removeTree, tempDir } from '../helpers/repo.js';
import { refIn } from '../helpers/gate.js';
import { startUpstream } from '../helpers/upstream.js';

async function cli(...args: string[]): Promise<{ code: number; out: string }> {
  const r = await cliRun(args);
  return { code: r.code, out: r.stdout + r.stderr };
}

t.test('repo create --upstream, upstream, sync, mode; no secret in any output', async (t) => {
  const up = await startUpstream(t);
  const w = TestRepo.init(t);
  const head = w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n' });
  await up.create('app', w.dir);
  const data = tempDir('pg-data-');
  const cred = join(data, '..', `cred-${process.pid}-${Date.now()}`);
  writeFileSync(cred, `${up.user}:${up.secret}\n`);
  t.teardown(() => {
    rmSync(cred, { force: true });
    removeTree(data);
  });
  const outputs: string[] = [];
  const run = async (...a: string[]) => {
    const r = await cli(...a, '--data', data);
    outputs.push(r.out);
    return r;
  };
  const created = await run('repo', 'create', 'app', '--upstream', up.url('app'), '--upstream-credential-file', cred, '--mode', 'evaluate');
  t.equal(created.code, 0, created.out);
  t.match(created.out, /upstream: http:\/\/127\.0\.0\.1:\d+\/app\.git \(credential stored/);
  t.match(created.out, /mode: evaluate/);
  t.equal(await refIn(join(data, 'repos', 'app.git'), 'refs/heads/main'), head, 'main fetched from upstream');
  t.equal(statSync(join(data, 'repo-settings', 'app.json')).mode & 0o777, 0o600);

  const bad = await run('repo', 'upstream', 'app', up.urlWithCredential('app', 'not-the-secret-77'));
  t.equal(bad.code, 2, 'a credential upstream refuses: exit 2 with one line');
  t.match(bad.out, /upstream http:\/\/127\.0\.0\.1:\d+\/app\.git could not be fetched/);
  t.notOk(bad.out.includes('not-the-secret-77'));

  t.equal((await run('repo', 'upstream', 'app', up.urlWithCredential('app'))).code, 0);
  const sync = await run('repo', 'sync', 'app');
  t.equal(sync.code, 0, sync.out);
  t.match(sync.out, /refs\/heads\/main is [0-9a-f]{40} from upstream/);
  const mode = await run('repo', 'mode', 'app', 'enforce');
  t.equal(mode.code, 0);
  t.match(mode.out, /enforce mode/);
  t.equal(JSON.parse(readFileSync(join(data, 'repo-settings', 'app.json'), 'utf8')).mode, 'enforce');
  const wr = await run('audit', '--verdict', 'would-reject', '--json');
  t.equal(wr.code, 0, 'audit --verdict would-reject is a valid query');
  const admin = await run('audit', '--kind', 'admin', '--json');
  const actions = admin.out.trim().split('\n').map((l) => JSON.parse(l).action);
  for (const a of ['repo.create', 'repo.upstream', 'repo.sync', 'repo.mode']) t.ok(actions.includes(a), `${a} audited`);
  const none = await run('repo', 'upstream', 'app', 'none');
  t.match(none.out, /no upstream/);
  for (const o of outputs) t.notOk(o.includes(up.secret), 'no output holds the secret');
  t.notOk(readFileSync(join(data, 'patchgate.db')).includes(up.secret), 'nor the audit log');
  // create, upstream and sync each started a detached `repo warm app --data DATA`: each ends.
  t.ok(await processesDone(data), 'the background warm-ups end on their own');
  t.ok(existsSync(join(data, 'cache.db')), 'and they filled the contract cache');
});
