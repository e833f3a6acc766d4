// Issue 45, item 5, through a real `patchgate serve` process: files planted in
// `<data>/intents/` before a start (a `*.json` symlink to a file holding a secret, a FIFO, an
// oversized file, garbage JSON, and the journal itself as a symlink) do not stop or hold the
// start, are named in its log, and nothing of their content appears anywhere in what the
// process prints; the journal's symlink target is neither read nor written, and pushes are
// journaled in a new journal of the gate's own. (The reader itself: ./intent-journal.test.ts.)

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync, refIn } from '../helpers/gate.js';
import { cli, serve } from '../helpers/serve.js';

t.test('a start with planted files in the intent folder starts, names them, and prints nothing of them', async (t) => {
  const root = tempDir('pg-foreign-');
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const data = join(root, 'data');
  cli('repo', 'create', 'app', '--data', data);
  const human = cli('token', 'create', 'alice', '--role', 'human', '--data', data);
  const agent = cli('token', 'create', 'agent-1', '--role', 'agent', '--data', data);

  const canary = `CANARY-${randomBytes(8).toString('hex')}`;
  const secret = join(root, 'passwd');
  const secretText = `root:x:0:0:${canary}:/root:/bin/bash\n`;
  writeFileSync(secret, secretText);
  const entry = (pushId: string) => JSON.stringify({ pushId, repo: 'app', repoDir: join(data, 'repos', 'app.git'), upstream: false, time: '2026-01-01T00:00:00.000Z', note: canary });
  const intents = join(data, 'intents');
  mkdirSync(intents, { recursive: true, mode: 0o700 });
  symlinkSync(secret, join(intents, 'leak.json'));
  execFileSync('mkfifo', [join(intents, 'fifo.json')]);
  writeFileSync(join(intents, 'huge.json'), entry('huge').replace(canary, canary + ' '.repeat(2 * 1024 * 1024)));
  writeFileSync(join(intents, 'garbage.json'), `${canary} }{ not json at all`);
  const journalTarget = join(root, 'journal-target');
  const journalText = `${JSON.stringify({ open: JSON.parse(entry('planted')) })}\n${canary}\n`;
  writeFileSync(journalTarget, journalText);
  symlinkSync(journalTarget, join(intents, 'journal.jsonl'));

  // It starts (the helper resolves once the URL is printed; a read of the FIFO would hold it forever).
  const srv = await serve(data);
  t.teardown(() => {
    if (srv.child.exitCode === null) srv.child.kill('SIGKILL');
  });
  const url = (user: string, s: string) => `http://${user}:${s}@127.0.0.1:${srv.port}/app.git`;

  // And it works: pushes go through, journaled in a journal of its own.
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'x = 1\n' });
  const seed = await gitAsync(w.dir, ['push', url('alice', human), 'main']);
  t.equal(seed.code, 0, seed.code ? seed.stderr : 'a person seeds main');
  w.checkout('agent/x', true);
  const tip = w.commit('fix', { 'src/app.py': 'x = 2\n' });
  const push = await gitAsync(w.dir, ['push', url('agent-1', agent), 'agent/x']);
  t.equal(push.code, 0, push.code ? push.stderr : 'an agent push is accepted');
  t.equal(await refIn(join(data, 'repos', 'app.git'), 'refs/heads/agent/x'), tip);
  t.ok(lstatSync(join(intents, 'journal.jsonl')).isFile(), 'the journal is a file of the gate\'s own now');

  srv.child.kill('SIGTERM');
  await srv.exited;
  const out = srv.out();
  for (const name of ['leak.json', 'fifo.json', 'huge.json', 'garbage.json']) t.match(out, new RegExp(`intent journal: unreadable entry ${name.replace('.', '\\.')}: `), `${name} is named in the log`);
  t.match(out, /journal\.jsonl is not a file the gate wrote \(a symbolic link \(not followed\)\); not read, moved aside as journal\.jsonl\.unread-\d+/);
  t.ok(readdirSync(intents).some((n) => /^journal\.jsonl\.unread-\d+$/.test(n)), 'the planted journal is kept for a person');
  t.notMatch(out, canary, 'nothing of any planted file\'s content is in the server\'s output');
  t.notMatch(out, 'root:x:0:0', 'not even its first bytes');
  t.notMatch(out, agent, 'nor a token');
  t.equal(readFileSync(journalTarget, 'utf8'), journalText, 'the journal symlink\'s target was neither truncated nor appended to');
  t.equal(readFileSync(secret, 'utf8'), secretText);
});
