// Issue 49: a suite run of `patchgate ci` is not silent. The watch's form (src/ci/run-progress.ts)
// on a clock of its own, with a terminal and without; then real sandboxed pytest runs, where each
// run says when it starts (which run of how many) and the progress counts the tests the gate's
// reporter stream says finished.

import t from 'tap';
import { join } from 'node:path';
import { runLabel, RunWatch } from '../../src/ci/run-progress.js';
import { runCi } from '../../src/ci/command.js';
import { tempDir, TODAY } from './project.js';
import { bwrapWorks, FIXED, needTools, pyAgent, pyProject, pytestCmd, pythonWithPytest } from './pyproject.js';

function recorder(isTTY: boolean, counted = true) {
  let now = 0;
  const out: string[] = [];
  const w = new RunWatch('run 1 of 3', { write: (s) => out.push(s), isTTY, now: () => now }, counted);
  return { w, out, advance: (ms: number) => (now += ms) };
}

const rec = (o: Record<string, unknown>) => JSON.stringify(o);

t.test('the labels: which run of how many', async (t) => {
  const plan = { runs: 2, baseline: true };
  t.equal(runLabel('run1', plan), 'run 1 of 2');
  t.equal(runLabel('run2', plan), 'run 2 of 2 (shuffled)');
  t.equal(runLabel('baseline', plan), "the trusted tree's run for the baseline (3 of 3 runs in all)");
  t.equal(runLabel('run2-env', plan), "an extra run: run 2's conditions in run 1's order");
  t.equal(runLabel('run1', { runs: 1, baseline: false }), 'run 1 of 1');
  t.equal(runLabel('holdout'), 'the held-out run');
});

t.test('off a terminal: silent for 2 s, then a line, a "still running" line every 30 s, and the end', async (t) => {
  const { w, out, advance } = recorder(false);
  w.beat();
  w.line(rec({ t: 'start' }));
  for (let i = 0; i < 4; i++) w.line(rec({ t: 'collected', id: `t::${i}` }));
  advance(1500);
  w.beat();
  t.same(out, [], 'nothing within 2 s');
  w.line(rec({ t: 'test', id: 't::0', status: 'passed' }));
  advance(600);
  w.beat();
  t.equal(out.length, 1, 'shown once past 2 s');
  t.match(out[0]!, /^patchgate: run 1 of 3: 1\/4 tests finished, 0\.5 tests\/s, about 6 s left; running 2 s\n$/);
  w.line(rec({ t: 'test', id: 't::1', status: 'failed' }));
  advance(10_000);
  w.beat();
  t.equal(out.length, 1, 'no line between heartbeats, even when a test finishes');
  advance(20_000);
  w.beat();
  t.match(out[1]!, /^patchgate: run 1 of 3: still running, 2\/4 tests finished \(1 failed\), .*; running 32 s\n$/);
  w.line('not json: ignored');
  w.stop('exited 1');
  t.equal(out[2], 'patchgate: run 1 of 3: exited 1 after 32 s, 2 test(s) finished (1 failed)\n');
  t.ok(out.every((s) => !/[\r\x1b]/.test(s)), 'no control characters in a log');
});

t.test('a short run says nothing beyond its start line; a runner without the stream gets the time alone', async (t) => {
  const short = recorder(false);
  short.w.line(rec({ t: 'test', id: 'a', status: 'passed' }));
  short.advance(1000);
  short.w.stop('exited 0');
  t.same(short.out, []);
  const bare = recorder(false, false);
  bare.advance(2500);
  bare.w.beat();
  t.equal(bare.out[0], 'patchgate: run 1 of 3: running 3 s (this runner has no patchgate reporter, so no per-test count)\n');
});

