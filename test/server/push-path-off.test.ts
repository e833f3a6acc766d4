// Each mechanism on the push path has an off switch (src/server/push-path.ts), so the bench can
// measure what each one earns (issue 47, item 10). This checks, through a real gate and real git
// pushes, that each switch really turns its mechanism off and leaves the others on: all on, the
// counters of all four move; one off, its counter stays still; all off, pushes are still judged.
// Order is driven, not raced: the hook waits (beforeJudge) until the pack read ahead is done when
// the test is about it, and each push starts once the last one's receive-pack has ended.

import t from 'tap';
import { pushPathOf, parseMechanisms, PUSH_PATH_ENV, type PushPath } from '../../src/server/push-path.js';
import { gitAsync, seededGate } from '../helpers/gate.js';

const BASE = { 'src/a.ts': 'export function a(x: number): number {\n  return x + 1;\n}\n' };

type Gate = Awaited<ReturnType<typeof seededGate>>['gate'];
type PushRow = { verdict?: string; timings?: Record<string, number> };

/** Wait until `cond` holds, up to 15 s; true when it did. A bound, not a timed assertion. */
async function until(cond: () => boolean): Promise<boolean> {
  for (let i = 0; i < 750 && !cond(); i++) await new Promise((r) => setTimeout(r, 20));
  return cond();
}

/** Until no push of the gate is under way (its receive-pack ended: the next push starts on a settled repository). */
const settled = (gate: Gate): Promise<boolean> => until(() => gate.srv.hooks.sessions.size === 0 && gate.srv.hooks.pendingSessions.size === 0);

/**
 * A gate with `pushPath` and a push of a one-file change to agent/work. Its hook waits first
 * (beforeJudge) until the pack read ahead has been counted (`read`) or that and the judgement
 * ahead (`judged`), so the hook never races them; `none` waits for nothing.
 */
async function gateWith(t: Parameters<typeof seededGate>[0], pushPath: Partial<PushPath>) {
  let hold: (() => boolean) | null = null;
  const s = await seededGate(t, BASE, { pushPath, beforeJudge: async () => void (hold && (await until(hold))) });
  await settled(s.gate);
  const w = s.gate.srv.hooks.prewarms;
  let n = 0;
  const push = async (wait: 'read' | 'judged' | 'none', files: Record<string, string> = { 'src/a.ts': `export function a(x: number): number {\n  return x + ${++n + 1};\n}\n` }) => {
    const [read, judged] = [w.pushes + w.failed, w.judged];
    hold = wait === 'read' ? () => w.pushes + w.failed > read : wait === 'judged' ? () => w.judged > judged || w.failed > 0 : null;
    s.w.commit(`change ${n}`, files);
    const r = await gitAsync(s.w.dir, ['push', s.gate.remote('app', 'agent-1', s.agent), 'HEAD:refs/heads/agent/work']);
    hold = null;
    t.ok(await settled(s.gate), 'its receive-pack ended');
    return r;
  };
  const lastRow = (): PushRow => (s.gate.srv.audit.query({ kind: 'push', actor: 'agent-1' }) as unknown as PushRow[])[0]!;
  return { ...s, push, lastRow };
}

t.test('the switches: the given ones, else the environment list; the judgement ahead needs the pack read ahead', async (t) => {
  t.same(pushPathOf({}, {}), { spare: true, advert: true, prewarm: true, ahead: true }, 'all on by default');
  t.same(pushPathOf(undefined, { [PUSH_PATH_ENV]: 'spare, advert' }), { spare: false, advert: false, prewarm: true, ahead: true }, 'the environment list');
  t.same(pushPathOf({ ahead: false }, { [PUSH_PATH_ENV]: 'spare' }), { spare: true, advert: true, prewarm: true, ahead: false }, 'given switches win over the environment');
  t.same(pushPathOf({ prewarm: false }, {}), { spare: true, advert: true, prewarm: false, ahead: false }, 'no pack read ahead: no judgement ahead');
  t.throws(() => parseMechanisms('spare,warp', PUSH_PATH_ENV), { name: 'ConfigError', message: /unknown push-path mechanism "warp"; known: spare, advert, prewarm, ahead/ });
});

