// Partial clones through the gate (issue 49): agents in large monorepos clone with
// `--filter=blob:none`. The gate's repositories allow filters (uploadpack.allowFilter), so the
// clone is partial, not a full clone with a warning; and a push from such a clone is judged as
// any other: a source edit lands, a test edit is refused by the write-block.

import t from 'tap';
import { join } from 'node:path';
import { gitAsync, refIn, seededGate } from '../helpers/gate.js';
import { TestRepo, tempDir } from '../helpers/repo.js';

t.test('a partial clone through the gate is partial, and its pushes are judged as usual', async (t) => {
  const { gate, agent, w, bare } = await seededGate(t, { 'src/app.py': 'x = 1\n', 'tests/test_app.py': 'def test_x():\n    assert True\n', 'docs/old.txt': 'gone soon\n' });
  const human = gate.token('bob', 'human');
  w.commit('drop the old doc', { 'docs/old.txt': null });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'bob', human), 'main'])).code, 0);
  const oldBlob = w.git('rev-parse', 'HEAD~1:docs/old.txt');

  const dir = join(tempDir('pg-partial-'), 'clone');
  const c = await gitAsync(process.cwd(), ['clone', '-q', '--filter=blob:none', gate.remote('app', 'agent-1', agent), dir]);
  t.equal(c.code, 0, c.stderr);
  t.notMatch(c.stderr, /filtering not recognized by server/, 'the server took the filter');
  const clone = new TestRepo(dir);
  t.equal(clone.git('config', 'remote.origin.promisor'), 'true', 'the clone is partial');
  const missing = clone.git('rev-list', '--objects', '--all', '--missing=print').split('\n').filter((l) => l.startsWith('?')).map((l) => l.slice(1));
  t.ok(missing.includes(oldBlob), 'a blob only the history names was not sent');

  clone.commit('an honest fix', { 'src/app.py': 'x = 2\n' });
  const ok = await gitAsync(dir, ['push', 'origin', 'HEAD:refs/heads/agent/fix']);
  t.equal(ok.code, 0, ok.stderr);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), clone.git('rev-parse', 'HEAD'));

  clone.commit('make it green', { 'tests/test_app.py': 'def test_x():\n    pass\n' });
  const bad = await gitAsync(dir, ['push', 'origin', 'HEAD:refs/heads/agent/fix']);
  t.not(bad.code, 0);
  t.match(bad.stderr, /\[write-block\] commit \w+ modifies protected path tests\/test_app\.py/);
});
