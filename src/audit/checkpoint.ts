// Signed checkpoints of the audit chain's head. The hash chain catches an edited row, but
// not someone who owns the database and rehashes the whole chain: nothing outside the gate
// remembers the head. A checkpoint {rows, head, time} signed with an Ed25519 key kept in the
// data folder (0600), published outside the database (./checkpoint-publish.ts), lets
// `audit verify --checkpoints SOURCE` prove that today's chain still extends every head
// ever published.
//
// API
//   loadOrCreateKey(dataDir): CheckpointKey     <data>/audit-checkpoint.key (0600) + .pub
//   loadPublicKey(file): KeyObject               a PEM public key (for a verifier without the data folder)
//   makeCheckpoint(store, key, time?): Checkpoint     signs the current chain head
//   parseCheckpoint(text, where): Checkpoint     strict; CheckpointError naming `where`
//   checkSignature(cp, publicKey): string | null  null when valid, else why not
//   verifyAgainst(store, checkpoints, publicKey): CheckpointVerifyResult

import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CheckpointError } from '../errors.js';
import { canonicalJson, nowIso, parseIsoDate, type AuditStore } from './store.js';

export const CHECKPOINT_FORMAT = 'patchgate-checkpoint/1';
export const KEY_FILE = 'audit-checkpoint.key';
export const PUB_FILE = 'audit-checkpoint.pub';

export interface Checkpoint {
  format: typeof CHECKPOINT_FORMAT;
  /** Rows in the chain at that time (ids are 1..rows). */
  rows: number;
  /** Hash of row `rows` (64 zeros for an empty log). */
  head: string;
  time: string;
  /** sha256 (hex, first 16) of the public key's DER: which key signed. */
  key: string;
  /** Ed25519 signature (base64) over canonicalJson of every other field. */
  sig: string;
}

export interface CheckpointKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  keyId: string;
  path: string;
}

export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex').slice(0, 16);
}

/** The signing key of a data folder, created (0600) on first use; its public half is written beside it. */
export function loadOrCreateKey(dataDir: string): CheckpointKey {
  const path = join(resolve(dataDir), KEY_FILE);
  const pubPath = join(resolve(dataDir), PUB_FILE);
  try {
    if (!existsSync(path)) {
      const { privateKey } = generateKeyPairSync('ed25519');
      // 'wx': never overwrite a key another process created meanwhile.
      writeFileSync(path, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
    }
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077) {
      throw new CheckpointError(`${path} is readable by others (mode ${mode.toString(8)}); run: chmod 600 ${path}`);
    }
    const privateKey = createPrivateKey(readFileSync(path));
    if (privateKey.asymmetricKeyType !== 'ed25519') throw new CheckpointError(`${path} is not an Ed25519 key`);
    const publicKey = createPublicKey(privateKey);
    const pem = publicKey.export({ type: 'spki', format: 'pem' }) as string;
    if (!existsSync(pubPath) || readFileSync(pubPath, 'utf8') !== pem) {
      writeFileSync(pubPath, pem, { mode: 0o644 });
      chmodSync(pubPath, 0o644);
    }
    return { privateKey, publicKey, keyId: keyIdOf(publicKey), path };
  } catch (err) {
    if (err instanceof CheckpointError) throw err;
    throw new CheckpointError(`cannot load the checkpoint key ${path}: ${(err as Error).message}`, { cause: err });
  }
}

export function loadPublicKey(file: string): KeyObject {
  try {
    const k = createPublicKey(readFileSync(file));
    if (k.asymmetricKeyType !== 'ed25519') throw new CheckpointError(`${file} is not an Ed25519 public key`);
    return k;
  } catch (err) {
    if (err instanceof CheckpointError) throw err;
    throw new CheckpointError(`cannot read the public key ${file}: ${(err as Error).message}`, { cause: err });
  }
}

function signedBytes(cp: Omit<Checkpoint, 'sig'>): Buffer {
  const { format, rows, head, time, key } = cp;
  return Buffer.from(canonicalJson({ format, rows, head, time, key }), 'utf8');
}

/**
 * Signs the chain head as it is now. Refuses (CheckpointError) when the last row does not
 * carry the recorded head hash: a checkpoint must never bless a damaged log.
 */
export function makeCheckpoint(store: AuditStore, key: CheckpointKey, time: string = nowIso()): Checkpoint {
  const head = store.lastRow();
  if (head.id > 0) {
    const row = store.get(head.id);
    if (!row || row.hash !== head.hash) {
      throw new CheckpointError(`the last audit row ${head.id} does not match the recorded chain head; run \`patchgate audit verify\` before checkpointing`);
    }
  }
  const body = { format: CHECKPOINT_FORMAT, rows: head.id, head: head.hash, time: parseIsoDate(time, 'time'), key: key.keyId } as const;
  return { ...body, sig: sign(null, signedBytes(body), key.privateKey).toString('base64') };
}

