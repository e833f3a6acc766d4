// Anchored chain heads: a log rehashed end to end by someone who owns the database passes a
// plain `audit verify` and fails `audit verify --checkpoints`, naming the first checkpoint it
// contradicts; a cut-back log fails too; an altered signature is refused. Real SQLite, real
// git repositories (a local bare repo as the operator-named target), the real CLI.

import t from 'tap';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { AuditStore, rowHash } from '../../src/audit/store.js';
import { tempDir, GIT_ENV } from '../helpers/repo.js';

const CLI = join(import.meta.dirname, '../../dist/cli.js');

function cli(args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...GIT_ENV } });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

function seed(data: string, n: number, from = 0): void {
  const s = AuditStore.open(join(data, 'patchgate.db'));
  for (let i = 0; i < n; i++) s.appendAdmin({ actor: 'cli', action: 'token.create', subject: `agent-${from + i}` });
  s.close();
}

/** What an attacker who owns the file does: edit row `id`, then rehash every later row and the head. */
function rehash(data: string, id: number, subject: string): void {
  const db = new Database(join(data, 'patchgate.db'));
  db.exec('DROP TRIGGER events_no_update');
  const rows = db.prepare('SELECT * FROM events ORDER BY id').all() as Array<Record<string, unknown>>;
  let prev = '0'.repeat(64);
  const upd = db.prepare('UPDATE events SET subject = ?, prev_hash = ?, hash = ? WHERE id = ?');
  for (const r of rows) {
    if (r.id === id) r.subject = subject;
    r.prev_hash = prev;
    r.hash = rowHash(r);
    upd.run(r.subject, r.prev_hash, r.hash, r.id);
    prev = r.hash as string;
  }
  db.prepare('UPDATE chain_head SET last_hash = ?').run(prev);
  db.close();
}

