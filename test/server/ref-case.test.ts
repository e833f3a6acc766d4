// End-to-end: protected refs are matched case-insensitively. On the server's case-sensitive
// file system `Main` and `Release/1` are new branches, but on a case-insensitive client they
// are the trusted branch and a release branch: the real git client's push is refused.

import t from 'tap';
import { TestRepo } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';

t.test('an agent push to Main or Release/1 is refused like main and release/1', async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const bare = bareDir(gate, 'app');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'x = 1\n' });
  const seed = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(seed.code, 0, seed.code ? seed.stderr : 'a person seeds main');
  w.checkout('agent/fix', true);
  const head = w.commit('fix', { 'src/app.py': 'x = 2\n' });
  const remote = gate.remote('app', 'agent-1', agent);

  const main = await gitAsync(w.dir, ['push', remote, 'HEAD:refs/heads/Main']);
  t.not(main.code, 0, 'push to Main refused');
  t.match(main.stderr, /remote: .*\[refs\] ref refs\/heads\/Main is the trusted branch main/);
  t.match(main.stderr, /! \[remote rejected\] HEAD -> Main \(pre-receive hook declined\)/);
  t.equal(await refIn(bare, 'refs/heads/Main'), null, 'Main was not created');

  const rel = await gitAsync(w.dir, ['push', remote, 'HEAD:refs/heads/Release/1']);
  t.not(rel.code, 0, 'push to Release/1 refused');
  t.match(rel.stderr, /remote: .*\[refs\] ref refs\/heads\/Release\/1 matches protected branch pattern release\/\*\*/);
  t.match(rel.stderr, /remote: .*next step: push to an agent branch instead/);
  t.equal(await refIn(bare, 'refs/heads/Release/1'), null, 'Release/1 was not created');

  const ok = await gitAsync(w.dir, ['push', remote, 'agent/fix']);
  t.equal(ok.code, 0, ok.code ? ok.stderr : 'an ordinary agent branch is still accepted');
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), head);
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.same(rows.map((r) => `${r.ref}:${r.verdict}`).sort(), ['refs/heads/Main:reject', 'refs/heads/Release/1:reject', 'refs/heads/agent/fix:accept']);
});
