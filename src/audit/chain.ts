// The audit log's hash chain, the same for every store: canonical JSON, a row's hash, the
// stored form of a new row after the head, the check an append makes of the head before it
// writes, and the walk that verify() makes. Split out of src/audit/store.ts (issue 22), so the
// SQLite and PostgreSQL stores append and verify through the one piece of code.

import { createHash } from 'node:crypto';
import { AuditError, UsageError } from '../errors.js';
import { CONTENT_COLUMNS, ZERO_HASH, type EventContent, type StoredRow } from './events-table.js';

export type VerifyResult =
  | { ok: true; rows: number }
  | { ok: false; rows: number; firstBadId: number; reason: string };

/** Stable JSON: object keys sorted (by UTF-16 code unit), no whitespace, JSON-only values. */
export function canonicalJson(value: unknown): string {
  const seen = new Set<object>();
  const walk = (v: unknown, path: string): string => {
    if (v === null) return 'null';
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return JSON.stringify(v);
      case 'number':
        if (!Number.isFinite(v)) throw new UsageError(`${path}: not a finite number`);
        return JSON.stringify(v);
      case 'object': {
        const obj = v as { toJSON?: () => unknown };
        if (typeof obj.toJSON === 'function') return walk(obj.toJSON(), path);
        if (seen.has(obj)) throw new UsageError(`${path}: circular structure`);
        seen.add(obj);
        let out: string;
        if (Array.isArray(obj)) {
          out = `[${obj.map((x, i) => (x === undefined ? 'null' : walk(x, `${path}[${i}]`))).join(',')}]`;
        } else {
          const proto = Object.getPrototypeOf(obj);
          if (proto !== Object.prototype && proto !== null) {
            throw new UsageError(`${path}: not a plain JSON object`);
          }
          const rec = obj as Record<string, unknown>;
          const keys = Object.keys(rec).filter((k) => rec[k] !== undefined).sort();
          out = `{${keys.map((k) => `${JSON.stringify(k)}:${walk(rec[k], `${path}.${k}`)}`).join(',')}}`;
        }
        seen.delete(obj);
        return out;
      }
      default:
        throw new UsageError(`${path}: ${typeof v} is not a JSON value`);
    }
  };
  return walk(value, '$');
}

/** The hash of an events row (as stored: snake_case columns); `hash` itself and NULLs are left out. */
export function rowHash(row: Readonly<Record<string, unknown>>): string {
  const content: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (k === 'hash' || v === null || v === undefined) continue;
    content[k] = v;
  }
  return createHash('sha256').update(canonicalJson(content)).digest('hex');
}

/**
 * The chain walk of verify(), one row at a time in id order, shared by every store. `rows`
 * counts the rows found intact before the first problem. Detects edited rows (hash
 * mismatch), removed rows (a gap in ids, a prev_hash mismatch, or a tail shorter than the
 * recorded head), inserted and re-ordered rows (prev_hash/hash mismatch) and rows added
 * after the head.
 */
export class ChainCheck {
  rows = 0;
  private expectedId = 1;
  private prev = ZERO_HASH;

  private bad(firstBadId: number, reason: string): VerifyResult {
    return { ok: false, rows: this.rows, firstBadId, reason };
  }

  /** The next row (as stored: snake_case, numbers as numbers); a failure, or undefined when it links. */
  row(row: StoredRow): VerifyResult | undefined {
    const expectedId = this.expectedId;
    if (row.id !== expectedId) {
      return row.id > expectedId
        ? this.bad(expectedId, `row ${expectedId} is missing (the next row is ${row.id}): rows were deleted`)
        : this.bad(row.id, `unexpected row id ${row.id}`);
    }
    if (rowHash(row) !== row.hash) return this.bad(row.id, `row ${row.id} does not match its hash: it was edited`);
    if (row.prev_hash !== this.prev) {
      return this.bad(row.id, `row ${row.id} prev_hash does not match the hash of row ${row.id - 1}: rows were removed, inserted or re-ordered`);
    }
    this.rows += 1;
    this.expectedId += 1;
    this.prev = row.hash;
    return undefined;
  }

  /** After the last row: the recorded chain head must name it. */
  end(head: { last_id: number; last_hash: string } | undefined | null): VerifyResult {
    const lastId = this.expectedId - 1;
    if (!head) return this.bad(lastId + 1, 'chain_head is missing');
    if (head.last_id > lastId) {
      return this.bad(lastId + 1, `chain_head records row ${head.last_id} but the last row is ${lastId}: the log was truncated`);
    }
    if (head.last_id < lastId) {
      return this.bad(head.last_id + 1, `rows after ${head.last_id} (the recorded chain head) were added outside patchgate`);
    }
    if (head.last_hash !== this.prev) return this.bad(lastId, `row ${lastId} hash does not match chain_head: the last row was replaced`);
    return { ok: true, rows: this.rows };
  }
}

/** The stored form of one row at `id` after `prev`: every column, and its hash. */
export function chainRow(content: EventContent, id: number, prev: string): StoredRow {
  const stored: Record<string, unknown> = { id, prev_hash: prev };
  for (const c of CONTENT_COLUMNS) stored[c] = content[c] ?? null;
  stored.hash = rowHash(stored);
  return stored as StoredRow;
}

/**
 * Before an append: the recorded head must exist and name the last events row, or the log was
 * truncated or tampered with and nothing is written (AuditError). Returns where to chain from.
 */
export function headForAppend(head: { last_id: number; last_hash: string } | undefined | null, last: { id: number; hash: string } | undefined | null): { id: number; hash: string } {
  if (!head) throw new AuditError('audit: chain_head is missing; the log was tampered with (run `patchgate audit verify`)');
  if ((last?.id ?? 0) !== head.last_id || (last?.hash ?? ZERO_HASH) !== head.last_hash) {
    throw new AuditError(
      `audit: the last row (id ${last?.id ?? 'none'}) does not match chain_head (id ${head.last_id}); ` +
        'the log was truncated or tampered with (run `patchgate audit verify`)',
    );
  }
  return { id: head.last_id, hash: head.last_hash };
}

/** The stored rows of `rows` chained after `head`, and the new head. */
export function chainAfter(head: { id: number; hash: string }, rows: readonly EventContent[]): { stored: StoredRow[]; head: { id: number; hash: string } } {
  const stored: StoredRow[] = [];
  let id = head.id;
  let prev = head.hash;
  for (const content of rows) {
    id += 1;
    const row = chainRow(content, id, prev);
    stored.push(row);
    prev = row.hash;
  }
  return { stored, head: { id, hash: prev } };
}
