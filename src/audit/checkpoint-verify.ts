// `audit verify --checkpoints SOURCE`: the published line of checkpoints against the
// configured store's chain as it is today. The line must be one line (each checkpoint names
// the previous one's hash, the first names none, sizes never go down, an equal size has an
// equal root); every checkpoint must be signed by the gate's key, cover no more rows than the
// log holds, and have the Merkle root that today's rows 1..size give (which is RFC 6962
// consistency between every pair, computed from the rows); the last step is also checked as
// an RFC 6962 consistency proof between the two published roots. When the verifier also holds
// the gate's own copy of its latest checkpoint (the data folder), a source that lacks it was
// rolled back or deleted: a failure naming the commit.
//
// `audit prove ROW`: the inclusion proof of one row against the latest checkpoint.

import { CheckpointError } from '../errors.js';
import type { AuditSink } from './sink.js';
import { checkSignature, leavesOf, rootsOfChain, rowHashesOf, ZERO, type Checkpoint } from './checkpoint.js';
import type { NamedCheckpoint, PublishedRecord } from './checkpoint-publish.js';
import { consistencyProof, inclusionProof, rootsAt, verifyConsistency, verifyInclusion } from './merkle.js';
import type { Verifier } from './signed-note.js';

export type CheckpointVerifyResult =
  | { ok: true; checked: number; rows: number; proof: string | null }
  | { ok: false; checked: number; where: string; checkpoint: Checkpoint | null; reason: string };

export interface VerifyOptions {
  /** The gate's own latest checkpoint (its data folder's line), when the verifier has it. */
  latest?: { cp: Checkpoint; where: string } | null;
  /** What the gate last published to this source (git sources), from the data folder. */
  published?: PublishedRecord[string] | null;
  /** How the source is named in messages. */
  source: string;
}

const short = (h: string): string => `${h.slice(0, 16)}…`;

/**
 * The line without a checkpoint repeated right after itself, as a retried publish can write it:
 * the same signed note twice says nothing new and contradicts nothing. (One that comes back
 * later, after others, is still a splice.)
 */
export function withoutRepeats(line: readonly NamedCheckpoint[]): NamedCheckpoint[] {
  return line.filter((c, i) => i === 0 || c.cp.hash !== line[i - 1]!.cp.hash);
}

export async function verifyAgainst(sink: AuditSink, published: readonly NamedCheckpoint[], verifier: Verifier, opts: VerifyOptions): Promise<CheckpointVerifyResult> {
  const checkpoints = withoutRepeats(published);
  const chain = await sink.verify();
  if (!chain.ok) return { ok: false, checked: 0, where: 'the chain itself', checkpoint: null, reason: `first bad row ${chain.firstBadId}: ${chain.reason}` };
  const hashes = (await rowHashesOf(sink)).slice(0, chain.rows);
  const pub = opts.published;
  if (checkpoints.length === 0) {
    const reason = pub
      ? `${opts.source} holds no checkpoints, but this gate published commit ${pub.commit.slice(0, 12)} (${pub.size} rows, ${pub.time}) there: the ref was deleted`
      : 'it holds no checkpoints (nothing was published, or the wrong source was named)';
    return { ok: false, checked: 0, where: pub ? `${opts.source} (commit ${pub.commit.slice(0, 12)})` : 'the source', checkpoint: null, reason };
  }
  // First the line itself (what one copy of the latest proves), then the line against today's chain.
  let prev: Checkpoint | null = null;
  for (const [i, { cp, where }] of checkpoints.entries()) {
    const fail = (reason: string): CheckpointVerifyResult => ({ ok: false, checked: i, where, checkpoint: cp, reason });
    const sigProblem = checkSignature(cp, verifier);
    if (sigProblem) return fail(`checkpoint refused: ${sigProblem}`);
    if (!prev && cp.prev !== ZERO) return fail('it is the first of the line but names a previous checkpoint: the start of the line was cut off');
    if (prev) {
      if (cp.prev !== prev.hash) return fail(`it does not follow the checkpoint before it (its prev ${short(cp.prev)} is not ${short(prev.hash)}): the line was spliced`);
      if (cp.size < prev.size) return fail(`its size goes down (${cp.size} rows after ${prev.size}): the log was cut back and re-signed, or the line was rewritten`);
      if (cp.size === prev.size && cp.root !== prev.root) return fail(`it contradicts the checkpoint before it (same size ${cp.size}, another root)`);
      if (cp.time < prev.time) return fail(`it goes back in time (${cp.time} after ${prev.time})`);
    }
    prev = cp;
  }
  const roots = rootsOfChain(hashes, checkpoints.map((c) => c.cp.size));
  let checked = 0;
  for (const { cp, where } of checkpoints) {
    const fail = (reason: string): CheckpointVerifyResult => ({ ok: false, checked, where, checkpoint: cp, reason });
    if (cp.size > chain.rows) return fail(`it records ${cp.size} row(s) but the log has ${chain.rows}: the log was cut back below a published head`);
    if (cp.size > 0 && hashes[cp.size - 1] !== cp.head) {
      return fail(`row ${cp.size} hashes to ${short(hashes[cp.size - 1] ?? '(missing)')}, the checkpoint published ${short(cp.head)}: the log was rewritten since ${cp.time}`);
    }
    if (roots.get(cp.size) !== cp.root) return fail(`rows 1..${cp.size} give Merkle root ${roots.get(cp.size)}, the checkpoint published ${cp.root}: the log was rewritten since ${cp.time}`);
    checked += 1;
  }
  const last = checkpoints[checkpoints.length - 1]!;
  // The gate's own copy of its latest: a source without it was rolled back (or a publish failed).
  const latest = opts.latest;
  if (latest && latest.cp.origin === last.cp.origin && !checkpoints.some((c) => c.cp.hash === latest.cp.hash)) {
    const at = last.commit ? `ends at commit ${last.commit.slice(0, 12)} (${last.cp.size} rows, ${last.cp.time})` : `ends at ${last.cp.size} rows (${last.cp.time})`;
    const had = pub && pub.hash !== last.cp.hash ? `; this gate published commit ${pub.commit.slice(0, 12)} (${pub.size} rows) there` : '';
    return {
      ok: false, checked, where: last.where, checkpoint: last.cp,
      reason: `${opts.source} ${at} and lacks the gate's latest checkpoint (${latest.cp.size} rows, ${latest.cp.time}, in ${latest.where})${had}: the ref was rolled back, or a publish failed (then run \`patchgate audit checkpoint --publish …\` to catch it up and verify again)`,
    };
  }
  if (pub && !checkpoints.some((c) => c.cp.hash === pub.hash)) {
    return { ok: false, checked, where: last.where, checkpoint: last.cp, reason: `this gate published commit ${pub.commit.slice(0, 12)} (${pub.size} rows, ${pub.time}) to ${opts.source}, which no longer holds it: the ref was rolled back` };
  }
  // The last step as an outside verifier would check it: an RFC 6962 consistency proof.
  let proof: string | null = null;
  if (checkpoints.length >= 2) {
    const a = checkpoints[checkpoints.length - 2]!.cp;
    const b = last.cp;
    const leaves = leavesOf(hashes.slice(0, b.size));
    const p = consistencyProof(leaves, a.size, b.size);
    if (!verifyConsistency(a.size, b.size, Buffer.from(a.root, 'base64'), Buffer.from(b.root, 'base64'), p)) {
      return { ok: false, checked, where: last.where, checkpoint: b, reason: `no consistency proof takes size ${a.size} to size ${b.size}` };
    }
    proof = `consistency proof ${a.size} -> ${b.size} (${p.length} hash(es)) verified`;
  }
  return { ok: true, checked, rows: chain.rows, proof };
}

