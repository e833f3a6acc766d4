// Why this file exists: the audit log is the evidence behind every gate decision. These
// tests prove, on real SQLite files, that rows go in and come out as written, that the
// hash chain catches edits, deletions (middle and last row) and re-ordering, that two
// writers on one file keep the chain whole, and that a push is recorded all or nothing.

import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { AuditError, UsageError } from '../../src/errors.js';
import {
  AuditStore,
  MIGRATIONS,
  ZERO_HASH,
  canonicalJson,
  parseIsoDate,
  type RecordPushInput,
  type RefDecisionInput,
} from '../../src/audit/store.js';

const sha = (c: string): string => c.repeat(40);
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function openStore(t: Test, name = 'data/patchgate.db'): { store: AuditStore; path: string } {
  const path = join(t.testdir(), name);
  const store = AuditStore.open(path);
  t.teardown(() => store.close());
  return { store, path };
}

function ref(name: string, verdict: 'accept' | 'reject' = 'accept', extra: Partial<RefDecisionInput> = {}): RefDecisionInput {
  return {
    ref: `refs/heads/${name}`,
    old: sha('1'),
    new: sha('2'),
    verdict,
    decision: verdict === 'reject' ? 'tests-in-diff' : null,
    rules: [
      { rule: 'refs', outcome: 'pass', findings: [] },
      { rule: 'write-block', outcome: verdict === 'accept' ? 'pass' : 'fail', findings: [{ path: 'tests/x.py' }] },
    ],
    contractBase: 'b'.repeat(64),
    contractHead: 'c'.repeat(64),
    timings: { total: 1.5 },
    ...extra,
  };
}

function push(pushId: string, extra: Partial<RecordPushInput> = {}): RecordPushInput {
  return {
    pushId,
    repo: 'alpha',
    actor: 'bot-1',
    role: 'agent',
    remoteAddr: '10.0.0.1',
    userAgent: 'git/2.43.0',
    verdict: 'accept',
    timings: { total: 3 },
    refs: [ref('feature')],
    ...extra,
  };
}

/** Raw connection to the same file, as an attacker with file access would have. */
function raw(t: Test, path: string): Database.Database {
  const db = new Database(path);
  t.teardown(() => db.close());
  return db;
}

/** Independent re-implementation of the documented row hash. */
function expectedHash(row: Record<string, unknown>): string {
  const keys = Object.keys(row)
    .filter((k) => k !== 'hash' && row[k] !== null)
    .sort();
  const obj: Record<string, unknown> = {};
  for (const k of keys) obj[k] = row[k];
  return createHash('sha256').update(JSON.stringify(obj)).digest('hex');
}

t.test('open: creates the parent dir, sets pragmas, migrates once', async (t) => {
  const { store, path } = openStore(t, 'a/b/c/patchgate.db');
  t.ok(existsSync(path), 'db file created under new dirs');
  t.equal(store.db.pragma('journal_mode', { simple: true }), 'wal');
  t.equal(store.db.pragma('synchronous', { simple: true }), 2, 'synchronous=FULL');
  t.equal(store.db.pragma('busy_timeout', { simple: true }), 5000);
  t.equal(store.db.pragma('foreign_keys', { simple: true }), 1);
  t.equal(store.db.pragma('user_version', { simple: true }), MIGRATIONS.length);
  store.appendAdmin({ actor: 'root', action: 'repo.create', subject: 'alpha' });
  store.close();
  const again = AuditStore.open(path);
  t.teardown(() => again.close());
  t.equal(again.db.pragma('user_version', { simple: true }), MIGRATIONS.length, 'reopen does not re-run migrations');
  t.equal(again.query().length, 1, 'data kept across reopen');

  const db = raw(t, path);
  db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
  t.throws(() => AuditStore.open(path), AuditError, 'a schema newer than the code is refused');
});

