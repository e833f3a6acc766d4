// Sessions for the audit page's login form: a random id in a cookie marked HttpOnly,
// SameSite=Strict and (over TLS) Secure, mapped in memory to the token that logged in.
// The token itself is never stored in the cookie; a revoked or expired token ends its
// sessions at the next request (the token store is asked again every time).

import { randomBytes } from "node:crypto";
import { hashSecret } from "../audit/tokens.js";

export const COOKIE = 'patchgate_session';
export const SESSION_TTL_MS = 8 * 3600_000;
const MAX_SESSIONS = 10_000;

interface Session {
  tokenName: string;
  /** sha256 of the secret, to re-check the token on each request without keeping it. */
  secretHash: string;
  expires: number;
}

export class Sessions {
  private readonly map = new Map<string, Session>();

  create(tokenName: string, secret: string): string {
    this.sweep();
    if (this.map.size >= MAX_SESSIONS) this.map.delete(this.map.keys().next().value!);
    const id = randomBytes(32).toString('base64url');
    this.map.set(id, { tokenName, secretHash: hashSecret(secret), expires: Date.now() + SESSION_TTL_MS });
    return id;
  }

  get(id: string | null): Session | null {
    if (!id) return null;
    const s = this.map.get(id);
    if (!s) return null;
    if (s.expires < Date.now()) {
      this.map.delete(id);
      return null;
    }
    return s;
  }

  end(id: string | null): void {
    if (id) this.map.delete(id);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [k, s] of this.map) if (s.expires < now) this.map.delete(k);
  }
}

export function cookieHeader(id: string, secure: boolean, maxAgeS = SESSION_TTL_MS / 1000): string {
  return `${COOKIE}=${id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`;
}

export function readCookie(header: string | undefined): string | null {
  if (!header || header.length > 8192) return null;
  for (const part of header.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === COOKIE) {
      const val = v.join('=');
      return /^[A-Za-z0-9_-]{43}$/.test(val) ? val : null;
    }
  }
  return null;
}
