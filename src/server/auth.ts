// Authentication for every request the server takes: HTTP Basic with the token as the
// password (any user name), and a per-address limiter that slows repeated failures and
// then refuses them with 429. node-git-server's own `username` is never trusted.

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

export class FailureLimiter {
  private readonly failures = new Map<string, number[]>();
  constructor(private readonly opts: LimiterOptions = DEFAULT_LIMITER) {}

  private recent(addr: string, now: number): number[] {
    const list = (this.failures.get(addr) ?? []).filter((t) => now - t < this.opts.windowMs);
    if (list.length) this.failures.set(addr, list);
    else this.failures.delete(addr);
    return list;
  }

  blocked(addr: string, now = Date.now()): boolean {
    return this.recent(addr, now).length >= this.opts.blockAfter;
  }

  /** Record a failure; returns how long to hold the response (ms). */
  fail(addr: string, now = Date.now()): number {
    const list = this.recent(addr, now);
    list.push(now);
    this.failures.set(addr, list);
    const over = list.length - this.opts.slowAfter;
    return over > 0 ? Math.min(over * this.opts.stepMs, this.opts.maxDelayMs) : 0;
  }

  succeed(addr: string): void {
    this.failures.delete(addr);
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
