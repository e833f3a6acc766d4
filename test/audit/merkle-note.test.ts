// The two formats of our own that outside tools must agree with: RFC 6962 Merkle trees
// (against the Certificate Transparency reference vectors, then property-style over every
// tree size 1..N) and C2SP signed notes / tlog checkpoints (against the specification's own
// examples, see fixtures/c2sp-notes.json). Pure functions, no mocks needed.

import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  consistencyProof, EMPTY_ROOT, inclusionProof, leafHash, rootOf, rootsAt, verifyConsistency, verifyInclusion,
} from '../../src/audit/merkle.js';
import {
  formatCheckpointBody, formatVerifierKey, keyIdOf, openNote, parseCheckpointBody, parseNote, parseVerifierKey, rawPublicKey, signerOf, signNote,
} from '../../src/audit/signed-note.js';

const F = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures/c2sp-notes.json'), 'utf8'));
const hex = (b: Buffer): string => b.toString('hex');
const unhex = (s: string): Buffer => Buffer.from(s, 'hex');

t.test('RFC 6962 reference vectors: roots, inclusion and consistency proofs', async (t) => {
  const leaves = (F.rfc6962.entries as string[]).map((e) => leafHash(unhex(e)));
  t.equal(hex(EMPTY_ROOT), F.rfc6962.roots[0]);
  for (let n = 0; n <= 8; n++) t.equal(hex(rootOf(leaves.slice(0, n))), F.rfc6962.roots[n], `root of size ${n}`);
  const all = rootsAt(leaves, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
  for (let n = 0; n <= 8; n++) t.equal(hex(all.get(n)!), F.rfc6962.roots[n], `one-pass root of size ${n}`);
  for (const v of F.rfc6962.inclusion) {
    t.same(inclusionProof(leaves, v.index, v.size).map(hex), v.proof, `inclusion ${v.index}/${v.size}`);
    t.ok(verifyInclusion(leaves[v.index]!, v.index, v.size, v.proof.map(unhex), unhex(F.rfc6962.roots[v.size])));
  }
  for (const v of F.rfc6962.consistency) {
    t.same(consistencyProof(leaves, v.first, v.second).map(hex), v.proof, `consistency ${v.first}->${v.second}`);
    t.ok(verifyConsistency(v.first, v.second, unhex(F.rfc6962.roots[v.first]), unhex(F.rfc6962.roots[v.second]), v.proof.map(unhex)));
  }
});

t.test('every inclusion and consistency proof verifies for sizes 1..40, and an altered leaf, path or root never does', async (t) => {
  const N = 40;
  const leaves = Array.from({ length: N }, (_, i) => leafHash(Buffer.from(`row ${i}`)));
  const roots = rootsAt(leaves, Array.from({ length: N + 1 }, (_, i) => i));
  let bad = 0;
  for (let n = 1; n <= N; n++) {
    const root = roots.get(n)!;
    t.ok(root.equals(rootOf(leaves.slice(0, n))), `one-pass root equals the recursive one at ${n}`);
    for (let i = 0; i < n; i++) {
      const p = inclusionProof(leaves, i, n);
      if (!verifyInclusion(leaves[i]!, i, n, p, root)) bad++;
      const altered = leafHash(Buffer.from(`row ${i} altered`));
      if (verifyInclusion(altered, i, n, p, root)) bad++;
      if (n > 1 && verifyInclusion(leaves[i]!, (i + 1) % n, n, p, root)) bad++;
      if (p.length && verifyInclusion(leaves[i]!, i, n, p.slice(0, -1), root)) bad++;
      if (p.length) {
        const flipped = p.map((x) => Buffer.from(x));
        flipped[0]![0]! ^= 1;
        if (verifyInclusion(leaves[i]!, i, n, flipped, root)) bad++;
      }
    }
    for (let m = 0; m <= n; m++) {
      const p = consistencyProof(leaves, m, n);
      if (!verifyConsistency(m, n, roots.get(m)!, root, p)) bad++;
      if (m > 0 && m < n) {
        // The same proof does not take a tree whose row m-1 was altered to today's root.
        const forged = [...leaves.slice(0, m - 1), leafHash(Buffer.from('forged')), ...leaves.slice(m, n)];
        if (verifyConsistency(m, n, rootOf(forged.slice(0, m)), root, p)) bad++;
        if (verifyConsistency(m, n, roots.get(m)!, rootOf(forged), p)) bad++;
        if (verifyConsistency(m, n, roots.get(m)!, root, p.slice(1))) bad++;
      }
    }
  }
  t.equal(bad, 0, 'no proof failed that should pass, and none passed that should fail');
});

t.test('C2SP signed-note example: the verifier key parses and verifies the example note; altered notes fail', async (t) => {
  const v = parseVerifierKey(F.signedNote.vkey);
  t.equal(v.name, 'example.com/foo');
  t.equal(v.id, 0x530d903a);
  t.equal(keyIdOf(v.name, v.raw), 0x530d903a, 'key ID = SHA-256(name || 0x0A || 0x01 || key)[:4]');
  t.equal(formatVerifierKey(v.name, v.raw), F.signedNote.vkey, 'the vkey formats back byte for byte');
  const opened = openNote(F.signedNote.note, [v]);
  t.equal(opened.text, 'This is an example message.\n');
  t.same(opened.verifiedBy, ['example.com/foo']);
  t.throws(() => openNote(F.signedNote.note.replace('example message', 'exemplary message'), [v]), /does not verify/, 'an altered text fails');
  const sigB64 = (F.signedNote.note as string).split(' ').pop()!.trim();
  const sig = Buffer.from(sigB64, 'base64');
  sig[20]! ^= 1;
  t.throws(() => openNote((F.signedNote.note as string).replace(sigB64, sig.toString('base64')), [v]), /does not verify/, 'an altered signature fails');
  // A key with the same name but another ID is unknown: ignored, so nothing trusted signed.
  const other = signerOf('example.com/foo', generateKeyPairSync('ed25519').privateKey);
  t.throws(() => openNote(F.signedNote.note, [other]), /no trusted key signed the note/);
  t.throws(() => parseVerifierKey(F.signedNote.vkey.replace('530d903a', '530d903b')), /not the ID of that name and key/);
});

t.test('C2SP examples without a published key parse: the poem (blank line inside the text) and the tlog checkpoint', async (t) => {
  const poem = parseNote(F.poem.note);
  t.equal(poem.text, F.poem.text, 'the text runs to the last blank line');
  t.equal(poem.signatures.length, 1);
  t.equal(poem.signatures[0]!.name, 'quasimodo.example/salvatore');
  t.equal(poem.signatures[0]!.sig.length, 64);
  const cp = parseNote(F.checkpoint.note);
  const body = parseCheckpointBody(cp.text);
  t.equal(body.origin, F.checkpoint.origin);
  t.equal(body.size, F.checkpoint.size);
  t.equal(body.root.toString('base64'), F.checkpoint.rootBase64);
  t.same(body.extensions, []);
  t.equal(formatCheckpointBody(body), cp.text, 'the body formats back byte for byte');
  t.equal(cp.signatures[0]!.name, 'example.com/behind-the-sofa', 'the key name matches the origin');
  // Malformed input is refused, never half-read.
  t.throws(() => parseNote('no blank line\n— a AAAAAAA=\n'), /no blank line/);
  t.throws(() => parseNote(F.signedNote.note.replace('\u2014', '-')), /not a signature line/);
  t.throws(() => parseNote(F.signedNote.note.replace('This', 'Th\tis')), /control character/);
  t.throws(() => parseNote(Buffer.from([0x61, 0x0a, 0x0a, 0xff, 0x0a])), /not valid UTF-8/);
  t.throws(() => parseCheckpointBody('origin\n012\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n'), /leading zeroes/);
  t.throws(() => parseCheckpointBody('origin\n12\nAAAA\n'), /not 32/);
  t.throws(() => parseCheckpointBody('origin\n12\n'), /at least three lines/);
});

t.test('our own notes round-trip and carry extension lines', async (t) => {
  const signer = signerOf('patchgate.example/audit', generateKeyPairSync('ed25519').privateKey);
  const vkey = formatVerifierKey(signer.name, rawPublicKey(signer.publicKey));
  const text = formatCheckpointBody({ origin: signer.name, size: 3, root: rootOf([leafHash(Buffer.from('a'))]), extensions: ['prev 00', 'time 2026-01-01T00:00:00Z'] });
  const note = signNote(text, signer);
  const opened = openNote(note, [parseVerifierKey(vkey)]);
  t.equal(opened.text, text);
  t.same(parseCheckpointBody(opened.text).extensions, ['prev 00', 'time 2026-01-01T00:00:00Z']);
  t.throws(() => openNote(note.replace('size', 'size').replace('\n3\n', '\n4\n'), [parseVerifierKey(vkey)]), /does not verify/, 'a raised size fails');
});
