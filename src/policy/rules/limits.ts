// Rule `limits`: a pack bomb stops here, before any other rule reads a blob. A push may bring
// at most `limits.maxObjects` objects and `limits.maxPushBytes` bytes (counted from the
// receive-pack quarantine's files), and no object over `limits.maxBlobBytes` (sizes from
// object headers, so a 1 GB blob of zeros packed into a few kB is never inflated). Every
// object in the quarantine counts, whether a new commit names it or not: git stores what a
// pack carries, so a blob no commit names is as real a cost as one a commit adds. Blobs the
// new commits name are reported by commit and path; the others by id and kind. It applies
// to people too: the other rules read blobs for everyone. The engine runs it alone and
// first; when it fails, the other rules are skipped. For a person's push (issue 47: the whole
// history of a real project, 86k objects) its cost follows the size of the push, not the
// length of its history: the sizes are the quarantine's (one listing git already made), and the
// new commits are walked only to name the commit and path of a blob over the limit.

import { isZeroId } from '../../git/git.js';
import { DEFAULT_LIMITS } from '../config.js';
import type { Finding, Rule } from '../types.js';
import { short } from '../types.js';
import { stripCommand } from './write-block.js';
import { pushAgain } from '../remedy.js';

/** Bytes for people: 1536 -> "1.5 KiB". */
export function formatBytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} bytes` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

export const limits: Rule = {
  id: 'limits',
  description: 'A push may bring at most limits.maxObjects objects and limits.maxPushBytes bytes, and no blob over limits.maxBlobBytes.',
  waivedForHumans: false,
  messages: {
    tooManyObjects: 'the push brings {objects} objects, over limits.maxObjects ({max}); nothing else was checked',
    tooManyBytes: 'the push brings {bytes} of objects, over limits.maxPushBytes ({max}); nothing else was checked',
    blobTooLarge: 'commit {commit} {verb} {path}, a blob of {size}, over limits.maxBlobBytes ({max})',
    objectTooLarge: 'the push carries {kind} {object} of {size}{why}, over {limit} ({max})',
  },
  async check(ctx) {
    const l = ctx.policy.limits;
    const findings: Finding[] = [];
    const q = await ctx.git.quarantineStats();
    if (q && q.objects > l.maxObjects) findings.push({ messageId: 'tooManyObjects', data: { objects: q.objects, max: l.maxObjects } });
    if (q && q.bytes > l.maxPushBytes) findings.push({ messageId: 'tooManyBytes', data: { bytes: formatBytes(q.bytes), max: formatBytes(l.maxPushBytes) } });
    const details: Record<string, unknown> = q ? { objects: q.objects, bytes: q.bytes, packs: q.packs, loose: q.loose } : {};
    // An oversized push stops before its trees are walked: that walk is what it would make costly.
    if (findings.length) return { findings, details };
    // Every object the push brought (null outside a quarantine, i.e. in `check`): sizes from headers.
    const pushed = await ctx.git.quarantineObjects();
    const pushedSize = new Map((pushed ?? []).map((o) => [o.id, o.size]));
    // An agent's push: every blob its commits name (the walk write-block makes anyway). A
    // person's: only the pushed blobs over the limit, named by the first commit that writes them.
    const wanted = pushed && ctx.role !== 'agent' ? new Set(pushed.filter((o) => o.type === 'blob' && o.size > l.maxBlobBytes).map((o) => o.id)) : null;
    const blobs = new Map<string, { commit: string; path: string; verb: string }>();
    for (const commit of wanted?.size === 0 ? [] : ctx.newCommits) {
      for (const c of await ctx.changes(commit)) {
        if (c.status === 'D' || isZeroId(c.newId) || c.newKind === 'gitlink' || c.newKind === 'tree') continue;
        if (wanted && !wanted.has(c.newId)) continue;
        if (!blobs.has(c.newId)) blobs.set(c.newId, { commit: commit.id, path: c.path, verb: c.status === 'A' ? 'adds' : 'changes' });
      }
      if (wanted && blobs.size === wanted.size) break;
    }
    const ids = [...blobs.keys()];
    const sizes = await Promise.all(ids.map((id) => pushedSize.get(id) ?? ctx.git.objectSize(id)));
    let largest = 0;
    for (let i = 0; i < ids.length; i++) {
      const size = sizes[i];
      const where = blobs.get(ids[i]!)!;
      if (size === null || size === undefined) throw new Error(`blob ${short(ids[i]!)} at ${where.path} (commit ${short(where.commit)}) is missing from the push`);
      largest = Math.max(largest, size);
      if (size > l.maxBlobBytes) {
        findings.push({ messageId: 'blobTooLarge', commit: where.commit, path: where.path, data: { commit: short(where.commit), path: where.path, verb: where.verb, size: formatBytes(size), max: formatBytes(l.maxBlobBytes) } });
      }
    }
    // The other objects: blobs no new commit names (a crafted pack), and trees, commits and
    // tags, which are held to maxBlobBytes too but never below its default (a policy that
    // lowers the blob limit to a few KiB does not refuse an ordinary large folder). One that
    // the repository already had is not counted (a thin pack's bases are copied in).
    const cap = (type: string): number => (type === 'blob' ? l.maxBlobBytes : Math.max(l.maxBlobBytes, DEFAULT_LIMITS.maxBlobBytes));
    const unnamed = (pushed ?? []).filter((o) => o.size > cap(o.type) && !blobs.has(o.id));
    const stored = await ctx.git.storedBeforePush(unnamed.map((o) => o.id));
    for (const o of unnamed) {
      if (stored.has(o.id)) continue;
      const why = o.type === 'blob' ? ', which no new commit names' : '';
      const limit = o.type === 'blob' || l.maxBlobBytes >= DEFAULT_LIMITS.maxBlobBytes ? 'limits.maxBlobBytes' : `the floor for a ${o.type} (the default limits.maxBlobBytes)`;
      findings.push({ messageId: 'objectTooLarge', data: { kind: o.type, why, object: o.id, size: formatBytes(o.size), limit, max: formatBytes(cap(o.type)) } });
    }
    for (const o of pushed ?? []) largest = Math.max(largest, o.size);
    return { findings, details: { ...details, blobs: ids.length, largestBlob: largest, ...(pushed ? { pushedObjects: pushed.length } : {}), ...(wanted ? { walked: wanted.size > 0 ? 'to name the blobs over the limit' : 'no' } : {}) } };
  },
  remediation(ctx, findings) {
    const raise = 'if a person decides the repository should take it, they raise `limits` in ci/patchgate.json on the trusted branch first';
    const paths = [...new Set(findings.filter((f) => f.messageId === 'blobTooLarge').map((f) => f.path!))];
    const unnamed = findings.some((f) => f.messageId === 'objectTooLarge');
    const extra = unnamed ? '\nthe objects no commit names came in a pack git itself would not build: push with plain `git push`, which sends only what the commits need' : '';
    if (paths.length) {
      return `${stripCommand(ctx, paths, 'the large files')}\nlarge files do not belong in the repository; ${raise}${extra}`;
    }
    if (unnamed) return `${raise}${extra}\n${pushAgain(ctx)}`;
    return `split the work into smaller pushes (fewer commits and objects per push), or drop generated or vendored files from it; ${raise}\n${pushAgain(ctx)}`;
  },
};