/** One checkpoint from its JSON text; anything unexpected is a CheckpointError naming `where`. */
export function parseCheckpoint(text: string, where: string): Checkpoint {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new CheckpointError(`${where}: not JSON: ${(err as Error).message}`, { cause: err });
  }
  const o = v as Record<string, unknown>;
  const bad = (why: string): CheckpointError => new CheckpointError(`${where}: not a patchgate checkpoint: ${why}`);
  if (!o || typeof o !== 'object' || Array.isArray(o)) throw bad('not an object');
  if (o.format !== CHECKPOINT_FORMAT) throw bad(`format must be ${CHECKPOINT_FORMAT}`);
  if (!Number.isSafeInteger(o.rows) || (o.rows as number) < 0) throw bad('rows must be a non-negative integer');
  if (typeof o.head !== 'string' || !/^[0-9a-f]{64}$/.test(o.head)) throw bad('head must be 64 hex digits');
  if (typeof o.time !== 'string') throw bad('time must be an ISO date');
  try {
    parseIsoDate(o.time, 'time');
  } catch {
    throw bad('time must be an ISO date');
  }
  if (typeof o.key !== 'string' || !/^[0-9a-f]{16}$/.test(o.key)) throw bad('key must be 16 hex digits');
  if (typeof o.sig !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(o.sig)) throw bad('sig must be base64');
  const extra = Object.keys(o).filter((k) => !['format', 'rows', 'head', 'time', 'key', 'sig'].includes(k));
  if (extra.length) throw bad(`unknown field ${extra[0]}`);
  return o as unknown as Checkpoint;
}

/** Null when `cp` was signed by `publicKey`; otherwise the reason. */
export function checkSignature(cp: Checkpoint, publicKey: KeyObject): string | null {
  if (cp.key !== keyIdOf(publicKey)) return `signed by key ${cp.key}, not by this gate's key ${keyIdOf(publicKey)}`;
  const sig = Buffer.from(cp.sig, 'base64');
  let ok = false;
  try {
    ok = sig.length === 64 && verify(null, signedBytes(cp), publicKey, sig);
  } catch {
    ok = false;
  }
  return ok ? null : 'its signature does not verify (the checkpoint was altered or forged)';
}

export interface NamedCheckpoint {
  cp: Checkpoint;
  /** Where it was read: `file.jsonl line 3`, `refs/patchgate/audit commit 1a2b3c4d5e6f`. */
  where: string;
}

export type CheckpointVerifyResult =
  | { ok: true; checked: number; rows: number }
  | { ok: false; checked: number; where: string; checkpoint: Checkpoint | null; reason: string };

/**
 * Every checkpoint must be signed by `publicKey` and be a prefix of today's chain: row
 * `cp.rows` exists and has hash `cp.head`. With the plain chain intact (verify() first),
 * a matching hash at row N proves rows 1..N are the ones published. Checkpoints must not
 * go back in time or shrink, in the order they were published. Stops at the first problem.
 */
export function verifyAgainst(store: AuditStore, checkpoints: readonly NamedCheckpoint[], publicKey: KeyObject): CheckpointVerifyResult {
  const chain = store.verify();
  if (!chain.ok) return { ok: false, checked: 0, where: 'the chain itself', checkpoint: null, reason: `first bad row ${chain.firstBadId}: ${chain.reason}` };
  if (checkpoints.length === 0) return { ok: false, checked: 0, where: 'the source', checkpoint: null, reason: 'it holds no checkpoints (nothing was published, or the wrong source was named)' };
  let prev: Checkpoint | null = null;
  let checked = 0;
  for (const { cp, where } of checkpoints) {
    const fail = (reason: string): CheckpointVerifyResult => ({ ok: false, checked, where, checkpoint: cp, reason });
    const sigProblem = checkSignature(cp, publicKey);
    if (sigProblem) return fail(`checkpoint refused: ${sigProblem}`);
    if (prev && (cp.rows < prev.rows || cp.time < prev.time)) return fail(`it goes back (rows ${cp.rows} at ${cp.time}) after rows ${prev.rows} at ${prev.time}`);
    if (cp.rows > chain.rows) {
      return fail(`it records ${cp.rows} row(s) but the log has ${chain.rows}: the log was cut back below a published head`);
    }
    if (cp.rows > 0) {
      const row = store.get(cp.rows);
      if (!row || row.hash !== cp.head) {
        return fail(`row ${cp.rows} hashes to ${row?.hash.slice(0, 16) ?? '(missing)'}…, the checkpoint published ${cp.head.slice(0, 16)}…: the log was rewritten since ${cp.time}`);
      }
    }
    prev = cp;
    checked += 1;
  }
  return { ok: true, checked, rows: chain.rows };
}
