// The data folder's record of where its audit log is (src/audit/location.ts): which locations
// are the same log (a password or a connection parameter never makes a difference; another
// host, port, user or database does), that the record never holds a password, what a command
// gets with and without a given location, and that a record that is not one fails closed.

import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { folderAudit, readLocation, recordLocation, sameLocation, withoutPassword } from '../../src/audit/location.js';
import { parseAuditUrl } from '../../src/audit/sink.js';

const pg = (url: string) => parseAuditUrl(url, '/tmp');

t.test('the same log, whatever the password or connection parameters', async (t) => {
  const base = pg('postgres://gate@db.internal:5432/patchgate');
  t.ok(sameLocation(base, pg('postgres://gate:secret@db.internal:5432/patchgate')), 'with its password');
  t.ok(sameLocation(base, pg('postgresql://gate@DB.internal/patchgate?sslmode=require&password=x')), 'default port, another scheme spelling, parameters');
  t.ok(sameLocation(base, pg('postgres://db.internal/x?user=gate&dbname=patchgate')), 'user and database as parameters');
  t.notOk(sameLocation(base, pg('postgres://gate@db.internal:5433/patchgate')), 'another port');
  t.notOk(sameLocation(base, pg('postgres://gate@db2.internal/patchgate')), 'another host');
  t.notOk(sameLocation(base, pg('postgres://other@db.internal/patchgate')), 'another user');
  t.notOk(sameLocation(base, pg('postgres://gate@db.internal/postgres')), 'another database');
  t.notOk(sameLocation(base, parseAuditUrl('sqlite:/tmp/x.db', '/tmp')), 'a SQLite file');
  t.ok(sameLocation(parseAuditUrl('sqlite:/tmp/a/../x.db', '/'), parseAuditUrl('sqlite:/tmp/x.db', '/')), 'one SQLite path, however it is written');
  t.equal(withoutPassword('postgres://gate:s%40cret@db:5432/patchgate?sslmode=require&Password=x'), 'postgres://gate@db:5432/patchgate?sslmode=require');
});

t.test('the record: no password, used when nothing is given, another location refused', async (t) => {
  const data = t.testdir({});
  t.same(folderAudit(data).location, { kind: 'sqlite', path: join(data, 'patchgate.db') }, 'no record: the folder\'s file');
  t.same(folderAudit(data, { value: 'postgres://gate@db/x', from: '--audit' }).location.kind, 'postgres', 'no record: what is given');
  t.ok(recordLocation(data, pg('postgres://gate:hunter2@db/patchgate?sslmode=require'), 'serve PATCHGATE_AUDIT_URL', () => new Date('2026-12-01T00:00:00Z')));
  const text = readFileSync(join(data, 'audit-location.json'), 'utf8');
  t.notMatch(text, 'hunter2', 'no password in the file');
  t.same(readLocation(data), { audit: 'postgres://gate@db/patchgate?sslmode=require', by: 'serve PATCHGATE_AUDIT_URL', time: '2026-12-01T00:00:00.000Z' });
  t.notOk(recordLocation(data, pg('postgres://gate:other@db:5432/patchgate'), 'serve --audit'), 'the same log again: the record is kept as it is');
  t.same(folderAudit(data).location, pg('postgres://gate@db/patchgate?sslmode=require'), 'nothing given: the recorded log');
  const withPw = folderAudit(data, { value: 'postgres://gate:hunter2@db/patchgate', from: 'PATCHGATE_AUDIT_URL' });
  t.equal(withPw.location.kind === 'postgres' && withPw.location.url, 'postgres://gate:hunter2@db/patchgate', 'the same log given with its password: that URL is opened');
  t.throws(() => folderAudit(data, { value: `sqlite:${join(data, 'patchgate.db')}`, from: '--audit' }), {
    name: 'ConfigError',
    message: `CONFIG: --audit: names the audit log ${join(data, 'patchgate.db')}, but this data folder's log is postgres://gate@db/patchgate?sslmode=require (recorded in ${join(data, 'audit-location.json')} by serve PATCHGATE_AUDIT_URL, 2026-12-01T00:00:00.000Z); without --audit the folder's log is used; to move the folder to another log, copy it there with patchgate audit migrate`,
  });
  t.throws(() => folderAudit(data, { value: 'postgres://gate:hunter2@db2/patchgate', from: 'PATCHGATE_AUDIT_URL' }), { message: /^CONFIG: PATCHGATE_AUDIT_URL: names the audit log postgres:\/\/gate:\*\*\*@db2\/patchgate, but/ });
  writeFileSync(join(data, 'audit-location.json'), '{"audit": 3}');
  t.throws(() => folderAudit(data), { name: 'ConfigError', message: /not an audit location/ }, 'a record that is not one fails closed');
  writeFileSync(join(data, 'audit-location.json'), 'nope');
  t.throws(() => folderAudit(data), { message: /cannot read this data folder's audit location/ });
});
