// Off switches for the four mechanisms on a push's path (issue 47, item 10). Each one is a second
// reading of the push that must stay in agreement with git, so each must show it earns its place:
// the bench (`--mechanisms`, bench/src/mechanisms.ts) measures the push ratio with each one off,
// in the same run as with all on. All are on unless switched off here. The server takes them as
// ServerOptions.pushPath; a `patchgate serve` process (the bench's gate) reads
// PATCHGATE_PUSH_PATH_OFF, a comma list of the names below.

import { ConfigError } from '../errors.js';

/** The mechanisms, by the names the bench and PATCHGATE_PUSH_PATH_OFF use. */
export const MECHANISMS = {
  /** A push's receive-pack started when its advertisement is answered (src/git/spare-receive.ts). */
  spare: 'the spare receive-pack',
  /** The push's ref advertisement made ahead and kept (src/git/ref-advert.ts). */
  advert: 'the advertisement made ahead',
  /**
   * The pack read in the daemon and its changed files parsed before the hook asks
   * (src/server/hook/prewarm.ts). The judgement ahead is made from that reading: off, it is off too.
   */
  prewarm: 'the pack read before the hook',
  /** The push judged from that pack before its hook asks (src/server/hook/ahead.ts). */
  ahead: 'the judgement ahead',
} as const;

export type Mechanism = keyof typeof MECHANISMS;
export const MECHANISM_NAMES = Object.keys(MECHANISMS) as Mechanism[];

/** Which mechanisms run (true: on). */
export type PushPath = Record<Mechanism, boolean>;

export const PUSH_PATH_ENV = 'PATCHGATE_PUSH_PATH_OFF';

/** The names in a comma list (`spare,ahead`); a name not in MECHANISMS is a ConfigError naming `from`. */
export function parseMechanisms(list: string, from: string): Mechanism[] {
  const out: Mechanism[] = [];
  for (const raw of list.split(',')) {
    const name = raw.trim();
    if (!name) continue;
    if (!(MECHANISM_NAMES as string[]).includes(name)) throw new ConfigError(from, `unknown push-path mechanism ${JSON.stringify(name)}; known: ${MECHANISM_NAMES.join(', ')}`);
    if (!out.includes(name as Mechanism)) out.push(name as Mechanism);
  }
  return out;
}

/**
 * The switches a server runs with: those given (missing ones on), else PATCHGATE_PUSH_PATH_OFF's
 * list off and the rest on. The judgement ahead is made from the pack read ahead, so it is off
 * whenever that is.
 */
export function pushPathOf(given?: Partial<PushPath>, env: NodeJS.ProcessEnv = process.env): PushPath {
  const off = given === undefined ? parseMechanisms(env[PUSH_PATH_ENV] ?? '', PUSH_PATH_ENV) : [];
  const path = Object.fromEntries(MECHANISM_NAMES.map((m) => [m, given?.[m] ?? !off.includes(m)])) as PushPath;
  if (!path.prewarm) path.ahead = false;
  return path;
}

/** `spare,advert` for the mechanisms switched off, or `none`. */
export function describeOff(path: PushPath): string {
  const off = MECHANISM_NAMES.filter((m) => !path[m]);
  return off.length ? off.join(',') : 'none';
}
