// A push's changed files parsed while receive-pack unpacks it (issue 24). The pack is in the
// daemon (the POST body) about ten milliseconds before receive-pack's pre-receive hook asks for
// a verdict: receive-pack first starts unpack-objects, then the connectivity rev-list, on the
// other core. The parse of a changed file (its contract rows, and for an agent its tamper scan)
// was most of a small push's judging; it now starts as soon as the body is in, from the pack
// read in process (src/git/pack-read.ts), and its results go to the same caches the rules read,
// under the same keys (blob ids). The judgement does not change: it reads the quarantine as
// before and finds, or joins, those results. Best effort: a pack it does not read, or any
// error, only leaves the rules to parse as before.

import { contractCached, contractOf, fileRows, isContractFile } from '../../contract/digest.js';
import type { Git } from '../../git/git.js';
import { PackView, readPack } from '../../git/pack-read.js';
import { commitDiff, type TreeEntry } from '../../git/trees.js';
import { scanBase, tamperHitsOf, underRoots } from '../../policy/tamper/scan-file.js';
import { trustedState } from './judge.js';
import type { TrustedState } from './ahead.js';

/** Changed files parsed ahead at most per push (a larger push is parsed by its judgement). */
const MAX_FILES = 8;
/** Largest changed file parsed ahead. */
const MAX_FILE_BYTES = 64 * 1024;

export interface PrewarmInput {
  /** The repository's store (its long-lived reader). */
  store: Git;
  /** The daemon's content cache, which the rules read. */
  cache: Map<string, unknown>;
  /** The pusher is an agent: its files are tamper-scanned too. */
  agent: boolean;
  /** The POST body after its command section. */
  pack: Buffer;
  /** The new ids of the push's ref commands: their contracts are walked ahead too, when that walk is as small as the files above. */
  tips: readonly string[];
}

/**
 * Parses the changed files the pack brings into the caches, then walks the pushed tips'
 * contracts (the contract rule's `contractOf`, whose trees and digests are cached by tree id),
 * but only when that walk can parse nothing more: no merge in the pack, every changed contract
 * file parsed just now, and the line's base (the first commit it does not bring) already has
 * its contract cached. Resolves with how many files were parsed and tips walked.
 */
export async function prewarmPush(input: PrewarmInput): Promise<{ files: number; contracts: number; whole: boolean; view: PackView; trusted: TrustedState }> {
  const { store, cache } = input;
  // A SHA-256 repository's pack ends in a 32-byte checksum, which readPack's SHA-1 check refuses.
  const objects = await readPack(input.pack, (id) => store.readObject(id));
  const view = new PackView(objects, store);
  const trusted = await trustedState(store);
  const { policy } = trusted;
  const { roots, format, maxSourceBytes } = policy.contract;
  const commits = view.commits();
  // Whether the tips' walks would parse only what was parsed here.
  let whole = format === 'v1' && commits.every((c) => c.parents.length <= 1);
  let files = 0;
  for (const c of commits) {
    const { changes } = await commitDiff(view, c);
    for (const ch of changes) {
      if (ch.status === 'D' || !underRoots(ch.path, roots) || !ch.newKind || !isContractFile(ch.newKind, ch.path)) continue;
      const blob = objects.get(ch.newId);
      if (files >= MAX_FILES || !blob || blob.data.length > Math.min(maxSourceBytes, MAX_FILE_BYTES)) {
        whole = false;
        continue;
      }
      files++;
      const entry: TreeEntry = { mode: ch.newMode, kind: ch.newKind, type: 'blob', id: ch.newId, path: ch.path };
      await Promise.all([
        fileRows(view, cache, entry, format, maxSourceBytes),
        input.agent ? tamperHitsOf(view, cache, ch.path, scanBase(ch), ch.newId, maxSourceBytes) : null,
      ]);
    }
  }
  if (!whole) return { files, contracts: 0, whole, view, trusted };
  let contracts = 0;
  const limits = { maxSourceBytes };
  const inPack = new Map(commits.map((c) => [c.id, c]));
  for (const tip of new Set(input.tips)) {
    if (!inPack.has(tip)) continue;
    let base: string | undefined = tip;
    while (base !== undefined && inPack.has(base)) base = inPack.get(base)!.parents[0];
    if (base === undefined || !(await contractCached(store, base, roots, cache, limits))) continue;
    await contractOf(view, tip, roots, format, cache, limits);
    contracts++;
  }
  return { files, contracts, whole, view, trusted };
}
