// RFC 6962 Merkle trees over the audit rows, so a checkpoint's root is something outside
// tools for transparency logs can check: the root of a prefix, an inclusion proof of one row
// (`audit prove`) and a consistency proof between two checkpoints (`audit verify
// --checkpoints`). Leaves are the rows' 32-byte chain hashes; a leaf hash is
// SHA-256(0x00 || leaf), an interior node SHA-256(0x01 || left || right), the empty tree's
// root SHA-256(""). Proof shapes follow RFC 6962 section 2.1 (and RFC 9162 2.1.3/2.1.4 for
// verification); tested against the Certificate Transparency reference vectors.
//
// API
//   leafHash(entry), nodeHash(l, r), rootOf(leafHashes)
//   rootsAt(leafHashes, sizes): Map<size, root>     one pass over the leaves (a compact range)
//   inclusionProof(leafHashes, index, size) / verifyInclusion(leaf, index, size, proof, root)
//   consistencyProof(leafHashes, m, n) / verifyConsistency(m, n, rootM, rootN, proof)

import { createHash } from 'node:crypto';

export type Hash = Buffer;

const sha = (...parts: Buffer[]): Hash => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const LEAF = Buffer.from([0]);
const NODE = Buffer.from([1]);

export const EMPTY_ROOT: Hash = sha();

export function leafHash(entry: Buffer): Hash {
  return sha(LEAF, entry);
}

export function nodeHash(left: Hash, right: Hash): Hash {
  return sha(NODE, left, right);
}

/** The largest power of two smaller than n (n > 1): RFC 6962's split point k. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function checkLeaves(leaves: readonly Hash[], size: number): void {
  if (!Number.isSafeInteger(size) || size < 0 || size > leaves.length) throw new RangeError(`tree size ${size} outside 0..${leaves.length}`);
}

/** MTH(D[lo:hi]) from leaf hashes. */
function subtree(leaves: readonly Hash[], lo: number, hi: number): Hash {
  const n = hi - lo;
  if (n === 0) return EMPTY_ROOT;
  if (n === 1) return leaves[lo]!;
  const k = splitPoint(n);
  return nodeHash(subtree(leaves, lo, lo + k), subtree(leaves, lo + k, hi));
}

/** The root of the whole list of leaf hashes. */
export function rootOf(leaves: readonly Hash[]): Hash {
  return subtree(leaves, 0, leaves.length);
}

/**
 * The roots at several tree sizes in one pass: leaves are appended to a compact range (the
 * perfect subtrees of the binary decomposition of the size so far), and a root is the fold
 * of that range from the right. O(leaves + sizes * log(leaves)).
 */
export function rootsAt(leaves: readonly Hash[], sizes: Iterable<number>): Map<number, Hash> {
  const want = [...new Set(sizes)].sort((a, b) => a - b);
  for (const s of want) checkLeaves(leaves, s);
  const out = new Map<number, Hash>();
  const stack: Array<{ h: Hash; n: number }> = [];
  const fold = (): Hash => {
    if (stack.length === 0) return EMPTY_ROOT;
    let acc = stack[stack.length - 1]!.h;
    for (let i = stack.length - 2; i >= 0; i--) acc = nodeHash(stack[i]!.h, acc);
    return acc;
  };
  let wi = 0;
  while (wi < want.length && want[wi] === 0) out.set(want[wi++]!, EMPTY_ROOT);
  for (let i = 0; i < leaves.length && wi < want.length; i++) {
    let node = { h: leaves[i]!, n: 1 };
    while (stack.length && stack[stack.length - 1]!.n === node.n) {
      const left = stack.pop()!;
      node = { h: nodeHash(left.h, node.h), n: left.n * 2 };
    }
    stack.push(node);
    while (wi < want.length && want[wi] === i + 1) out.set(want[wi++]!, fold());
  }
  return out;
}

/** PATH(m, D[lo:hi]) of RFC 6962 2.1.1: the audit path of leaf `index` in the tree of the first `size` leaves. */
export function inclusionProof(leaves: readonly Hash[], index: number, size: number): Hash[] {
  checkLeaves(leaves, size);
  if (!Number.isSafeInteger(index) || index < 0 || index >= size) throw new RangeError(`leaf ${index} outside 0..${size - 1}`);
  const path = (m: number, lo: number, hi: number): Hash[] => {
    const n = hi - lo;
    if (n <= 1) return [];
    const k = splitPoint(n);
    return m < k ? [...path(m, lo, lo + k), subtree(leaves, lo + k, hi)] : [...path(m - k, lo + k, hi), subtree(leaves, lo, lo + k)];
  };
  return path(index, 0, size);
}

/** PROOF(m, D[0:n]) of RFC 6962 2.1.2. Empty when m is 0 or m equals n. */
export function consistencyProof(leaves: readonly Hash[], m: number, n: number): Hash[] {
  checkLeaves(leaves, n);
  if (!Number.isSafeInteger(m) || m < 0 || m > n) throw new RangeError(`old size ${m} outside 0..${n}`);
  if (m === 0 || m === n) return [];
  const sub = (mm: number, lo: number, hi: number, whole: boolean): Hash[] => {
    const nn = hi - lo;
    if (mm === nn) return whole ? [] : [subtree(leaves, lo, hi)];
    const k = splitPoint(nn);
    return mm <= k
      ? [...sub(mm, lo, lo + k, whole), subtree(leaves, lo + k, hi)]
      : [...sub(mm - k, lo + k, hi, false), subtree(leaves, lo, lo + k)];
  };
  return sub(m, 0, n, true);
}

const is32 = (b: unknown): b is Buffer => Buffer.isBuffer(b) && b.length === 32;

/** RFC 9162 2.1.3.2: true only when `proof` shows `leaf` at `index` in the tree of `size` with `root`. */
export function verifyInclusion(leaf: Hash, index: number, size: number, proof: readonly Hash[], root: Hash): boolean {
  if (!is32(leaf) || !is32(root) || !Array.isArray(proof) || !proof.every(is32)) return false;
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(root);
}

/** RFC 9162 2.1.4.2: true only when `proof` shows the tree of size m (rootM) is a prefix of the tree of size n (rootN). */
export function verifyConsistency(m: number, n: number, rootM: Hash, rootN: Hash, proof: readonly Hash[]): boolean {
  if (!is32(rootM) || !is32(rootN) || !Array.isArray(proof) || !proof.every(is32)) return false;
  if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || m < 0 || m > n) return false;
  if (m === n) return proof.length === 0 && rootM.equals(rootN);
  if (m === 0) return proof.length === 0 && rootM.equals(EMPTY_ROOT);
  if (proof.length === 0) return false;
  // When m is a power of two the old root is the first node of the path.
  const path = (m & (m - 1)) === 0 ? [rootM, ...proof] : [...proof];
  let fn = m - 1;
  let sn = n - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(rootM) && sr.equals(rootN);
}
