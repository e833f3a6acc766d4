// A seeded gate whose hook does not race the work done ahead of it (issue 47, item 9): the pack
// read before the hook (src/server/hook/prewarm.ts) and the judgement ahead (ahead.ts) run
// beside receive-pack, and the hook waits for them only so long (AHEAD_LIMIT_MS); on a busy
// machine a test that asserts their counters or the audit row's `ahead` right after a push then
// held only when they won the race. Here the hook (beforeJudge) waits until what the test expects
// was counted, up to 15 s (a bound, not an assertion), and `settle()` waits until no receive-pack
// of the gate runs, so a push's end (which makes earlier judgements stale) is behind the next push.

import { seededGate } from './gate.js';

type Srv = Awaited<ReturnType<typeof seededGate>>['gate']['srv'];
type SeedOpts = NonNullable<Parameters<typeof seededGate>[2]>;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** `then` runs in the hook after the wait (e.g. to move the trusted branch once the judgement ahead was made). */
export async function drivenGate(t: Parameters<typeof seededGate>[0], files: Record<string, string>, opts: SeedOpts & { then?: () => void } = {}) {
  const { then, ...gateOpts } = opts;
  let srv: Srv | null = null;
  let done: (() => boolean) | null = null;
  const s = await seededGate(t, files, {
    ...gateOpts,
    beforeJudge: async () => {
      if (done) for (let i = 0; i < 750 && !done(); i++) await sleep(20);
      done = null;
      then?.();
    },
  });
  srv = s.gate.srv;
  const w = srv.hooks.prewarms;
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 750 && (srv!.hooks.sessions.size > 0 || srv!.hooks.pendingSessions.size > 0); i++) await sleep(20);
  };
  await settle();
  /**
   * Before a push: its hook waits until its pack was read ahead (`read`: pushes or failed
   * counted) or also judged ahead (`judged`: judged or failed counted) past the counts now.
   */
  const expect = (what: 'read' | 'judged'): void => {
    const [read, judged, failed] = [w.pushes + w.failed, w.judged, w.failed];
    done = what === 'read' ? () => w.pushes + w.failed > read : () => w.judged > judged || w.failed > failed;
  };
  return { ...s, expect, settle };
}