export interface InclusionProof {
  row: number;
  leafIndex: number;
  treeSize: number;
  rowHash: string;
  /** Leaf hash (RFC 6962, 0x00 || row hash), base64. */
  leafHash: string;
  path: string[];
  root: string;
  checkpoint: string;
}

/**
 * The inclusion proof of row `row` in `cp` from today's rows, verified against the
 * checkpoint's own root (so an altered row, or a log rewritten since, fails).
 */
export async function proveRow(sink: AuditSink, cp: Checkpoint, row: number): Promise<{ ok: true; proof: InclusionProof } | { ok: false; reason: string }> {
  if (!Number.isSafeInteger(row) || row < 1) throw new CheckpointError(`ROW must be a row number (1 or more), got ${row}`);
  const chain = await sink.verify();
  if (!chain.ok) return { ok: false, reason: `the audit chain is damaged (first bad row ${chain.firstBadId}: ${chain.reason})` };
  const hashes = (await rowHashesOf(sink)).slice(0, chain.rows);
  if (row > cp.size) return { ok: false, reason: `row ${row} is not covered by the latest checkpoint (${cp.size} rows, ${cp.time}); run \`patchgate audit checkpoint\` and prove it again` };
  if (hashes.length < cp.size) return { ok: false, reason: `the log has ${hashes.length} row(s), fewer than the ${cp.size} of the checkpoint: it was cut back` };
  const leaves = leavesOf(hashes.slice(0, cp.size));
  const path = inclusionProof(leaves, row - 1, cp.size);
  const root = Buffer.from(cp.root, 'base64');
  const proof: InclusionProof = {
    row, leafIndex: row - 1, treeSize: cp.size, rowHash: hashes[row - 1]!, leafHash: leaves[row - 1]!.toString('base64'),
    path: path.map((h) => h.toString('base64')), root: cp.root, checkpoint: cp.hash,
  };
  if (!verifyInclusion(leaves[row - 1]!, row - 1, cp.size, path, root)) {
    const today = rootsAt(leaves, [cp.size]).get(cp.size)!.toString('base64');
    return { ok: false, reason: `row ${row} is not in the checkpoint's tree (rows 1..${cp.size} now give root ${today}, the checkpoint signed ${cp.root}): the log was altered since ${cp.time}` };
  }
  return { ok: true, proof };
}
