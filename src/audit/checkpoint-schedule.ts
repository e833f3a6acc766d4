// Making checkpoints: `audit checkpoint` once, and the gate every `--checkpoint-every`
// seconds (default hourly). Each run signs the CONFIGURED audit store's chain (SQLite or
// PostgreSQL, whatever --audit names), appends the checkpoint to the data folder's line
// (<data>/checkpoints.jsonl, which is NOT outside the machine) and brings each
// `--checkpoint-publish` target up to that line. A failure is logged, never fatal to
// serving; the next tick tries again (and catches every target up).

import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CheckpointError, errorMessage } from '../errors.js';
import type { AuditSink } from './sink.js';
import { checkSignature, loadOrCreateKey, makeCheckpoint, verifierOf, type Checkpoint } from './checkpoint.js';
import { describeTarget, loadCredential, parseTarget, publish, readLocalLine, recordPublished, type Target } from './checkpoint-publish.js';

export const DEFAULT_CHECKPOINT_EVERY_S = 3600;
export const LOCAL_LINE = 'checkpoints.jsonl';

export interface CheckpointRun {
  checkpoint: Checkpoint;
  published: string[];
  failed: string[];
}

/** Signs the head once, appends it to the data folder's line, and publishes the line to every target. */
export async function checkpointOnce(dataDir: string, audit: AuditSink, targets: readonly Target[]): Promise<CheckpointRun> {
  const localPath = join(dataDir, LOCAL_LINE);
  const line = readLocalLine(localPath);
  const key = loadOrCreateKey(dataDir);
  const prev = line[line.length - 1] ?? null;
  if (prev) {
    const why = checkSignature(prev, verifierOf(key));
    if (why) throw new CheckpointError(`the last checkpoint in ${localPath} is not this gate's (${why}); move that file aside only if the key was replaced on purpose`);
  }
  // makeCheckpoint refuses a log that contradicts `prev`: that is tampering, not progress.
  const cp = await makeCheckpoint(audit, key, prev);
  const all = [...line, cp];
  await publish(all, { kind: 'file', path: localPath });
  const published: string[] = [localPath];
  const failed: string[] = [];
  for (const t of targets) {
    try {
      const commit = await publish(all, t);
      if (commit) recordPublished(dataDir, t, commit, cp);
      published.push(describeTarget(t));
    } catch (err) {
      failed.push(errorMessage(err));
    }
  }
  return { checkpoint: cp, published, failed };
}

/**
 * Targets from their specs, with the anchor credential (file, else variable). `from` names
 * where the specs came from; a password in a URL from the command line is refused.
 */
export function resolveTargets(specs: readonly string[], opts: { from?: string; credentialFile?: string }): Target[] {
  const cred = loadCredential(opts.credentialFile);
  return specs.map((s) => parseTarget(s, { from: opts.from ?? '--checkpoint-publish', cred }));
}

/**
 * The warning that checkpoints stay on this machine, once per data folder (not on every start):
 * a marker file remembers it was said. A folder where the marker cannot be written says it again.
 */
function warnOnce(dataDir: string, log: (l: string) => void): void {
  const marker = join(dataDir, '.checkpoint-local-warned');
  if (existsSync(marker)) return;
  log('patchgate: checkpoints go only to the data folder; add --checkpoint-publish git:REPO so the chain head leaves this machine (said once for this data folder)');
  try {
    writeFileSync(marker, `${new Date().toISOString()}\n`, { mode: 0o600 });
  } catch {
    /* said again next start */
  }
}

export function startCheckpointSchedule(opts: {
  dataDir: string; audit: AuditSink; everySeconds: number; targets: readonly string[];
  targetsFrom?: string; credentialFile?: string; log: (l: string) => void;
}): { stop: () => void } {
  // Parsed even when checkpoints are off: a credential on the command line is refused at start.
  const targets = resolveTargets(opts.targets, { from: opts.targetsFrom ?? '--checkpoint-publish', credentialFile: opts.credentialFile });
  if (!(opts.everySeconds > 0)) return { stop: () => {} };
  if (targets.length === 0) warnOnce(opts.dataDir, opts.log);
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
