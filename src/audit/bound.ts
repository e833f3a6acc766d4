// One push's audit rows stay under a fixed size. A person's first push of a 10k-file
// repository used to write one 32 MB row (tens of thousands of waived contract findings),
// which every reader then loads whole. The record is bounded where it is built, before any
// store sees it, so SQLite and PostgreSQL hold the same rows: a rule's findings beyond the
// first KEPT_FINDINGS are counted (in all, per message id and per path, the largest paths
// named) and replaced by a `cut` entry that carries the SHA-256 of the full list, so the cut
// is visible (`audit show` says it) and the full list, recomputed by judging the same commits
// again, can be proved to be the one that was cut. Oversized details are cut the same way.

import { createHash } from 'node:crypto';
import { canonicalJson, type RecordPushInput } from './store.js';

/** Most bytes one push's rows (push row and ref rows, as JSON) may take. */
export const MAX_PUSH_RECORD_BYTES = 64 * 1024;
/** Findings kept whole per rule outcome; the rest are counted. */
export const KEPT_FINDINGS = 20;

export interface Cut {
  /** Findings the rule had, and how many are kept in the row. */
  findings: number;
  kept: number;
  /** sha256 hex of canonicalJson(the full findings list). */
  digest: string;
  /** Distinct paths among the findings, and the largest counts (path, count). */
  paths: number;
  byPath: Array<[string, number]>;
  /** Findings per message id. */
  byMessage: Record<string, number>;
  /** details replaced by their size and digest (when they alone were too large). */
  details?: { bytes: number; digest: string };
  /** Text fields (e.g. remediation) shortened: their full length. */
  clipped?: Record<string, number>;
}

const sha256 = (v: unknown): string => createHash('sha256').update(canonicalJson(v)).digest('hex');
const size = (v: unknown): number => Buffer.byteLength(JSON.stringify(v) ?? '', 'utf8');

type Outcome = { findings?: unknown; details?: unknown; cut?: Cut; [k: string]: unknown };

function cutOutcome(o: Outcome, keep: number, topPaths: number, maxDetails: number, maxText: number): Outcome {
  const all = Array.isArray(o.findings) ? (o.findings as Array<Record<string, unknown>>) : [];
  const prior = o.cut;
  const tooMany = all.length > keep;
  const detailsBytes = o.details === undefined ? 0 : size(o.details);
  const bigDetails = detailsBytes > maxDetails;
  const longText = Object.keys(o).filter((k) => typeof o[k] === 'string' && (o[k] as string).length > maxText);
  if (!tooMany && !bigDetails && !longText.length) return o;
  const byPath = new Map<string, number>();
  const byMessage: Record<string, number> = {};
  for (const f of all) {
    const p = typeof f.path === 'string' ? f.path : '(no path)';
    byPath.set(p, (byPath.get(p) ?? 0) + 1);
    const m = typeof f.messageId === 'string' ? f.messageId : '(none)';
    byMessage[m] = (byMessage[m] ?? 0) + 1;
  }
  // Cut again (a tighter pass): the counts and digest of the first, full list stay.
  const cut: Cut = prior
    ? { ...prior, kept: Math.min(prior.kept, keep), byPath: prior.byPath.slice(0, topPaths) }
    : {
        findings: all.length, kept: Math.min(all.length, keep), digest: sha256(all), paths: byPath.size,
        byPath: [...byPath.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, topPaths),
        byMessage,
      };
  const out: Outcome = { ...o, findings: all.slice(0, keep).map((f) => (typeof f.message === 'string' && f.message.length > 1000 ? { ...f, message: f.message.slice(0, 1000) + '…' } : f)), cut };
  if (bigDetails) {
    delete out.details;
    cut.details = { bytes: detailsBytes, digest: sha256(o.details) };
  }
  for (const k of longText) {
    cut.clipped = { ...cut.clipped, [k]: cut.clipped?.[k] ?? (o[k] as string).length };
    out[k] = (o[k] as string).slice(0, maxText) + '…';
  }
  return out;
}

/**
 * The record with every rule outcome cut to fit `max` bytes: first KEPT_FINDINGS findings
 * per outcome (and details up to 8 KiB), then tighter passes if the push is still too large.
 * A record that fits is returned unchanged.
 */
export function boundRecord(record: RecordPushInput, max = MAX_PUSH_RECORD_BYTES): RecordPushInput {
  if (size(record) <= max) return record;
  const passes: Array<[number, number, number, number]> = [[KEPT_FINDINGS, 20, 8192, 2000], [5, 5, 2048, 600], [1, 3, 512, 200], [0, 0, 0, 80]];
  let out = record;
  for (const [keep, top, maxDetails, maxText] of passes) {
    out = { ...out, refs: out.refs.map((r) => ({ ...r, rules: (r.rules as Outcome[]).map((o) => (o && typeof o === 'object' ? cutOutcome(o, keep, top, maxDetails, maxText) : o)) })) };
    if (size(out) <= max) return out;
  }
  return out;
}

/** What `audit show` prints for an outcome whose findings or details were cut. */
export function describeCut(cut: Cut): string {
  const parts = [`${cut.findings - cut.kept} of ${cut.findings} finding(s) not stored (over ${cut.paths} path(s)); sha256 of the full list ${cut.digest}`];
  if (cut.byPath.length) parts.push(`most: ${cut.byPath.slice(0, 5).map(([p, n]) => `${p} (${n})`).join(', ')}`);
  if (cut.details) parts.push(`details (${cut.details.bytes} bytes, sha256 ${cut.details.digest}) not stored`);
  for (const [k, n] of Object.entries(cut.clipped ?? {})) parts.push(`${k} shortened (${n} characters in all)`);
  return `cut: ${parts.join('; ')}`;
}
