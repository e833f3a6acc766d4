// C2SP signed notes (c2sp.org/signed-note) with Ed25519 signatures, and the
// `tlog-checkpoint` body (c2sp.org/tlog-checkpoint) carried in them. These are the formats
// transparency-log witnesses and tools read; no npm package implements them, so this is
// small code of our own, tested against the specifications' own examples
// (test/audit/fixtures/c2sp-notes.json).
//
// API
//   keyIdOf(name, publicKeyRaw): number            SHA-256(name || 0x0A || 0x01 || key)[:4], big-endian
//   formatVerifierKey(name, publicKeyRaw): string  `name+hex(id)+base64(0x01 || key)`
//   parseVerifierKey(vkey): Verifier               strict; NoteError on anything else
//   signNote(text, signer): string                 text + blank line + `— name base64(id || sig)`
//   parseNote(note): { text, signatures }          strict format checks (UTF-8, no controls, layout)
//   openNote(note, verifiers): { text, verifiedBy }  the text only when a known key verifies and none fails
//   parseCheckpointBody(text): CheckpointBody      origin, size, root (32 bytes), extension lines
//   formatCheckpointBody(body): string

import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { CheckpointError } from '../errors.js';

/** Signature type byte of Ed25519 in the signed-note specification. */
export const ED25519 = 0x01;
/** At least 16 must be accepted (the specification); beyond this many the note is refused. */
export const MAX_SIGNATURES = 64;
const EM_DASH = '\u2014';

/** A malformed or unverifiable note. */
export class NoteError extends CheckpointError {}

export interface Verifier {
  name: string;
  id: number;
  publicKey: KeyObject;
  raw: Buffer;
}

export interface Signer extends Verifier {
  privateKey: KeyObject;
}

export interface NoteSignature {
  name: string;
  id: number;
  /** The signature bytes after the 4-byte key ID. */
  sig: Buffer;
}

/** The 32-byte RFC 8032 encoding of an Ed25519 public key. */
export function rawPublicKey(key: KeyObject): Buffer {
  if (key.asymmetricKeyType !== 'ed25519') throw new NoteError('not an Ed25519 key');
  const jwk = key.export({ format: 'jwk' }) as { x?: string };
  return Buffer.from(jwk.x ?? '', 'base64url');
}

export function publicKeyFromRaw(raw: Buffer): KeyObject {
  if (raw.length !== 32) throw new NoteError(`an Ed25519 public key is 32 bytes, got ${raw.length}`);
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
}

function checkKeyName(name: string): void {
  if (!name || /[\s+]/u.test(name) || /[\u0000-\u001f]/.test(name)) throw new NoteError(`key name ${JSON.stringify(name)} must be non-empty, without spaces or +`);
}

export function keyIdOf(name: string, raw: Buffer): number {
  checkKeyName(name);
  return createHash('sha256').update(Buffer.concat([Buffer.from(name, 'utf8'), Buffer.from([0x0a, ED25519]), raw])).digest().readUInt32BE(0);
}

const hex8 = (id: number): string => id.toString(16).padStart(8, '0');

export function formatVerifierKey(name: string, raw: Buffer): string {
  return `${name}+${hex8(keyIdOf(name, raw))}+${Buffer.concat([Buffer.from([ED25519]), raw]).toString('base64')}`;
}

/** Strict standard base64 (RFC 4648 section 4, padded, canonical). */
function strictBase64(s: string, what: string): Buffer {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) throw new NoteError(`${what} is not base64`);
  const b = Buffer.from(s, 'base64');
  if (b.toString('base64') !== s) throw new NoteError(`${what} is not canonical base64`);
  return b;
}

export function parseVerifierKey(vkey: string): Verifier {
  // The name and the ID hold no '+'; the base64 after them may.
  const m = /^([^+]+)\+([^+]*)\+(.*)$/s.exec(vkey.trim());
  if (!m) throw new NoteError('a verifier key is name+hex(key ID)+base64(type || key)');
  const [, name, idHex, b64] = m as unknown as [string, string, string, string];
  checkKeyName(name);
  if (!/^[0-9a-f]{8}$/.test(idHex)) throw new NoteError('the verifier key ID must be 8 lowercase hex digits');
  const material = strictBase64(b64, 'the verifier key');
  if (material[0] !== ED25519) throw new NoteError(`verifier key type 0x${(material[0] ?? 0).toString(16)} is not Ed25519 (0x01)`);
  const raw = material.subarray(1);
  if (raw.length !== 32) throw new NoteError('an Ed25519 verifier key holds 32 bytes of key');
  const id = parseInt(idHex, 16);
  if (keyIdOf(name, raw) !== id) throw new NoteError(`the verifier key ID ${idHex} is not the ID of that name and key (${hex8(keyIdOf(name, raw))})`);
  return { name, id, publicKey: publicKeyFromRaw(raw), raw };
}

export function signerOf(name: string, privateKey: KeyObject): Signer {
  if (privateKey.type !== 'private') throw new NoteError('signing needs a private key');
  const priv = privateKey;
  const publicKey = createPublicKey(priv);
  const raw = rawPublicKey(publicKey);
  return { name, id: keyIdOf(name, raw), publicKey, raw, privateKey: priv };
}

