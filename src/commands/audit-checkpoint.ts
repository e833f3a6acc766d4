// The CLI side of anchored chain heads and SIEM export: `audit checkpoint [--publish T]`,
// `audit verify --checkpoints SOURCE [--public-key FILE]`. (`audit export` is in ./admin.ts.)

import { resolve } from 'node:path';
import { AuditStore } from '../audit/store.js';
import { loadOrCreateKey, loadPublicKey, verifyAgainst } from '../audit/checkpoint.js';
import { describeTarget, parseTarget, readCheckpoints } from '../audit/checkpoint-publish.js';
import { checkpointOnce } from '../audit/checkpoint-schedule.js';
import { dbPath } from './admin.js';

async function withStore<T>(data: string, fn: (s: AuditStore) => Promise<T> | T): Promise<T> {
  const s = AuditStore.open(dbPath(data));
  try {
    return await fn(s);
  } finally {
    s.close();
  }
}

export async function runAuditCheckpoint(args: { data: string; publish: string[] }): Promise<{ lines: string[]; ok: boolean }> {
  const targets = args.publish.map(parseTarget);
  return withStore(args.data, async (s) => {
    const r = await checkpointOnce(resolve(args.data), s, targets);
    const lines = [`checkpoint: ${r.checkpoint.rows} row(s), head ${r.checkpoint.head}, ${r.checkpoint.time}, key ${r.checkpoint.key}`];
    for (const p of r.published) lines.push(`  published to ${p}`);
    for (const f of r.failed) lines.push(`  FAILED: ${f}`);
    lines.push(JSON.stringify(r.checkpoint));
    return { lines, ok: r.failed.length === 0 };
  });
}

export async function runAuditVerifyCheckpoints(args: { data: string; checkpoints: string; publicKey?: string }): Promise<{ lines: string[]; ok: boolean }> {
  const target = parseTarget(args.checkpoints);
  const publicKey = args.publicKey ? loadPublicKey(args.publicKey) : loadOrCreateKey(resolve(args.data)).publicKey;
  const cps = await readCheckpoints(target);
  return withStore(args.data, (s) => {
    const v = verifyAgainst(s, cps, publicKey);
    if (v.ok) return { ok: true, lines: [`ok: ${v.rows} row(s), hash chain intact, extends all ${v.checked} checkpoint(s) of ${describeTarget(target)}`] };
    const cp = v.checkpoint ? ` (rows ${v.checkpoint.rows}, head ${v.checkpoint.head.slice(0, 16)}…, ${v.checkpoint.time})` : '';
    return { ok: false, lines: [`TAMPERED: ${v.where}${cp} is contradicted: ${v.reason}; ${v.checked} earlier checkpoint(s) matched`] };
  });
}