t.test('all on: each mechanism shows in its counter', async (t) => {
  const g = await gateWith(t, {});
  const judged = g.gate.srv.hooks.prewarms.judged;
  const r = await g.push('judged');
  t.equal(r.code, 0, r.stderr || 'the push lands');
  const { adverts, spares, hooks } = g.gate.srv;
  t.ok(adverts.stats.kept + adverts.stats.ahead + adverts.stats.git >= 1, 'its advertisement went through the advertisements made ahead');
  t.ok(await until(() => spares.stats.made >= 1), 'a spare receive-pack was started');
  t.ok(hooks.prewarms.pushes >= 1, 'its pack was read before the hook');
  t.equal(hooks.prewarms.judged, judged + 1, 'and judged ahead');
  t.equal(g.lastRow().timings?.ahead, 1, 'the hook took that judgement (audit row)');
});

t.test('spare off: no receive-pack is started ahead, the push lands', async (t) => {
  const g = await gateWith(t, { spare: false });
  for (let i = 0; i < 2; i++) t.equal((await g.push('none')).code, 0, 'the push lands');
  t.equal(g.gate.srv.spares.stats.made, 0, 'no spare started');
  t.equal(g.gate.srv.spares.stats.taken, 0, 'none taken');
  t.equal(g.gate.srv.spares.size, 0, 'none waiting');
});

t.test('advertisement ahead off: git answers each GET, nothing is kept; spares still start', async (t) => {
  const g = await gateWith(t, { advert: false });
  for (let i = 0; i < 2; i++) t.equal((await g.push('none')).code, 0, 'the push lands');
  t.same(g.gate.srv.adverts.stats, { kept: 0, ahead: 0, git: 0 }, 'no advertisement went through the cache');
  t.equal(await g.gate.srv.adverts.isKept(g.bare), false, 'none was made ahead after the pushes');
  t.ok(await until(() => g.gate.srv.spares.stats.made >= 1), 'the spare receive-pack still starts off git\'s own answer');
});

t.test('pack read off: nothing read or judged before the hook, the hook judges it all', async (t) => {
  const g = await gateWith(t, { prewarm: false });
  t.equal((await g.push('none')).code, 0, 'the push lands');
  t.same(g.gate.srv.hooks.prewarms, { pushes: 0, files: 0, contracts: 0, failed: 0, judged: 0 }, 'no pack read ahead');
  t.equal(g.lastRow().timings?.ahead, undefined, 'and the audit row has no judgement ahead');
});

t.test('judgement ahead off: the pack is still read ahead, the hook judges', async (t) => {
  const g = await gateWith(t, { ahead: false });
  t.equal((await g.push('read')).code, 0, 'the push lands');
  t.ok(g.gate.srv.hooks.prewarms.pushes >= 1, 'its pack was read before the hook');
  t.equal(g.gate.srv.hooks.prewarms.judged, 0, 'but not judged ahead');
  t.equal(g.lastRow().timings?.ahead, undefined, 'the audit row has no judgement ahead');
});

t.test('all off: pushes are still judged, accepted and refused', async (t) => {
  const g = await gateWith(t, { spare: false, advert: false, prewarm: false, ahead: false });
  t.equal((await g.push('none')).code, 0, 'an honest push lands');
  const r = await g.push('none', { 'tests/a.test.ts': 'console.log("green");\n' });
  t.not(r.code, 0, 'a write to tests/ is refused');
  t.match(r.stderr, /\[write-block\]/, 'by the write-block rule');
  t.equal(g.lastRow().verdict, 'reject', 'and audited');
  const { adverts, spares, hooks } = g.gate.srv;
  t.same([spares.stats.made, adverts.stats.kept + adverts.stats.ahead + adverts.stats.git, hooks.prewarms.pushes, hooks.prewarms.judged], [0, 0, 0, 0], 'no mechanism ran');
});
