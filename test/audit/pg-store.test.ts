// The PostgreSQL audit store against a real PostgreSQL server: the same rows and hash chain
// as the SQLite store, four writer processes appending at once without fork or gap, an edit
// made with psql caught by verify (naming the row), and a stopped server refusing writes.
// Skipped with the reason when PostgreSQL is not installed, failed instead in CI.

import t from 'tap';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { needPostgres, startPostgres } from '../helpers/postgres.js';
import { PgAuditStore } from '../../src/audit/pg-store.js';
import { AuditStore, rowHash } from '../../src/audit/store.js';
import { AuditError } from '../../src/errors.js';
import { tempDir } from '../helpers/repo.js';

const why = needPostgres(t);
if (why) {
  t.comment(`skipping the PostgreSQL audit tests: ${why}`);
  t.pass('skipped: ' + why);
} else {
  const OID = '0'.repeat(40);
  const NEW = 'b'.repeat(40);
  const decision = (pushId: string, verdict: 'accept' | 'reject' = 'reject') => ({
    pushId, time: '2026-05-01T10:00:00.000Z', repo: 'app', actor: 'agent-1', role: 'agent' as const, verdict,
    refs: [{ ref: 'refs/heads/feature', old: OID, new: NEW, verdict, decision: 'write-block', rules: [{ rule: 'write-block', status: 'fail', findings: [{ message: 'tests/x.py' }] }] }],
  });

  t.test('same rows and the same hashes as the SQLite store', async (t) => {
    const pg = await startPostgres(t);
    const store = await PgAuditStore.open(pg.url);
    t.teardown(() => store.close());
    const dir = tempDir('pg-sqlite-');
    const lite = AuditStore.open(join(dir, 'patchgate.db'));
    t.teardown(() => lite.close());
    for (const s of [store, lite]) {
      await s.recordPush(decision('p-1'));
      await s.confirmRefs('p-1', [{ ref: 'refs/heads/feature', new: NEW, moved: false }], { time: '2026-05-01T10:00:01.000Z', repo: 'app' });
      await s.appendAdmin({ time: '2026-05-01T10:00:02.000Z', actor: 'cli', action: 'repo.create', subject: 'app', detail: { via: 'test' } });
      await s.appendAuthFailure({ time: '2026-05-01T10:00:03.000Z', remoteAddr: '10.0.0.1', user: 'x', reason: 'bad or revoked token' });
    }
    t.same(await store.lastRow(), lite.lastRow(), 'the chain heads are equal: same rows, same hashes');
    t.same(await store.verify(), { ok: true, rows: 5 });
    const trace = await store.getPush('p-1');
    t.equal(trace?.refs[0]?.moved, 0, 'a ref row takes `moved` from its confirm row');
    t.same((await store.query({ kind: 'ref' })).map((r) => r.hash), lite.query({ kind: 'ref' }).map((r) => r.hash), 'query reads the same rows');
    t.same(await store.query({ actor: 'agent-1', verdict: 'reject' }), lite.query({ actor: 'agent-1', verdict: 'reject' }), 'filters match the SQLite store');
    await t.rejects(store.recordPush({ ...decision('p-2'), role: 'robot' as never }), AuditError, 'invalid input is refused, nothing written');
    t.equal((await store.lastRow()).id, 5);
    await t.rejects(pg.psql('UPDATE events SET actor = $$x$$ WHERE id = 1'), /append-only/, 'the triggers refuse UPDATE');
    await t.rejects(pg.psql('DELETE FROM events WHERE id = 5'), /append-only/, 'and DELETE');
    const row = (await store.get(2))!;
    t.equal(row.kind, 'ref');
  });

  t.test('four writer processes append 200 decisions at once: one chain, no fork, no gap', async (t) => {
    const pg = await startPostgres(t);
    (await PgAuditStore.open(pg.url)).close(); // create the schema once (writers race for it too, under the lock)
    const writer = (i: number): Promise<{ ok: boolean; pushIds: string[]; error?: string }> =>
      new Promise((resolve) => {
        execFile(process.execPath, [join(import.meta.dirname, 'fixtures', 'pg-writer.mjs'), pg.url, String(i), '50'], (err, stdout, stderr) => {
          try {
            resolve(JSON.parse(stdout.trim().split('\n').pop()!));
          } catch {
            resolve({ ok: false, pushIds: [], error: `${err?.message} ${stderr}` });
          }
        });
      });
    const results = await Promise.all([1, 2, 3, 4].map(writer));
    for (const r of results) t.ok(r.ok, `a writer finished: ${r.error ?? ''}`);
    const store = await PgAuditStore.open(pg.url);
    t.teardown(() => store.close());
    t.same(await store.verify(), { ok: true, rows: 400 }, 'verify passes over 200 push rows and 200 ref rows');
    const perPush = await pg.psql("SELECT push_id || ' ' || count(*) FROM events WHERE kind = 'push' GROUP BY push_id HAVING count(*) <> 1");
    t.equal(perPush.trim(), '', 'no decision has more than one push row');
    t.equal((await pg.psql("SELECT count(DISTINCT push_id) FROM events WHERE kind = 'push'")).trim(), '200', 'every decision has its row');
    t.equal((await pg.psql('SELECT count(*) || \' \' || min(id) || \' \' || max(id) FROM events')).trim(), '400 1 400', 'ids 1..400, no gap');
    // A push's ref row follows its push row directly: a transaction is never interleaved.
    const split = await pg.psql("SELECT count(*) FROM events p JOIN events r ON r.id = p.id + 1 WHERE p.kind = 'push' AND (r.kind <> 'ref' OR r.push_id <> p.push_id)");
    t.equal(split.trim(), '0', 'each decision\'s rows are contiguous');

    // Tampering with psql: the owner disables the guard and edits row 137.
    await pg.psql("BEGIN; ALTER TABLE events DISABLE TRIGGER events_no_update; UPDATE events SET actor = 'someone-else' WHERE id = 137; ALTER TABLE events ENABLE TRIGGER events_no_update; COMMIT;");
    t.match(await store.verify(), { ok: false, firstBadId: 137, rows: 136, reason: /row 137 does not match its hash: it was edited/ }, 'verify names the edited row');
  });

  t.test('a stopped server: writes refuse with AuditError naming no password; a restart heals', async (t) => {
    const pg = await startPostgres(t);
    const store = await PgAuditStore.open(pg.url, { connectTimeoutMs: 2000 });
    t.teardown(() => store.close());
    await store.recordPush(decision('p-1'));
    await pg.stop();
    const err = await store.recordPush(decision('p-2')).then(() => null, (e: unknown) => e as Error);
    t.ok(err instanceof AuditError, 'the write is refused with AuditError');
    t.match(err?.message, /cannot write push event to PostgreSQL/);
    t.notMatch(err?.message ?? '', pg.password, 'the message has no password');
    t.match(await store.ping(), /does not answer/, 'ping says the database is down');
    t.notMatch((await store.ping()) ?? '', pg.password);
    await pg.start();
    await store.recordPush(decision('p-3'));
    t.same(await store.verify(), { ok: true, rows: 4 }, 'the refused write left nothing; the chain continues');
    t.equal(await store.getPush('p-2'), null);
    // And it cannot be opened at all while down
    await pg.stop();
    const open = await PgAuditStore.open(pg.url, { connectTimeoutMs: 2000 }).then(() => null, (e: unknown) => e as Error);
    t.match(open?.message, /cannot open the audit log postgres:\/\/patchgate:\*\*\*@127\.0\.0\.1/);
    t.notMatch(open?.message ?? '', pg.password);
  });

  t.test('a connection killed in the middle of a write refuses that write and does not end the process', async (t) => {
    const pg = await startPostgres(t);
    const store = await PgAuditStore.open(pg.url, { connectTimeoutMs: 2000 });
    t.teardown(() => store.close());
    await store.recordPush(decision('p-1'));
    // Another session holds the table, so the write waits inside its transaction on a checked-out connection.
    const holder = pg.psql('BEGIN; LOCK TABLE events IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT;').catch(() => '');
    await new Promise((r) => setTimeout(r, 300));
    const write = store.recordPush(decision('p-2')).then(() => null, (e: unknown) => e as Error);
    let killed = '';
    for (let i = 0; i < 100 && !killed.trim(); i++) {
      await new Promise((r) => setTimeout(r, 50));
      killed = await pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'patchgate' AND wait_event_type = 'Lock'");
    }
    t.match(killed, /t/, 'the waiting connection was terminated');
    const err = await write;
    t.ok(err instanceof AuditError, 'the write is refused with AuditError');
    await holder;
    await store.recordPush(decision('p-3'));
    t.same(await store.verify(), { ok: true, rows: 4 }, 'the refused write left nothing; the chain continues');
  });

  t.test('rowHash covers what PostgreSQL returns (BIGINT ids as numbers)', async (t) => {
    const pg = await startPostgres(t);
    const store = await PgAuditStore.open(pg.url);
    t.teardown(() => store.close());
    await store.recordPush(decision('p-1'));
    const r = (await store.get(1))!;
    t.equal(r.id, 1);
    t.equal(typeof r.refCount, 'number');
    t.ok(rowHash, 'shared hash function');
  });
}
