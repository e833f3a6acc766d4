// What a person's fetch may see that an agent's may not (issue 48, item 6): the escalation refs
// (refs/patchgate/escalations/*) are hidden by the repository's config from every ref
// advertisement; a person's upload-pack gets `uploadpack.hideRefs=!refs/patchgate/escalations`
// as a command-line config (GIT_CONFIG_COUNT), which git reads last, so for them alone the refs
// are advertised and fetchable by name. Handed to the spawn the same way a pusher's fsck is
// (./push-fsck.ts): a word set right before node-git-server starts the child, taken once.

import type { EventEmitter } from 'node:events';
/** A pusher's role (src/policy/types.ts Role, not imported: the git module imports nothing of the policy's). */
type Role = 'agent' | 'human' | 'admin';

/** The config a person's upload-pack gets; an agent's gets nothing (the refs stay hidden). */
export function readerConfig(role: Role): Record<string, string> | null {
  if (role === 'agent') return null;
  return { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'uploadpack.hiderefs', GIT_CONFIG_VALUE_0: '!refs/patchgate/escalations' };
}

let next: Record<string, string> | null = null;

/** A fetch's POST `action` is about to be accepted: the upload-pack its accept starts gets `env`. */
export function readerEnvForAccept(action: EventEmitter, env: Record<string, string> | null): void {
  action.prependOnceListener('accept', () => process.nextTick(() => void (next = env)));
  action.once('accept', () => process.nextTick(() => void (next = null)));
}

/** Run `start` (an accept that starts git synchronously: an advertisement) with `env` as the word. */
export function withReaderEnv<T>(env: Record<string, string> | null, start: () => T): T {
  next = env;
  try {
    return start();
  } finally {
    next = null;
  }
}

/** The extra environment of the upload-pack being started now (none when nobody said), taken once. */
export function takeReaderEnv(): Record<string, string> | null {
  const e = next;
  next = null;
  return e;
}
