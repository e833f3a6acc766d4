// GET /healthz covers what a push needs: 503 with a reason when the hook daemon cannot be
// reached (its hook.endpoint removed, as a second server's exit used to do; or its listener
// closed) and when the audit database is not the file the server writes to.

import t from 'tap';
import { renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startGate } from '../helpers/gate.js';

async function healthz(port: number): Promise<{ status: number; body: string }> {
  const r = await fetch(`http://127.0.0.1:${port}/healthz`);
  return { status: r.status, body: await r.text() };
}

t.test('healthz is ok with everything up', async (t) => {
  const gate = await startGate(t);
  t.same(await healthz(gate.srv.port), { status: 200, body: 'ok\n' });
});

t.test('healthz is 503 when hook.endpoint is gone', async (t) => {
  const gate = await startGate(t);
  rmSync(join(gate.data, 'hook.endpoint'));
  const h = await healthz(gate.srv.port);
  t.equal(h.status, 503);
  t.match(h.body, /^down: hook\.endpoint is missing/);
});

t.test('healthz is 503 when the hook daemon stopped listening', async (t) => {
  const gate = await startGate(t);
  await gate.srv.hooks.stop();
  const h = await healthz(gate.srv.port);
  t.equal(h.status, 503);
  t.match(h.body, /^down: hook daemon is not listening/);
});

t.test('healthz is 503 when the audit database file was moved away, and names no secret', async (t) => {
  const gate = await startGate(t);
  const db = join(gate.data, 'patchgate.db');
  renameSync(db, `${db}.moved`);
  const gone = await healthz(gate.srv.port);
  t.equal(gone.status, 503);
  t.match(gone.body, /audit database file is gone: ENOENT/);
  renameSync(`${db}.moved`, db);
  t.equal((await healthz(gate.srv.port)).status, 200, 'back when the file is back');
  const secret = (await import('node:fs')).readFileSync(join(gate.data, 'hook.endpoint'), 'utf8').trim().split(' ')[2]!;
  rmSync(join(gate.data, 'hook.endpoint'));
  t.notMatch((await healthz(gate.srv.port)).body, secret, 'the hook secret is not in the answer');
});

t.test('healthz is 503 when the audit database was replaced by another file', async (t) => {
  const gate = await startGate(t);
  const db = join(gate.data, 'patchgate.db');
  renameSync(db, `${db}.old`);
  const { writeFileSync } = await import('node:fs');
  writeFileSync(db, '');
  const h = await healthz(gate.srv.port);
  t.equal(h.status, 503);
  t.match(h.body, /audit database file was replaced/);
  rmSync(db);
  renameSync(`${db}.old`, db);
});
