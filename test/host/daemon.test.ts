// `patchgate daemon` itself: /healthz and /metrics, the config's repos and repoRoots, a failed
// audit write (fail closed: the accept is written before it is answered), the generic host,
// and the CLI refusing a bad config. Pushes go through a real git receive-pack (local push)
// running the `--host generic` shim as hooks/pre-receive.

import t from 'tap';
import http from 'node:http';

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { installHostHooks } from '../../src/host/install.js';
import { refIn } from '../helpers/gate.js';
import { tempDir } from '../helpers/repo.js';
import { CLI, cliRun } from '../helpers/serve.js';
import { gitWithEnv, seededBare, startTestDaemon } from '../helpers/host.js';

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      let body = '';
      res.on('data', (c) => (body += String(c)));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

const generic = (user: string, repo = 'app') => ({ PATCHGATE_USER: user, PATCHGATE_REPO: repo });

t.test('generic host: /healthz ok, /metrics counts the answers by host and verdict', async (t) => {
  const { d, cfg } = await startTestDaemon(t);
  const { bare, w } = await seededBare(t);
  await installHostHooks('generic', cfg, [bare]);
  t.equal((await get(`${d.monitorUrl}/healthz`)).body, 'ok\n');
  w.checkout('agent/fix', true);
  w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  t.equal((await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], generic('agent-1'))).code, 0);
  w.commit('weaken', { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  t.not((await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], generic('agent-1'))).code, 0);
  const m = await get(`${d.monitorUrl}/metrics`);
  t.equal(m.status, 200);
  const fams = parsePrometheusTextFormat(m.body) as Array<{ name: string; metrics: Array<{ labels?: Record<string, string>; value?: string }> }>;
  const answers = fams.find((f) => f.name === 'patchgate_daemon_hook_answers_total')!;
  const count = (verdict: string) => Number(answers.metrics.find((x) => x.labels?.host === 'generic' && x.labels?.verdict === verdict)?.value ?? 0);
  t.equal(count('accept'), 1);
  t.equal(count('reject'), 1);
  t.equal(fams.find((f) => f.name === 'patchgate_daemon_up')!.metrics[0]!.value, '1');
  t.equal((await get(`${d.monitorUrl}/nothing`)).status, 404);
});

t.test('a repository the config does not gate passes with a line saying so; repoRoots refuses a repository outside them', async (t) => {
  const { cfg } = await startTestDaemon(t, { repos: ['team/*'], repoRoots: [tempDir('pg-roots-')] });
  const { bare, w, root } = await seededBare(t);
  await installHostHooks('generic', cfg, [bare]);
  w.checkout('agent/x', true);
  w.commit('weaken', { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  const outside = await gitWithEnv(w.dir, ['push', bare, 'agent/x'], generic('agent-1', 'team/app'));
  t.not(outside.code, 0);
  t.match(outside.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: push refused: repository .* is outside the daemon's repoRoots/);
  // Gated or not is decided by the folder below repoRoots (here ROOT/app.git, so `app`), and
  // the variable must name the same repository for a push to pass unjudged.
  const { cfg: cfg2, d: d2 } = await startTestDaemon(t, { repos: ['team/*'], repoRoots: [root] });
  await installHostHooks('generic', cfg2, [bare]);
  const ungated = await gitWithEnv(w.dir, ['push', bare, 'agent/x'], generic('agent-1', 'app'));
  t.equal(ungated.code, 0, ungated.stderr);
  t.match(ungated.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: app is not gated by this daemon's config \(repos\)/);
  t.equal(d2.audit.query({ kind: 'push' }).length, 0);
});

t.test('a failed audit write refuses an otherwise good push (written before it is answered)', async (t) => {
  const { cfg, data } = await startTestDaemon(t);
  const { bare, w } = await seededBare(t);
  await installHostHooks('generic', cfg, [bare]);
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(join(data, 'patchgate.db'));
  db.exec("CREATE TRIGGER test_fail_audit BEFORE INSERT ON events WHEN NEW.kind = 'push' BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END");
  db.close();
  w.checkout('agent/fix', true);
  w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], generic('alice'));
  t.not(r.code, 0);
  t.match(r.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: push refused: the audit log could not record push \S+, so nothing is accepted/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null, 'nothing lands without its audit row');
});

t.test('the CLI refuses a bad config and a postgres audit it does not have, exit 2, one line', async (t) => {
  const dir = tempDir('pg-cfg-');
  const run = (args: string[]) => cliRun(args);
  writeFileSync(join(dir, 'bad.json'), JSON.stringify({ data: dir, humns: ['x'] }));
  const bad = await run(['daemon', '--config', join(dir, 'bad.json')]);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /CONFIG: .*humns/);
  writeFileSync(join(dir, 'pg.json'), JSON.stringify({ data: join(dir, 'd'), audit: 'postgres://u:s3cret@127.0.0.1/db', monitor: '127.0.0.1:0' }));
  const pg = await run(['daemon', '--config', join(dir, 'pg.json')]);
  t.equal(pg.code, 2, 'an unreachable PostgreSQL log stops the start');
  t.equal(pg.stderr.trim().split('\n').length, 1, 'with one line');
  t.notMatch(pg.stderr, /s3cret/, 'the URL password is not printed');
  const host = await run(['hook', 'install', '--host', 'svn', '--config', join(dir, 'pg.json'), dir]);
  t.equal(host.code, 2, 'an unknown host is refused');
});
