// Table tests for the refs rule, judged as the hook judges a push (mode 'push').

import t from 'tap';
import { Git } from '../../src/git/git.js';
import { judgeUpdate } from '../../src/policy/engine.js';
import { TestRepo } from '../helpers/repo.js';

t.test('refs rule', async (t) => {
  const r = TestRepo.init(t);
  const c1 = r.commit('base', { 'src/a.py': 'x = 1\n' });
  const c2 = r.commit('more', { 'src/a.py': 'x = 2\n' });
  const c3 = r.commit('more', { 'src/a.py': 'x = 3\n' });
  r.git('branch', 'agent/x', c2);
  const zero = '0'.repeat(40);
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const table: Array<{ name: string; ref: string; old: string; new: string; role?: 'agent' | 'human'; ids: string[] }> = [
    { name: 'fast-forward an agent branch', ref: 'refs/heads/agent/x', old: c2, new: c3, ids: [] },
    { name: 'create an agent branch', ref: 'refs/heads/agent/y', old: zero, new: c3, ids: [] },
    { name: 'force-push to an ancestor', ref: 'refs/heads/agent/x', old: c2, new: c1, ids: ['nonFastForward'] },
    { name: 'push to the trusted branch', ref: 'refs/heads/main', old: c2, new: c3, ids: ['trustedBranch'] },
    { name: 'push to a release branch', ref: 'refs/heads/release/1.0', old: zero, new: c3, ids: ['protectedBranch'] },
    { name: 'delete a branch', ref: 'refs/heads/agent/x', old: c2, new: zero, ids: ['delete'] },
    { name: 'create a tag', ref: 'refs/tags/v1', old: zero, new: c3, ids: ['tag'] },
    { name: 'a ref outside refs/heads', ref: 'refs/notes/commits', old: zero, new: c3, ids: ['outsideHeads'] },
    { name: 'a person may push the trusted branch (reported, waived)', ref: 'refs/heads/main', old: c2, new: c3, role: 'human', ids: ['trustedBranch'] },
  ];
  for (const row of table) {
    const d = await judgeUpdate({ git, role: row.role ?? 'agent', mode: 'push', trustedTip: c3 }, { ref: row.ref, oldId: row.old, newId: row.new });
    const refs = d.outcomes.find((o) => o.rule === 'refs')!;
    const ids = refs.findings.map((f) => f.messageId);
    t.same(ids, row.ids, `${row.name}: message ids`);
    if (row.role === 'human') {
      t.equal(d.verdict, 'accept', `${row.name}: accepted`);
      t.equal(refs.status, 'waived');
    }
    else t.equal(d.verdict, row.ids.length ? 'reject' : 'accept', `${row.name}: verdict`);
    if (row.ids.length && row.role !== 'human') {
      t.equal(d.row, 'ref-not-allowed');
      t.ok(d.reasons.every((x) => x.ref === row.ref), 'reasons name the ref');
    }
  }
});

t.test('check --ref applies the ref rules to base..head', async (t) => {
  const { runCheck } = await import('../../src/commands/check.js');
  const r = TestRepo.init(t);
  r.commit('base', { 'src/a.py': 'x = 1\n' });
  const old = r.commit('second', { 'src/a.py': 'x = 2\n' });
  const d = await runCheck({ repo: r.dir, base: old, head: `${old}~1`, role: 'agent', ref: 'refs/heads/agent/x' });
  t.equal(d.verdict, 'reject');
  t.equal(d.reasons[0]!.messageId, 'nonFastForward');
  const plain = await runCheck({ repo: r.dir, base: old, head: `${old}~1`, role: 'agent' });
  t.equal(plain.outcomes.find((o) => o.rule === 'refs')!.status, 'skipped', 'without --ref there is no ref to judge');
});
