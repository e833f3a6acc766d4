// Why this file exists: tokens are the only thing between an agent and a push. These
// tests prove on real SQLite files that a secret is never stored (only its hash), that
// wrong, revoked and expired secrets are refused, that repo globs match whole names,
// and that every token change lands in the audit log atomically with the change.

import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { AuditError, UsageError } from '../../src/errors.js';
import { AuditStore } from '../../src/audit/store.js';
import { TokenStore, allowsRepo, hashSecret } from '../../src/audit/tokens.js';

const DAY = 86_400_000;

function open(t: Test, clock?: { now: number }): { store: AuditStore; tokens: TokenStore; path: string; dir: string } {
  const dir = t.testdir();
  const path = join(dir, 'patchgate.db');
  const store = AuditStore.open(path);
  t.teardown(() => store.close());
  const tokens = new TokenStore(store, clock ? { now: () => clock.now } : {});
  return { store, tokens, path, dir };
}

t.test('create returns a pg_ secret and stores only its sha256', async (t) => {
  const { store, tokens, path, dir } = open(t);
  const secret = tokens.create('bot-1', 'agent', { repos: 'team-*' });
  t.match(secret, /^pg_[A-Za-z0-9_-]{43}$/, 'pg_ + 32 bytes base64url');
  t.equal(Buffer.from(secret.slice(3), 'base64url').length, 32);
  const other = tokens.create('bot-2', 'agent');
  t.not(other, secret, 'secrets are random');

  const expectedHash = createHash('sha256').update(secret).digest('hex');
  t.equal(hashSecret(secret), expectedHash);
  const rows = store.db.prepare('SELECT * FROM tokens ORDER BY id').all() as Record<string, unknown>[];
  t.equal(rows[0]!.secret_hash, expectedHash, 'the hash is stored');
  t.notOk(Object.values(rows[0]!).includes(secret), 'no column holds the secret');

  store.close(); // checkpoint the WAL so all data is in the main file
  const files = readdirSync(dir);
  const bytes = Buffer.concat(files.map((f) => readFileSync(join(dir, f))));
  t.ok(bytes.includes(Buffer.from(expectedHash)), 'the scan sees the data (hash found in the file bytes)');
  for (const s of [secret, other]) {
    t.notOk(bytes.includes(Buffer.from(s)), 'secret string absent from every db file');
    t.notOk(bytes.includes(Buffer.from(s.slice(3))), 'secret body absent');
    t.notOk(bytes.includes(Buffer.from(s.slice(3), 'base64url')), 'raw secret bytes absent');
  }
  // the same after a reopen (no stray WAL copy either)
  const again = new Database(path);
  t.teardown(() => again.close());
  t.equal((again.prepare('SELECT count(*) AS n FROM tokens').get() as { n: number }).n, 2);
});

t.test('authenticate: ok, wrong, malformed, revoked', async (t) => {
  const { tokens } = open(t);
  const secret = tokens.create('bot-1', 'agent', { repos: 'alpha' });
  const admin = tokens.create('root', 'admin');
  t.same(tokens.authenticate(secret), { name: 'bot-1', role: 'agent', repos: 'alpha' });
  t.same(tokens.authenticate(admin), { name: 'root', role: 'admin', repos: '*' });
  t.equal(tokens.authenticate('pg_' + randomBytes(32).toString('base64url')), null, 'an unknown well-formed secret');
  t.equal(tokens.authenticate(secret.slice(0, -1) + (secret.endsWith('A') ? 'B' : 'A')), null, 'one character off');
  t.equal(tokens.authenticate(''), null);
  t.equal(tokens.authenticate(secret + 'x'), null);
  t.equal(tokens.authenticate(hashSecret(secret)), null, 'the stored hash is not a credential');
  t.equal(tokens.authenticate(undefined as never), null);

  tokens.revoke('bot-1');
  t.equal(tokens.authenticate(secret), null, 'revoked');
  t.ok(tokens.authenticate(admin), 'others unaffected');
  t.throws(() => tokens.revoke('bot-1'), UsageError, 'revoking twice');
  t.throws(() => tokens.revoke('ghost'), { name: 'UsageError', message: /no token named ghost/ });
});

t.test('authenticate: expired tokens are refused', async (t) => {
  const clock = { now: Date.parse('2024-01-01T00:00:00Z') };
  const { tokens } = open(t, clock);
  const secret = tokens.create('short', 'agent', { expiresDays: 1 });
  const forever = tokens.create('long', 'human');
  t.equal(tokens.list()[0]!.expires, '2024-01-02T00:00:00.000Z');
  clock.now += DAY - 1;
  t.ok(tokens.authenticate(secret), 'valid just before expiry');
  t.equal(tokens.count(), 2);
  clock.now += 1;
  t.equal(tokens.authenticate(secret), null, 'refused at expiry');
  t.ok(tokens.authenticate(forever), 'no expiry means none');
  t.equal(tokens.count(), 1, 'count() counts active tokens');
  t.same(tokens.list().map((x) => [x.name, x.status]), [['short', 'expired'], ['long', 'active']]);

  const fresh = tokens.create('short', 'agent');
  t.ok(tokens.authenticate(fresh), 'an expired name can be created again');
  t.equal(tokens.authenticate(secret), null, 'the old secret stays dead');
  t.same(tokens.list().map((x) => [x.name, x.status]), [['short', 'revoked'], ['long', 'active'], ['short', 'active']]);
});

