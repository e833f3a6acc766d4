// The intent journal (src/server/intent-journal.ts): one append-only file whose entries are
// durable before `open` resolves, settled by appended lines, emptied when nothing is open,
// rewritten at start with what is left; a torn last line, a bad line and the earlier
// one-file-per-push format are handled. End to end: an agent push is journaled and settled,
// and a journal that cannot be written refuses the push. Only files the gate wrote are read
// (src/server/owned-file.ts): planted symlinks, FIFOs, hard links, oversized, foreign and
// garbage files are named and skipped, nothing of their content reported
// (the same through a real `serve`: ./intent-journal-foreign.test.ts).

import t from 'tap';
import { appendFileSync, chmodSync, chownSync, linkSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { IntentJournal, JOURNAL_FILE, LEGACY_MAX_BYTES, replay } from '../../src/server/intent-journal.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, seededGate, startGate } from '../helpers/gate.js';

const entry = (pushId: string) => ({ pushId, repo: 'app', repoDir: '/srv/app.git', upstream: false });
const lines = (dir: string): string[] => readFileSync(join(dir, JOURNAL_FILE), 'utf8').split('\n').filter(Boolean);

t.test('open is on disk before it resolves; settle closes it; an empty journal starts again', async (t) => {
  const dir = join(tempDir('pg-journal-'), 'intents');
  const j = new IntentJournal(dir);
  await j.open(entry('p1'));
  await j.open(entry('p2'));
  t.equal((statSync(dir).mode & 0o777), 0o700, 'the folder is private');
  t.equal((statSync(join(dir, JOURNAL_FILE)).mode & 0o777), 0o600, 'the file is private');
  // Another reader (the next start) sees both, without this process's memory.
  t.same(new IntentJournal(dir).list().entries.map((e) => e.pushId), ['p1', 'p2']);
  j.settle('p1');
  t.same(new IntentJournal(dir).list().entries.map((e) => e.pushId), ['p2'], 'p1 settled by an appended line');
  t.equal(lines(dir).length, 3, 'two opens and one settle');
  j.settle('p2');
  t.same(lines(dir), [], 'nothing open: the file was emptied');
  await j.open(entry('p3'));
  t.same(new IntentJournal(dir).list().entries.map((e) => e.pushId), ['p3'], 'appends go on after the file was emptied');
  await j.close();
});

t.test('entries left by an earlier process keep the file from being emptied until they are settled', async (t) => {
  const dir = join(tempDir('pg-journal-'), 'intents');
  const before = new IntentJournal(dir);
  await before.open(entry('old'));
  await before.close(); // the process died with `old` open
  const j = new IntentJournal(dir);
  t.same(j.list().entries.map((e) => e.pushId), ['old'], 'read at start');
  await j.open(entry('new'));
  j.settle('new');
  t.same(new IntentJournal(dir).list().entries.map((e) => e.pushId), ['old'], 'settling this run\'s push did not drop the earlier one');
  j.settle('old');
  t.same(lines(dir), [], 'all settled: emptied');
  await j.close();
});

t.test('a torn last line is dropped at the rewrite, a bad line is named and kept, settled entries go', async (t) => {
  const dir = join(tempDir('pg-journal-'), 'intents');
  const j = new IntentJournal(dir);
  await j.open(entry('a'));
  await j.open(entry('b'));
  j.settle('a');
  await j.close();
  appendFileSync(join(dir, JOURNAL_FILE), 'not json\n{"open":{"pushId":"c","re');
  const again = new IntentJournal(dir);
  const seen = again.list();
  t.same(seen.entries.map((e) => e.pushId), ['b']);
  t.equal(seen.bad.length, 1, 'the bad line is named');
  t.match(seen.bad[0], /line 4/);
  t.match(seen.torn, /"pushId":"c"/, 'the torn append is reported as torn, not as an entry');
  again.compact();
  const after = lines(dir);
  t.equal(after.length, 2, 'the open entry and the bad line are left');
  t.match(after[0], /"pushId":"b"/);
  t.equal(after[1], 'not json');
  t.same(replay(readFileSync(join(dir, JOURNAL_FILE), 'utf8')).torn, null, 'no torn line after the rewrite');
});

t.test('entries of the earlier format (a file per push) are read and removed when settled', async (t) => {
  const dir = join(tempDir('pg-journal-'), 'intents');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'legacy-1.json'), JSON.stringify({ ...entry('legacy-1'), time: '2026-01-01T00:00:00.000Z' }) + '\n');
  writeFileSync(join(dir, 'broken.json'), '{');
  const j = new IntentJournal(dir);
  const seen = j.list();
  t.same(seen.entries.map((e) => e.pushId), ['legacy-1']);
  t.match(seen.bad.join('\n'), /broken\.json/);
  j.settle('legacy-1');
  t.same(new IntentJournal(dir).list().entries, [], 'settled');
});

