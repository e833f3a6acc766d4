// Input validation for audit rows: each helper returns the stored form of one field or throws
// a UsageError naming it; untrusted informational text is cut, never refused. Also the clock
// and id helpers rows are stamped with. Split out of src/audit/store.ts (issue 22).

import { randomBytes } from 'node:crypto';
import { UsageError } from '../errors.js';
import { canonicalJson } from './chain.js';

export function nowIso(): string {
  return new Date().toISOString();
}

/** A fresh per-push id: sortable by time, unique across processes. */
export function newPushId(): string {
  return `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
}

export const ISO_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * Parses an ISO 8601 date or date-time and returns it normalised to UTC with
 * milliseconds (`2024-05-01T10:00:00.000Z`). A date alone is midnight UTC; a time
 * without an offset is UTC. Throws UsageError naming `option` otherwise.
 */
export function parseIsoDate(value: unknown, option: string): string {
  const bad = (): UsageError => new UsageError(`${option}: not an ISO date (got ${JSON.stringify(value)})`);
  if (typeof value !== 'string') throw bad();
  const m = ISO_RE.exec(value.trim());
  if (!m) throw bad();
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) throw bad();
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) throw bad();
  let offset = zone.toUpperCase();
  if (offset !== 'Z' && !offset.includes(':')) offset = `${offset.slice(0, 3)}:${offset.slice(3)}`;
  if (offset !== 'Z' && (Number(offset.slice(1, 3)) > 23 || Number(offset.slice(4, 6)) > 59)) throw bad();
  const ms = (frac + '000').slice(0, 3);
  const t = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}${offset}`);
  if (Number.isNaN(t)) throw bad();
  const out = new Date(t);
  if (out.getUTCFullYear() < 1 || out.getUTCFullYear() > 9999) throw bad();
  return out.toISOString();
}

export const CONTROL_RE = /[\u0000-\u001f\u007f]/;
export const OBJECT_ID_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
export const PUSH_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const ACTION_RE = /^[a-z][a-z0-9._-]{0,63}$/;

export function reqString(value: unknown, field: string, max = 1024): string {
  if (typeof value !== 'string' || value.length === 0) throw new UsageError(`${field}: required (a non-empty string)`);
  if (value.length > max) throw new UsageError(`${field}: longer than ${max} characters`);
  if (CONTROL_RE.test(value)) throw new UsageError(`${field}: contains control characters`);
  return value;
}

export function optString(value: unknown, field: string, max = 1024): string | null {
  if (value === undefined || value === null) return null;
  return reqString(value, field, max);
}

/** Untrusted, informational text (user agents, user names from failed logins): cut, never refused. */
export function lenientString(value: unknown, max = 512): string | null {
  if (value === undefined || value === null) return null;
  const s = String(value).replace(/[\u0000-\u001f\u007f]/g, '?');
  return s.length > max ? s.slice(0, max) : s;
}

export function oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`${field}: must be ${allowed.join(' or ')} (got ${JSON.stringify(value)})`);
  }
  return value as T;
}

export function objectId(value: unknown, field: string): string {
  if (typeof value !== 'string' || !OBJECT_ID_RE.test(value)) {
    throw new UsageError(`${field}: not a git object id (got ${JSON.stringify(value)})`);
  }
  return value;
}

export function pushIdOf(value: unknown, field = 'pushId'): string {
  if (typeof value !== 'string' || !PUSH_ID_RE.test(value)) {
    throw new UsageError(`${field}: must match ${PUSH_ID_RE} (got ${JSON.stringify(value)})`);
  }
  return value;
}

export function timeOf(value: unknown): string {
  return value === undefined || value === null ? nowIso() : parseIsoDate(value, 'time');
}

export function jsonOf(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  try {
    return canonicalJson(value);
  } catch (err) {
    throw new UsageError(`${field}: not JSON-serialisable: ${(err as Error).message}`, { cause: err });
  }
}

export function timingsOf(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`${field}: must be an object of numbers`);
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new UsageError(`${field}.${k}: must be a finite number`);
  }
  return jsonOf(value, field);
}

export function rulesOf(value: unknown, field: string): string {
  if (!Array.isArray(value)) throw new UsageError(`${field}: must be an array of rule outcomes`);
  return jsonOf(value, field) as string;
}