t.test('names, roles, globs and expiries are validated', async (t) => {
  const { tokens } = open(t);
  for (const bad of ['', '-x', '.x', 'a b', 'a/b', 'x'.repeat(65), 'é']) {
    t.throws(() => tokens.create(bad, 'agent'), { name: 'UsageError', message: /token name/ }, `name ${JSON.stringify(bad)}`);
  }
  t.ok(tokens.create('A1._-z', 'agent'), 'allowed characters');
  t.ok(tokens.create('x'.repeat(64), 'agent'), '64 characters');
  t.throws(() => tokens.create('bot', 'root' as never), { name: 'UsageError', message: /--role/ });
  t.throws(() => tokens.create('bot', 'agent', { repos: '' }), { name: 'UsageError', message: /--repos/ });
  t.throws(() => tokens.create('bot', 'agent', { repos: 'a b' }), { name: 'UsageError', message: /--repos/ });
  for (const d of [0, -1, NaN, Infinity, 100_000]) {
    t.throws(() => tokens.create('bot', 'agent', { expiresDays: d }), { name: 'UsageError', message: /--expires-days/ }, `days ${d}`);
  }
  tokens.create('bot', 'agent');
  t.throws(() => tokens.create('bot', 'human'), { name: 'UsageError', message: /already exists/ }, 'active name is taken');
  tokens.revoke('bot');
  t.ok(tokens.create('bot', 'human'), 'a revoked name can be reused');
  t.equal(tokens.count(), 3);
});

t.test('list shows no secrets or hashes', async (t) => {
  const { tokens } = open(t);
  const secret = tokens.create('bot', 'agent', { repos: 'team-*' });
  const list = tokens.list();
  t.equal(list.length, 1);
  t.match(list[0], { name: 'bot', role: 'agent', repos: 'team-*', expires: null, revoked: null, status: 'active' });
  const text = JSON.stringify(list);
  t.notOk(text.includes(secret), 'no secret');
  t.notOk(text.includes(hashSecret(secret)), 'no hash');
});

t.test('repo globs match whole repo names', async (t) => {
  const { tokens } = open(t);
  const cases: [string, string, boolean][] = [
    ['*', 'alpha', true],
    ['*', '.hidden', true],
    ['*', 'my.repo-1', true],
    ['team-*', 'team-a', true],
    ['team-*', 'team-', true],
    ['team-*', 'xteam-a', false],
    ['team-*', 'other', false],
    ['alpha', 'alpha', true],
    ['alpha', 'alpha2', false],
    ['alpha', 'Alpha', false],
    ['{alpha,beta}', 'beta', true],
    ['{alpha,beta}', 'gamma', false],
    ['!secret', 'secret', false],
    ['!secret', 'public', true],
    ['*', '', false],
  ];
  for (const [glob, repo, want] of cases) t.equal(allowsRepo({ repos: glob }, repo), want, `${glob} vs ${JSON.stringify(repo)}`);
  const secret = tokens.create('bot', 'agent', { repos: 'team-*' });
  const tok = tokens.authenticate(secret)!;
  t.ok(tokens.allowsRepo(tok, 'team-web'));
  t.notOk(tokens.allowsRepo(tok, 'infra'));
  const all = tokens.authenticate(tokens.create('any', 'agent'))!;
  t.ok(tokens.allowsRepo(all, 'infra'), "default repos is '*'");
});

t.test('token changes are audited in the same transaction', async (t) => {
  const { store, tokens, path } = open(t);
  const secret = tokens.create('bot', 'agent', { repos: 'team-*', actor: 'alice' });
  tokens.revoke('bot', { actor: 'bob' });
  const rows = store.query({ kind: 'admin' });
  t.match(rows, [
    { action: 'token.revoke', subject: 'bot', actor: 'bob' },
    { action: 'token.create', subject: 'bot', actor: 'alice', detail: { role: 'agent', repos: 'team-*', expires: null } },
  ]);
  t.notOk(JSON.stringify(rows).includes(secret), 'the audit row does not carry the secret');
  t.same(store.verify(), { ok: true, rows: 2 });

  // If the audit append fails, the token change is rolled back (fail closed).
  const db = new Database(path);
  t.teardown(() => db.close());
  db.exec('DROP TRIGGER events_no_delete; DELETE FROM events WHERE id = 2;'); // truncate the log: appends now refuse
  t.throws(() => tokens.create('bot2', 'agent'), AuditError);
  t.equal(tokens.list().filter((x) => x.name === 'bot2').length, 0, 'no token without its audit row');
  t.throws(() => tokens.create('bot', 'agent'), AuditError);
  t.equal(tokens.count(), 0);
});
