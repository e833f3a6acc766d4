// Issue 50: an agent token carries a class of the policy. A data folder (SQLite, migration 6) and
// a shared PostgreSQL log (step 4) made before classes existed gain the column on open; their
// tokens keep working, of the default class; a new token's class is stored, listed, granted and
// named in its `token.create` row (never the secret). `audit migrate` copies the class.

import t from 'tap';
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS } from '../../src/audit/migrations.js';
import { AuditStore } from '../../src/audit/store.js';
import { TokenStore, hashSecret, type TokenRow } from '../../src/audit/tokens.js';
import { PG_MIGRATIONS, PgAuditStore } from '../../src/audit/pg-store.js';
import { PgTokenStore } from '../../src/audit/pg-tokens.js';
import { needPostgres, startPostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/repo.js';

const OLD_SECRET = 'pg_' + 'A'.repeat(43);

t.test('SQLite: migration 6 on a data folder made before classes', async (t) => {
  const dir = tempDir('pg-mig6-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'patchgate.db');
  const db = new Database(path);
  for (let i = 0; i < 5; i++) MIGRATIONS[i]!(db);
  db.pragma('user_version = 5');
  db.prepare('INSERT INTO tokens (name, role, repos, secret_hash, created) VALUES (?, ?, ?, ?, ?)').run('old-agent', 'agent', '*', hashSecret(OLD_SECRET), '2026-01-01T00:00:00.000Z');
  t.throws(() => db.prepare('SELECT agent_class FROM tokens').all(), 'no class column before');
  db.close();
  const store = AuditStore.open(path);
  t.teardown(() => store.close());
  t.equal(store.db.pragma('user_version', { simple: true }), MIGRATIONS.length);
  const tokens = new TokenStore(store);
  t.same(tokens.authenticate(OLD_SECRET), { name: 'old-agent', role: 'agent', repos: '*' }, 'an old token works, of the default class');
  const secret = tokens.create('tester-1', 'agent', { agentClass: 'test-author' });
  t.same(tokens.authenticate(secret), { name: 'tester-1', role: 'agent', repos: '*', agentClass: 'test-author' });
  t.same(tokens.authenticateHash(hashSecret(secret))?.agentClass, 'test-author');
  t.same(tokens.list().map((x) => [x.name, x.class]), [['old-agent', null], ['tester-1', 'test-author']]);
  const dflt = tokens.create('impl-1', 'agent', { agentClass: 'default' });
  t.same(tokens.authenticate(dflt), { name: 'impl-1', role: 'agent', repos: '*' }, '--class default is the default class');
  const admin = store.query({ kind: 'admin' }).filter((r) => r.action === 'token.create').map((r) => r.detail as { class?: string });
  t.same(admin.map((d) => d.class).sort(), ['default', 'test-author'], 'the token.create rows name the class');
  t.notMatch(JSON.stringify(store.query({})), secret, 'never the secret');
  t.same(store.verify(), { ok: true, rows: 2 });
});

const why = needPostgres(t);
if (why) {
  t.comment(`skipping the PostgreSQL token class test: ${why}`);
  t.pass('skipped: ' + why);
} else {
  t.test('PostgreSQL: step 4 on a log made before classes; audit migrate copies the class', async (t) => {
    const pg = await startPostgres(t);
    (await PgAuditStore.open(pg.url)).close();
    // The log as step 3 left it, with a token of then.
    await pg.psql(`ALTER TABLE tokens DROP COLUMN agent_class; UPDATE patchgate_schema SET version = 3; INSERT INTO tokens (name, role, repos, secret_hash, created) VALUES ('old-agent', 'agent', '*', '${hashSecret(OLD_SECRET)}', '2026-01-01T00:00:00.000Z')`);
    const store = await PgAuditStore.open(pg.url);
    t.teardown(() => store.close());
    // Every later step too (5: kind upstream-refusal, issue 48).
    t.equal((await pg.psql('SELECT version FROM patchgate_schema')).trim(), String(PG_MIGRATIONS.length));
    const tokens = new PgTokenStore(store);
    t.same(await tokens.authenticate(OLD_SECRET), { name: 'old-agent', role: 'agent', repos: '*' });
    const secret = await tokens.create('impl-1', 'agent', { agentClass: 'implementer' });
    t.same(await tokens.authenticate(secret), { name: 'impl-1', role: 'agent', repos: '*', agentClass: 'implementer' });
    t.same((await tokens.list()).map((x) => [x.name, x.class]), [['old-agent', null], ['impl-1', 'implementer']]);

    // audit migrate (importChain): a SQLite folder's classed token reaches PostgreSQL with its class.
    const dir = tempDir('pg-mig-class-');
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const lite = AuditStore.open(join(dir, 'patchgate.db'));
    t.teardown(() => lite.close());
    const liteSecret = new TokenStore(lite).create('tester-1', 'agent', { agentClass: 'test-author' });
    const pg2 = await startPostgres(t);
    const target = await PgAuditStore.open(pg2.url);
    t.teardown(() => target.close());
    const rows = lite.db.prepare('SELECT * FROM events ORDER BY id').all() as never[];
    await target.importChain(rows, lite.lastRow() as never, lite.db.prepare('SELECT * FROM tokens ORDER BY id').all() as TokenRow[]);
    t.same(await new PgTokenStore(target).authenticate(liteSecret), { name: 'tester-1', role: 'agent', repos: '*', agentClass: 'test-author' });
  });
}
