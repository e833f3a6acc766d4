// What an agent's ref update carries, and which of it must be judged (issue 20). Every commit
// reachable from the new tip that is not on the trusted branch is the agent's, whoever wrote
// it and whether or not the repository had it: a person's WIP branch pushed again by an agent
// token as `agent/x` brings no new object, yet it is the agent's now. The only commits not
// judged again are those already judged and accepted for an agent, under the same policy, in
// enforce mode; that verdict is kept in the daemon's persistent cache (`<data>/cache.db`,
// src/cache/content-cache.ts) under the commit id and the policy's digest, and written only
// after the accept is durable in the audit log (src/server/hook-service.ts). Anything unsure
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
export async function carriedCommits(git: Git, newId: string, trustedTip: string | null, line: CommitInfo[] | null): Promise<CommitInfo[]> {
  if (line && trustedTip && (line.length ? line[0]!.parents[0] === trustedTip : newId === trustedTip)) return line;
  return git.newCommits(newId, trustedTip ? [trustedTip] : []);
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
