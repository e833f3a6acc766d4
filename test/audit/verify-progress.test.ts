// Issue 24, nothing silent for long: `audit verify` and `audit migrate` report progress on
// stderr (src/audit/verify-progress.ts): with a terminal one line updated in place, without
// one a line per phase. The delay is 0 here so the form shows on a small log; the result is
// the store's own verify() result, intact or tampered.

import t from 'tap';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { AuditStore } from '../../src/audit/store.js';
import { verifyWithProgress } from '../../src/audit/verify-progress.js';
import { runAuditMigrate } from '../../src/commands/audit-migrate.js';
import { tempDir } from '../helpers/repo.js';
import { needPostgres, startPostgres } from '../helpers/postgres.js';

function logOf(t: Tap.Test, rows: number): { store: AuditStore; file: string } {
  const dir = tempDir('pg-verify-progress-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'patchgate.db');
  const store = AuditStore.open(file);
  for (let i = 0; i < rows; i++) store.appendAdmin({ actor: 'cli', action: 'token.create', subject: `agent-${i}` });
  return { store, file };
}

t.test('audit verify on SQLite: the same result as verify(), with progress off and on a terminal', async (t) => {
  const { store } = logOf(t, 2500);
  t.teardown(() => store.close());
  const plain: string[] = [];
  const r = await verifyWithProgress(store, { write: (s) => plain.push(s), isTTY: false, delayMs: 0 });
  t.same(r, store.verify(), 'the result is verify()\'s');
  t.same(r, { ok: true, rows: 2500 });
  t.equal(plain.length, 2, 'off a terminal: one line when it starts, one when it ends');
  t.equal(plain[0], 'patchgate: audit verify: 2500 rows to read\n');
  t.match(plain[1]!, /^patchgate: audit verify: done, 2500 rows checked in \d+ s/);
  t.notOk(plain.some((s) => /[\r\x1b]/.test(s)));

  const tty: string[] = [];
  await verifyWithProgress(store, { write: (s) => tty.push(s), isTTY: true, delayMs: 0, everyMs: 0 });
  t.ok(tty.length > 2, 'on a terminal it is redrawn as rows are checked');
  t.ok(tty.every((s) => s.startsWith('\r')), 'in place');
  t.ok(tty.slice(0, -1).every((s) => !s.includes('\n')), 'no new line until the end');
  t.match(tty[1]!, /^\rpatchgate: audit verify: 1000\/2500 rows checked/);
  t.match(tty.at(-1)!, /^\rpatchgate: audit verify: done, 2500 rows checked in \d+ s.*\x1b\[K\n$/);

  const silent: string[] = [];
  await verifyWithProgress(store, { write: (s) => silent.push(s), isTTY: false, delayMs: 3_600_000 });
  t.same(silent, [], 'a walk shorter than its delay says nothing');
});

t.test('a tampered log: the same failure as verify(), and the phase says a problem was found', async (t) => {
  const { store, file } = logOf(t, 50);
  store.close();
  const raw = AuditStore.open(file);
  raw.db.exec("DROP TRIGGER events_no_update; UPDATE events SET actor = 'x' WHERE id = 7;");
  const out: string[] = [];
  const r = await verifyWithProgress(raw, { write: (s) => out.push(s), isTTY: false, delayMs: 0 });
  t.same(r, raw.verify());
  t.equal(r.ok, false);
  t.match(out.at(-1)!, /: done, 6 rows checked in \d+ s.*; a problem was found\n$/);
  raw.close();
});

const why = needPostgres(t);
if (why) t.pass(`skipped the migrate form: ${why}`);
else {
  t.test('audit migrate: a line per phase (verify the source, copy, verify the copy) off a terminal', async (t) => {
    const pg = await startPostgres(t);
    const { store, file } = logOf(t, 40);
    store.close();
    const out: string[] = [];
    const before = process.env.PATCHGATE_AUDIT_URL;
    process.env.PATCHGATE_AUDIT_URL = pg.url; // as the CLI takes it (never a password in argv)
    t.teardown(() => {
      if (before === undefined) delete process.env.PATCHGATE_AUDIT_URL;
      else process.env.PATCHGATE_AUDIT_URL = before;
    });
    const m = await runAuditMigrate({ from: `sqlite:${file}` }, { write: (s) => out.push(s), isTTY: false, delayMs: 0 });
    t.equal(m.ok, true, m.lines.join('\n'));
    const starts = out.filter((l) => l.endsWith('rows to read\n'));
    t.same(starts, [
      'patchgate: audit migrate: verifying the source: 40 rows to read\n',
      'patchgate: audit migrate: copying: 40 rows to read\n',
      'patchgate: audit migrate: verifying the copy: 40 rows to read\n',
    ]);
    t.match(out.join(''), /verifying the source: done, 40 rows checked/);
    t.match(out.join(''), /copying: done, 40 rows copied/);
    t.match(out.join(''), /verifying the copy: done, 40 rows checked/);
    t.notMatch(out.join(''), pg.password, 'no password in the progress');
  });
}
