// One checkpoint signer per shared log (issue 48). Every node of a PostgreSQL log used to sign
// the chain each hour with its own key, where docs/checkpoints.md asked for one. Now a node
// signs only while it holds the log's signing lease: a row in PostgreSQL naming the holder (its
// host and data folder), its checkpoint key and an expiry, taken and renewed with the database's
// clock (./pg-lease.ts). The holder renews it well within its term; a node that stops releases
// it, and one that dies or hangs loses it when it expires, so another node takes over. A SQLite
// log has one node (the data folder's lock), so it needs none. The holder is said in the log
// line when it changes, on the page's chain status and by `audit checkpoint`.

import { hostname } from 'node:os';
import { resolve } from 'node:path';

export interface LeaseState {
  /** The node that signs: `host:/data/folder`. */
  holder: string;
  /** Its checkpoint key (signed-note name+id). */
  key: string;
  since: string;
  expires: string;
  /** Held by the node that asked. */
  mine: boolean;
  /** Still in its term (by the database's clock when read). */
  live: boolean;
  /** The last checkpoint made under the lease: its size, head hash and time, and who signed it. */
  last: { size: number; head: string; time: string; by: string } | null;
}

export interface CheckpointLease {
  /** Take the lease when it is free or expired, renew it when it is `holder`'s; the state either way. */
  acquire(holder: string, key: string, ttlMs: number): Promise<LeaseState>;
  /** The state as it is (null: no node ever held it). */
  current(holder?: string): Promise<LeaseState | null>;
  /** Ends `holder`'s term now (the row stays, with its last checkpoint). */
  release(holder: string): Promise<void>;
  /** Records the checkpoint `holder` just made. */
  noteCheckpoint(holder: string, cp: { size: number; head: string; time: string }): Promise<void>;
}

/** How the nodes of one log share the signing: one at a time (the default) or each with its own anchor. */
export type CheckpointSigner = 'lease' | 'every-node';
export const CHECKPOINT_SIGNERS: readonly CheckpointSigner[] = ['lease', 'every-node'];

/** This node's name in the lease: its host and data folder (two nodes on one machine differ by folder). */
export function nodeName(dataDir: string): string {
  return `${hostname()}:${resolve(dataDir)}`;
}

/** The signed-note name+id of a verifier key line (`name+id+key`). */
export function keyNameOf(vkey: string): string {
  return vkey.trim().split('+').slice(0, 2).join('+');
}

/** "node gate-1:/srv/data (key patchgate.invalid/audit/…+1a2b3c4d), lease until …" */
export function describeLease(l: LeaseState): string {
  return `node ${l.holder} (key ${l.key}), lease ${l.live ? 'until' : 'expired at'} ${l.expires}`;
}
