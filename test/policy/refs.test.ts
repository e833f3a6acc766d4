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
    { name: 'the trusted branch in another case', ref: 'refs/heads/Main', old: zero, new: c3, ids: ['trustedBranch'] },
    { name: 'the trusted branch in upper case', ref: 'refs/heads/MAIN', old: zero, new: c3, ids: ['trustedBranch'] },
    { name: 'a release branch in another case', ref: 'refs/heads/Release/1', old: zero, new: c3, ids: ['protectedBranch'] },
    { name: 'a release branch in upper case', ref: 'refs/heads/RELEASE/2.0', old: zero, new: c3, ids: ['protectedBranch'] },
    { name: 'the release folder itself', ref: 'refs/heads/Release', old: zero, new: c3, ids: ['protectedBranch'] },
    { name: 'a branch that only starts like main', ref: 'refs/heads/mainline', old: zero, new: c3, ids: [] },
    { name: 'a branch that only starts like release', ref: 'refs/heads/releases-notes', old: zero, new: c3, ids: [] },
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

t.test('refs rule: protected and trusted branch names after Unicode NFC and case folding', async (t) => {
  const r = TestRepo.init(t);
  const c1 = r.commit('base', { 'src/a.py': 'x = 1\n' });
  r.commit('policy', { 'ci/patchgate.json': JSON.stringify({ trustedBranch: 'd\u00e9v', refs: { protectedBranches: ['r\u00e9lease/**'] } }) });
  const tip = r.commit('more', { 'src/a.py': 'x = 2\n' });
  const zero = '0'.repeat(40);
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const table: Array<{ name: string; ref: string; ids: string[] }> = [
    { name: 'trusted branch, precomposed', ref: 'refs/heads/d\u00e9v', ids: ['trustedBranch'] },
    { name: 'trusted branch, decomposed', ref: 'refs/heads/de\u0301v', ids: ['trustedBranch'] },
    { name: 'trusted branch, decomposed, upper case', ref: 'refs/heads/DE\u0301V', ids: ['trustedBranch'] },
    { name: 'protected branch, decomposed, mixed case', ref: 'refs/heads/Re\u0301lease/1', ids: ['protectedBranch'] },
    { name: 'protected branch, upper case with a precomposed capital', ref: 'refs/heads/R\u00c9LEASE/1', ids: ['protectedBranch'] },
    { name: 'an unaccented name is another branch', ref: 'refs/heads/release/1', ids: [] },
    { name: 'an unaccented trusted name is another branch', ref: 'refs/heads/dev', ids: [] },
  ];
  for (const row of table) {
    const d = await judgeUpdate({ git, role: 'agent', mode: 'push', trustedTip: tip }, { ref: row.ref, oldId: zero, newId: tip });
    const refs = d.outcomes.find((o) => o.rule === 'refs')!;
    t.same(refs.findings.map((f) => f.messageId), row.ids, `${row.name}: message ids`);
    if (row.ids.includes('protectedBranch')) t.match(refs.findings[0]!.message, /protected branch pattern r\u00e9lease\/\*\*/, `${row.name}: names the pattern`);
  }
  void c1;
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