t.test('append and query: kinds, filters, ordering, limit', async (t) => {
  const { store } = openStore(t);
  const r1 = store.recordPush(push('p1', { time: '2024-01-01T10:00:00Z', verdict: 'reject', refs: [ref('a', 'reject'), ref('b')] }));
  const p2 = store.appendPush({
    pushId: 'p2', time: '2024-01-02T10:00:00.000Z', repo: 'beta', actor: 'alice', role: 'human', verdict: 'accept', refCount: 1,
  });
  const r2 = store.appendRef({
    pushId: 'p2', time: '2024-01-02T10:00:00.000Z', repo: 'beta', actor: 'alice', role: 'human', ...ref('main'),
  });
  const auth = store.appendAuthFailure({ time: '2024-01-03T00:00:00Z', remoteAddr: '10.9.9.9', user: 'mallory', repo: 'alpha', reason: 'bad token' });
  const admin = store.appendAdmin({ time: '2024-01-04T00:00:00Z', actor: 'root', action: 'repo.create', subject: 'gamma', detail: { z: 1, a: [2] } });
  const ci = store.appendCi({ time: '2024-01-05T00:00:00Z', repo: 'alpha', base: sha('a'), head: sha('b'), verdict: 'reject', detail: { seed: 7 } });

  t.same(r1.refRowIds.length, 2);
  const all = store.query();
  t.same(
    all.map((r) => r.id),
    [ci, admin, auth, r2, p2, r1.refRowIds[1], r1.refRowIds[0], r1.pushRowId],
    'newest first: by time, then by id',
  );
  for (const r of all) t.match(r.time, ISO_MS, `row ${r.id} time is ISO UTC with ms`);

  const pushRow = store.get(r1.pushRowId)!;
  t.match(pushRow, { kind: 'push', pushId: 'p1', repo: 'alpha', actor: 'bot-1', role: 'agent', remoteAddr: '10.0.0.1',
    userAgent: 'git/2.43.0', verdict: 'reject', refCount: 2, timings: { total: 3 }, time: '2024-01-01T10:00:00.000Z' });
  const refRow = store.get(r1.refRowIds[0]!)!;
  t.match(refRow, { kind: 'ref', pushId: 'p1', ref: 'refs/heads/a', old: sha('1'), new: sha('2'), verdict: 'reject',
    decision: 'tests-in-diff', contractBase: 'b'.repeat(64), contractHead: 'c'.repeat(64), moved: null, actor: 'bot-1', repo: 'alpha' });
  t.same(refRow.rules, ref('a', 'reject').rules, 'rules trace round-trips');
  t.match(store.get(auth)!, { kind: 'auth', actor: 'mallory', remoteAddr: '10.9.9.9', repo: 'alpha', reason: 'bad token' });
  t.match(store.get(admin)!, { kind: 'admin', actor: 'root', action: 'repo.create', subject: 'gamma', detail: { z: 1, a: [2] } });
  t.match(store.get(ci)!, { kind: 'ci', repo: 'alpha', base: sha('a'), head: sha('b'), verdict: 'reject', detail: { seed: 7 } });
  t.equal(store.get(9999), null);

  t.same(store.query({ repo: 'beta' }).map((r) => r.id), [r2, p2], 'by repo');
  t.same(store.query({ actor: 'mallory' }).map((r) => r.id), [auth], 'by actor (auth user name)');
  t.same(store.query({ verdict: 'reject' }).map((r) => r.id), [ci, r1.refRowIds[0], r1.pushRowId], 'by verdict');
  t.same(store.query({ kind: 'push' }).map((r) => r.id), [p2, r1.pushRowId], 'by kind');
  t.same(store.query({ actor: 'bot-1', verdict: 'accept' }).map((r) => r.id), [r1.refRowIds[1]], 'actor + verdict');
  t.same(
    store.query({ since: '2024-01-02T10:00:00Z', until: '2024-01-04' }).map((r) => r.id),
    [auth, r2, p2],
    'since is inclusive, until exclusive',
  );
  t.same(store.query({ since: '2024-01-04T00:00:00.001Z' }).map((r) => r.id), [ci]);
  t.same(store.query({ limit: 2 }).map((r) => r.id), [ci, admin], 'limit keeps the newest');
  t.same(store.query({ repo: 'nope' }), []);

  // default limit is 100
  store.recordPush(push('many', { time: '2023-01-01T00:00:00Z', refs: Array.from({ length: 120 }, (_, i) => ref(`b${i}`)) }));
  t.equal(store.query().length, 100, 'default limit 100');
  t.equal(store.query({ limit: 500 }).length, 8 + 121);
});

