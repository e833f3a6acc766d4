// The gate's own checkpointing: every `--checkpoint-every` seconds (default hourly) it signs
// the chain head and publishes it to each `--checkpoint-publish` target, and always appends
// it to <data>/checkpoints.jsonl (which is NOT outside the machine: name a target for that).
// A failure is logged, never fatal to serving; the next tick tries again.

import { join } from 'node:path';
import { CheckpointError, errorMessage } from '../errors.js';
import type { AuditStore } from './store.js';
import { loadOrCreateKey, makeCheckpoint, type Checkpoint } from './checkpoint.js';
import { describeTarget, lastCheckpointInFile, parseTarget, publish, type Target } from './checkpoint-publish.js';

export const DEFAULT_CHECKPOINT_EVERY_S = 3600;

export interface CheckpointRun {
  checkpoint: Checkpoint;
  published: string[];
  failed: string[];
}

/** Signs the head once and publishes it to every target (and the data folder's file). */
export async function checkpointOnce(dataDir: string, audit: AuditStore, targets: readonly Target[]): Promise<CheckpointRun> {
  const local = join(dataDir, 'checkpoints.jsonl');
  // Never sign a log that contradicts the last head we signed: that is tampering, not progress.
  const prev = lastCheckpointInFile(local);
  if (prev && prev.rows > 0) {
    const row = audit.get(prev.rows);
    if (!row || row.hash !== prev.head) {
      throw new CheckpointError(`the audit log contradicts the last checkpoint (${prev.rows} rows at ${prev.time}): it was rewritten or cut back; not signing it (run: patchgate audit verify --checkpoints file:${local})`);
    }
  }
  const cp = makeCheckpoint(audit, loadOrCreateKey(dataDir));
  const all: Target[] = [{ kind: 'file', path: local }, ...targets];
  const published: string[] = [];
  const failed: string[] = [];
  for (const t of all) {
    try {
      await publish(cp, t);
      published.push(describeTarget(t));
    } catch (err) {
      failed.push(errorMessage(err));
    }
  }
  return { checkpoint: cp, published, failed };
}

export function startCheckpointSchedule(opts: { dataDir: string; audit: AuditStore; everySeconds: number; targets: readonly string[]; log: (l: string) => void }): { stop: () => void } {
  if (!(opts.everySeconds > 0)) return { stop: () => {} };
  const targets = opts.targets.map(parseTarget);
  if (targets.length === 0) opts.log('patchgate: checkpoints go only to the data folder; add --checkpoint-publish git:REPO so the chain head leaves this machine');
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    checkpointOnce(opts.dataDir, opts.audit, targets)
      .then((r) => { for (const f of r.failed) opts.log(`patchgate: checkpoint: ${f}`); })
      .catch((err) => opts.log(`patchgate: checkpoint failed: ${errorMessage(err)}`))
      .finally(() => { busy = false; });
  }, opts.everySeconds * 1000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
