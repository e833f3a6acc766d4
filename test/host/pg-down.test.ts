// A git host's daemon with its decisions in a real PostgreSQL that is stopped: an agent's push
// is refused (its decision cannot be written before the accept), no ref moves, the daemon stays
// up and answers /healthz, and once PostgreSQL is back the same push is accepted and audited.

import t from 'tap';
import http from 'node:http';
import { installHostHooks } from '../../src/host/install.js';
import { refIn } from '../helpers/gate.js';
import { gitWithEnv, seededBare, startTestDaemon } from '../helpers/host.js';
import { needPostgres, startPostgres } from '../helpers/postgres.js';

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      let body = '';
      res.on('data', (c) => (body += String(c)));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

t.test('host mode, PostgreSQL stopped: the push is refused, nothing moves, the daemon lives on', async (t) => {
  const skip = needPostgres(t);
  if (skip) return t.skip(skip);
  const pg = await startPostgres(t);
  const { d, cfg } = await startTestDaemon(t, { audit: pg.url });
  const { bare, w } = await seededBare(t);
  await installHostHooks('generic', cfg, [bare]);
  w.checkout('agent/fix', true);
  const head = w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const env = { PATCHGATE_USER: 'agent-1', PATCHGATE_REPO: 'app' };
  let unhandled: unknown = null;
  const onUnhandled = (err: unknown) => (unhandled = err);
  process.on('unhandledRejection', onUnhandled);
  t.teardown(() => void process.off('unhandledRejection', onUnhandled));

  await pg.stop();
  const r = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], env);
  t.not(r.code, 0, 'refused');
  t.notMatch(r.stderr, /ACCEPT/, 'no ACCEPT is printed');
  t.match(r.stderr, /remote: patchgate: push refused: the audit log could not record push \S+, so nothing is accepted/);
  t.notOk(r.stderr.includes(pg.password), 'the database password is not shown');
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null, 'the ref did not move');
  await new Promise((res) => setImmediate(res));
  t.equal(unhandled, null, 'no unhandled rejection');
  const h = await get(`${d.monitorUrl}/healthz`);
  t.equal(h.status, 503, 'the daemon is alive and says its log is down');

  await pg.start();
  const again = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], env);
  t.equal(again.code, 0, again.stderr);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), head);
  const rows = await d.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(rows.length, 1, 'one decision row: the accepted push (the refused one could not be written)');
  t.equal(rows[0]!.verdict, 'accept');
  t.ok((await d.audit.verify()).ok);
});