t.test('input validation names the option or field', async (t) => {
  const { store } = openStore(t);
  t.throws(() => store.query({ since: 'yesterday' }), { name: 'UsageError', message: /^--since: not an ISO date/ });
  t.throws(() => store.query({ until: '2024-13-01' }), { name: 'UsageError', message: /^--until: not an ISO date/ });
  t.throws(() => store.query({ since: '2024-02-30' }), UsageError, 'no Feb 30th');
  t.throws(() => store.query({ since: '2024-02-01', until: '2024-01-01' }), { message: /--until/ });
  t.throws(() => store.query({ verdict: 'maybe' }), { name: 'UsageError', message: /^--verdict: must be accept or reject/ });
  t.throws(() => store.query({ kind: 'nope' }), { name: 'UsageError', message: /^--kind/ });
  t.throws(() => store.query({ limit: 0 }), { name: 'UsageError', message: /^--limit/ });
  t.throws(() => store.query({ limit: 1.5 }), { name: 'UsageError', message: /^--limit/ });
  t.throws(() => store.query({ repo: '' }), { name: 'UsageError', message: /^--repo/ });
  t.throws(() => store.get(0), UsageError);

  t.equal(parseIsoDate('2024-05-01', '--since'), '2024-05-01T00:00:00.000Z');
  t.equal(parseIsoDate('2024-05-01T12:00:00+02:00', '--since'), '2024-05-01T10:00:00.000Z');
  t.equal(parseIsoDate('2024-05-01T12:00', '--since'), '2024-05-01T12:00:00.000Z', 'no offset means UTC');
  t.equal(parseIsoDate('2024-05-01T12:00:00.123456Z', '--since'), '2024-05-01T12:00:00.123Z');

  // writes: invalid input is an AuditError (the caller refuses the push) whose cause names the field
  const before = store.lastRow();
  const err = t.throws(() => store.recordPush(push('p1', { verdict: 'maybe' as 'accept' }))) as AuditError;
  t.type(err, AuditError);
  t.type(err.cause, UsageError);
  t.match(err.message, /verdict: must be accept or reject/);
  t.throws(() => store.recordPush(push('p1', { refs: [ref('x', 'accept', { old: 'not-a-sha' })] })), { name: 'AuditError', message: /refs\[0\]\.old/ });
  t.throws(() => store.recordPush(push('p1', { time: 'soon' })), { name: 'AuditError', message: /time: not an ISO date/ });
  t.throws(() => store.recordPush(push('bad id!')), { name: 'AuditError', message: /pushId/ });
  t.throws(() => store.appendAdmin({ actor: 'root', action: 'Token Create' }), { name: 'AuditError', message: /action/ });
  t.throws(() => store.appendCi({ repo: 'a', base: 'x', head: 'y', verdict: 'green' as 'accept' }), { name: 'AuditError', message: /verdict/ });
  t.throws(() => store.appendAdmin({ actor: 'root', action: 'x', detail: { n: NaN } }), { name: 'AuditError', message: /detail/ });
  t.same(store.lastRow(), before, 'nothing written by refused writes');

  // untrusted informational strings are cut, not refused
  const id = store.appendAuthFailure({ user: 'x'.repeat(5000), userAgent: 'curl\n/8', reason: 'no credentials' });
  t.equal(store.get(id)!.actor!.length, 256);
  t.equal(store.get(id)!.userAgent, 'curl?/8', 'control characters replaced');
});

