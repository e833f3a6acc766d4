// A push's git-receive-pack started while its client is still packing (issue 24). Since the
// ref advertisement is made ahead (./ref-advert.ts), a push's GET starts no git, and its POST's
// receive-pack start through the spawn helper (2-4 ms: socket pairs, the helper's fork, git's
// start) was the one start left on the push's path. In stateless-rpc mode receive-pack reads
// its configuration and then waits for the commands on stdin; it reads no ref, object or hook
// before them. So once a push's advertisement is answered, a receive-pack is started for that
// repository, and the POST that comes while the client packs takes it instead of starting one.
//
// A spare is only taken while what it read at its start is what a new one would read: the same
// repository (folder and config file, by inode), the same config bytes, the same global configs
// (by stat) and the same environment. Otherwise, and when it died, it is dropped and the POST
// starts git as before. The pusher's fsck (./push-fsck.ts: relaxed for a person, strict for an
// agent) is part of both: a spare is started with the fsck of the push whose advertisement
// primed it, and only a POST with that same fsck takes it (an agent never gets a person's
// relaxed receive-pack, nor a person an agent's strict one). A spare nobody takes (a push that had nothing to send) is stopped after
// IDLE_MS. Only with the spawn helper: a fork of the daemon would block its loop.

import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { HelperChild } from './helper-child.js';
import { fsckEnv, markFsck, type PushFsck } from './push-fsck.js';
import { hashConfig } from './ref-advert.js';

/** How long a spare waits for its POST before it is stopped. */
const IDLE_MS = 30_000;
/** Spares of one repository and fsck at most (pushes of several agents at once). */
const PER_REPO = 2;
/** Spares at most in all; the oldest is stopped for a new one. */
const MAX_SPARES = 16;

/** The arguments node-git-server starts a push's receive-pack with (repository last). */
export function isPushPost(cmd: string, args: readonly unknown[]): boolean {
  return cmd === 'git-receive-pack' && args.length === 2 && args[0] === '--stateless-rpc' && typeof args[1] === 'string';
}

/**
 * What a receive-pack started now with environment `env` reads before its stdin: null when
 * that cannot be keyed (see ref-advert.ts's hashConfig) or read. Synchronous, a few small reads.
 */
export function spareKey(repoDir: string, env: NodeJS.ProcessEnv = process.env): string | null {
  try {
    const h = createHash('sha256');
    if (!hashConfig(h, repoDir)) return null;
    for (const p of [repoDir, join(repoDir, 'config')]) {
      const st = statSync(p);
      h.update(`${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}\0`);
    }
    for (const k of Object.keys(env).sort()) h.update(`${k}=${env[k] ?? ''}\0`);
    return h.digest('hex');
  } catch {
    return null;
  }
}

interface Spare {
  repoDir: string;
  key: string;
  fsck: PushFsck;
  child: HelperChild;
  timer: NodeJS.Timeout;
  dead: boolean;
  onError: () => void;
}

export class SpareReceivePacks {
  private readonly spares: Spare[] = [];
  private closed = false;
  /** Counters, for tests and the bench: spares started, taken by a POST, dropped (stale, dead, idle, over the bounds). */
  readonly stats = { made: 0, taken: 0, dropped: 0 };
  private readonly idleMs: number;

  /** `start` is the spawn helper's start of `git-receive-pack --stateless-rpc <repoDir>` with `env` (null without it). */
  constructor(private readonly start: (repoDir: string, env: NodeJS.ProcessEnv) => HelperChild | null, opts: { idleMs?: number } = {}) {
    this.idleMs = opts.idleMs ?? IDLE_MS;
  }

  /** Start a spare for the repository (its push's advertisement was just answered), with that push's fsck, within the bounds. */
  prime(repoDir: string, fsck: PushFsck = 'strict'): void {
    if (this.closed) return;
    const mine = this.spares.filter((s) => s.repoDir === repoDir && s.fsck === fsck && !s.dead);
    if (mine.length >= PER_REPO) return;
    const env = fsckEnv(fsck);
    const key = spareKey(repoDir, env);
    if (key === null) return;
    const child = this.start(repoDir, env);
    if (!child) return;
    markFsck(child, fsck);
    this.stats.made++;
    const spare: Spare = {
      repoDir, key, fsck, child, dead: false,
      // Until a POST takes it nobody else listens: its failure only marks it (an 'error' with no listener would throw).
      onError: () => void (spare.dead = true),
      timer: setTimeout(() => this.drop(spare), this.idleMs),
    };
    spare.timer.unref();
    child.on('error', spare.onError);
    child.once('exit', spare.onError);
    this.spares.push(spare);
    while (this.spares.length > MAX_SPARES) this.drop(this.spares[0]!);
  }

  /**
   * A live spare of the repository whose start read what a start now with `fsck` would, or null
   * (the POST starts its own). Spares of the repository that no longer match are dropped on the
   * way; those of the other fsck are left for a push of theirs.
   */
  take(repoDir: string, fsck: PushFsck = 'strict'): HelperChild | null {
    let key: string | null | undefined;
    for (const s of this.spares.filter((x) => x.repoDir === repoDir && x.fsck === fsck)) {
      const c = s.child;
      // Not started yet (the helper is slow or stuck): left to start, or to its idle end.
      if (!s.dead && c.pid === undefined) continue;
      key ??= spareKey(repoDir, fsckEnv(fsck));
      if (s.dead || c.exitCode !== null || c.signalCode !== null || key === null || s.key !== key) {
        this.drop(s);
        continue;
      }
      this.remove(s);
      c.off('error', s.onError);
      c.off('exit', s.onError);
      this.stats.taken++;
      return c;
    }
    return null;
  }

  /** At stop: every spare stopped. */
  closeAll(): void {
    this.closed = true;
    for (const s of [...this.spares]) this.drop(s);
  }

  /** Spares not yet taken (for tests). */
  get size(): number {
    return this.spares.length;
  }

  /** The pids of the repository's spares (those of one fsck, when given), once each has started (for tests). */
  async pids(repoDir: string, fsck?: PushFsck): Promise<number[]> {
    const pids = await Promise.all(this.spares.filter((s) => s.repoDir === repoDir && (fsck === undefined || s.fsck === fsck)).map((s) => s.child.pidReady));
    return pids.filter((p): p is number => p !== undefined);
  }

  private remove(s: Spare): void {
    clearTimeout(s.timer);
    const i = this.spares.indexOf(s);
    if (i >= 0) this.spares.splice(i, 1);
  }

  /**
   * Stopped: its stdin ends (receive-pack reads no command and exits) and it is killed, once it
   * runs (a kill sent before the helper started it would find nothing); its output is read away.
   */
  private drop(s: Spare): void {
    if (!this.spares.includes(s)) return;
    this.remove(s);
    this.stats.dropped++;
    const c = s.child;
    c.stdout.resume();
    c.stderr.resume();
    c.stdin.end();
    if (c.pid !== undefined) c.kill('SIGKILL');
    else void c.pidReady.then((pid) => void (pid !== undefined && c.kill('SIGKILL')));
  }
}
