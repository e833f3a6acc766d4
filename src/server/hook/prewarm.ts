// A push's changed files parsed while receive-pack unpacks it (issue 24). The pack is in the
// daemon (the POST body) about ten milliseconds before receive-pack's pre-receive hook asks for
// a verdict: receive-pack first starts unpack-objects, then the connectivity rev-list, on the
// other core. The parse of a changed file (its contract rows, and for an agent its tamper scan)
// was most of a small push's judging; it now starts as soon as the body is in, from the pack
// read in process (src/git/pack-read.ts), and its results go to the same caches the rules read,
// under the same keys (blob ids). The judgement does not change: it reads the quarantine as
// before and finds, or joins, those results. Best effort: a pack it does not read, or any
// error, only leaves the rules to parse as before.

import { fileRows } from '../../contract/digest.js';
import { isTypeScriptPath } from '../../contract/typescript.js';
import type { Git } from '../../git/git.js';
import { PackView, readPack } from '../../git/pack-read.js';
import { commitDiff, type TreeEntry } from '../../git/trees.js';
import { tamperHitsOf, underRoots } from '../../policy/tamper/scan-file.js';
import { trustedState } from './judge.js';

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
}

/** Parses the changed files the pack brings into the caches; resolves with how many (0 when it gave up). */
export async function prewarmPush(input: PrewarmInput): Promise<number> {
  const { store, cache } = input;
  // A SHA-256 repository's pack ends in a 32-byte checksum, which readPack's SHA-1 check refuses.
  const objects = await readPack(input.pack, (id) => store.readObject(id));
  const view = new PackView(objects, store);
  const { policy } = await trustedState(store);
  const { roots, format, maxSourceBytes } = policy.contract;
  let files = 0;
  for (const c of view.commits()) {
    const { changes } = await commitDiff(view, c);
    for (const ch of changes) {
      if (files >= MAX_FILES) return files;
      if (ch.status === 'D' || !underRoots(ch.path, roots) || (ch.newKind !== 'regular' && ch.newKind !== 'executable')) continue;
      if (!ch.path.endsWith('.py') && !isTypeScriptPath(ch.path)) continue;
      const blob = objects.get(ch.newId);
      if (!blob || blob.data.length > Math.min(maxSourceBytes, MAX_FILE_BYTES)) continue;
      files++;
      const entry: TreeEntry = { mode: ch.newMode, kind: ch.newKind, type: 'blob', id: ch.newId, path: ch.path };
      const oldId = ch.status === 'A' || ch.oldKind === 'symlink' || !ch.oldKind ? null : ch.oldId;
      await Promise.all([
        fileRows(view, cache, entry, format, maxSourceBytes),
        input.agent ? tamperHitsOf(view, cache, ch.path, oldId, ch.newId, maxSourceBytes) : null,
      ]);
    }
  }
  return files;
}