t.test('hash chain: prev_hash links rows, hash covers the content, verify ok', async (t) => {
  const { store, path } = openStore(t);
  t.same(store.verify(), { ok: true, rows: 0 }, 'empty log verifies');
  store.recordPush(push('p1', { refs: [ref('a'), ref('b', 'reject')] }));
  store.appendAuthFailure({ reason: 'bad token', user: 'm' });
  store.appendAdmin({ actor: 'root', action: 'token.create', subject: 'bot', detail: { b: 1, a: { d: 2, c: 3 } } });
  t.same(store.verify(), { ok: true, rows: 5 });

  const rows = raw(t, path).prepare('SELECT * FROM events ORDER BY id').all() as Record<string, unknown>[];
  t.same(rows.map((r) => r.id), [1, 2, 3, 4, 5]);
  t.equal(rows[0]!.prev_hash, ZERO_HASH, 'first prev_hash is 64 zeros');
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    if (i > 0) t.equal(r.prev_hash, rows[i - 1]!.hash, `row ${r.id} links to row ${r.id as number - 1}`);
    t.equal(r.hash, expectedHash(r), `row ${r.id} hash = sha256(stable JSON of its non-null columns)`);
  }
  t.equal(rows[4]!.detail, '{"a":{"c":3,"d":2},"b":1}', 'JSON columns are stored canonical (sorted keys)');
  t.same(store.lastRow(), { id: 5, hash: rows[4]!.hash });
  t.equal(canonicalJson({ b: [1, { y: null, x: 'é' }], a: true }), '{"a":true,"b":[1,{"x":"é","y":null}]}');
});

/** A log with `n` rows whose verify() is ok, and a raw connection with the guard triggers dropped. */
function tamperable(t: Test, n = 5): { store: AuditStore; db: Database.Database } {
  const { store, path } = openStore(t);
  for (let i = 0; i < n; i++) store.appendAdmin({ actor: 'root', action: 'test.row', subject: `s${i}`, detail: { i } });
  t.same(store.verify(), { ok: true, rows: n }, 'intact before tampering');
  const db = raw(t, path);
  db.exec('DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete;');
  return { store, db };
}

t.test('triggers refuse UPDATE and DELETE through SQL', async (t) => {
  const { store, path } = openStore(t);
  store.appendAdmin({ actor: 'root', action: 'x' });
  const db = raw(t, path);
  t.throws(() => db.prepare("UPDATE events SET actor = 'x'").run(), /append-only/);
  t.throws(() => db.prepare('DELETE FROM events').run(), /append-only/);
  t.same(store.verify(), { ok: true, rows: 1 });
});

t.test('verify detects an edited row', async (t) => {
  const { store, db } = tamperable(t);
  db.prepare("UPDATE events SET actor = 'someone-else' WHERE id = 3").run();
  const v = store.verify();
  t.match(v, { ok: false, firstBadId: 3, rows: 2, reason: /edited/ });
});

t.test('verify detects an edited row whose hash was recomputed', async (t) => {
  const { store, db } = tamperable(t);
  const row = db.prepare('SELECT * FROM events WHERE id = 3').get() as Record<string, unknown>;
  row.subject = 'forged';
  db.prepare('UPDATE events SET subject = ?, hash = ? WHERE id = 3').run('forged', expectedHash(row));
  t.match(store.verify(), { ok: false, firstBadId: 4, reason: /prev_hash/ }, 'the next row no longer links');
});

t.test('verify detects a deleted middle row', async (t) => {
  const { store, db } = tamperable(t);
  db.prepare('DELETE FROM events WHERE id = 2').run();
  t.match(store.verify(), { ok: false, firstBadId: 2, rows: 1, reason: /row 2 is missing/ });
});

t.test('verify detects a deleted first row', async (t) => {
  const { store, db } = tamperable(t);
  db.prepare('DELETE FROM events WHERE id = 1').run();
  t.match(store.verify(), { ok: false, firstBadId: 1, rows: 0 });
});

