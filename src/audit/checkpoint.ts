// Signed checkpoints of the audit chain. The hash chain catches an edited row, but not
// someone who owns the database and rehashes the whole chain: nothing outside the gate
// remembers the head. A checkpoint is a C2SP signed note (./signed-note.ts) with a
// `tlog-checkpoint` body: the origin, the tree size (rows 1..size) and the base64 root of an
// RFC 6962 Merkle tree over the rows' hashes (./merkle.ts), so transparency-log witnesses
// and tools can check it. Three extension lines follow:
//   prev <sha256 hex of the previous checkpoint's whole note, 64 zeros for the first>
//   head <hash of row `size`, 64 zeros for an empty log>
//   time <ISO time it was signed>
// `prev` makes the checkpoints one line: one copy of the latest proves every earlier one.
// The Ed25519 key is kept in the data folder (0600); its verifier key (`name+id+key`, the
// signed-note vkey) is written beside it. Publishing: ./checkpoint-publish.ts; checking the
// line against today's chain: ./checkpoint-verify.ts.
//
// API
//   loadOrCreateKey(dataDir): CheckpointKey     <data>/audit-checkpoint.key (0600) + .pub (PEM) + .vkey
//   loadVerifier(file): Verifier                 a .vkey line or a PEM public key
//   makeCheckpoint(sink, key, prev, time?)      signs the current chain; refuses a log that contradicts `prev`
//   parseCheckpoint(note, where): Checkpoint     strict format, signature NOT yet checked
//   checkSignature(cp, verifier): string | null  null when valid, else why not

import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CheckpointError, errorMessage } from '../errors.js';
import { nowIso, parseIsoDate } from './store.js';
import type { AuditSink } from './sink.js';
import { leafHash, rootsAt, type Hash } from './merkle.js';
import {
  formatCheckpointBody, formatVerifierKey, openNote, parseCheckpointBody, parseNote, parseVerifierKey, publicKeyFromRaw, rawPublicKey, signerOf, signNote,
  keyIdOf, type Signer, type Verifier,
} from './signed-note.js';

export const KEY_FILE = 'audit-checkpoint.key';
export const PUB_FILE = 'audit-checkpoint.pub';
export const VKEY_FILE = 'audit-checkpoint.vkey';
export const ZERO = '0'.repeat(64);

export interface Checkpoint {
  origin: string;
  /** Rows covered: ids 1..size. */
  size: number;
  /** Same as size (the name the page and older callers use). */
  rows: number;
  /** RFC 6962 root over the hashes of rows 1..size, base64. */
  root: string;
  /** sha256 hex of the previous checkpoint's note (64 zeros for the first). */
  prev: string;
  /** Hash of row `size` (64 zeros for an empty log). */
  head: string;
  time: string;
  /** The whole signed note, as published. */
  note: string;
  /** sha256 hex of `note`: what the next checkpoint's `prev` names. */
  hash: string;
  /** The signature line's key name and 8-hex key ID. */
  key: string;
}

export interface CheckpointKey {
  signer: Signer;
  path: string;
  vkey: string;
}

/** The log's name (origin = key name): stable for a key, no spaces or '+'. */
function originOf(raw: Buffer): string {
  return `patchgate.invalid/audit/${createHash('sha256').update(raw).digest('hex').slice(0, 16)}`;
}

function writeIfChanged(path: string, text: string): void {
  if (!existsSync(path) || readFileSync(path, 'utf8') !== text) {
    writeFileSync(path, text, { mode: 0o644 });
    chmodSync(path, 0o644);
  }
}

/** The signing key of a data folder, created (0600) on first use; its public halves are written beside it. */
export function loadOrCreateKey(dataDir: string): CheckpointKey {
  const path = join(resolve(dataDir), KEY_FILE);
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
    const raw = rawPublicKey(publicKey);
    const signer = signerOf(originOf(raw), privateKey);
    const vkey = formatVerifierKey(signer.name, raw);
    writeIfChanged(join(resolve(dataDir), PUB_FILE), publicKey.export({ type: 'spki', format: 'pem' }) as string);
    writeIfChanged(join(resolve(dataDir), VKEY_FILE), vkey + '\n');
    return { signer, path, vkey };
  } catch (err) {
    if (err instanceof CheckpointError) throw err;
    throw new CheckpointError(`cannot load the checkpoint key ${path}: ${errorMessage(err)}`, { cause: err });
  }
}

/** A verifier from a file: the signed-note vkey line (`audit-checkpoint.vkey`) or the PEM public key (`.pub`). */
export function loadVerifier(file: string): Verifier {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CheckpointError(`cannot read the public key ${file}: ${errorMessage(err)}`, { cause: err });
  }
  try {
    if (!text.includes('-----BEGIN')) return parseVerifierKey(text.trim());
    const k = createPublicKey(text);
    if (k.asymmetricKeyType !== 'ed25519') throw new CheckpointError(`${file} is not an Ed25519 public key`);
    const raw = rawPublicKey(k);
    const name = originOf(raw);
    return { name, id: keyIdOf(name, raw), publicKey: publicKeyFromRaw(raw), raw };
  } catch (err) {
    throw new CheckpointError(`${file}: not a checkpoint public key (a .vkey line or a PEM Ed25519 key): ${errorMessage(err)}`, { cause: err });
  }
}

export function verifierOf(key: CheckpointKey): Verifier {
  const { name, id, publicKey, raw } = key.signer;
  return { name, id, publicKey, raw };
}