function checkText(text: string): void {
  if (!text.endsWith('\n')) throw new NoteError('the note text must end with a newline');
  if (/[\u0000-\u0009\u000b-\u001f]/.test(text)) throw new NoteError('the note holds a control character other than newline');
}

export function signNote(text: string, ...signers: Signer[]): string {
  checkText(text);
  if (signers.length === 0) throw new NoteError('a note needs at least one signature');
  const lines = signers.map((s) => {
    const sig = sign(null, Buffer.from(text, 'utf8'), s.privateKey);
    const id = Buffer.alloc(4);
    id.writeUInt32BE(s.id);
    return `${EM_DASH} ${s.name} ${Buffer.concat([id, sig]).toString('base64')}\n`;
  });
  return `${text}\n${lines.join('')}`;
}

/** Splits a note into text and signature lines, checking the layout of the specification; nothing is verified yet. */
export function parseNote(note: string | Buffer): { text: string; signatures: NoteSignature[] } {
  const bytes = Buffer.isBuffer(note) ? note : Buffer.from(note, 'utf8');
  let s: string;
  try {
    s = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (err) {
    throw new NoteError('the note is not valid UTF-8', { cause: err });
  }
  if (/[\u0000-\u0009\u000b-\u001f]/.test(s)) throw new NoteError('the note holds a control character other than newline');
  if (!s.endsWith('\n')) throw new NoteError('the note must end with a newline');
  // The text is separated from the signatures by the last empty line.
  const split = s.lastIndexOf('\n\n');
  if (split < 0) throw new NoteError('the note has no blank line before its signatures');
  const text = s.slice(0, split + 1);
  const sigLines = s.slice(split + 2, -1).split('\n');
  if (sigLines.length > MAX_SIGNATURES) throw new NoteError(`the note has more than ${MAX_SIGNATURES} signatures`);
  const signatures = sigLines.map((l) => {
    const m = /^\u2014 (\S+) (\S+)$/u.exec(l);
    if (!m) throw new NoteError(`not a signature line: ${JSON.stringify(l.slice(0, 80))}`);
    checkKeyName(m[1]!);
    const b = strictBase64(m[2]!, `the signature of ${m[1]}`);
    if (b.length < 5) throw new NoteError(`the signature of ${m[1]} is too short`);
    return { name: m[1]!, id: b.readUInt32BE(0), sig: b.subarray(4) };
  });
  return { text, signatures };
}

/**
 * The note's text, when at least one known key (name and ID both match) verifies it and no
 * known key fails; signatures of unknown keys are ignored, as the specification says.
 */
export function openNote(note: string | Buffer, verifiers: readonly Verifier[]): { text: string; verifiedBy: string[] } {
  const { text, signatures } = parseNote(note);
  const verifiedBy: string[] = [];
  for (const sg of signatures) {
    const v = verifiers.find((k) => k.name === sg.name && k.id === sg.id);
    if (!v) continue;
    let ok = false;
    try {
      ok = sg.sig.length === 64 && verify(null, Buffer.from(text, 'utf8'), v.publicKey, sg.sig);
    } catch {
      ok = false;
    }
    if (!ok) throw new NoteError(`the signature of ${sg.name} (key ${hex8(sg.id)}) does not verify: the note was altered or forged`);
    verifiedBy.push(sg.name);
  }
  if (verifiedBy.length === 0) {
    const names = signatures.map((x) => `${x.name} ${hex8(x.id)}`).join(', ');
    throw new NoteError(`no trusted key signed the note (signed by ${names}; trusted: ${verifiers.map((k) => `${k.name} ${hex8(k.id)}`).join(', ') || 'none'})`);
  }
  return { text, verifiedBy };
}

export interface CheckpointBody {
  origin: string;
  size: number;
  /** The RFC 6962 root, 32 bytes. */
  root: Buffer;
  /** Opaque extension lines (non-empty), in order. */
  extensions: string[];
}

export function parseCheckpointBody(text: string): CheckpointBody {
  if (!text.endsWith('\n')) throw new NoteError('a checkpoint body ends with a newline');
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3) throw new NoteError('a checkpoint body has at least three lines: origin, tree size, root hash');
  const [origin, size, root, ...extensions] = lines as [string, string, string, ...string[]];
  if (!origin) throw new NoteError('the checkpoint origin is empty');
  if (!/^(0|[1-9][0-9]*)$/.test(size) || !Number.isSafeInteger(Number(size))) throw new NoteError(`the tree size ${JSON.stringify(size.slice(0, 40))} is not a decimal number without leading zeroes`);
  const r = strictBase64(root, 'the root hash');
  if (r.length !== 32) throw new NoteError(`the root hash has ${r.length} bytes, not 32`);
  if (extensions.some((e) => e === '')) throw new NoteError('a checkpoint extension line is empty');
  return { origin, size: Number(size), root: r, extensions };
}

export function formatCheckpointBody(b: CheckpointBody): string {
  if (!b.origin || b.origin.includes('\n')) throw new NoteError('bad origin');
  if (!Number.isSafeInteger(b.size) || b.size < 0) throw new NoteError('bad tree size');
  if (b.root.length !== 32) throw new NoteError('bad root');
  for (const e of b.extensions) if (!e || e.includes('\n')) throw new NoteError('bad extension line');
  return [b.origin, String(b.size), b.root.toString('base64'), ...b.extensions].map((l) => l + '\n').join('');
}