t.test('on a terminal: one line redrawn in place (per finished test, and each second while none does), ended by a newline', async (t) => {
  const { w, out, advance } = recorder(true);
  advance(2000);
  w.beat();
  t.equal(out.length, 1);
  t.match(out[0]!, /^\rpatchgate: run 1 of 3: 0 tests finished; running 2 s\x1b\[K$/);
  w.line(rec({ t: 'collected', id: 'a' }));
  w.line(rec({ t: 'collected', id: 'b' }));
  advance(300);
  w.line(rec({ t: 'test', id: 'a', status: 'passed' }));
  t.match(out[1]!, /^\rpatchgate: run 1 of 3: 1\/2 tests finished, .*; running 2 s\x1b\[K$/);
  advance(100);
  w.line(rec({ t: 'test', id: 'b', status: 'passed' }));
  t.equal(out.length, 2, 'at most every 250 ms');
  advance(5000);
  w.beat();
  t.match(out[2]!, /^\rpatchgate: run 1 of 3: 2\/2 tests finished, .*; running 7 s\x1b\[K$/, 'the time goes on while no test finishes');
  w.stop('exited 0');
  t.equal(out[3], '\rpatchgate: run 1 of 3: exited 0 after 7 s, 2 test(s) finished\x1b[K\n');
  t.ok(out.slice(0, -1).every((s) => s.startsWith('\r') && !s.includes('\n')));
});

const PY = pythonWithPytest();
const ready = needTools(t, [[PY, 'pytest (python3 -m pytest)', 'python3-pytest'], [bwrapWorks(), 'bubblewrap', 'bubblewrap']]);

/** A real strict run (sandboxed pytest) with the progress recorded; delay 0, so a quick run shows too. */
async function watchedCi(t: Parameters<typeof tempDir>[0], isTTY: boolean, runs: number) {
  const r = pyAgent(pyProject(t), { 'src/calc.py': FIXED });
  const d = tempDir(t);
  const out: string[] = [];
  const progress: string[] = [];
  const code = await runCi({ repo: r.dir, base: 'main', head: 'HEAD', today: TODAY, seed: '7', runs, report: join(d, 'r.json'), cmd: pytestCmd(PY!) }, {
    out: (l) => out.push(l), err: (l) => out.push(l), progress: { write: (s) => progress.push(s), isTTY, delayMs: 0, everyMs: 0 },
  });
  return { code, out, progress };
}

t.test('real pytest on a terminal: each run starts with its number, and the line counts the collected tests as they finish', { skip: !ready }, async (t) => {
  const { code, out, progress } = await watchedCi(t, true, 2);
  t.equal(code, 0, out.join('\n'));
  t.ok(out.some((l) => /^patchgate: run 1 of 2: running .*pytest.* \(sealed copy of [0-9a-f]{12} in .*, sandboxed by bubblewrap\)$/.test(l)), 'run 1 names its command');
  t.ok(out.some((l) => /^patchgate: run 2 of 2 \(shuffled\): started \(sealed copy/.test(l)), 'run 2 says when it starts');
  t.ok(out.some((l) => /^patchgate: the trusted tree's run for the baseline \(3 of 3 runs in all\): started \(sealed copy/.test(l)), 'so does the trusted tree\'s run');
  const text = progress.join('');
  for (const label of ['run 1 of 2', 'run 2 of 2 \\(shuffled\\)', "the trusted tree's run for the baseline \\(3 of 3 runs in all\\)"]) {
    t.match(text, new RegExp(`\\rpatchgate: ${label}: 1/2 tests finished`), `${label}: the first of the two collected tests`);
    t.match(text, new RegExp(`\\rpatchgate: ${label}: exited \\d after \\d+ s, 2 test\\(s\\) finished[^\\n]*\\x1b\\[K\\n`), `${label}: its end line`);
  }
  t.match(text, /\rpatchgate: run 1 of 2: exited 0 after \d+ s, 2 test\(s\) finished\x1b\[K\n/, 'the fix is green: no test of run 1 counted as failed');
  t.match(text, /\rpatchgate: the trusted tree's run for the baseline \(3 of 3 runs in all\): exited 1 after \d+ s, 2 test\(s\) finished \(1 failed\)/, 'main is red: its run counts the failure');
});

t.test('real pytest off a terminal: lines only, no control characters', { skip: !ready }, async (t) => {
  const { code, out, progress } = await watchedCi(t, false, 1);
  t.equal(code, 0, out.join('\n'));
  t.ok(out.some((l) => l.startsWith('patchgate: run 1 of 1: running ')));
  t.ok(progress.every((s) => s.endsWith('\n') && !/[\r\x1b]/.test(s)));
  t.match(progress.join(''), /^patchgate: run 1 of 1: 0 tests finished; running 0 s\n/, 'shown at once (delay 0)');
  t.match(progress.join(''), /patchgate: run 1 of 1: exited 0 after \d+ s, 2 test\(s\) finished\n/);
  t.match(progress.join(''), /patchgate: the trusted tree's run for the baseline \(2 of 2 runs in all\): exited 1 after \d+ s, 2 test\(s\) finished \(1 failed\)\n/, 'main is red: the trusted tree\'s run counts its failure');
});