function bareRepo(t: { teardown(fn: () => void): void }): string {
  const dir = tempDir('pg-anchor-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('git', ['init', '--bare', '-q', dir]);
  return dir;
}

t.test('a consistently rehashed log passes plain verify and fails --checkpoints, naming the first contradicted checkpoint', async (t) => {
  const data = tempDir('pg-cp-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const anchor = bareRepo(t);
  const file = join(data, '..', `${data.split('/').pop()}-cps.jsonl`);
  t.teardown(() => rmSync(file, { force: true }));
  seed(data, 5);
  let r = cli(['audit', 'checkpoint', '--data', data, '--publish', `git:${anchor}`, '--publish', `file:${file}`]);
  t.equal(r.code, 0, r.err);
  t.match(r.out, /checkpoint: 5 row\(s\)/);
  t.equal(statSync(join(data, 'audit-checkpoint.key')).mode & 0o777, 0o600, 'the signing key is 0600');
  seed(data, 3, 5);
  r = cli(['audit', 'checkpoint', '--data', data, '--publish', `git:${anchor}`, '--publish', `file:${file}`]);
  t.equal(r.code, 0, r.err);
  const log = execFileSync('git', ['-C', anchor, 'rev-list', 'refs/patchgate/audit'], { encoding: 'utf8' }).trim().split('\n');
  t.equal(log.length, 2, 'two checkpoints appended to refs/patchgate/audit');

  t.equal(cli(['audit', 'verify', '--data', data, '--checkpoints', `git:${anchor}`]).code, 0, 'an honest log extends its checkpoints');
  t.equal(cli(['audit', 'verify', '--data', data, '--checkpoints', `file:${file}`]).code, 0);

  // The checkpoint commits' first (oldest) one is what row 3 contradicts.
  const oldest = log[log.length - 1]!.slice(0, 12);
  rehash(data, 3, 'agent-EVIL');
  r = cli(['audit', 'verify', '--data', data]);
  t.equal(r.code, 0, 'the plain chain check cannot see a consistent rehash');
  r = cli(['audit', 'verify', '--data', data, '--checkpoints', `git:${anchor}`]);
  t.equal(r.code, 1);
  t.match(r.out, new RegExp(`TAMPERED: refs/patchgate/audit commit ${oldest} \\(rows 5,`), 'names the first checkpoint it contradicts');
  t.match(r.out, /row 5 hashes to .* the log was rewritten/);
  r = cli(['audit', 'verify', '--data', data, '--checkpoints', `file:${file}`]);
  t.equal(r.code, 1);
  t.match(r.out, /line 1 \(rows 5,/);
  r = cli(['audit', 'checkpoint', '--data', data]);
  t.equal(r.code, 2, 'a rewritten log is not signed again');
  t.match(r.err, /contradicts the last checkpoint \(8 rows/);
});

t.test('a log cut back below a published head fails', async (t) => {
  const data = tempDir('pg-cp-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const anchor = bareRepo(t);
  seed(data, 4);
  t.equal(cli(['audit', 'checkpoint', '--data', data, '--publish', anchor]).code, 0, 'a bare directory is a git target');
  // The owner deletes the last two rows and moves the head back consistently.
  const db = new Database(join(data, 'patchgate.db'));
  db.exec('DROP TRIGGER events_no_delete');
  db.prepare('DELETE FROM events WHERE id > 2').run();
  const h = db.prepare('SELECT hash FROM events WHERE id = 2').get() as { hash: string };
  db.prepare('UPDATE chain_head SET last_id = 2, last_hash = ?').run(h.hash);
  db.close();
  t.equal(cli(['audit', 'verify', '--data', data]).code, 0, 'plain verify passes');
  const r = cli(['audit', 'verify', '--data', data, '--checkpoints', anchor]);
  t.equal(r.code, 1);
  t.match(r.out, /records 4 row\(s\) but the log has 2: the log was cut back/);
});

t.test('a checkpoint whose signature (or content) was altered is refused', async (t) => {
  const data = tempDir('pg-cp-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const file = join(data, 'published.jsonl');
  seed(data, 2);
  t.equal(cli(['audit', 'checkpoint', '--data', data, '--publish', `file:${file}`]).code, 0);
  const note = (JSON.parse(readFileSync(file, 'utf8').trim()) as { checkpoint: string }).checkpoint;
  t.match(note, /^patchgate\.invalid\/audit\/[0-9a-f]{16}\n2\n[A-Za-z0-9+/]{43}=\nprev 0{64}\nhead [0-9a-f]{64}\ntime \S+\n\n\u2014 patchgate\.invalid\/audit\/[0-9a-f]{16} \S+\n$/, 'a C2SP signed note with a tlog-checkpoint body');
  const sigB64 = note.trimEnd().split(' ').pop()!;
  const sig = Buffer.from(sigB64, 'base64');
  sig[10] = sig[10]! ^ 0x01;
  writeFileSync(file, JSON.stringify({ checkpoint: note.replace(sigB64, sig.toString('base64')) }) + '\n');
  let r = cli(['audit', 'verify', '--data', data, '--checkpoints', `file:${file}`]);
  t.equal(r.code, 1);
  t.match(r.out, /line 1 .*checkpoint refused: the signature of patchgate\.invalid\/audit\/\S+ \(key [0-9a-f]{8}\) does not verify/);
  // The size lowered to hide a truncation: the signature no longer covers it.
  writeFileSync(file, JSON.stringify({ checkpoint: note.replace('\n2\n', '\n1\n') }) + '\n');
  r = cli(['audit', 'verify', '--data', data, '--checkpoints', `file:${file}`]);
  t.equal(r.code, 1);
  t.match(r.out, /signature .* does not verify/);
  // Unparsable input fails closed with the place named.
  writeFileSync(file, '{"format":"nope"}\n');
  r = cli(['audit', 'verify', '--data', data, '--checkpoints', `file:${file}`]);
  t.equal(r.code, 2);
  t.match(r.err, /line 1: not a patchgate checkpoint/);
  // An empty source proves nothing.
  writeFileSync(file, '');
  t.equal(cli(['audit', 'verify', '--data', data, '--checkpoints', `file:${file}`]).code, 1);
});

t.test('an anchor credential in a URL on the command line is refused; from a file it is used and never shown', async (t) => {
  const data = tempDir('pg-cp-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  seed(data, 1);
  let r = cli(['audit', 'checkpoint', '--data', data, '--publish', 'git:http://user:s3cr3t-token@127.0.0.1:9/x.git']);
  t.equal(r.code, 2, 'refused before anything runs');
  t.match(r.err, /--publish: http:\/\/\*\*\*@127\.0\.0\.1:9\/x\.git: a credential in a URL on the command line shows in `ps`; .*--checkpoint-credential-file/);
  t.equal(r.err.trim().split('\n').length, 1, 'one line');
  t.notMatch(r.out + r.err, /s3cr3t-token/, 'the credential never appears');
  const credFile = join(data, 'anchor.cred');
  writeFileSync(credFile, 'user:s3cr3t-token\n', { mode: 0o600 });
  r = cli(['audit', 'checkpoint', '--data', data, '--publish', 'git:http://127.0.0.1:9/x.git', '--checkpoint-credential-file', credFile]);
  t.equal(r.code, 1, 'a failed publish is a failed command');
  t.match(r.out, /FAILED: cannot publish the checkpoint/);
  t.notMatch(r.out + r.err, /s3cr3t-token/, 'the credential never appears');
});

t.test('audit export --since --format jsonl: stored rows oldest first, each hash recomputable', async (t) => {
  const data = tempDir('pg-cp-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const s = AuditStore.open(join(data, 'patchgate.db'));
  s.appendAdmin({ time: '2026-01-01T00:00:00Z', actor: 'cli', action: 'repo.create', subject: 'old' });
  s.appendAdmin({ time: '2026-02-01T00:00:00Z', actor: 'cli', action: 'repo.create', subject: 'new1' });
  s.appendAdmin({ time: '2026-02-02T00:00:00Z', actor: 'cli', action: 'repo.create', subject: 'new2' });
  s.close();
  const r = cli(['audit', 'export', '--data', data, '--since', '2026-01-15', '--format', 'jsonl']);
  t.equal(r.code, 0, r.err);
  const rows = r.out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.same(rows.map((x) => x.subject), ['new1', 'new2']);
  for (const x of rows) t.equal(rowHash(x), x.hash, `row ${x.id} hash recomputes from the exported line`);
  t.equal(rows[1]!.prev_hash, rows[0]!.hash);
});

t.test('a published file: a checkpoint written twice in a row (a retried publish) is no contradiction; a field beside the note is refused', async (t) => {
  const data = tempDir('pg-cp-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const file = join(data, 'published.jsonl');
  seed(data, 2);
  t.equal(cli(['audit', 'checkpoint', '--data', data, '--publish', `file:${file}`]).code, 0);
  seed(data, 2, 2);
  t.equal(cli(['audit', 'checkpoint', '--data', data, '--publish', `file:${file}`]).code, 0);
  const [a, b] = readFileSync(file, 'utf8').trim().split('\n');
  // The last one twice, and the first one twice: each as a retried publish leaves it.
  writeFileSync(file, `${a}\n${b}\n${b}\n`);
  let r = cli(['audit', 'verify', '--data', data, '--checkpoints', `file:${file}`]);
  t.equal(r.code, 0, r.out + r.err);
  t.match(r.out, /^ok: 4 row\(s\), hash chain intact, extends all 2 checkpoint\(s\)/);
  writeFileSync(file, `${a}\n${a}\n${b}\n`);
  r = cli(['audit', 'verify', '--data', data, '--checkpoints', `file:${file}`]);
  t.equal(r.code, 0, r.out + r.err);
  // One that comes back after another is still a splice.
  writeFileSync(file, `${a}\n${b}\n${a}\n`);
  r = cli(['audit', 'verify', '--data', data, '--checkpoints', `file:${file}`]);
  t.equal(r.code, 1);
  t.match(r.out, /line 3 .*is contradicted: it does not follow the checkpoint before it/);
  // A field beside the note (no signature covers it) is refused, not ignored; so is the line for a new checkpoint.
  const withField = JSON.stringify({ ...JSON.parse(b!), size: 999 });
  writeFileSync(file, `${a}\n${withField}\n`);
  r = cli(['audit', 'verify', '--data', data, '--checkpoints', `file:${file}`]);
  t.equal(r.code, 2);
  t.match(r.err, /line 2: a checkpoint line is \{"checkpoint": NOTE\} and nothing else; it also holds "size", which no signature covers/);
  r = cli(['audit', 'checkpoint', '--data', data, '--publish', `file:${file}`]);
  t.equal(r.code, 1, 'publishing onto it fails (the target cannot be read)');
  t.match(r.out, /FAILED: .*line 2: a checkpoint line is \{"checkpoint": NOTE\} and nothing else/);
});
