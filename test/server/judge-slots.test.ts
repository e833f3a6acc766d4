// Pushes are judged a few at a time (src/server/hook/slots.ts): the others wait their turn in
// arrival order, and a push whose hook limit passes while it waits is refused as "busy" with
// nothing judged and nothing moved. The line itself: FIFO, a cancelled waiter leaves it.

import t from 'tap';
import { Slots } from '../../src/server/hook/slots.js';
import { gitAsync, refIn, seededGate, startGate } from '../helpers/gate.js';

t.test('the line: first come, first served; a cancelled waiter leaves without a slot', async (t) => {
  const slots = new Slots(1);
  const order: string[] = [];
  const first = await slots.acquire();
  const gone = new AbortController();
  const b = slots.acquire().then((release) => (order.push('b'), release));
  const c = slots.acquire(gone.signal).then((release) => (order.push('c'), release), (err: Error) => (order.push(`c: ${err.message}`), null));
  const d = slots.acquire().then((release) => (order.push('d'), release));
  t.equal(slots.waiting, 3);
  gone.abort(new Error('hung up'));
  await c;
  t.equal(slots.waiting, 2, 'the cancelled waiter left the line');
  first();
  first(); // a second release of the same slot changes nothing
  (await b)();
  (await d)();
  t.same(order, ['c: hung up', 'b', 'd']);
  t.equal(slots.busy, 0);
  const unbounded = new Slots(0);
  await Promise.all([unbounded.acquire(), unbounded.acquire(), unbounded.acquire()]);
  t.equal(unbounded.busy, 3, 'size 0 has no bound');
});

async function twoPushes(t: Parameters<typeof startGate>[0], opts: { slots: number; holdMs: number; limitMs: number; progressMs?: number }) {
  let inside = 0;
  let most = 0;
  let hold = false; // not while a person seeds main
  const { gate, agent, w, bare } = await seededGate(t, { 'src/app.py': 'x = 1\n' }, {
    judgeSlots: opts.slots,
    hookTimeoutMs: opts.limitMs,
    ...(opts.progressMs !== undefined ? { remoteProgressDelayMs: opts.progressMs } : {}),
    beforeJudge: async () => {
      if (!hold) return;
      most = Math.max(most, ++inside);
      await new Promise((r) => setTimeout(r, opts.holdMs));
      inside--;
    },
  });
  hold = true;
  w.checkout('agent/one', true);
  const one = w.commit('one', { 'src/app.py': 'x = 2\n' });
  w.checkout('main');
  w.checkout('agent/two', true);
  const two = w.commit('two', { 'src/app.py': 'x = 3\n' });
  const url = gate.remote('app', 'agent-1', agent);
  const a = gitAsync(w.dir, ['push', url, 'agent/one']);
  await new Promise((r) => setTimeout(r, 150));
  const b = gitAsync(w.dir, ['push', url, 'agent/two']);
  // /healthz while the second waits (the first holds the one slot for holdMs). When the two
  // clients reach the gate depends on the machine's load, so poll until an answer says a push
  // waits or both pushes end; the last answer is returned (the busy one, if any came).
  let ended = false;
  const all = Promise.all([a, b]).finally(() => { ended = true; });
  let health = '';
  while (!ended && !/busy: \d+ push/.test(health)) {
    health = await fetch(`http://127.0.0.1:${gate.srv.port}/healthz`).then((res) => res.text());
    await new Promise((r) => setTimeout(r, 50));
  }
  return { results: await all, most: () => most, bare, one, two, health };
}

t.test('with one slot, two pushes at once are judged one after the other, and both land', async (t) => {
  const r = await twoPushes(t as never, { slots: 1, holdMs: 1500, limitMs: 20_000, progressMs: 300 });
  for (const x of r.results) t.equal(x.code, 0, x.stderr);
  // Which of the two reaches the gate first is up to the client processes: exactly one waits.
  const waited = r.results.filter((x) => /waiting for its turn/.test(x.stderr));
  t.equal(waited.length, 1, 'one of the two pushes waited for its turn');
  t.match(waited[0]?.stderr ?? '', /remote: patchgate: waiting for its turn \(pushes judged at once: 1; waiting before this one: 0\)/, 'the wait is said on remote:');
  t.match(waited[0]?.stderr ?? '', /remote: patchgate: its turn came after \d+\.\d s; judging/, 'and its end');
  t.match(r.health, /^ok, busy: 1 push waiting \(1 judged at once\)/, '/healthz says a push waits');
  t.equal(r.most(), 1, 'never two judgements at once');
  t.equal(await refIn(r.bare, 'refs/heads/agent/one'), r.one);
  t.equal(await refIn(r.bare, 'refs/heads/agent/two'), r.two);
});

t.test('a push whose limit passes while it waits for a slot is refused as busy, and nothing moves', async (t) => {
  // 3 s: the seeding push (tree-sitter's start included) must fit in it on a loaded machine.
  const r = await twoPushes(t as never, { slots: 1, holdMs: 4500, limitMs: 3000 });
  const [first, second] = r.results;
  t.not(first!.code, 0, 'the first push overran its limit in the judge');
  t.not(second!.code, 0, 'the second never got a slot');
  t.match(second!.stderr, /the gate was busy judging other pushes \(1 at a time\) for all of this push's 3000 ms, so it was not judged/);
  t.match(second!.stderr, /wait a minute and push again/);
  t.equal(await refIn(r.bare, 'refs/heads/agent/one'), null);
  t.equal(await refIn(r.bare, 'refs/heads/agent/two'), null);
});
