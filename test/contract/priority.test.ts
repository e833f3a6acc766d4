// Pushes first (src/contract/priority.ts): a warm-up's parse waits while a judgement runs,
// goes at once when the judgement waits on the warm-up's own work, and a valve lets one go per
// VALVE_MS so nothing stalls. Then through a real daemon: pushes to a repository whose warm-up
// is running are judged while the warm-up's parses wait, and the warm-up still finishes.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { backgroundTurn, foreground, joinOther, priorityState, runInBackground, VALVE_MS } from '../../src/contract/priority.js';
import { GIT_ENV, TestRepo } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';

const ticks = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

function deferred() {
  let resolve!: () => void;
  const p = new Promise<void>((r) => (resolve = r));
  return { p, resolve };
}

/** A background turn, and whether it has come yet. */
function turn() {
  const s = { done: false };
  const p = runInBackground(async () => {
    await backgroundTurn();
    s.done = true;
  });
  return { s, p };
}

t.test('a background parse waits while a judgement runs, and goes when it ends', async (t) => {
  const hold = deferred();
  const judged = foreground(() => hold.p);
  const b = turn();
  await ticks();
  t.equal(b.s.done, false, 'waits while the judgement runs');
  t.match(priorityState(), { judging: 1, waiting: 1 });
  hold.resolve();
  await judged;
  await b.p;
  t.equal(b.s.done, true, 'goes once it ended');
  t.match(priorityState(), { judging: 0, joined: 0, waiting: 0 });
});

t.test('a judgement waiting on background work lets the background run', async (t) => {
  const hold = deferred();
  let b: ReturnType<typeof turn> | null = null;
  const judged = foreground(async () => {
    await ticks();
    t.equal(b!.s.done, false, 'waits while the judgement runs');
    // The judgement joins work the background started (a walk of a shared tree).
    await joinOther(b!.p);
    t.equal(b!.s.done, true, 'the background went while the judgement waited on it');
    await hold.p;
  });
  b = turn(); // started while the judgement runs
  hold.resolve();
  await judged;
});

t.test('parses that waited for a judgement go one per turn of the event loop, not all at once', async (t) => {
  // Five parses take their turns while a judgement starts: each finds it running after its turn.
  const turns = Array.from({ length: 5 }, () => turn());
  const hold = deferred();
  const judged = foreground(() => hold.p);
  await ticks(8);
  t.equal(turns.filter((x) => x.s.done).length, 0, 'none went while the judgement ran');
  hold.resolve();
  await judged;
  const counts: number[] = [];
  for (let i = 0; i < 6; i++) {
    await new Promise((r) => setImmediate(r));
    counts.push(turns.filter((x) => x.s.done).length);
  }
  t.ok(counts.every((n, i) => n <= i + 1), `at most one more per turn of the loop (${counts.join(', ')})`);
  await Promise.all(turns.map((x) => x.p));
  t.ok(turns.every((x) => x.s.done), 'all went in the end');
});

t.test('outside the background nothing waits; the valve lets one parse go per period', async (t) => {
  const hold = deferred();
  const judged = foreground(() => hold.p);
  let plain = false;
  await backgroundTurn().then(() => (plain = true));
  t.equal(plain, true, 'a judgement\'s own parse never waits');
  const a = turn();
  const b = turn();
  await Promise.race([a.p, b.p]);
  t.equal(a.s.done !== b.s.done, true, `after ${VALVE_MS} ms one of two waiting parses went, not both`);
  hold.resolve();
  await judged;
  await Promise.all([a.p, b.p]);
  t.ok(a.s.done && b.s.done);
});

t.test('pushes during a warm-up are judged while its parses wait; the warm-up still finishes', async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  const files: Record<string, string> = { 'tests/test_a.py': 'def test_a():\n    assert True\n' };
  for (let i = 0; i < 1500; i++) files[`src/d${i % 15}/m${i}.ts`] = `export interface Opts${i} { a: number; b?: string }\nexport function f${i}(o: Opts${i}, n = ${i}): number {\n  return o.a + n;\n}\n`;
  w.commit('base', files);
  execFileSync('git', ['--git-dir', bareDir(gate, 'app'), 'fetch', '-q', w.dir, 'main:main'], { env: { ...process.env, ...GIT_ENV } });
  gate.srv.hooks.warmRepo(bareDir(gate, 'app'));
  const start = priorityState();
  let pushes = 0;
  let wallMs = 0;
  for (let i = 0; i < 3; i++) {
    w.checkout(`agent/p${i}`, true);
    const sha = w.commit(`body ${i}`, { [`src/d${i}/m${i}.ts`]: files[`src/d${i}/m${i}.ts`]!.replace('o.a + n', 'n + o.a') });
    const running = gate.srv.hooks.warmingStatus();
    const t0 = performance.now();
    const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), `agent/p${i}`]);
    wallMs += performance.now() - t0;
    t.equal(r.code, 0, r.stderr);
    t.equal(await refIn(bareDir(gate, 'app'), `refs/heads/agent/p${i}`), sha);
    w.checkout('main');
    if (running && gate.srv.hooks.warmingStatus()) pushes++;
  }
  t.ok(pushes > 0, `${pushes} push(es) ran while the warm-up did (1,500 files parse for seconds)`);
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(rows.length, 3);
  t.ok(rows.every((r) => r.verdict === 'accept'));
  const end = priorityState();
  t.ok(end.held > start.held, `warm-up parses waited for the pushes (${end.held - start.held})`);
  // Only while a push was in flight could the valve let one go: one per VALVE_MS at most.
  t.ok(end.valved - start.valved <= Math.ceil(wallMs / VALVE_MS) + 3, `the valve let ${end.valved - start.valved} parse(s) go in ${Math.round(wallMs)} ms of pushes`);
  await gate.srv.hooks.warmed;
  t.equal(gate.srv.hooks.warmingStatus(), null, 'the warm-up finished');
});