t.test('verify detects a deleted last row, and appends refuse to heal it', async (t) => {
  const { store, db } = tamperable(t);
  db.prepare('DELETE FROM events WHERE id = 5').run();
  t.match(store.verify(), { ok: false, firstBadId: 5, rows: 4, reason: /truncated/ });
  t.throws(() => store.appendAdmin({ actor: 'root', action: 'x' }), { name: 'AuditError', message: /chain_head/ });
  t.match(store.verify(), { ok: false, firstBadId: 5 }, 'still reported after the refused append');
});

t.test('verify detects re-ordered rows and rows added behind its back', async (t) => {
  const { store, db } = tamperable(t);
  db.exec('UPDATE events SET id = -1 WHERE id = 2; UPDATE events SET id = 2 WHERE id = 3; UPDATE events SET id = 3 WHERE id = -1;');
  t.match(store.verify(), { ok: false, firstBadId: 2 }, 'swap of rows 2 and 3');

  const other = tamperable(t, 3);
  const last = other.db.prepare('SELECT * FROM events WHERE id = 3').get() as Record<string, unknown>;
  const extra: Record<string, unknown> = { ...last, id: 4, prev_hash: last.hash, subject: 'injected' };
  extra.hash = expectedHash(extra);
  other.db.prepare('INSERT INTO events (id, kind, time, actor, action, subject, detail, prev_hash, hash) VALUES (@id, @kind, @time, @actor, @action, @subject, @detail, @prev_hash, @hash)').run(
    Object.fromEntries(['id', 'kind', 'time', 'actor', 'action', 'subject', 'detail', 'prev_hash', 'hash'].map((k) => [k, extra[k]])),
  );
  t.match(other.store.verify(), { ok: false, firstBadId: 4, reason: /outside patchgate/ }, 'a well-chained row not in chain_head');
});

t.test('two store instances on one file, interleaving writes, keep one chain', async (t) => {
  const { store: a, path } = openStore(t);
  const b = AuditStore.open(path);
  t.teardown(() => b.close());
  for (let i = 0; i < 20; i++) {
    const w = i % 2 === 0 ? a : b;
    const id = w.recordPush(push(`p${i}`, { actor: i % 2 === 0 ? 'bot-a' : 'bot-b' })).pushRowId;
    t.equal(id, i * 2 + 1, `write ${i} continues the shared chain`);
  }
  t.same(a.verify(), { ok: true, rows: 40 });
  t.same(b.verify(), { ok: true, rows: 40 });
  t.equal(b.query({ actor: 'bot-a', kind: 'push' }).length, 10, 'each instance sees the other’s rows');
});

