// The CLI side of anchored chain heads and SIEM export: `audit checkpoint [--publish T]`,
// `audit verify --checkpoints SOURCE [--public-key FILE]`, `audit prove ROW`,
// `audit export --since ISO --format jsonl`. Checkpoints are made from, verified against and
// proved from the data folder's log (./folder-log.ts: `--audit`, else PATCHGATE_AUDIT_URL,
// else the log the folder records, else its SQLite file), never a stale local file.

import { join, resolve } from 'node:path';
import type { AuditSink } from '../audit/sink.js';
import { checkSignature, loadOrCreateKey, loadVerifier, verifierOf, type Checkpoint } from '../audit/checkpoint.js';
import { CheckpointLineError, describeTarget, loadCredential, parseTarget, readCheckpoints, readLocalLine, readPublished, type Target } from '../audit/checkpoint-publish.js';
import { checkpointOnce, DEFAULT_CHECKPOINT_EVERY_S, LOCAL_LINE, leaseTiming, resolveTargets } from '../audit/checkpoint-schedule.js';
import { describeLease, keyNameOf, nodeName } from '../audit/checkpoint-lease.js';
import { proveRow, verifyAgainst } from '../audit/checkpoint-verify.js';
import { withFolderLog } from './folder-log.js';

/** The folder's log (./folder-log.ts), open for `fn`. */
const withSink = <T>(args: { data: string; audit?: string }, fn: (s: AuditSink) => Promise<T>, existing = false): Promise<T> => withFolderLog(args, fn, existing);

/**
 * On a shared log this node signs only while it holds the log's signing lease
 * (src/audit/checkpoint-lease.ts): held by another node, nothing is signed (exit 1) and the
 * holder is named, unless `ignoreLease`. A lease taken only for this run is given back after it.
 */
export async function runAuditCheckpoint(args: { data: string; audit?: string; publish: string[]; credentialFile?: string; ignoreLease?: boolean }): Promise<{ lines: string[]; ok: boolean }> {
  const targets = resolveTargets(args.publish, { from: '--publish', credentialFile: args.credentialFile });
  return withSink(args, async (s) => {
    const lease = args.ignoreLease ? null : s.checkpointLease?.() ?? null;
    const node = nodeName(args.data);
    const lines: string[] = [];
    let giveBack = false;
    if (lease) {
      const before = await lease.current(node);
      const l = await lease.acquire(node, keyNameOf(loadOrCreateKey(resolve(args.data)).vkey), leaseTiming(DEFAULT_CHECKPOINT_EVERY_S).ttlMs);
      if (!l.mine) return { ok: false, lines: [`not signed: ${describeLease(l)} signs this shared log's checkpoints; run it with that node's data folder, or give --ignore-lease to sign with this folder's key as well`] };
      giveBack = !before?.mine;
      lines.push(`signer: this node (${node}) holds this shared log's signing lease${giveBack ? ' for this run' : ` (until ${l.expires})`}`);
    }
    try {
      const r = await checkpointOnce(resolve(args.data), s, targets);
      await lease?.noteCheckpoint(node, r.checkpoint);
      const c = r.checkpoint;
      lines.unshift(`checkpoint: ${c.size} row(s), root ${c.root}, head ${c.head}, ${c.time}, key ${c.key}`);
      for (const p of r.published) lines.push(`  published to ${p}`);
      for (const f of r.failed) lines.push(`  FAILED: ${f}`);
      lines.push(...c.note.trimEnd().split('\n'));
      return { lines, ok: r.failed.length === 0 };
    } finally {
      if (giveBack) await lease!.release(node).catch(() => {});
    }
  });
}

function verifierFor(args: { data: string; publicKey?: string }) {
  return args.publicKey ? loadVerifier(args.publicKey) : verifierOf(loadOrCreateKey(resolve(args.data)));
}

/** The data folder's latest checkpoint, when it is there and signed by this key. */
function localLatest(data: string, verifier: ReturnType<typeof verifierFor>): { cp: Checkpoint; where: string } | null {
  const file = join(resolve(data), LOCAL_LINE);
  const line = readLocalLine(file);
  const cp = line[line.length - 1];
  return cp && checkSignature(cp, verifier) === null ? { cp, where: file } : null;
}

