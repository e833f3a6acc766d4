// The intent journal (src/server/intent-journal.ts): one append-only file whose entries are
// durable before `open` resolves, settled by appended lines, emptied when nothing is open,
// rewritten at start with what is left; a torn last line, a bad line and the earlier
// one-file-per-push format are handled. End to end: an agent push is journaled and settled,
// and a journal that cannot be written refuses the push.

import t from 'tap';
import { appendFileSync, chmodSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { IntentJournal, JOURNAL_FILE, replay } from '../../src/server/intent-journal.js';
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
