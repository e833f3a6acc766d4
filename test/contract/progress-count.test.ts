// Issue 49: a contract phase said "19 files to read" and then "13 files parsed". The total counts
// every contract file of the revision; the walk does not read again a folder whose contract it
// knows already (here: the merge-base's unchanged folder, digested with the pushed commit). The
// end line now says how many were skipped and why, so the figures add up. Real git, real parse.

import t from 'tap';
import { runCheck } from '../../src/commands/check.js';
import { Progress } from '../../src/progress.js';
import { CONTRACT_SKIPPED_WHY } from '../../src/contract/digest.js';
import { TestRepo } from '../helpers/repo.js';

const mod = (name: string) => `def ${name}(x: int) -> int:\n    return x\n`;

t.test('check on a cold contract: each phase\'s parsed and skipped files add up to its total', async (t) => {
  const r = TestRepo.init(t);
  // src/a: 3 files, src/b: 2 files, src/c.py: 1 file (6 in all); the agent changes one file in src/a.
  r.commit('project', { 'src/a/one.py': mod('one'), 'src/a/two.py': mod('two'), 'src/a/three.py': mod('three'), 'src/b/four.py': mod('four'), 'src/b/five.py': mod('five'), 'src/c.py': mod('c') });
  r.checkout('agent', true).commit('agent', { 'src/a/one.py': `${mod('one')}\n# a comment only\n` });
  const lines: string[] = [];
  const d = await runCheck({ repo: r.dir, base: 'main', head: 'agent', role: 'agent', progress: { write: (s) => lines.push(s), isTTY: false, delayMs: 0 } });
  t.equal(d.verdict, 'accept', 'a comment does not move the contract');
  const text = lines.join('');
  const toRead = [...text.matchAll(/^(patchgate: contract of [^\n]*?): (\d+) files to read$/gm)].map((m) => ({ label: m[1]!, total: Number(m[2]) }));
  t.same(toRead.map((p) => p.total), [6, 6], 'the pushed commit\'s and the merge-base\'s phases, 6 contract files each');
  for (const p of toRead) {
    const esc = p.label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const done = new RegExp(`^${esc}: done, (\\d+) files parsed in [^;\\n]*(?:; (\\d+) skipped \\((.*)\\))?$`, 'm').exec(text);
    t.ok(done, `${p.label}: its end line`);
    const parsed = Number(done![1]);
    const skipped = Number(done![2] ?? 0);
    t.equal(parsed + skipped, p.total, `${p.label}: ${parsed} parsed and ${skipped} skipped make ${p.total}`);
    if (skipped) t.equal(done![3], CONTRACT_SKIPPED_WHY, 'the skipped files say why');
  }
  t.match(text, /contract of the merge-base [0-9a-f]+ [^\n]*: done, 4 files parsed in [^;\n]*; 2 skipped \(/, 'the merge-base shares the folder src/b with the pushed commit: its 2 files are not read again');
});

t.test('the end line without skipped units, or without a reason given, is as before', async (t) => {
  const out: string[] = [];
  const p = new Progress({ write: (s) => out.push(s), isTTY: false, now: () => 0, skippedWhy: 'cached' });
  p.phase('x', 4);
  p.tick(4);
  p.end();
  p.phase('y', 4);
  p.tick(1);
  p.end('stopped');
  const q = new Progress({ write: (s) => out.push(s), isTTY: false, now: () => 0 });
  q.phase('z', 4);
  q.tick(1);
  q.end();
  t.same(out.filter((l) => l.includes('done')), ['x: done, 4 files parsed in 0 s\n', 'y: done, 1 files parsed in 0 s; stopped\n', 'z: done, 1 files parsed in 0 s\n']);
});
