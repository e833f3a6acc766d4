// How far V8 lets patchgate's heap grow past what is live before its next full collection.
// V8 sizes that step itself, and a cold walk of a large tree made the daemon grow to 3-4 times
// its live heap (issue 24: a 10k-file first push peaked at 500 MB with about 90 MB live). A
// fixed step of 20% keeps the peak near what is live, at no measured cost in time; unlike a
// heap limit (`--max-old-space-size`), nothing dies when the live heap itself grows.

import { setFlagsFromString } from 'node:v8';
import { ConfigError } from './errors.js';

/** The default step, in percent of the live heap after a full collection. */
export const DEFAULT_HEAP_GROWTH_PERCENT = 20;

/**
 * The step from PATCHGATE_HEAP_GROWTH_PERCENT (a whole number of percent, 1-1000), or the
 * default; 0 leaves V8's own sizing. Anything else is a ConfigError, not a guess.
 */
export function heapGrowthPercent(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.PATCHGATE_HEAP_GROWTH_PERCENT;
  if (raw === undefined || raw.trim() === '') return DEFAULT_HEAP_GROWTH_PERCENT;
  const v = raw.trim();
  if (!/^\d{1,4}$/.test(v) || Number(v) > 1000) {
    throw new ConfigError('PATCHGATE_HEAP_GROWTH_PERCENT', `must be a whole number of percent from 0 to 1000 (0: V8's own sizing), not ${JSON.stringify(raw)}; unset it for the default ${DEFAULT_HEAP_GROWTH_PERCENT}`);
  }
  return Number(v);
}

/** Sets the step for this process (all its threads); returns the percent set, or 0 when V8 keeps its own. */
export function tuneHeap(env: NodeJS.ProcessEnv = process.env): number {
  const percent = heapGrowthPercent(env);
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
  return percent;
}
