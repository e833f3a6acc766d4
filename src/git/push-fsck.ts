// Old history is a person's to push (issue 47). Every gated repository has
// `receive.fsckObjects` on, so git's receive-pack refuses a whole pack for one commit that an
// old tool wrote with a time zone of `+0000a`, a tree mode of `040000` or a missing space
// before an email. A real project's history carries such objects (requests: one commit of
// 6,489), and hosts such as GitHub take them. So a person's push (human or admin) starts its
// receive-pack with `receive.fsck.<id>=warn` for the ids below, through GIT_CONFIG_COUNT/_KEY_n/
// _VALUE_n in its environment: git still checks every object, prints what it found as
// `warning: object <id>: <msgId>: ...`, and takes the pack. An agent's receive-pack gets the
// daemon's environment as before: git's strict fsck, unchanged.
//
// Every id here is about the format of one author/committer/tagger line or of a mode's digits:
// none changes which tree, parent, entry or name git (or the gate, src/git/modes.ts) reads
// from the object. What does is never relaxed (treeNotSorted, duplicateEntries, hasDot,
// hasDotdot, hasDotgit, badTree, badTreeSha1, badParentSha1, missingTree, nulInCommit,
// badObjectSha1, gitmodules*, gitattributes*, ...): docs/server.md lists why.
//
// node-git-server starts the push's receive-pack itself (src/git/spawner.ts routes that start):
// the server says which fsck the start it is about to make gets (`nextStartFsck`), the start
// takes it (`takeStartFsck`) and marks its child with it (`fsckOf`), and the push's session
// and its audit rows read it from the child, never from the role alone.

import type { EventEmitter } from 'node:events';
/** A pusher's role (src/policy/types.ts Role, not imported: the git module imports nothing of the policy's). */
type Role = 'agent' | 'human' | 'admin';

/**
 * The fsck message ids a person's push has git only warn about. All are ERROR in git (or WARN/INFO,
 * made ERROR by receive-pack's --strict), all about how an old tool formatted a line or a mode.
 */
export const RELAXED_FSCK_IDS: readonly string[] = Object.freeze([
  // author/committer/tagger lines (fsck.c fsck_ident: each stops at the line's end)
  'badDate',
  'badDateOverflow',
  'badEmail',
  'badName',
  'badTimezone',
  'missingEmail',
  'missingNameBeforeEmail',
  'missingSpaceBeforeDate',
  'missingSpaceBeforeEmail',
  'zeroPaddedDate',
  // tree entry modes: `040000` for `40000`, or digits git folds with canon_mode (src/git/modes.ts)
  'zeroPaddedFilemode',
  'badFilemode',
]);

/** How a push's receive-pack checks objects: git's strict fsck, or with RELAXED_FSCK_IDS warned about. */
export type PushFsck = 'strict' | 'relaxed';

/** A person's push (human or admin) is relaxed; an agent's stays strict. */
export function fsckFor(role: Role): PushFsck {
  return role === 'agent' ? 'strict' : 'relaxed';
}

/**
 * The environment a receive-pack with this fsck is started with: `base` itself for strict;
 * for relaxed, `base` with `receive.fsck.<id>=warn` added after any GIT_CONFIG_COUNT entries it
 * already carries (command-line scope: read after the repository's config, so it wins).
 */
export function fsckEnv(fsck: PushFsck, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  if (fsck === 'strict') return base;
  const had = Number(base.GIT_CONFIG_COUNT ?? 0);
  const start = Number.isSafeInteger(had) && had > 0 ? had : 0;
  const env: NodeJS.ProcessEnv = { ...base };
  RELAXED_FSCK_IDS.forEach((id, i) => {
    env[`GIT_CONFIG_KEY_${start + i}`] = `receive.fsck.${id}`;
    env[`GIT_CONFIG_VALUE_${start + i}`] = 'warn';
  });
  env.GIT_CONFIG_COUNT = String(start + RELAXED_FSCK_IDS.length);
  return env;
}

// --- the fsck of the receive-pack node-git-server starts next

/** Set only between the server's word and the start it is about (the same tick, or the tick right before). */
let next: PushFsck | null = null;
const marked = new WeakMap<object, PushFsck>();

/**
 * The push `action` (node-git-server's POST action) is about to be accepted: the receive-pack
 * its accept starts gets `fsck`. node-git-server starts it in a process.nextTick queued by its
 * own 'accept' listener; the word is queued right before it and withdrawn right after, so no
 * other start can take it.
 */
export function fsckForAccept(action: EventEmitter, fsck: PushFsck): void {
  action.prependOnceListener('accept', () => process.nextTick(() => void (next = fsck)));
  action.once('accept', () => process.nextTick(() => void (next = null)));
}

/** Run `start` (an accept that starts git synchronously: a push's advertisement) with `fsck` as the word. */
export function withStartFsck<T>(fsck: PushFsck, start: () => T): T {
  next = fsck;
  try {
    return start();
  } finally {
    next = null;
  }
}

/** The fsck the start being made now gets (strict when nobody said), taken once. */
export function takeStartFsck(): PushFsck {
  const f = next ?? 'strict';
  next = null;
  return f;
}

/** Mark a started receive-pack with the fsck its environment carries. */
export function markFsck<T extends object>(child: T, fsck: PushFsck): T {
  marked.set(child, fsck);
  return child;
}

/** The fsck a receive-pack was started with: strict unless it was marked relaxed. */
export function fsckOf(child: object): PushFsck {
  return marked.get(child) ?? 'strict';
}

/** One object git's fsck warned about, as receive-pack relayed it (`warning: object <id>: <msgId>: <text>`). */
export interface FsckWarning {
  object: string;
  messageId: string;
  message: string;
}

const WARNING = /^warning: object ([0-9a-f]{40,64}): ([A-Za-z]+): (.*)$/;

/**
 * Reads the warnings git's fsck wrote on receive-pack's progress band (side band 2), line by
 * line across packets. Only ids in RELAXED_FSCK_IDS are kept (anything else is git's own text),
 * each object and id once, at most `max` of them.
 */
export class FsckWarnings {
  private text = '';
  private readonly seen = new Set<string>();
  readonly found: FsckWarning[] = [];
  /** Warnings past `max` (counted, not kept). */
  more = 0;

  constructor(private readonly max = 100) {}

  push(progress: Buffer): void {
    this.text += progress.toString('utf8');
    const lines = this.text.split(/[\r\n]/);
    this.text = lines.pop()!.slice(-4096);
    for (const line of lines) {
      const m = WARNING.exec(line.trimEnd());
      if (!m || !RELAXED_FSCK_IDS.includes(m[2]!)) continue;
      const k = `${m[1]} ${m[2]}`;
      if (this.seen.has(k)) continue;
      this.seen.add(k);
      if (this.found.length < this.max) this.found.push({ object: m[1]!, messageId: m[2]!, message: m[3]! });
      else this.more++;
    }
  }
}

/**
 * The audit's trace of a relaxed fsck, one rule outcome among a ref row's rules: waived (a
 * person's push), each warning a finding.
 */
export function fsckOutcome(warnings: FsckWarnings): Record<string, unknown> {
  return {
    rule: 'git-fsck',
    status: 'waived',
    findings: warnings.found.map((w) => ({ messageId: w.messageId, data: { object: w.object }, message: `object ${w.object}: ${w.messageId}: ${w.message}` })),
    details: { relaxed: [...RELAXED_FSCK_IDS], ...(warnings.more ? { moreWarnings: warnings.more } : {}) },
    ms: 0,
  };
}
