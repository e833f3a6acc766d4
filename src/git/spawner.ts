// Process starts for the git services node-git-server runs (`git-receive-pack`,
// `git-upload-pack`) and for each push's object reader (`git cat-file`, ./cat-file.ts), made
// by a small helper process (./spawner-process.mjs) instead of the daemon. A fork copies its
// parent's page tables: from a daemon of 200-300 MB each start blocked every push's event loop
// for 7-30 ms (the bench's profile), twice per push; from the helper it costs its ~45 MB. The
// child's stdio are sockets whose other ends the daemon holds (./socket-pairs.ts, passed to the
// helper over its IPC channel), so git's bytes flow between the daemon and git directly.
//
// What the daemon gets is a ChildProcess-like object at once (./helper-child.ts): stdio
// streams joined to those sockets (stdin once git runs), `pid` when it is known (`pidReady`),
// 'exit' and 'close' after the helper saw the child exit and its stdout ended. When the helper
// cannot be used (not started, died) the daemon's own spawn runs: slower, never different.
// When a spawn's stdio sockets cannot be made (the CI run of eda25fe: no connection within
// 5 s on a loaded machine) the daemon starts that one program itself, behind the same object,
// and opens a new socket; a helper that does not answer in time is killed and started again.

import { spawn as nodeSpawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { pkt } from '../server/pkt-line.js';
import { HelperChild, type ChildOwner } from './helper-child.js';
import { SocketPairs } from './socket-pairs.js';
import { isPushAdvert, RefAdverts, type AdvertChild } from './ref-advert.js';
import { isPushPost, SpareReceivePacks } from './spare-receive.js';
import { fsckEnv, markFsck, takeStartFsck } from './push-fsck.js';
import { takeReaderEnv } from './reader-env.js';
import { pushPathOf, type PushPath } from '../server/push-path.js';

export { HelperChild } from './helper-child.js';

/** The helper's script: plain JavaScript, run by node with no flags and no loaders, from source as from dist. */
const HELPER = fileURLToPath(new URL('./spawner-process.mjs', import.meta.url));

/** The commands the helper starts: node-git-server's services, by the names it spawns them under. */
const SERVICES = new Set(['git-receive-pack', 'git-upload-pack']);

type Msg =
  | { op: 'ready' }
  | { op: 'spawned'; id: number; pid: number }
  | { op: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { op: 'error'; id: number; message: string };

/** How long the helper may take, by default, to say it started a program. */
const SPAWN_ANSWER_MS = 15_000;

export class GitSpawner implements ChildOwner {
  private helper: ChildProcess | null = null;
  private pairs: SocketPairs | null = null;
  /** The socket server listens. */
  private ready = false;
  /** The current helper has said it listens (a message sent before would be lost). */
  private helperReady = false;
  private readonly live = new Map<number, HelperChild>();
  private nextId = 1;
  private stopped = false;

  private readonly answerMs: number;
  /** Push ref advertisements made ahead and kept while their key holds (./ref-advert.ts). */
  readonly adverts = new RefAdverts({
    helper: (dir) => this.spawn('git-receive-pack', ['--stateless-rpc', '--advertise-refs', dir]),
    direct: (dir) => nodeSpawn('git-receive-pack', ['--stateless-rpc', '--advertise-refs', dir]) as AdvertChild,
  });

  /** Push receive-packs started while their clients pack (./spare-receive.ts). */
  readonly spares: SpareReceivePacks;
  /** Which of the push path's mechanisms run (src/server/push-path.ts): here the spare receive-pack and the advertisement made ahead. */
  readonly pushPath: PushPath;

  constructor(private readonly log: (line: string) => void = () => {}, opts: { answerMs?: number; spareIdleMs?: number; pushPath?: Partial<PushPath> } = {}) {
    this.answerMs = opts.answerMs ?? SPAWN_ANSWER_MS;
    this.pushPath = pushPathOf(opts.pushPath);
    this.spares = new SpareReceivePacks((dir, env) => this.spawn('git-receive-pack', ['--stateless-rpc', dir], { env }), opts.spareIdleMs === undefined ? {} : { idleMs: opts.spareIdleMs });
  }

  /** @internal the current stdio socket's path, if one is open. */
  get socketPath(): string | undefined {
    return this.pairs?.socketPath;
  }

  /** Start the helper now (while the daemon is still small) rather than at the first push. */
  start(): void {
    if (this.helper || this.stopped) return;
    if (!this.pairs) this.openPairs();
    const h = nodeSpawn(process.execPath, [HELPER], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'json' });
    this.helper = h;
    this.helperReady = false;
    h.on('message', (m: Msg) => (m.op === 'ready' ? void (this.helper === h && (this.helperReady = true)) : this.onMessage(m)));
    h.on('error', (err) => this.lost(h, err));
    h.on('exit', (code, signal) => this.lost(h, new Error(`the spawn helper exited (${signal ?? code})`)));
    h.channel?.unref();
    h.unref();
  }

  /** A new stdio socket (in a new folder); spawns use the helper again once it listens. */
  private openPairs(): void {
    const pairs = new SocketPairs();
    this.pairs = pairs;
    this.ready = false;
    pairs.ready.then(() => {
      if (this.pairs === pairs) this.ready = true;
    }, (err: unknown) => this.log(`patchgate: spawn helper: no socket (${(err as Error).message}); git services start from the daemon`));
  }

  /** Spawn a git service through the helper; null when the helper is not available (the caller spawns). */
  spawn(cmd: string, args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): HelperChild | null {
    const h = this.helper;
    const pairs = this.pairs;
    if (!h || !h.connected || !pairs || !this.ready || !this.helperReady || this.stopped) return null;
    const id = this.nextId++;
    const child = new HelperChild(this, id);
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.env ?? process.env)) if (v !== undefined) env[k] = v;
    const cwd = opts.cwd ?? process.cwd();
    this.live.set(id, child);
    h.channel?.ref(); // its 'exit' message must arrive; unref'd again when no child is left
    void (async () => {
      const made: Socket[] = [];
      let ends: Array<[Socket, Socket]>;
      try {
        ends = [];
        for (let i = 0; i < 3; i++) {
          const p = await pairs.pair();
          made.push(...p);
          ends.push(p);
        }
      } catch (e) {
        // Nothing was sent to the helper: the daemon starts this one itself. The socket is
        // replaced, so a connection that arrives late is never taken for another spawn's.
        for (const s of made) s.destroy();
        this.forget(id);
        if (this.pairs === pairs && !this.stopped) {
          pairs.close();
          this.openPairs();
        }
        // Stopped meanwhile (the pairs were closed under it): nothing is started any more.
        if (this.stopped) return void child.onError(new Error(`the spawn helper stopped before ${cmd} started`));
        this.log(`patchgate: spawn helper: ${(e as Error).message}; ${cmd} started from the daemon`);
        child.adopt(nodeSpawn(cmd, [...args], { cwd, env }));
        return;
      }
      const [[inMine, inTheirs], [outMine, outTheirs], [errMine, errTheirs]] = ends as [[Socket, Socket], [Socket, Socket], [Socket, Socket]];
      child.connect(inMine, outMine, errMine);
      const sent = (e: Error | null) => {
        if (e) this.fail(id, e);
      };
      // The handles are closed here once sent (keepOpen false): git's ends live in the helper, then in git.
      h.send({ op: 'stdio', id, fd: 0 }, inTheirs, { keepOpen: false }, sent);
      h.send({ op: 'stdio', id, fd: 1 }, outTheirs, { keepOpen: false }, sent);
      h.send({ op: 'spawn', id, cmd, args: [...args], cwd, env }, errTheirs, { keepOpen: false }, sent);
      // Never a wait without end: no answer in time fails it (its push is refused), and a
      // helper that does not answer is stopped; the next one serves (lost(), below).
      const timer = setTimeout(() => {
        const err = new Error(`the spawn helper did not start ${cmd} within ${this.answerMs / 1000} s`);
        this.fail(id, err);
        if (this.helper === h) {
          this.lost(h, err);
          h.kill('SIGKILL');
        }
      }, this.answerMs);
      timer.unref();
      void child.pidReady.then(() => clearTimeout(timer));
    })().catch((e: unknown) => this.fail(id, e as Error));
    return child;
  }

  /** @internal */
  kill(id: number, signal: NodeJS.Signals): void {
    if (this.helper?.connected) this.helper.send({ op: 'kill', id, signal }, () => {});
  }

  /** @internal */
  forget(id: number): void {
    this.live.delete(id);
    if (this.live.size === 0) this.helper?.channel?.unref();
  }

  stop(): void {
    this.spares.closeAll();
    this.stopped = true;
    const h = this.helper;
    this.helper = null;
    if (h?.connected) h.disconnect();
    this.pairs?.close();
    this.pairs = null;
  }

  private onMessage(m: Exclude<Msg, { op: 'ready' }>): void {
    const c = this.live.get(m.id);
    if (!c) return;
    if (m.op === 'spawned') c.onSpawned(m.pid);
    else if (m.op === 'exit') c.onExit(m.code, m.signal);
    else if (m.op === 'error') this.fail(m.id, new Error(m.message));
  }

  private fail(id: number, err: Error): void {
    const c = this.live.get(id);
    this.forget(id);
    c?.onError(err);
  }

  /** The helper died: every child it had is failed (their pushes are refused), the next spawn starts a new one. */
  private lost(h: ChildProcess, err: Error): void {
    if (this.helper !== h) return;
    this.helper = null;
    if (!this.stopped) this.log(`patchgate: spawn helper: ${err.message}; git services start from the daemon until it is back`);
    for (const id of [...this.live.keys()]) this.fail(id, err);
    if (!this.stopped) setTimeout(() => this.start(), 1000).unref();
  }
}

