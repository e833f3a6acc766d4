// Checkpoints that a merge, a rollback or a delete of the anchor ref cannot defeat; made
// from and checked against the CONFIGURED store (SQLite named by --audit, and a real
// PostgreSQL); `audit prove ROW`; and the anchor's credential never in any argv (serve's or
// its git children's). Real git anchor repositories (a bare repo on disk, and git
// http-backend demanding Basic auth), real PostgreSQL, the real CLI.

import t, { type Test } from 'tap';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { AuditStore, rowHash } from '../../src/audit/store.js';
import { GIT_ENV, tempDir } from '../helpers/repo.js';
import { CLI, cliRun } from '../helpers/serve.js';
import { needPostgres, startPostgres, type Postgres } from '../helpers/postgres.js';
import { startUpstream } from '../helpers/upstream.js';

function cli(args: string[], env: NodeJS.ProcessEnv = {}): { code: number; out: string; err: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...GIT_ENV, ...env } });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

const git = (dir: string, ...args: string[]): string => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', env: { ...process.env, ...GIT_ENV } }).trim();

function temp(t: { teardown(fn: () => void): void }, prefix: string): string {
  const d = tempDir(prefix);
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

function bare(t: { teardown(fn: () => void): void }): string {
  const d = temp(t, 'pg-anchor-');
  execFileSync('git', ['init', '--bare', '-q', d]);
  return d;
}

function seedSqlite(path: string, n: number, from = 0): void {
  const s = AuditStore.open(path);
  for (let i = 0; i < n; i++) s.appendAdmin({ actor: 'cli', action: 'token.create', subject: `agent-${from + i}` });
  s.close();
}

/** What the file's owner does: drop rows above `keep` and move the head back, consistently. */
function cutSqlite(path: string, keep: number): void {
  const db = new Database(path);
  db.exec('DROP TRIGGER events_no_delete');
  db.prepare('DELETE FROM events WHERE id > ?').run(keep);
  const h = db.prepare('SELECT hash FROM events WHERE id = ?').get(keep) as { hash: string };
  db.prepare('UPDATE chain_head SET last_id = ?, last_hash = ?').run(keep, h.hash);
  db.close();
}

/** Edit row `id` and rehash every later row and the head (a consistent rewrite). */
function rehashSqlite(path: string, id: number): void {
  const db = new Database(path);
  db.exec('DROP TRIGGER events_no_update');
  const rows = db.prepare('SELECT * FROM events ORDER BY id').all() as Array<Record<string, unknown>>;
  let prev = '0'.repeat(64);
  const upd = db.prepare('UPDATE events SET subject = ?, prev_hash = ?, hash = ? WHERE id = ?');
  for (const r of rows) {
    if (r.id === id) r.subject = 'agent-EVIL';
    r.prev_hash = prev;
    r.hash = rowHash(r);
    upd.run(r.subject, r.prev_hash, r.hash, r.id);
    prev = r.hash as string;
  }
  db.prepare('UPDATE chain_head SET last_hash = ?').run(prev);
  db.close();
}

const tipOf = (anchor: string): string => git(anchor, 'rev-parse', 'refs/patchgate/audit');

t.test('a merge that hides checkpoints, a rolled-back ref and a deleted ref each fail verify, naming the commit', async (t) => {
  const data = temp(t, 'pg-cpl-');
  const db = join(data, 'patchgate.db');
  const anchor = bare(t);
  const pub = ['--publish', `git:${anchor}`];
  seedSqlite(db, 4);
  t.equal(cli(['audit', 'checkpoint', '--data', data, ...pub]).code, 0);
  const c1 = tipOf(anchor);
  seedSqlite(db, 4, 4);
  t.equal(cli(['audit', 'checkpoint', '--data', data, ...pub]).code, 0);
  const c2 = tipOf(anchor);
  t.equal(git(anchor, 'rev-parse', `${c2}^`), c1, 'the second checkpoint commit sits on the first');
  let r = cli(['audit', 'verify', '--data', data, '--checkpoints', `git:${anchor}`]);
  t.equal(r.code, 0, r.out + r.err);
  t.match(r.out, /extends all 2 checkpoint\(s\).*consistency proof 4 -> 8 \(\d+ hash\(es\)\) verified/);

  // A verifier holding only the anchor and the public key (no data folder of the gate).
  const outsider = temp(t, 'pg-cpl-outsider-');
  const alone = ['--data', outsider, '--audit', `sqlite:${db}`, '--public-key', join(data, 'audit-checkpoint.vkey')];
  t.equal(cli(['audit', 'verify', ...alone, '--checkpoints', `git:${anchor}`]).code, 0, 'the vkey alone verifies the line');

  // The owner cuts the log back to 4 rows; then hides the second checkpoint behind a merge whose
  // first parent is the old checkpoint (tree and all) and whose second parent is the real head.
  cutSqlite(db, 4);
  t.equal(cli(['audit', 'verify', '--data', data]).code, 0, 'plain verify cannot see it');
  const merge = git(anchor, 'commit-tree', `${c1}^{tree}`, '-p', c1, '-p', c2, '-m', 'merge');
  git(anchor, 'update-ref', 'refs/patchgate/audit', merge, c2);
  for (const who of [['--data', data], alone]) {
    r = cli(['audit', 'verify', ...who, '--checkpoints', `git:${anchor}`]);
    t.equal(r.code, 1, 'a merge fails (exit 1, tampered)');
    t.match(r.out, new RegExp(`TAMPERED: refs/patchgate/audit commit ${merge.slice(0, 12)} is a merge \\(parents ${c1.slice(0, 12)}, ${c2.slice(0, 12)}\\)`), 'names the merge commit');
  }

  // Rolled back: the ref moved back to the first checkpoint, which the cut log matches again.
  git(anchor, 'update-ref', 'refs/patchgate/audit', c1, merge);
  r = cli(['audit', 'verify', '--data', data, '--checkpoints', `git:${anchor}`]);
  t.equal(r.code, 1, 'a rolled-back ref fails');
  t.match(r.out, new RegExp(`TAMPERED: refs/patchgate/audit commit ${c1.slice(0, 12)} .*ends at commit ${c1.slice(0, 12)} \\(4 rows.*lacks the gate's latest checkpoint \\(8 rows.*this gate published commit ${c2.slice(0, 12)} \\(8 rows\\) there: the ref was rolled back`), 'names where it ends and what was published');

  // A signed old checkpoint re-published on top of the head: the line does not follow.
  const oldTree = git(anchor, 'rev-parse', `${c1}^{tree}`);
  const stale = git(anchor, 'commit-tree', oldTree, '-p', c2, '-m', 'stale');
  git(anchor, 'update-ref', 'refs/patchgate/audit', stale, c1);
  r = cli(['audit', 'verify', ...alone, '--checkpoints', `git:${anchor}`]);
  t.equal(r.code, 1);
  t.match(r.out, new RegExp(`TAMPERED: refs/patchgate/audit commit ${stale.slice(0, 12)} .*does not follow the checkpoint before it`), 'names the commit that breaks the line');

  // Deleted.
  git(anchor, 'update-ref', '-d', 'refs/patchgate/audit');
  r = cli(['audit', 'verify', '--data', data, '--checkpoints', `git:${anchor}`]);
  t.equal(r.code, 1, 'a deleted ref fails');
  t.match(r.out, new RegExp(`holds no checkpoints, but this gate published commit ${c2.slice(0, 12)} \\(8 rows, .*the ref was deleted`), 'names the last commit published');
  t.equal(cli(['audit', 'verify', ...alone, '--checkpoints', `git:${anchor}`]).code, 1, 'without the data folder too: an empty source proves nothing');

  // And the gate will not sign the cut log again.
  r = cli(['audit', 'checkpoint', '--data', data]);
  t.equal(r.code, 2);
  t.match(r.err, /contradicts the last checkpoint \(8 rows.*fewer than the 8/);
});

t.test('a target that missed checkpoints is caught up, so its line stays whole', async (t) => {
  const data = temp(t, 'pg-cpl-');
  const db = join(data, 'patchgate.db');
  const anchor = bare(t);
  seedSqlite(db, 2);
  t.equal(cli(['audit', 'checkpoint', '--data', data]).code, 0, 'the first checkpoint goes only to the data folder');
  seedSqlite(db, 2, 2);
  t.equal(cli(['audit', 'checkpoint', '--data', data, '--publish', `git:${anchor}`]).code, 0);
  t.equal(git(anchor, 'rev-list', '--count', 'refs/patchgate/audit'), '2', 'both checkpoints are on the anchor');
  const r = cli(['audit', 'verify', '--data', data, '--checkpoints', `git:${anchor}`]);
  t.equal(r.code, 0, r.out + r.err);
  const note = git(anchor, 'show', 'refs/patchgate/audit:checkpoint');
  t.match(note, /^patchgate\.invalid\/audit\/[0-9a-f]{16}\n4\n/, 'the anchor holds the signed note itself');
});

/** The same life on either store: checkpoint, verify, prove; then a cut from 15 rows to 3 must fail. */
async function storeLife(t: Test, store: { env: NodeJS.ProcessEnv; audit: string[]; seed(n: number, from: number): Promise<void>; cut(keep: number): Promise<void>; rehash?(id: number): void }): Promise<void> {
  const data = temp(t, 'pg-cpl-');
  const anchor = bare(t);
  const run = async (args: string[]) => {
    const r = await cliRun(args, { env: { ...process.env, ...GIT_ENV, ...store.env } });
    return { code: r.code, out: r.stdout, err: r.stderr };
  };
  await store.seed(5, 0);
  let r = await run(['audit', 'checkpoint', '--data', data, ...store.audit, '--publish', `git:${anchor}`]);
  t.equal(r.code, 0, r.err);
  t.match(r.out, /^checkpoint: 5 row\(s\)/, 'the configured store is signed (5 rows)');
  t.notOk(existsSync(join(data, 'patchgate.db')), 'no SQLite file was made or read in the data folder');
  await store.seed(10, 5);
  r = await run(['audit', 'checkpoint', '--data', data, ...store.audit, '--publish', `git:${anchor}`]);
  t.match(r.out, /^checkpoint: 15 row\(s\)/);
  r = await run(['audit', 'verify', '--data', data, ...store.audit, '--checkpoints', `git:${anchor}`]);
  t.equal(r.code, 0, r.out + r.err);
  t.match(r.out, /ok: 15 row\(s\).*consistency proof 5 -> 15/);
  for (const row of ['1', '7', '15']) {
    r = await run(['audit', 'prove', row, '--data', data, ...store.audit]);
    t.equal(r.code, 0, `row ${row} is proved${r.code ? `: ${r.out}${r.err}` : ""}`);
    t.match(r.out, new RegExp(`^proved: row ${row} is leaf ${Number(row) - 1} of the 15-row tree`));
  }
  r = await run(['audit', 'prove', '3', '--data', data, ...store.audit, '--checkpoints', `git:${anchor}`, '--json']);
  t.equal(r.code, 0);
  const proof = JSON.parse(r.out) as { treeSize: number; path: string[] };
  t.equal(proof.treeSize, 15);
  t.equal(proof.path.length, 4, 'a 15-leaf tree gives leaf 2 a path of 4 hashes');
  await store.seed(1, 15);
  r = await run(['audit', 'prove', '16', '--data', data, ...store.audit]);
  t.equal(r.code, 1, 'a row after the latest checkpoint is not proved');
  t.match(r.out, /not proved: row 16 is not covered by the latest checkpoint \(15 rows/);
  if (store.rehash) {
    store.rehash(2);
    r = await run(['audit', 'prove', '7', '--data', data, ...store.audit]);
    t.equal(r.code, 1, 'an altered (and rehashed) row 2 defeats the proof of row 7');
    t.match(r.out, /not proved: row 7 is not in the checkpoint's tree .*the log was altered/);
    return;
  }
  await store.cut(3);
  r = await run(['audit', 'verify', '--data', data, ...store.audit]);
  t.equal(r.code, 0, 'the cut log passes plain verify');
  r = await run(['audit', 'verify', '--data', data, ...store.audit, '--checkpoints', `git:${anchor}`]);
  t.equal(r.code, 1, 'and fails --checkpoints');
  t.match(r.out, /records 5 row\(s\) but the log has 3: the log was cut back/);
}

t.test('SQLite named by --audit (not the data folder\'s file): checkpoint, verify, prove; a cut and a rewrite fail', async (t) => {
  for (const rewrite of [false, true]) {
    await t.test(rewrite ? 'rewrite' : 'cut', async (t) => {
      const dir = temp(t, 'pg-cpl-log-');
      const path = join(dir, 'log.db');
      await storeLife(t, {
        env: {}, audit: ['--audit', `sqlite:${path}`],
        seed: async (n, from) => seedSqlite(path, n, from),
        cut: async (keep) => cutSqlite(path, keep),
        ...(rewrite ? { rehash: (id: number) => rehashSqlite(path, id) } : {}),
      });
    });
  }
});

t.test('PostgreSQL (PATCHGATE_AUDIT_URL): checkpoint, verify, prove; a log cut from 15 rows to 3 fails', async (t) => {
  const why = needPostgres(t);
  if (why) {
    t.comment(`skipping: ${why}`);
    return;
  }
  const pg: Postgres = await startPostgres(t);
  const { PgAuditStore } = await import('../../src/audit/pg-store.js');
  await storeLife(t, {
    env: { PATCHGATE_AUDIT_URL: pg.url }, audit: [],
    seed: async (n, from) => {
      const s = await PgAuditStore.open(pg.url);
      for (let i = 0; i < n; i++) await s.appendAdmin({ actor: 'cli', action: 'token.create', subject: `agent-${from + i}` });
      await s.close();
    },
    cut: async (keep) => {
      await pg.psql(`ALTER TABLE events DISABLE TRIGGER USER; DELETE FROM events WHERE id > ${keep}; UPDATE chain_head SET last_id = ${keep}, last_hash = (SELECT hash FROM events WHERE id = ${keep}); ALTER TABLE events ENABLE TRIGGER USER;`);
    },
  });

  // The --checkpoint-every schedule of `serve` signs the PostgreSQL chain, not the data folder's SQLite file.
  const data = temp(t, 'pg-cpl-serve-pg-');
  seedSqlite(join(data, 'patchgate.db'), 9);
  const env = { ...process.env, ...GIT_ENV, PATCHGATE_AUDIT_URL: pg.url };
  const child = spawn(process.execPath, [CLI, 'serve', '--data', data, '--port', '0', '--checkpoint-every', '1'], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let text = '';
  child.stdout.on('data', (c) => (text += c));
  child.stderr.on('data', (c) => (text += c));
  const line = join(data, 'checkpoints.jsonl');
  while (!(existsSync(line) && readFileSync(line, 'utf8').includes('\n')) && child.exitCode === null) await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  t.ok(existsSync(line), `serve wrote a checkpoint: ${existsSync(line) ? '' : text}`);
  const mine = await cliRun(['audit', 'verify', '--data', data, '--checkpoints', `file:${line}`], { env });
  t.equal(mine.code, 0, mine.code ? `${mine.stdout}${mine.stderr}` : "the schedule's checkpoint verifies against PostgreSQL");
  const lite = await cliRun(['audit', 'verify', '--data', data, '--audit', `sqlite:${join(data, 'patchgate.db')}`, '--checkpoints', `file:${line}`], { env: { ...process.env, ...GIT_ENV } });
  t.equal(lite.code, 2, 'and the data folder\'s SQLite file, which it did not sign, is not its log: serve recorded PostgreSQL there');
  t.match(lite.stderr, /CONFIG: --audit: names the audit log .*patchgate\.db, but this data folder's log is postgres:\/\/patchgate@/);
});

/** Every process's argv on this machine (what `ps` shows). */
function allCmdlines(): string[] {
  const out: string[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      out.push(readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' '));
    } catch {
      // the process ended
    }
  }
  return out;
}

t.test('serve publishes to an anchor that demands a credential, which is in no argv (serve\'s or its git children\'s)', async (t) => {
  const secret = 'anchor-s3cr3t-' + Math.random().toString(36).slice(2);
  const up = await startUpstream(t, { user: 'anchor-bot', secret });
  await up.create('anchor');
  const data = temp(t, 'pg-cpl-serve-');
  seedSqlite(join(data, 'patchgate.db'), 3);
  // A recording `git` first on PATH: it writes its argv, then runs the real git.
  const bin = temp(t, 'pg-cpl-bin-');
  const argvLog = join(bin, 'argv.log');
  const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  writeFileSync(join(bin, 'git'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${argvLog}'\nexec '${realGit}' "$@"\n`);
  chmodSync(join(bin, 'git'), 0o755);
  const credFile = join(data, 'anchor.cred');
  writeFileSync(credFile, `anchor-bot:${secret}\n`, { mode: 0o600 });

  // On the command line, a URL with the credential is refused with one line.
  const refused = await cliRun(['serve', '--data', data, '--port', '0', '--checkpoint-publish', `git:${up.urlWithCredential('anchor')}`]);
  t.equal(refused.code, 2);
  t.match(refused.stderr, /--checkpoint-publish: .*a credential in a URL on the command line shows in `ps`/);
  t.notMatch(refused.stdout + refused.stderr, new RegExp(secret), 'the refusal does not echo it');

  const child = spawn(process.execPath, [CLI, 'serve', '--data', data, '--port', '0', '--checkpoint-every', '1', '--checkpoint-publish', `git:${up.url('anchor')}`, '--checkpoint-credential-file', credFile], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...GIT_ENV, PATH: `${bin}:${process.env.PATH}` },
  });
  let text = '';
  child.stdout.on('data', (c) => (text += c));
  child.stderr.on('data', (c) => (text += c));
  t.teardown(() => { child.kill('SIGKILL'); });
  const seen: string[] = [];
  const anchorDir = up.dir('anchor');
  // Wait (no deadline of our own: tap's test timeout bounds it) until a checkpoint arrived.
  while (spawnSync('git', ['-C', anchorDir, 'rev-parse', '-q', '--verify', 'refs/patchgate/audit']).status !== 0) {
    seen.push(...allCmdlines());
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  seen.push(...allCmdlines());
  t.equal(child.exitCode, null, child.exitCode === null ? "serve is running" : `serve exited: ${text}`);
  t.ok(up.authSeen.some((h) => h === `Basic ${Buffer.from(`anchor-bot:${secret}`).toString('base64')}`), 'the anchor got the credential from the file');
  const gitArgv = readFileSync(argvLog, 'utf8').split('\n').filter(Boolean);
  t.ok(gitArgv.some((l) => l.includes(' push ') && l.includes(up.url('anchor'))), 'the push ran through the recording git');
  t.same(gitArgv.filter((l) => l.includes(secret)), [], 'no git child had the credential in its argv');
  t.same(seen.filter((l) => l.includes(secret)), [], 'no process on the machine showed it in /proc/*/cmdline');
  t.notMatch(text, new RegExp(secret), 'nor did serve print it');
});

t.test('receive.denyNonFastForwards/denyDeletes protect branches only; the pre-receive hook of docs/checkpoints.md protects refs/patchgate/*', async (t) => {
  const data = temp(t, 'pg-cpl-');
  const db = join(data, 'patchgate.db');
  const anchor = bare(t);
  git(anchor, 'config', 'receive.denyNonFastForwards', 'true');
  git(anchor, 'config', 'receive.denyDeletes', 'true');
  seedSqlite(db, 2);
  t.equal(cli(['audit', 'checkpoint', '--data', data, '--publish', `git:${anchor}`, '--publish', `git:${anchor}#refs/heads/patchgate-audit`]).code, 0);
  const c1 = tipOf(anchor);
  seedSqlite(db, 2, 2);
  t.equal(cli(['audit', 'checkpoint', '--data', data, '--publish', `git:${anchor}`, '--publish', `git:${anchor}#refs/heads/patchgate-audit`]).code, 0);
  t.equal(git(anchor, 'show', 'refs/heads/patchgate-audit:checkpoint'), git(anchor, 'show', 'refs/patchgate/audit:checkpoint'), 'a branch target holds the same line');
  t.equal(cli(['audit', 'verify', '--data', data, '--checkpoints', `git:${anchor}#refs/heads/patchgate-audit`]).code, 0);
  const work = temp(t, 'pg-cpl-work-');
  execFileSync('git', ['init', '-q', work]);
  git(work, 'fetch', '-q', anchor, 'refs/patchgate/audit:refs/x');
  const push = (...args: string[]) => spawnSync('git', ['-C', work, 'push', anchor, ...args], { encoding: 'utf8', env: { ...process.env, ...GIT_ENV } });
  t.not(push('--force', `${c1}:refs/heads/patchgate-audit`).status, 0, 'git refuses a forced rollback of a branch');
  t.not(push(':refs/heads/patchgate-audit').status, 0, 'and its delete');
  const tip = tipOf(anchor);
  t.equal(push('--force', `${c1}:refs/patchgate/audit`).status, 0, 'but takes a forced rollback of refs/patchgate/audit');
  t.equal(tipOf(anchor), c1);
  git(anchor, 'update-ref', 'refs/patchgate/audit', tip);
  t.equal(push(':refs/patchgate/audit').status, 0, 'and its delete');
  git(anchor, 'update-ref', 'refs/patchgate/audit', tip);

  // The documented hook, byte for byte from the docs.
  const doc = readFileSync(join(import.meta.dirname, '../../docs/checkpoints.md'), 'utf8');
  const hook = /```sh\n(#!\/bin\/sh\n[\s\S]*?)```/.exec(doc)![1]!;
  writeFileSync(join(anchor, 'hooks', 'pre-receive'), hook);
  chmodSync(join(anchor, 'hooks', 'pre-receive'), 0o755);
  let r = push('--force', `${c1}:refs/patchgate/audit`);
  t.not(r.status, 0, 'the hook refuses the rollback');
  t.match(r.stderr, /anchor: refs\/patchgate\/audit only moves forward/);
  r = push(':refs/patchgate/audit');
  t.not(r.status, 0, 'and the delete');
  t.match(r.stderr, /anchor: refs\/patchgate\/audit may not be deleted/);
  const merge = git(anchor, 'commit-tree', `${c1}^{tree}`, '-p', tip, '-p', c1, '-m', 'merge');
  git(anchor, 'update-ref', 'refs/merge-src', merge);
  git(work, 'fetch', '-q', anchor, 'refs/merge-src:refs/z');
  r = push(`${merge}:refs/patchgate/audit`);
  t.not(r.status, 0, 'and a fast-forward merge');
  t.match(r.stderr, /must stay one line/);
  t.equal(tipOf(anchor), tip, 'the ref did not move');
  seedSqlite(db, 1, 4);
  t.equal(cli(['audit', 'checkpoint', '--data', data, '--publish', `git:${anchor}`]).code, 0, 'the gate\'s own fast-forward publish still passes the hook');
  t.equal(cli(['audit', 'verify', '--data', data, '--checkpoints', `git:${anchor}`]).code, 0);
});