t.test('concurrent appends from two processes keep the chain valid', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'patchgate.db');
  // No store is opened first: both writers create and migrate the fresh file concurrently too.
  const perWriter = 150;
  const storeUrl = new URL('../../src/audit/store.js', import.meta.url).href;
  const code = `
    import { AuditStore } from ${JSON.stringify(storeUrl)};
    import { existsSync, writeFileSync } from 'node:fs';
    const { PG_DB, PG_WHO, PG_DIR, PG_N } = process.env;
    writeFileSync(PG_DIR + '/ready-' + PG_WHO, '');
    const sleep = new Int32Array(new SharedArrayBuffer(4));
    while (!existsSync(PG_DIR + '/go')) Atomics.wait(sleep, 0, 0, 1);
    const store = AuditStore.open(PG_DB);
    for (let i = 0; i < Number(PG_N); i++) {
      if (i % 3 === 0) store.appendAuthFailure({ user: PG_WHO, reason: 'r' + i });
      else store.recordPush({ pushId: PG_WHO + '-' + i, repo: 'r', actor: PG_WHO, role: 'agent', verdict: 'accept',
        refs: [{ ref: 'refs/heads/x', old: '${sha('1')}', new: '${sha('2')}', verdict: 'accept', rules: [] }] });
      Atomics.wait(sleep, 0, 0, 2); // a server does not write in a tight loop; let the other writer in
    }
    store.close();
  `;
  const env: NodeJS.ProcessEnv = { ...process.env, PG_DB: path, PG_DIR: dir, PG_N: String(perWriter) };
  delete env.NODE_OPTIONS;
  const run = (who: string): Promise<{ code: number | null; stderr: string }> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [...process.execArgv, '--input-type=module', '-e', code], {
        env: { ...env, PG_WHO: who },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stderr }));
    });
  const children = [run('wa'), run('wb')];
  const deadline = Date.now() + 60_000;
  while (!(existsSync(join(dir, 'ready-wa')) && existsSync(join(dir, 'ready-wb'))) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  writeFileSync(join(dir, 'go'), '');
  const results = await Promise.all(children);
  for (const r of results) t.equal(r.code, 0, `writer exits 0 ${r.stderr}`);

  const store = AuditStore.open(path);
  t.teardown(() => store.close());
  const expected = 2 * (Math.ceil(perWriter / 3) + 2 * (perWriter - Math.ceil(perWriter / 3)));
  t.same(store.verify(), { ok: true, rows: expected }, 'one unbroken chain with every row');
  const actors = (store.db.prepare('SELECT actor FROM events ORDER BY id').all() as { actor: string }[]).map((r) => r.actor);
  let switches = 0;
  for (let i = 1; i < actors.length; i++) if (actors[i] !== actors[i - 1]) switches++;
  t.ok(switches > 2, `the two writers really interleaved (${switches} switches)`);
  // every push landed contiguously with its ref (one transaction)
  const pushes = store.query({ kind: 'push', limit: 1000 });
  const split = pushes.filter((p) => store.get(p.id + 1)?.pushId !== p.pushId).map((p) => p.pushId);
  t.same(split, [], 'each push row is directly followed by its ref row');
});

t.test('recordPush is atomic: a failing ref insert leaves no push row', async (t) => {
  const { store, path } = openStore(t);
  store.appendAdmin({ actor: 'root', action: 'repo.create', subject: 'alpha' });
  const before = store.lastRow();
  // Make the database itself refuse one specific ref row, after the push row went in.
  raw(t, path).exec(`CREATE TRIGGER boom BEFORE INSERT ON events WHEN NEW.kind = 'ref' AND NEW.ref = 'refs/heads/boom'
    BEGIN SELECT RAISE(ABORT, 'boom'); END;`);
  const err = t.throws(() => store.recordPush(push('p-fail', { refs: [ref('ok'), ref('boom')] }))) as Error;
  t.type(err, AuditError, 'a failed write surfaces as AuditError');
  t.match(err.message, /boom/);
  t.equal(store.getPush('p-fail'), null, 'no push row, no ref rows');
  t.same(store.query({ kind: 'push' }), []);
  t.same(store.lastRow(), before, 'chain head untouched');
  t.same(store.verify(), { ok: true, rows: 1 });
  const ok = store.recordPush(push('p-ok'));
  t.equal(ok.pushRowId, before.id + 1, 'the next write continues the chain without a gap');
  t.same(store.verify(), { ok: true, rows: 3 });
});