/** The spawners of the servers running in this process (tests run several): the newest serves. */
const routed: GitSpawner[] = [];
/** The servers in this process whose pushes start here (with the helper or without). */
let servers = 0;
let restore: (() => void) | null = null;

/**
 * Route node-git-server's service spawns through `spawner`. node-git-server (CommonJS) calls
 * `require('child_process').spawn('git-receive-pack', …)` at each request; that one property
 * of the CommonJS module object is wrapped, for those two commands only when called with no
 * options, exactly as node-git-server calls them. Every other spawn, ours included (ES module
 * bindings), is untouched. Returns a function that undoes it (the original is back once no
 * server routes). PATCHGATE_SPAWN_HELPER=0 turns the helper off (the bench compares both): then
 * a push's receive-pack is still started here, by node's own spawn, for the environment of its
 * pusher's fsck (./push-fsck.ts).
 */
export function routeServiceSpawns(spawner: GitSpawner): () => void {
  const helper = process.env.PATCHGATE_SPAWN_HELPER !== '0';
  if (helper) routed.push(spawner);
  servers++;
  if (!restore) {
    const cp = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
    const original = cp.spawn;
    const wrapped = function (this: unknown, cmd: string, ...rest: unknown[]): ChildProcess {
      const args = rest[0];
      const s = routed[routed.length - 1];
      const ours = SERVICES.has(cmd) && Array.isArray(args) && rest.length === 1;
      // The pusher's fsck, as the server said for this start (strict when it said nothing).
      const fsck = ours && (isPushAdvert(cmd, args) || isPushPost(cmd, args)) ? takeStartFsck() : 'strict';
      if (s && ours) {
        let child: AdvertChild | HelperChild | null;
        if (isPushAdvert(cmd, args)) {
          // Once the advertisement is answered, the POST's receive-pack is started while the client packs.
          // Either off (src/server/push-path.ts): git answers each GET, and no spare is started.
          const dir = args[2] as string;
          child = s.pushPath.advert ? s.adverts.answer(dir) : (s.spawn(cmd, args as string[]) ?? ((original as (...a: unknown[]) => ChildProcess).call(this, cmd, args) as unknown as AdvertChild));
          if (s.pushPath.spare) child.once('exit', (code: number | null) => void (code === 0 && s.spares.prime(dir, fsck)));
        } else if (isPushPost(cmd, args)) {
          child = s.spares.take(args[1] as string, fsck) ?? s.spawn(cmd, args as string[], { env: fsckEnv(fsck) });
          if (child) markFsck(child, fsck);
        } else if (cmd === 'git-upload-pack') {
          // A person's fetch sees the escalation refs; an agent's does not (./reader-env.ts).
          const extra = takeReaderEnv();
          child = s.spawn(cmd, args as string[], extra ? { env: { ...process.env, ...extra } } : {});
        } else child = s.spawn(cmd, args as string[]);
        if (child) {
          // A service that cannot be started: a line the client prints as "remote error: …",
          // rather than a cut-off answer it reports as a missing repository or a hang-up. For a
          // ref advertisement that is git's ERR line; for a push's POST (its advertisement may
          // have come from ./ref-advert.ts with no start at all) sideband 3, which `git push`
          // asks for. (The listener is the first one: it writes before the child's output ends.)
          const out = child.stdout;
          const why = (e: Error): string => `patchgate: the gate could not start ${cmd} (${e.message}); nothing was pushed or fetched: run the same git command again\n`;
          if (out instanceof PassThrough) {
            if (args.includes('--advertise-refs')) child.once('error', (e: Error) => out.write(pkt(`ERR ${why(e)}`)));
            else if (cmd === 'git-receive-pack') child.once('error', (e: Error) => out.write(pkt(`\x03${why(e)}`)));
          }
          return child as unknown as ChildProcess;
        }
      }
      if (ours && fsck === 'relaxed' && isPushPost(cmd, args)) return markFsck(original.call(this, cmd, args as string[], { env: fsckEnv(fsck) }), fsck);
      if (ours && cmd === 'git-upload-pack') {
        const extra = takeReaderEnv();
        if (extra) return original.call(this, cmd, args as string[], { env: { ...process.env, ...extra } });
      }
      return (original as (...a: unknown[]) => ChildProcess).call(this, cmd, ...rest);
    } as typeof cp.spawn;
    cp.spawn = wrapped;
    restore = () => {
      if (cp.spawn === wrapped) cp.spawn = original;
    };
  }
  let undone = false;
  return () => {
    if (undone) return;
    undone = true;
    servers--;
    const i = routed.indexOf(spawner);
    if (i >= 0) routed.splice(i, 1);
    if (servers === 0 && restore) {
      restore();
      restore = null;
    }
  };
}

/**
 * A git process started by the spawn helper of the server running in this process, or null
 * when none runs one (a CLI command, PATCHGATE_SPAWN_HELPER=0, a helper not ready): the
 * caller spawns it itself then.
 */
export function helperSpawn(cmd: string, args: readonly string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): HelperChild | null {
  return routed[routed.length - 1]?.spawn(cmd, args, opts) ?? null;
}

/** Make the repository's push advertisement ahead of its next push (./ref-advert.ts); nothing when no server routes. */
export function primeAdvert(repoDir: string): void {
  const s = routed[routed.length - 1];
  if (s?.pushPath.advert) s.adverts.prime(repoDir);
}
