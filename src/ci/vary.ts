// The varied environment of `patchgate ci`'s later runs (issue 46, item 6). Every strict run
// had the same conditions (uid 65534, HOME /tmp/home, hostname patchgate-ci, PYTHONHASHSEED =
// the seed, today's clock), so code correct only under them passed every run. Runs 2..N change
// each of them, derived from the shuffle seed (a replay with --seed varies the same way): the
// clock years ahead (Debian's libfaketime, LD_PRELOAD), uid and gid, HOME and the temp folder,
// the hostname, PYTHONHASHSEED and the order of the environment variables. libfaketime missing
// is reported, never silently skipped.

import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { shuffleOrder } from './node-order.js';

export interface Variation {
  /** The seed it was derived from (the run's shuffle seed). */
  seed: number;
  uid: number;
  hostname: string;
  home: string;
  tmp: string;
  hashSeed: number;
  /** Years the clock is moved ahead (libfaketime). */
  years: number;
  /** libfaketime's library, or null when it is not installed (the clock then stays). */
  faketime: string | null;
}

let found: string | null | undefined;

/** Debian's libfaketime (package libfaketime), found once: /usr/lib/<arch>/faketime/libfaketime.so.1. */
export function faketimeLibrary(): string | null {
  if (found !== undefined) return found;
  found = null;
  const dirs = ['/usr/lib/faketime'];
  try {
    for (const d of readdirSync('/usr/lib')) if (/-linux-gnu/.test(d)) dirs.push(join('/usr/lib', d, 'faketime'));
  } catch {
    /* no /usr/lib */
  }
  for (const d of dirs) if (existsSync(join(d, 'libfaketime.so.1'))) return (found = join(d, 'libfaketime.so.1'));
  return found;
}

/** The variation of a later run, from its shuffle seed. */
export function variation(seed: number): Variation {
  const hex = (seed >>> 0).toString(16).padStart(8, '0');
  let uid = 1000 + (seed % 60000);
  if (uid === 65534) uid = 1001;
  return { seed, uid, hostname: `pg-${hex}`, home: `/tmp/home-${hex}`, tmp: `/tmp/tmp-${hex}`, hashSeed: ((seed ^ 0x5bd1e995) >>> 0) % 4294967296, years: 3 + (seed % 9), faketime: faketimeLibrary() };
}

/** The run's environment under `v`: HOME, temp folder, hash seed, the clock's preload; the order of the variables shuffled. */
export function variedEnv(env: Record<string, string>, v: Variation): Record<string, string> {
  const e: Record<string, string> = { ...env, HOME: v.home, TMPDIR: v.tmp, XDG_CACHE_HOME: join(v.home, '.cache'), npm_config_cache: join(v.home, '.npm'), PYTHONHASHSEED: String(v.hashSeed) };
  if (v.faketime) {
    e.LD_PRELOAD = [v.faketime, env.LD_PRELOAD].filter(Boolean).join(':');
    e.FAKETIME = `+${v.years}y`;
    // Timers and timeouts keep real time: only the wall clock moves.
    e.FAKETIME_DONT_FAKE_MONOTONIC = '1';
  }
  const out: Record<string, string> = {};
  for (const k of shuffleOrder(Object.keys(e).sort(), v.seed)) out[k] = e[k]!;
  return out;
}

/** One line for the log and the reasons: what run N changed. */
export function describeVariation(v: Variation, sandboxed: boolean): string {
  const parts = [v.faketime ? `clock +${v.years} years (libfaketime)` : 'clock NOT varied (libfaketime is not installed: apt-get install libfaketime)'];
  if (sandboxed) parts.push(`uid/gid ${v.uid}`, `hostname ${v.hostname}`);
  else parts.push('uid and hostname not varied (not sandboxed)');
  parts.push(`HOME ${v.home}`, `TMPDIR ${v.tmp}`, `PYTHONHASHSEED ${v.hashSeed}`, 'environment variables reordered');
  return parts.join(', ');
}