t.test('confirm rows fill in `moved` on ref rows', async (t) => {
  const { store } = openStore(t);
  const { refRowIds } = store.recordPush(push('p1', { refs: [ref('a'), ref('b'), ref('c')] }));
  t.same(store.query({ kind: 'ref' }).map((r) => r.moved), [null, null, null], 'null until confirmed');

  store.confirmRefs('p1', [
    { ref: 'refs/heads/a', new: sha('2'), moved: true },
    { ref: 'refs/heads/b', new: sha('2'), moved: false },
  ]);
  store.appendConfirm({ pushId: 'p1', ref: 'refs/heads/c', new: sha('9'), moved: true }); // a different new id: not this decision
  const byRef = Object.fromEntries(store.query({ kind: 'ref' }).map((r) => [r.ref, r.moved]));
  t.same(byRef, { 'refs/heads/a': 1, 'refs/heads/b': 0, 'refs/heads/c': null });
  t.equal(store.get(refRowIds[0]!)!.moved, 1, 'get() shows it too');

  store.appendConfirm({ pushId: 'p1', ref: 'refs/heads/b', new: sha('2'), moved: true });
  t.equal(store.get(refRowIds[1]!)!.moved, 1, 'the newest confirm wins');

  t.equal(store.query().filter((r) => r.kind === 'confirm').length, 0, 'confirm rows stay out of the default listing');
  t.equal(store.query({ kind: 'confirm' }).length, 4);
  const trace = store.getPush('p1')!;
  t.equal(trace.push!.pushId, 'p1');
  t.same(trace.refs.map((r) => [r.ref, r.moved]), [['refs/heads/a', 1], ['refs/heads/b', 1], ['refs/heads/c', null]]);
  t.equal(trace.confirms.length, 4);
  t.same(trace.refs[0]!.rules, ref('a').rules, 'the trace of every rule checked');
  t.same(store.verify(), { ok: true, rows: 8 }, 'confirming appended, never updated');
  t.throws(() => store.appendConfirm({ pushId: 'p1', ref: 'refs/heads/a', new: sha('2'), moved: 'yes' as never }), AuditError);
});

t.test('an actor + time query on 1,000,000 rows uses its index and is fast', async (t) => {
  const { store, path } = openStore(t);
  store.close();
  // Bulk-load synthetic rows straight into the file (the chain is irrelevant to speed).
  const db = new Database(path);
  db.pragma('journal_mode = DELETE');
  db.pragma('synchronous = OFF');
  const indexes = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' AND sql IS NOT NULL").all() as { name: string; sql: string }[];
  t.ok(indexes.length >= 5);
  db.transaction(() => {
    for (const i of indexes) db.exec(`DROP INDEX ${i.name}`);
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
      INSERT INTO events (id, kind, time, push_id, repo, actor, role, verdict, ref, old, new, rules, prev_hash, hash)
      SELECT i, 'ref', strftime('%Y-%m-%dT%H:%M:%fZ', '2024-01-01', '+' || (i * 30) || ' seconds'), 'p' || i,
             'repo-' || (i % 50), 'agent-' || (i % 100), 'agent', CASE WHEN i % 3 = 0 THEN 'reject' ELSE 'accept' END,
             'refs/heads/main', '${sha('0')}', '${sha('b')}', '[]', '${ZERO_HASH}', '${'1'.repeat(64)}' FROM n`);
    for (const i of indexes) db.exec(i.sql);
  })();
  db.pragma('journal_mode = WAL');
  db.close();

  const big = AuditStore.open(path);
  t.teardown(() => big.close());
  const opts = { actor: 'agent-7', since: '2024-03-01', until: '2024-03-08' };
  t.match(big.explainQuery(opts)[0], /USING INDEX events_actor_time \(actor=\? AND time>\? AND time<\?\)/);
  t.match(big.explainQuery({ repo: 'repo-3', verdict: 'reject' })[0], /events_repo_time/);
  t.match(big.explainQuery({ since: '2024-03-01' })[0], /events_time/);
  t.notMatch(big.explainQuery(opts).join('\n'), /TEMP B-TREE/, 'no sort step: the index gives the order');
  const start = process.hrtime.bigint();
  const rows = big.query(opts);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  t.equal(rows.length, 100);
  t.ok(rows.every((r) => r.actor === 'agent-7' && r.time >= '2024-03-01' && r.time < '2024-03-08'), 'right rows');
  t.ok(rows.every((r, i) => i === 0 || rows[i - 1]!.time >= r.time), 'newest first');
  t.ok(ms < 50, `query took ${ms.toFixed(1)} ms`);
});