const sha256hex = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

/** The Merkle leaves of rows 1..n: RFC 6962 leaf hashes of the rows' 32-byte chain hashes. */
export function leavesOf(hashes: readonly string[]): Hash[] {
  return hashes.map((h) => {
    if (!/^[0-9a-f]{64}$/.test(h)) throw new CheckpointError(`a row hash is not 64 hex digits: ${JSON.stringify(h.slice(0, 70))}`);
    return leafHash(Buffer.from(h, 'hex'));
  });
}

/** The configured store's row hashes, ids 1..n. */
export async function rowHashesOf(sink: AuditSink): Promise<string[]> {
  if (!sink.rowHashes) throw new CheckpointError('this audit store cannot list its row hashes');
  return await sink.rowHashes();
}

/**
 * Signs the chain as it is now. Refuses (CheckpointError) a chain whose head is not its last row, and one that
 * contradicts `prev` (the last checkpoint this gate signed): shorter than it, or another
 * Merkle root at its size. A checkpoint must never bless a rewritten log.
 */
export async function makeCheckpoint(sink: AuditSink, key: CheckpointKey, prev: Checkpoint | null, time: string = nowIso()): Promise<Checkpoint> {
  // Not a whole verify() walk: on a big SQLite log that would stall the gate every hour. The
  // recorded head must be the last row, and the Merkle root must extend `prev` (below), which
  // covers every row checkpointed before; `audit verify` walks the rows themselves.
  const head = await sink.lastRow();
  const hashes = (await rowHashesOf(sink)).slice(0, head.id);
  if (hashes.length !== head.id || (head.id > 0 && hashes[head.id - 1] !== head.hash)) {
    throw new CheckpointError(`the last audit row ${hashes.length} does not match the recorded chain head (row ${head.id}); run \`patchgate audit verify\` before checkpointing`);
  }
  const leaves = leavesOf(hashes);
  const roots = rootsAt(leaves, prev && prev.size <= leaves.length ? [prev.size, leaves.length] : [leaves.length]);
  if (prev) {
    const contradicts = prev.size > leaves.length
      ? `it has ${leaves.length} row(s), fewer than the ${prev.size} of the last checkpoint`
      : roots.get(prev.size)!.toString('base64') !== prev.root ? `its first ${prev.size} row(s) no longer give the last checkpoint's Merkle root` : null;
    if (contradicts) {
      throw new CheckpointError(`the audit log contradicts the last checkpoint (${prev.size} rows at ${prev.time}): ${contradicts}; it was rewritten or cut back; not signing it`);
    }
  }
  const body = formatCheckpointBody({
    origin: key.signer.name,
    size: leaves.length,
    root: roots.get(leaves.length)!,
    extensions: [`prev ${prev ? prev.hash : ZERO}`, `head ${hashes[hashes.length - 1] ?? ZERO}`, `time ${parseIsoDate(time, 'time')}`],
  });
  return parseCheckpoint(signNote(body, key.signer), 'the new checkpoint');
}

/** One checkpoint from its note; anything unexpected is a CheckpointError naming `where`. The signature is checked by checkSignature. */
export function parseCheckpoint(note: string, where: string): Checkpoint {
  const bad = (why: string, cause?: unknown): CheckpointError => new CheckpointError(`${where}: not a patchgate checkpoint: ${why}`, cause ? { cause } : undefined);
  let parsed: ReturnType<typeof parseNote>;
  let body: ReturnType<typeof parseCheckpointBody>;
  try {
    parsed = parseNote(note);
    body = parseCheckpointBody(parsed.text);
  } catch (err) {
    throw bad(errorMessage(err), err);
  }
  const ext = (name: string, i: number, re: RegExp): string => {
    const line = body.extensions[i] ?? '';
    const v = line.startsWith(`${name} `) ? line.slice(name.length + 1) : null;
    if (v === null || !re.test(v)) throw bad(`extension line ${i + 1} must be "${name} …" (got ${JSON.stringify(line.slice(0, 80))})`);
    return v;
  };
  const prev = ext('prev', 0, /^[0-9a-f]{64}$/);
  const head = ext('head', 1, /^[0-9a-f]{64}$/);
  const time = ext('time', 2, /^\d{4}-\d\d-\d\dT[0-9:.]+Z$/);
  try {
    parseIsoDate(time, 'time');
  } catch (err) {
    throw bad('its time is not an ISO date', err);
  }
  const sig = parsed.signatures.find((s) => s.name === body.origin) ?? parsed.signatures[0]!;
  return {
    origin: body.origin, size: body.size, rows: body.size, root: body.root.toString('base64'), prev, head, time,
    note, hash: sha256hex(note), key: `${sig.name} ${sig.id.toString(16).padStart(8, '0')}`,
  };
}

/** Null when `cp` was signed by `verifier`; otherwise the reason. */
export function checkSignature(cp: Checkpoint, verifier: Verifier): string | null {
  try {
    openNote(cp.note, [verifier]);
    return null;
  } catch (err) {
    return errorMessage(err);
  }
}

/** The roots of today's chain at the sizes asked (base64), from its row hashes. */
export function rootsOfChain(hashes: readonly string[], sizes: Iterable<number>): Map<number, string> {
  const leaves = leavesOf(hashes);
  const out = new Map<number, string>();
  for (const [n, r] of rootsAt(leaves, [...sizes].filter((s) => s <= leaves.length))) out.set(n, r.toString('base64'));
  return out;
}
