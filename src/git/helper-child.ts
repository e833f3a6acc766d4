// The object the daemon holds for a program the spawn helper (./spawner.ts) starts for it: the
// parts of ChildProcess its users read (stdio streams, pid, 'spawn', 'exit', 'close', kill),
// joined to the stdio sockets the helper handed to git, or, when those could not be made, to a
// program the daemon started itself (adopt). Kept apart from ./spawner.ts, which decides who
// starts what; this file only makes either look like one child.

import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { PassThrough, type Writable } from 'node:stream';

/** What a HelperChild asks of the spawner that made it. */
export interface ChildOwner {
  kill(id: number, signal: NodeJS.Signals): void;
  forget(id: number): void;
}

/** A git service started by the helper, shaped as the parts of ChildProcess its users read. */
export class HelperChild extends EventEmitter {
  pid: number | undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  killed = false;
  readonly stdin = new PassThrough();
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  /** Resolves with the pid once the helper has started the child; undefined if it could not. */
  readonly pidReady: Promise<number | undefined>;
  private resolvePid!: (pid: number | undefined) => void;
  private exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  private stdoutEnded = false;
  private io: Socket | null = null;
  private outs: Socket[] = [];
  /** Started by the daemon itself (adopt), not by the helper. */
  private direct: ChildProcess | null = null;
  private killSignal: NodeJS.Signals = 'SIGTERM';

  constructor(private readonly owner: ChildOwner, readonly id: number) {
    super();
    this.pidReady = new Promise((r) => (this.resolvePid = r));
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.exited) return false;
    this.killed = true;
    this.killSignal = signal;
    if (this.direct) this.direct.kill(signal);
    else this.owner.kill(this.id, signal);
    return true;
  }

  /**
   * @internal the helper could not be given this program's stdio: the daemon has started it
   * itself (`cp`, with pipes), and this object stands for it as before. Nothing had been
   * written to git yet; what the caller wrote to stdin so far waits in it and goes now.
   */
  adopt(cp: ChildProcess): void {
    this.direct = cp;
    if (this.killed) cp.kill(this.killSignal);
    cp.once('spawn', () => {
      if (cp.pid !== undefined) this.onSpawned(cp.pid);
    });
    cp.once('error', (err) => {
      this.onError(err);
      this.stdoutEnded = true;
      this.maybeExit();
    });
    cp.stdin!.on('error', (e) => this.stdin.emit('error', e));
    this.dropOnClose(cp.stdin!);
    this.stdin.pipe(cp.stdin!);
    cp.stdout!.pipe(this.stdout);
    cp.stderr!.pipe(this.stderr);
    cp.once('close', (code, signal) => {
      this.stdoutEnded = true;
      this.onExit(code, signal);
    });
  }

  /**
   * @internal the daemon's ends of the child's stdin, stdout and stderr sockets: one each, as
   * pipes are, so a stdin that git closed early (EPIPE) leaves its stdout to be read to the end.
   */
  connect(input: Socket, output: Socket, err: Socket): void {
    this.io = input;
    let open = 2;
    const ended = (stream: PassThrough) => () => {
      if (!stream.writableEnded) stream.end();
      if (--open === 0) {
        this.stdoutEnded = true;
        this.maybeExit();
      }
    };
    output.once('close', ended(this.stdout));
    err.once('close', ended(this.stderr));
    input.on('error', (e) => this.stdin.emit('error', e));
    output.on('error', (e) => this.stdout.emit('error', e));
    err.on('error', (e) => this.stderr.emit('error', e));
    this.dropOnClose(input);
    output.pipe(this.stdout, { end: false });
    err.pipe(this.stderr, { end: false });
    this.outs = [output, err];
    output.resume();
    input.resume(); // nothing comes back on stdin; its EOF is read so its close is seen
  }

  /** Once `to` (git's stdin) closes, what is still written to stdin is dropped, as a closed pipe drops it, so no writer waits on it. */
  private dropOnClose(to: Writable): void {
    to.once('close', () => {
      this.stdin.unpipe(to);
      this.stdin.resume();
    });
  }

  /** @internal git runs: its stdin is written from here on. */
  onSpawned(pid: number): void {
    this.pid = pid;
    this.resolvePid(pid);
    this.emit('spawn');
    // Nothing is written to git's stdout or stderr: those sockets are half-closed from here
    // (only now: the helper held their other ends until git had them), so each closes when
    // git's side ends. Its stdin is written from now on.
    for (const o of this.outs) o.end();
    if (this.io) this.stdin.pipe(this.io);
  }

  /** @internal */
  onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.exited = { code, signal };
    this.maybeExit();
  }

  /** @internal the helper could not start it */
  onError(err: Error): void {
    this.resolvePid(undefined);
    this.io?.destroy();
    for (const o of this.outs) o.destroy();
    this.emit('error', err);
    this.stdout.end();
    this.stderr.end();
    this.onExit(null, null);
  }

  /** 'exit' once git has exited and all it wrote has arrived here: a response is never ended before its last byte. */
  private maybeExit(): void {
    if (!this.exited || !this.stdoutEnded || this.exitCode !== null || this.signalCode !== null) return;
    this.exitCode = this.exited.code ?? (this.exited.signal ? null : -1);
    this.signalCode = this.exited.signal;
    this.owner.forget(this.id);
    this.emit('exit', this.exited.code, this.exited.signal);
    this.emit('close', this.exited.code, this.exited.signal);
  }
}
