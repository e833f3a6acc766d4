// Protocol variants through the front, with the real git client: protocol v2 (negotiated
// down to v0), shallow clones and fetches, a push from a shallow clone, thin and non-thin
// packs, and a push of a ref node-git-server cannot route (refused in git's own format).
// Each either works through the gate (judged and audited) or is refused with a clear line.

import t from 'tap';
import { join } from 'node:path';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';

async function setup(t: Parameters<Parameters<typeof t.test>[1]>[0]) {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  for (let i = 0; i < 3; i++) w.commit(`c${i}`, { 'src/app.py': `x = ${i}\n`, 'tests/test_app.py': `def test_x():\n    assert ${i} == ${i}\n` });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0, 'a person seeds main');
  return { gate, human, agent, w, bare: bareDir(gate, 'app') };
}

t.test('protocol v2 clone and fetch work (the server answers v0)', async (t) => {
  const { gate, agent } = await setup(t);
  const dir = join(tempDir('pg-v2-'), 'c');
  const r = await gitAsync('/', ['-c', 'protocol.version=2', 'clone', '-q', gate.remote('app', 'agent-1', agent), dir]);
  t.equal(r.code, 0, r.code ? r.stderr : 'v2 clone works');
  const f = await gitAsync(dir, ['-c', 'protocol.version=2', 'fetch', 'origin']);
  t.equal(f.code, 0, f.code ? f.stderr : 'v2 fetch works');
});

t.test('shallow clone, deepen, and an agent push from a shallow clone are judged', async (t) => {
  const { gate, agent, bare } = await setup(t);
  const dir = join(tempDir('pg-shallow-'), 'c');
  const c = await gitAsync('/', ['clone', '-q', '--depth', '1', gate.remote('app', 'agent-1', agent), dir]);
  t.equal(c.code, 0, c.code ? c.stderr : 'shallow clone works');
  t.equal((await gitAsync(dir, ['rev-list', '--count', 'HEAD'])).stdout.trim(), '1');
  const d = await gitAsync(dir, ['fetch', '-q', '--deepen', '1', 'origin']);
  t.equal(d.code, 0, d.code ? d.stderr : 'fetch --deepen works');
  t.equal((await gitAsync(dir, ['rev-list', '--count', 'HEAD'])).stdout.trim(), '2');
  const w = new TestRepo(dir);
  w.checkout('agent/shallow', true);
  const good = w.commit('fix', { 'src/app.py': 'x = 9\n' });
  const ok = await gitAsync(dir, ['push', 'origin', 'agent/shallow']);
  t.equal(ok.code, 0, ok.code ? ok.stderr : 'a src/ push from a shallow clone lands');
  t.match(ok.stderr, /remote: patchgate: ACCEPT refs\/heads\/agent\/shallow/);
  t.equal(await refIn(bare, 'refs/heads/agent/shallow'), good);
  w.checkout('agent/shallow-bad', true);
  w.commit('weaken', { 'tests/test_app.py': 'def test_x():\n    pass\n' });
  const bad = await gitAsync(dir, ['push', 'origin', 'agent/shallow-bad']);
  t.not(bad.code, 0, 'a test-tree write from a shallow clone is refused');
  t.match(bad.stderr, /\[write-block\]/);
  t.equal(await refIn(bare, 'refs/heads/agent/shallow-bad'), null);
});

t.test('thin and non-thin pushes are both judged', async (t) => {
  const { gate, agent, w, bare } = await setup(t);
  for (const flag of ['--thin', '--no-thin']) {
    w.checkout('main').checkout(`agent/p${flag}`, true);
    const tip = w.commit(flag, { 'src/app.py': `x = "${flag}"\n` });
    const r = await gitAsync(w.dir, ['push', flag, gate.remote('app', 'agent-1', agent), `agent/p${flag}`]);
    t.equal(r.code, 0, r.code ? r.stderr : `${flag} push lands`);
    t.equal(await refIn(bare, `refs/heads/agent/p${flag}`), tip);
  }
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(rows.length, 2, 'both were audited');
});

t.test('a push of refs/notes only is refused in git\'s own format, naming the ref', async (t) => {
  const { gate, human, w, bare } = await setup(t);
  w.git('notes', 'add', '-m', 'a note', 'HEAD');
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'refs/notes/commits']);
  t.not(r.code, 0);
  t.match(r.stderr, /! \[remote rejected\] refs\/notes\/commits -> refs\/notes\/commits \(patchgate: only refs\/heads\/\* and refs\/tags\/\* can be pushed here/);
  t.match(r.stderr, /remote: patchgate:\s+next step: push a branch/);
  t.equal(await refIn(bare, 'refs/notes/commits'), null);
});
