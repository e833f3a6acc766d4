// Pushes first (issue 24: "a push that arrives during a warm-up is judged ahead of it"). The
// daemon's warm-ups parse on the same event loop as the judges; a warm-up parse is a few ms of
// synchronous work, and a push's judgement needs many short turns of the loop (each git read),
// so a push that arrived during a warm-up waited behind warm-up parses at every turn (2.7 s a
// push on the bench's 50k tree). Now a background parse (one run under runInBackground) waits
// while a judgement runs or a push's requests are in flight (src/server/app.ts), unless a
// judgement waits on background work (it joined a walk or a parse the warm-up started): then it
// goes at once. Background parses start one per turn of the event loop, so a request that
// arrives is read between two of them. A safety valve lets one waiting background parse go
// every VALVE_MS, so a wait this module does not know of can slow the warm-up but never stall
// it, or a judgement behind it.

import { AsyncLocalStorage } from 'node:async_hooks';

const background = new AsyncLocalStorage<true>();

/** At most this long a background parse waits at a time; then one of them goes. */
export const VALVE_MS = 250;

let judging = 0;
let joined = 0;
let lastValve = 0;
/** Background parses that waited for a judgement, and those the valve let go (counters, for tests). */
let held = 0;
let valved = 0;
const waiters = new Set<() => void>();

/** Run `fn` as background work (a cache warm-up): its parses give way to judgements. */
export function runInBackground<T>(fn: () => Promise<T>): Promise<T> {
  return background.run(true, fn);
}

/** Whether the caller runs as background work. */
export function inBackground(): boolean {
  return background.getStore() === true;
}

/** Run a judgement: while it runs, background parses wait (see backgroundTurn). */
export async function foreground<T>(fn: () => Promise<T>): Promise<T> {
  judging++;
  try {
    return await fn();
  } finally {
    judging--;
    wake();
  }
}

/** Count a push in flight (its ref advertisement or its receive-pack request) as foreground until the returned release is called (once; later calls do nothing). */
export function holdForeground(): () => void {
  judging++;
  let active = true;
  return () => {
    if (!active) return;
    active = false;
    judging--;
    wake();
  };
}

/** Await work another walk started (digest.ts `shared`): a judgement waiting on background work lets the background run. */
export async function joinOther<T>(work: Promise<T>): Promise<T> {
  if (inBackground()) return work;
  joined++;
  wake();
  try {
    return await work;
  } finally {
    joined--;
  }
}

/** The turn before ours: background parses start one per turn of the event loop (see backgroundTurn). */
let lastTurn: Promise<void> = Promise.resolve();

/**
 * Before a background parse: wait while a judgement runs that waits on nothing of the
 * background; then start at most one background parse per turn of the event loop, so a
 * request that arrives (a push's next step) is read between two parses instead of after a
 * burst of all the walk's files in flight. Foreground work never waits here.
 */
export async function backgroundTurn(): Promise<void> {
  if (!inBackground()) return;
  for (;;) {
    const valve = await mayRun();
    const before = lastTurn;
    let done!: () => void;
    lastTurn = new Promise<void>((resolve) => (done = resolve));
    await before;
    await new Promise<void>((resolve) => setImmediate(resolve));
    done();
    // A judgement may have started while this one waited for its turn: then it waits again,
    // and takes a turn of its own again, so the parses that waited do not all go at once.
    if (valve || !pushFirst()) return;
  }
}

/** Whether a judgement or a push's request runs now (the parsers' JIT warm-up waits for none, src/server/hook/parser-warm.ts). */
export function pushesInFlight(): boolean {
  return judging > 0;
}

/** Whether background parses must wait now: a judgement or a push's request runs and waits on nothing of the background. */
export function pushFirst(): boolean {
  return judging > 0 && joined === 0;
}

/** Waits while a judgement runs that waits on nothing of the background; true when the valve let this one go. */
async function mayRun(): Promise<boolean> {
  if (pushFirst()) held++;
  while (pushFirst()) {
    const timedOut = await new Promise<boolean>((resolve) => {
      const go = (): void => {
        clearTimeout(timer);
        waiters.delete(go);
        resolve(false);
      };
      const timer = setTimeout(() => {
        waiters.delete(go);
        resolve(true);
      }, VALVE_MS);
      waiters.add(go);
    });
    if (timedOut && Date.now() - lastValve >= VALVE_MS) {
      lastValve = Date.now();
      valved++;
      return true;
    }
  }
  return false;
}

/** Judgements running, joins of background work, background parses waiting now, and the counters since start (for tests). */
export function priorityState(): { judging: number; joined: number; waiting: number; held: number; valved: number } {
  return { judging, joined, waiting: waiters.size, held, valved };
}

function wake(): void {
  for (const go of [...waiters]) go();
}
