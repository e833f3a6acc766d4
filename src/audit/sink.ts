// Where the decisions go: the seam between the gate and its audit log. The embedded SQLite
// store (./store.ts, synchronous) and the shared PostgreSQL store (./pg-store.ts, async) both
// fit `AuditSink`; callers `await` every call, which costs the SQLite path nothing. `--audit
// URL` (or PATCHGATE_AUDIT_URL) picks the store: `sqlite:PATH` (the default is
// `<data>/patchgate.db`) or `postgres://…`. The token store stays in the data folder's SQLite
// file either way: tokens are per node, decisions are shared.

import { resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import {
  AuditStore,
  type AdminInput,
  type AuditRow,
  type AuthFailureInput,
  type CiInput,
  type ConfirmItem,
  type PushTrace,
  type QueryOptions,
  type RecordPushInput,
  type VerifyResult,
} from './store.js';

export type Awaitable<T> = T | Promise<T>;

/** What the gate writes and the audit commands read. A write that throws or rejects wrote nothing; the caller refuses. */
export interface AuditSink {
  recordPush(input: RecordPushInput): Awaitable<{ pushRowId: number; refRowIds: number[] }>;
  confirmRefs(pushId: string, items: readonly ConfirmItem[], options?: { time?: string; repo?: string | null }): Awaitable<number[]>;
  appendAuthFailure(input: AuthFailureInput): Awaitable<number>;
  appendAdmin(input: AdminInput): Awaitable<number>;
  appendCi(input: CiInput): Awaitable<number>;
  query(options?: QueryOptions): Awaitable<AuditRow[]>;
  get(id: number): Awaitable<AuditRow | null>;
  getPush(pushId: string): Awaitable<PushTrace | null>;
  verify(): Awaitable<VerifyResult>;
  lastRow(): Awaitable<{ id: number; hash: string }>;
  /** Every row's hash in id order (the checkpoints' Merkle leaves); both stores have it. */
  rowHashes?(): Awaitable<string[]>;
  close(): Awaitable<void>;
}

export type AuditLocation = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

/** The environment variable that stands in for `--audit`. */
export const AUDIT_URL_ENV = 'PATCHGATE_AUDIT_URL';

/**
 * `sqlite:PATH` (relative to the working folder), `postgres://…` / `postgresql://…`, or
 * nothing: `<dataDir>/patchgate.db`. Anything else is a ConfigError naming `option`.
 */
export function parseAuditUrl(value: string | undefined | null, dataDir: string, option = '--audit'): AuditLocation {
  const v = (value ?? '').trim();
  if (!v) return { kind: 'sqlite', path: resolve(dataDir, 'patchgate.db') };
  if (/^postgres(ql)?:\/\//i.test(v)) {
    try {
      new URL(v);
    } catch (err) {
      throw new ConfigError(option, `not a valid PostgreSQL URL: ${redactUrl(v)}`, { cause: err });
    }
    return { kind: 'postgres', url: v };
  }
  if (v.startsWith('sqlite:')) {
    const path = v.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new ConfigError(option, 'sqlite: needs a path, e.g. sqlite:./data/patchgate.db');
    return { kind: 'sqlite', path: resolve(path) };
  }
  throw new ConfigError(option, `must be sqlite:PATH or postgres://… (got ${JSON.stringify(redactUrl(v).slice(0, 200))})`);
}

/** The URL with its password (and any `password=` parameter) replaced by `***`: safe for logs and messages. */
export function redactUrl(url: string): string {
  return url
    .replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*:)[^/@]*@/i, '$1***@')
    .replace(/([?&]password=)[^&]*/gi, '$1***');
}

/** How a location is named to people: the path, or the URL without its password. */
export function describeAudit(loc: AuditLocation): string {
  return loc.kind === 'sqlite' ? loc.path : redactUrl(loc.url);
}

/**
 * Opens the store at `loc`. `reuse`: an AuditStore already open on the same SQLite file
 * (the server's own, which also holds the tokens) is returned as is, not opened twice.
 */
export async function openAuditSink(loc: AuditLocation, reuse?: AuditStore): Promise<AuditSink> {
  if (loc.kind === 'sqlite') return reuse && resolve(reuse.path) === loc.path ? reuse : AuditStore.open(loc.path);
  const { PgAuditStore } = await import('./pg-store.js');
  return PgAuditStore.open(loc.url);
}
