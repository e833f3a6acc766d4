// Audit migration 3 (verdict `would-reject` for evaluate mode) rebuilds the events table: a
// database written before it keeps every row, its hash chain still verifies, the append-only
// triggers are back, and the new verdict is stored and queried.

import t from 'tap';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { AuditStore, MIGRATIONS, rowHash, ZERO_HASH } from '../../src/audit/store.js';
import { tempDir } from '../helpers/repo.js';

t.test('a version-2 database migrates with its rows and chain intact', async (t) => {
  const dir = tempDir('pg-mig-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'patchgate.db');
  const old = new Database(path);
  MIGRATIONS[0]!(old);
  MIGRATIONS[1]!(old);
  old.pragma('user_version = 2');
  const row = { id: 1, kind: 'admin', time: '2026-01-01T00:00:00.000Z', actor: 'cli', action: 'repo.create', subject: 'app', prev_hash: ZERO_HASH };
  const hash = rowHash(row);
  old.prepare('INSERT INTO events (id, kind, time, actor, action, subject, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(1, 'admin', row.time, 'cli', 'repo.create', 'app', ZERO_HASH, hash);
  old.prepare('UPDATE chain_head SET last_id = 1, last_hash = ?').run(hash);
  t.throws(() => old.prepare(`INSERT INTO events (kind, time, verdict, prev_hash, hash) VALUES ('push', 'x', 'would-reject', 'a', 'b')`).run(), 'version 2 refuses would-reject');
  old.close();

  const store = AuditStore.open(path);
  t.teardown(() => store.close());
  t.equal(store.db.pragma('user_version', { simple: true }), MIGRATIONS.length);
  t.equal(store.get(1)?.action, 'repo.create', 'the old row is still there');
  store.recordPush({
    pushId: 'p1', repo: 'app', actor: 'agent-1', role: 'agent', verdict: 'would-reject',
    refs: [{ ref: 'refs/heads/agent/x', old: '0'.repeat(40), new: 'a'.repeat(40), verdict: 'would-reject', decision: 'test-tree-write', rules: [{ rule: 'write-block', status: 'fail' }] }],
  });
  t.same(store.verify(), { ok: true, rows: 3 }, 'the chain verifies across the rebuild');
  t.equal(store.query({ verdict: 'would-reject' }).length, 2, 'push and ref row by --verdict would-reject');
  t.throws(() => store.db.prepare('DELETE FROM events WHERE id = 1').run(), /append-only/, 'triggers restored');
  t.throws(() => store.db.prepare(`UPDATE events SET actor = 'x' WHERE id = 1`).run(), /append-only/);
  t.throws(() => store.db.prepare(`INSERT INTO events (kind, time, verdict, prev_hash, hash) VALUES ('push', 'x', 'maybe', 'a', 'b')`).run(), 'other verdicts still refused');
});
