// Making checkpoints: `audit checkpoint` once, and the gate every `--checkpoint-every`
// seconds (default hourly). Each run signs the CONFIGURED audit store's chain (SQLite or
// PostgreSQL, whatever --audit names), appends the checkpoint to the data folder's line
// (<data>/checkpoints.jsonl, which is NOT outside the machine) and brings each
// `--checkpoint-publish` target up to that line. A failure is logged, never fatal to
// serving; the next tick tries again (and catches every target up). On a shared PostgreSQL log
// a node signs only while it holds the log's signing lease (./checkpoint-lease.ts), unless it
// is told `every-node`.

import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { privateFile } from '../private-files.js';
import { CheckpointError, errorMessage } from '../errors.js';
import type { AuditSink } from './sink.js';
import { checkSignature, loadOrCreateKey, makeCheckpoint, verifierOf, type Checkpoint } from './checkpoint.js';
import { describeTarget, loadCredential, parseTarget, publish, readLocalLine, recordPublished, type Target } from './checkpoint-publish.js';
import { describeLease, keyNameOf, nodeName, type CheckpointSigner } from './checkpoint-lease.js';

export const DEFAULT_CHECKPOINT_EVERY_S = 3600;
export const LOCAL_LINE = 'checkpoints.jsonl';

export interface CheckpointRun {
  checkpoint: Checkpoint;
  published: string[];
  failed: string[];
}

/**
 * One checkpoint run of a data folder at a time: `serve`'s schedule and an `audit checkpoint`
 * run against the same folder would both extend the folder's line from the same last entry.
 * An exclusive SQLite transaction on `<data>/checkpoints.lock` (the kernel drops it with the
 * process), waited for without holding the event loop.
 */
async function oneAtATime<T>(dataDir: string, fn: () => Promise<T>): Promise<T> {
  const path = join(dataDir, 'checkpoints.lock');
  privateFile(path);
  const db = new Database(path, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    for (const end = Date.now() + 30_000; ;) {
      try {
        db.exec('BEGIN EXCLUSIVE');
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
        if (Date.now() > end) throw new CheckpointError(`another checkpoint run of ${dataDir} has held ${path} for 30 s; try again`, { cause: err });
        await sleep(50);
      }
    }
    return await fn();
  } finally {
    db.close();
  }
}

/** Signs the head once, appends it to the data folder's line, and publishes the line to every target. */
export function checkpointOnce(dataDir: string, audit: AuditSink, targets: readonly Target[]): Promise<CheckpointRun> {
  return oneAtATime(dataDir, () => signAndPublish(dataDir, audit, targets));
}

async function signAndPublish(dataDir: string, audit: AuditSink, targets: readonly Target[]): Promise<CheckpointRun> {
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

/** How often the lease is renewed (at most every 30 s) and how long one term lasts (three renewals, at least 10 s). */
export function leaseTiming(everySeconds: number): { renewMs: number; ttlMs: number } {
  const renewMs = Math.min(everySeconds * 1000, 30_000);
  return { renewMs, ttlMs: Math.max(3 * renewMs, 10_000) };
}

export interface CheckpointSchedule {
  /** Stops the timers and ends this node's lease term (another node takes over at once). */
  stop(): Promise<void>;
}

export function startCheckpointSchedule(opts: {
  dataDir: string; audit: AuditSink; everySeconds: number; targets: readonly string[];
  targetsFrom?: string; credentialFile?: string; log: (l: string) => void;
  /** `lease` (default): on a shared log, sign only while holding its lease; `every-node`: sign regardless. */
  signer?: CheckpointSigner;
  /** This node's name in the lease (default: host and data folder). */
  node?: string;
}): CheckpointSchedule {
  // Parsed even when checkpoints are off: a credential on the command line is refused at start.
  const targets = resolveTargets(opts.targets, { from: opts.targetsFrom ?? '--checkpoint-publish', credentialFile: opts.credentialFile });
  if (!(opts.everySeconds > 0)) return { stop: async () => {} };
  if (targets.length === 0) warnOnce(opts.dataDir, opts.log);
  const lease = opts.signer === 'every-node' ? null : opts.audit.checkpointLease?.() ?? null;
  const node = opts.node ?? nodeName(opts.dataDir);
  const { renewMs, ttlMs } = leaseTiming(opts.everySeconds);
  let said = '';
  /** Says a change of signer (or of the lease's trouble) once. */
  const say = (key: string, line: string): void => {
    if (key !== said) opts.log(line);
    said = key;
  };
  let stopped = false;
  let held = false;
  /** Takes or renews the lease; true while this node holds it. */
  const hold = async (): Promise<boolean> => {
    if (!lease || stopped) return !stopped;
    try {
      const l = await lease.acquire(node, keyNameOf(loadOrCreateKey(opts.dataDir).vkey), ttlMs);
      held = l.mine;
      if (l.mine) say(`mine`, `patchgate: checkpoint: this node (${node}) signs this shared log's checkpoints (lease until ${l.expires})`);
      else say(`other ${l.holder}`, `patchgate: checkpoint: ${describeLease(l)} signs this shared log's checkpoints; this node does not while that lease holds`);
    } catch (err) {
      held = false;
      say(`error ${errorMessage(err)}`, `patchgate: checkpoint: the signing lease cannot be taken (${errorMessage(err)}); this node does not sign until it can`);
    }
    return held;
  };
  let busy = false;
  const tick = (): void => {
    if (busy) return;
    busy = true;
    hold()
      .then(async (mine) => {
        if (!mine) return;
        const r = await checkpointOnce(opts.dataDir, opts.audit, targets);
        for (const f of r.failed) opts.log(`patchgate: checkpoint: ${f}`);
        await lease?.noteCheckpoint(node, r.checkpoint);
      })
      .catch((err) => opts.log(`patchgate: checkpoint failed: ${errorMessage(err)}`))
      .finally(() => { busy = false; });
  };
  const timer = setInterval(tick, opts.everySeconds * 1000);
  timer.unref();
  // The lease is taken at start (the log says who signs) and renewed well within its term.
  let renew: NodeJS.Timeout | null = null;
  if (lease) {
    void hold();
    if (renewMs < opts.everySeconds * 1000) {
      renew = setInterval(() => void hold(), renewMs);
      renew.unref();
    }
  }
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      if (renew) clearInterval(renew);
      if (lease && held) await lease.release(node).catch(() => {});
    },
  };
}
