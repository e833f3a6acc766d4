// What an agent's ref update carries, and which of it must be judged (issue 20). Every commit
// reachable from the new tip that is not on the trusted branch is the agent's, whoever wrote
// it and whether or not the repository had it: a person's WIP branch pushed again by an agent
// token as `agent/x` brings no new object, yet it is the agent's now. The only commits not
// judged again are those already judged and accepted for an agent, under the same policy, in
// enforce mode; that verdict is kept in the daemon's persistent cache (`<data>/cache.db`,
// src/cache/content-cache.ts) under the commit id and the policy's digest, and written only
// after the accept is durable in the audit log (src/server/hook/decision-log.ts). Anything unsure
// (no cache, an unreadable entry, no trusted branch) means the commit is judged, never passed.

import { createHash } from 'node:crypto';
import type { CommitInfo, Git } from '../git/git.js';
import type { Policy } from './config.js';

/**
 * Bump when a per-commit rule (write-block, tamper-scan, limits) changes what it finds for the
 * same commit and policy: every cached accept is then judged again.
 */
export const JUDGE_VERSION = 1;

const PREFIX = 'judged-accept';

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
  }
  return v;
}

/** sha256 of the effective policy (its `source`, which names the trusted tip, left out) and JUDGE_VERSION. */
export function policyDigest(policy: Policy): string {
  const { source: _source, ...rest } = policy;
  return createHash('sha256').update(JSON.stringify({ v: JUDGE_VERSION, policy: canonical(rest) })).digest('hex');
}

function cacheKey(digest: string, commit: string): string {
  return `${PREFIX}:${digest}:${commit}`;
}

/**
 * Every commit `newId` reaches that the trusted tip does not (all of them when there is no
 * trusted branch), oldest first: one rev-list. `line` is the push's pushed line
 * (Git.pushedLine) when the engine has it; when it ends on the trusted tip it is that set
 * already and no process is started.
 */
export async function carriedCommits(git: Git, newId: string, trustedTip: string | null, line: CommitInfo[] | null, cache?: Map<string, unknown>): Promise<CommitInfo[]> {
  if (line && trustedTip && (line.length ? line[0]!.parents[0] === trustedTip : newId === trustedTip)) return line;
  if (trustedTip && cache) {
    const linear = await linearCarried(git, newId, trustedTip, line, cache);
    if (linear) return linear;
  }
  return git.newCommits(newId, trustedTip ? [trustedTip] : []);
}

/** Commits a linear walk reads before it gives up for a rev-list. */
const LINEAR_MAX = 256;

const linearKey = (trustedTip: string, tip: string): string => `mem:carried-linear:${trustedTip}:${tip}`;

/**
 * The carried commits without a rev-list, when they are one line of single-parent commits
 * down to the trusted tip: an agent's branch pushed again and again (each push's line ends on
 * the ref's old tip, not on the trusted tip). Then everything `newId` reaches that the trusted
 * tip does not is exactly that line (each commit's only parent is the one below it, and none of
 * them can be an ancestor of the trusted tip below them), which is also rev-list's order. The
 * walk goes down from the pushed line's base through commit headers (the push's reader) until
 * the trusted tip, or until a line already found for an earlier push under the same trusted
 * tip (memoised in memory); a merge, a root or more than LINEAR_MAX commits: null (rev-list).
 */
async function linearCarried(git: Git, newId: string, trustedTip: string, line: CommitInfo[] | null, cache: Map<string, unknown>): Promise<CommitInfo[] | null> {
  const down: CommitInfo[] = []; // newest first
  let id = newId;
  if (line?.length && line[line.length - 1]!.id === newId) {
    for (let i = line.length - 1; i >= 0; i--) down.push(line[i]!);
    id = line[0]!.parents[0]!;
  }
  let below: CommitInfo[] = [];
  while (id !== trustedTip) {
    const known = cache.get(linearKey(trustedTip, id));
    if (Array.isArray(known)) {
      below = known as CommitInfo[];
      break;
    }
    if (down.length >= LINEAR_MAX) return null;
    const parents = (await git.commitHeader(id))?.parents;
    if (parents?.length !== 1) return null;
    down.push({ id, parents });
    id = parents[0]!;
  }
  const out = [...below, ...down.reverse()];
  if (out.length <= LINEAR_MAX) cache.set(linearKey(trustedTip, newId), out);
  return out;
}

/** A cache that reads and writes many keys at once (ContentCache over cache.db). */
interface BatchCache {
  getMany(keys: string[]): Map<string, unknown>;
  setMany(entries: Array<[string, unknown]>): void;
}

function hasBatch(cache: Map<string, unknown>): cache is Map<string, unknown> & BatchCache {
  return typeof (cache as Partial<BatchCache>).getMany === 'function';
}

/** The ids among `commits` already accepted for an agent under this policy digest. A failing cache answers none. */
export function acceptedBefore(cache: Map<string, unknown>, digest: string, commits: CommitInfo[]): Set<string> {
  const out = new Set<string>();
  if (!commits.length) return out;
  const keys = commits.map((c) => cacheKey(digest, c.id));
  let found: Map<string, unknown>;
  try {
    found = hasBatch(cache) ? cache.getMany(keys) : new Map(keys.map((k) => [k, cache.get(k)]));
  } catch {
    return out;
  }
  for (const c of commits) {
    const v = found.get(cacheKey(digest, c.id)) as { verdict?: unknown } | undefined;
    if (v && typeof v === 'object' && v.verdict === 'accept') out.add(c.id);
  }
  return out;
}

/** What a judged agent ref update leaves for the cache once its accept is durable. */
export interface Judged {
  /** The policy digest the commits were judged under. */
  policy: string;
  /** The commits judged for this update (not those the cache already held). */
  commits: string[];
}

/** Record the commits of accepted agent updates (call only once the accept is in the audit log, and only in enforce mode). */
export function rememberAccepted(cache: Map<string, unknown>, judged: Judged[], pushId: string): void {
  const entries: Array<[string, unknown]> = judged.flatMap((j) => j.commits.map((id): [string, unknown] => [cacheKey(j.policy, id), { verdict: 'accept', pushId }]));
  if (!entries.length) return;
  try {
    if (hasBatch(cache)) cache.setMany(entries);
    else for (const [k, v] of entries) cache.set(k, v);
  } catch {
    // a cache that cannot be written costs a judgement next time, nothing more
  }
}