function sameFile(t: Target, file: string): boolean {
  return t.kind === 'file' && resolve(t.path) === resolve(file);
}

export async function runAuditVerifyCheckpoints(args: { data: string; audit?: string; checkpoints: string; publicKey?: string; credentialFile?: string }): Promise<{ lines: string[]; ok: boolean }> {
  const target = parseTarget(args.checkpoints, { from: '--checkpoints', cred: loadCredential(args.credentialFile) });
  const verifier = verifierFor(args);
  let cps;
  try {
    cps = await readCheckpoints(target);
  } catch (err) {
    if (err instanceof CheckpointLineError) return { ok: false, lines: [`TAMPERED: ${err.message}`] };
    throw err;
  }
  const localFile = join(resolve(args.data), LOCAL_LINE);
  const latest = sameFile(target, localFile) ? null : localLatest(args.data, verifier);
  const published = readPublished(resolve(args.data))[describeTarget(target)] ?? null;
  return withSink(args, async (s) => {
    const v = await verifyAgainst(s, cps, verifier, { latest, published, source: describeTarget(target) });
    if (v.ok) return { ok: true, lines: [`ok: ${v.rows} row(s), hash chain intact, extends all ${v.checked} checkpoint(s) of ${describeTarget(target)}${v.proof ? `; ${v.proof}` : ''}`] };
    const cp = v.checkpoint ? ` (rows ${v.checkpoint.size}, head ${v.checkpoint.head.slice(0, 16)}…, ${v.checkpoint.time})` : '';
    return { ok: false, lines: [`TAMPERED: ${v.where}${cp} is contradicted: ${v.reason}; ${v.checked} earlier checkpoint(s) matched`] };
  }, true);
}

export async function runAuditProve(args: { data: string; audit?: string; row: string; checkpoints?: string; publicKey?: string; credentialFile?: string; json: boolean }): Promise<{ lines: string[]; ok: boolean }> {
  if (!/^[1-9][0-9]{0,15}$/.test(args.row)) return { ok: false, lines: [`not proved: ROW must be a row number (1 or more), got ${JSON.stringify(args.row)}`] };
  const verifier = verifierFor(args);
  let latest: { cp: Checkpoint; where: string } | null;
  if (args.checkpoints) {
    const target = parseTarget(args.checkpoints, { from: '--checkpoints', cred: loadCredential(args.credentialFile) });
    const cps = await readCheckpoints(target);
    const last = cps[cps.length - 1];
    latest = last ? { cp: last.cp, where: last.where } : null;
  } else {
    const file = join(resolve(args.data), LOCAL_LINE);
    const line = readLocalLine(file);
    latest = line.length ? { cp: line[line.length - 1]!, where: file } : null;
  }
  if (!latest) return { ok: false, lines: ['not proved: there is no checkpoint yet; run `patchgate audit checkpoint` first'] };
  const why = checkSignature(latest.cp, verifier);
  if (why) return { ok: false, lines: [`not proved: the latest checkpoint (${latest.where}) is refused: ${why}`] };
  return withSink(args, async (s) => {
    const r = await proveRow(s, latest.cp, Number(args.row));
    if (!r.ok) return { ok: false, lines: [`not proved: ${r.reason}`] };
    const p = r.proof;
    if (args.json) return { ok: true, lines: [JSON.stringify({ ...p, note: latest.cp.note })] };
    return {
      ok: true,
      lines: [
        `proved: row ${p.row} is leaf ${p.leafIndex} of the ${p.treeSize}-row tree of the checkpoint in ${latest.where} (${latest.cp.time})`,
        `row hash  ${p.rowHash}`,
        `leaf hash ${p.leafHash}`,
        ...p.path.map((h, i) => `path[${i}]   ${h}`),
        `root      ${p.root}`,
        'checkpoint:',
        ...latest.cp.note.trimEnd().split('\n'),
      ],
    };
  }, true);
}
