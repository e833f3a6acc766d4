// Authentication for every request the server takes: HTTP Basic with the token as the
// password (any user name), a limiter that slows repeated failures per address and per
// claimed user and then refuses them with 429, and the cross-site check every
// state-changing request passes. node-git-server's own `username` is never trusted.

export interface BasicCredentials {
  user: string;
  secret: string;
}

export function parseBasic(header: string | undefined): BasicCredentials | null {
  if (!header) return null;
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) return null;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return { user: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

export interface LimiterOptions {
  /** Failures within the window after which responses are delayed. */
  slowAfter: number;
  /** Failures within the window after which the address is refused with 429. */
  blockAfter: number;
  windowMs: number;
  /** Delay per failure beyond slowAfter, capped at maxDelayMs. */
  stepMs: number;
  maxDelayMs: number;
}

export const DEFAULT_LIMITER: LimiterOptions = { slowAfter: 5, blockAfter: 20, windowMs: 10 * 60_000, stepMs: 250, maxDelayMs: 3000 };

/** Keys kept at most: an attacker chooses the claimed user names, so the map is bounded. */
const MAX_KEYS = 50_000;
/** An address (a NAT, an office) is refused after this many times `blockAfter` failures of all its claimed users. */
export const ADDRESS_FACTOR = 4;

/**
 * Failed logins, counted per address and per (address, claimed user). A claimed user past
 * `blockAfter` at an address is refused, and the address past ADDRESS_FACTOR × `blockAfter`
 * whatever name it claims; the larger count sets the delay. A success clears only its own
 * (address, user) count, never the address's nor anyone else's: one valid token at an
 * address does not reset the throttle of a guesser at the same address.
 */
export class FailureLimiter {
  private readonly failures = new Map<string, number[]>();
  constructor(private readonly opts: LimiterOptions = DEFAULT_LIMITER) {}

  private recent(key: string, now: number): number[] {
    const list = (this.failures.get(key) ?? []).filter((t) => now - t < this.opts.windowMs);
    if (list.length) this.failures.set(key, list);
    else this.failures.delete(key);
    return list;
  }

  private keys(addr: string, user: string | undefined): string[] {
    return [`a\0${addr}`, ...(user === undefined ? [] : [`u\0${addr}\0${user.slice(0, 256)}`])];
  }

  /** One claimed user from one address is refused past `blockAfter`; the address as a whole (every name a guesser tries) past ADDRESS_FACTOR times that. */
  blocked(addr: string, user?: string, now = Date.now()): boolean {
    const [a, u] = this.keys(addr, user);
    return this.recent(a!, now).length >= this.opts.blockAfter * ADDRESS_FACTOR || (u !== undefined && this.recent(u, now).length >= this.opts.blockAfter);
  }

  /** Record a failure of `user` (the claimed name) from `addr`; returns how long to hold the response (ms). */
  fail(addr: string, user?: string, now = Date.now()): number {
    let most = 0;
    for (const k of this.keys(addr, user)) {
      const list = this.recent(k, now);
      list.push(now);
      this.failures.delete(k); // re-inserted last: the oldest keys are dropped first
      this.failures.set(k, list);
      most = Math.max(most, list.length);
    }
    this.bound(now);
    const over = most - this.opts.slowAfter;
    return over > 0 ? Math.min(over * this.opts.stepMs, this.opts.maxDelayMs) : 0;
  }

  /** A good token from `addr` under the claimed `user`: that identity's own failures are forgiven. */
  succeed(addr: string, user?: string): void {
    if (user !== undefined) this.failures.delete(this.keys(addr, user)[1]!);
  }

  private bound(now: number): void {
    if (this.failures.size <= MAX_KEYS) return;
    for (const k of [...this.failures.keys()]) this.recent(k, now);
    for (const k of this.failures.keys()) {
      if (this.failures.size <= MAX_KEYS) break;
      this.failures.delete(k);
    }
  }
}

/**
 * A request from another site: its `Origin` (or `Sec-Fetch-Site`) says a browser sent it for
 * a page of another origin. git, curl and API clients send neither, so they pass.
 */
export function crossSite(req: { headers: Record<string, string | string[] | undefined> }): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return true;
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  if (typeof origin !== 'string') return true;
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true; // "null" (a sandboxed frame, a file) and anything unparsable
  }
}

/**
 * The token from an `Authorization` header: HTTP Basic (any user name, the token as password,
 * what git sends) or `Bearer TOKEN` (what API clients send; its user is reported as `bearer`).
 */
export function parseCredentials(header: string | undefined): BasicCredentials | null {
  if (!header) return null;
  const bearer = /^Bearer\s+([\x21-\x7e]+)\s*$/i.exec(header);
  if (bearer) return { user: 'bearer', secret: bearer[1]! };
  return parseBasic(header);
}