t.test('a journal that cannot be written rejects the open', async (t) => {
  const parent = tempDir('pg-journal-');
  writeFileSync(join(parent, 'intents'), 'a file where the folder should be');
  const j = new IntentJournal(join(parent, 'intents'));
  await t.rejects(j.open(entry('x')));
  t.throws(() => j.list(), 'and a start that reads it fails loudly instead of finding nothing');
});

t.test('end to end: a push is journaled before its accept and settled after; an unwritable journal refuses the push', async (t) => {
  const gate = await startGate(t);
  const intentsDir = join(gate.data, 'intents');
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n' });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0);
  w.checkout('agent/fix', true);
  const head = w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.equal(r.code, 0, r.stderr);
  const [row] = gate.srv.audit.query({ kind: 'push', actor: 'agent-1' });
  t.ok(row?.pushId);
  // The open line is written whatever happens next; the settle follows receive-pack's end.
  const deadline = Date.now() + 30_000;
  while (new IntentJournal(intentsDir).has(row!.pushId!) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
  t.notOk(new IntentJournal(intentsDir).has(row!.pushId!), 'settled');

  // The journal's folder is replaced by a file: the next accept cannot be made durable.
  rmSync(intentsDir, { recursive: true, force: true });
  writeFileSync(intentsDir, 'not a folder');
  chmodSync(intentsDir, 0o400);
  const w2 = w.commit('fix 2', { 'src/app.py': 'def add(a, b):\n    return (b + a)\n' });
  const r2 = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.not(r2.code, 0, 'refused');
  t.match(r2.stderr, /intent entry could not be written|could not record push/, 'with the reason');
  t.equal(await refIn(bareDir(gate, 'app'), 'refs/heads/agent/fix'), head, 'the ref did not move');
  t.not(head, w2);
});

t.test('a push\'s entry is opened while it is judged; a refused push leaves none open', async (t) => {
  let seen: string[] = [];
  let intentsDir = '';
  // Just before the rules run, the journal already holds the push's entry (opened while judged).
  const { gate, agent, w } = await seededGate(t, { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'def test_add():\n    assert True\n' }, {
    beforeJudge: async () => {
      await new Promise((res) => setTimeout(res, 100));
      if (intentsDir) seen = new IntentJournal(intentsDir).list().entries.map((e) => e.pushId);
    },
  });
  intentsDir = join(gate.data, 'intents');
  w.checkout('agent/bad', true);
  w.commit('weaken', { 'tests/test_app.py': 'def test_add():\n    pass\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/bad']);
  t.not(r.code, 0, 'a write to the test tree is refused');
  const [row] = gate.srv.audit.query({ kind: 'push', actor: 'agent-1' });
  t.equal(row?.verdict, 'reject');
  t.ok(seen.includes(row!.pushId!), 'its entry was open while it was judged');
  t.notOk(new IntentJournal(intentsDir).has(row!.pushId!), 'and is closed by the time the refusal is answered');
});

t.test('only files the gate wrote are read: a symlink, a FIFO, a hard link, an oversized, a foreign or a garbage file is skipped and named, never quoted', async (t) => {
  const root = tempDir('pg-journal-');
  const dir = join(root, 'intents');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const canary = `CANARY-${randomBytes(8).toString('hex')}`;
  const secret = join(root, 'passwd');
  const secretText = `root:x:0:0:${canary}:/root:/bin/bash\n`;
  writeFileSync(secret, secretText);
  // A valid entry behind each trap: one read by mistake would show up in `entries`.
  const valid = (pushId: string) => JSON.stringify({ ...entry(pushId), time: '2026-01-01T00:00:00.000Z', note: canary }) + '\n';
  symlinkSync(secret, join(dir, 'leak.json'));
  execFileSync('mkfifo', [join(dir, 'pipe.json')]);
  writeFileSync(join(dir, 'big.json'), valid('big').replace(canary, canary + ' '.repeat(LEGACY_MAX_BYTES)));
  writeFileSync(join(dir, 'garbage.json'), `${canary} {{{ not json`);
  writeFileSync(join(root, 'hard-target'), valid('hard'));
  linkSync(join(root, 'hard-target'), join(dir, 'hard.json'));
  writeFileSync(join(dir, 'elsewhere.json'), valid('not-its-name'));
  writeFileSync(join(dir, 'good-1.json'), valid('good-1'));
  const foreignUser = process.getuid?.() === 0;
  if (foreignUser) {
    writeFileSync(join(dir, 'other.json'), valid('other'));
    chownSync(join(dir, 'other.json'), 65534, 65534);
  }
  // The journal itself planted as a symlink to a file that looks like a journal.
  const journalTarget = join(root, 'journal-target');
  const journalText = JSON.stringify({ open: { ...entry('planted'), time: '2026-01-01T00:00:00.000Z' } }) + '\n' + canary + '\n';
  writeFileSync(journalTarget, journalText);
  symlinkSync(journalTarget, join(dir, JOURNAL_FILE));

  const logged: string[] = [];
  const j = new IntentJournal(dir, (l) => logged.push(l));
  const seen = j.list();
  t.same(seen.entries.map((e) => e.pushId), ['good-1'], 'only the entry the gate wrote is read');
  const bad = seen.bad.join('\n');
  for (const [name, why] of [['leak.json', /symbolic link/], ['pipe.json', /FIFO/], ['big.json', /over the 1048576/], ['garbage.json', /not JSON/], ['hard.json', /2 hard links/], ['elsewhere.json', /not its file name/]] as const) {
    t.match(bad, new RegExp(`${name.replace('.', '\\.')}: [^\\n]*${why.source}`), `${name} is named with what it is`);
  }
  if (foreignUser) t.match(bad, /other\.json: not read, owned by uid 65534/);
  t.notMatch(bad, canary, 'nothing of any file\'s content is in what is reported');
  t.notMatch(bad, 'root:x', 'not even its first bytes');

  // At start the planted journal is moved aside (not read, not written through) and named.
  j.compact();
  t.equal(readFileSync(journalTarget, 'utf8'), journalText, 'the symlink\'s target is untouched');
  t.equal(logged.length, 1);
  t.match(logged[0], /intent journal: journal\.jsonl is not a file the gate wrote \(a symbolic link \(not followed\)\); not read, moved aside as journal\.jsonl\.unread-\d+/);
  t.notMatch(logged.join('\n'), canary);
  t.ok(readdirSync(dir).some((n) => /^journal\.jsonl\.unread-\d+$/.test(n)), 'kept for a person');
  await j.open(entry('p1'));
  t.ok(lstatSync(join(dir, JOURNAL_FILE)).isFile(), 'a new journal of the gate\'s own');
  t.same(new IntentJournal(dir).list().entries.map((e) => e.pushId).sort(), ['good-1', 'p1'], 'readable again');
  t.ok(new IntentJournal(dir).has('p1'));

  // Swapped for a symlink while running: the next append moves it aside instead of writing through; a settle leaves the target alone.
  rmSync(join(dir, JOURNAL_FILE));
  symlinkSync(journalTarget, join(dir, JOURNAL_FILE));
  j.settle('p1');
  t.equal(readFileSync(journalTarget, 'utf8'), journalText, 'a settle neither truncates nor appends through a symlink');
  await j.open(entry('p2'));
  t.equal(readFileSync(journalTarget, 'utf8'), journalText, 'an append does not write through it');
  t.ok(lstatSync(join(dir, JOURNAL_FILE)).isFile());
  t.ok(new IntentJournal(dir).has('p2'));
  t.equal(logged.length, 2, 'and says so');
  t.notMatch(logged.join('\n'), canary);
  await j.close();

  // The compacting temp file planted as a symlink is not written through either.
  symlinkSync(journalTarget, join(dir, `${JOURNAL_FILE}.tmp`));
  j.compact();
  t.equal(readFileSync(journalTarget, 'utf8'), journalText, 'the rewrite does not write through a planted temp name');
  t.ok(new IntentJournal(dir).has('p2'), 'and the rewritten journal keeps the open entry');
  t.equal(readFileSync(secret, 'utf8'), secretText);
});

t.test('a symlink where the journal\'s folder should be is refused, not followed', async (t) => {
  const root = tempDir('pg-journal-');
  mkdirSync(join(root, 'elsewhere'));
  writeFileSync(join(root, 'elsewhere', 'x-1.json'), JSON.stringify({ ...entry('x-1'), time: '2026-01-01T00:00:00.000Z' }));
  symlinkSync(join(root, 'elsewhere'), join(root, 'intents'));
  const j = new IntentJournal(join(root, 'intents'));
  t.throws(() => j.list(), { name: 'ForeignFileError', message: /intents: not used, a symbolic link/ });
  await t.rejects(j.open(entry('y')), { name: 'ForeignFileError' });
  t.same(readdirSync(join(root, 'elsewhere')), ['x-1.json'], 'nothing was written through it');
});
