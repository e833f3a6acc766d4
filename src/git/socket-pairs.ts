// The stdio of the programs the spawn helper starts: Unix socket pairs the daemon makes itself
// (Node has no socketpair), whose one end the helper hands to git. Kept apart from ./spawner.ts:
// this file only makes pairs and cleans up their folder.

import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The socket folders of this process still open: removed when it exits without stop() (process.exit). */
const openDirs = new Set<string>();
let exitHook = false;
function removeAtExit(dir: string): void {
  openDirs.add(dir);
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const d of openDirs) rmSync(d, { recursive: true, force: true });
  });
}

/**
 * Socket pairs for the children's stdio: the daemon connects to a server of its own on a
 * Unix socket in a private (0700) folder; the accepted end goes to git (through the helper),
 * the connecting end stays here. Connections are made one at a time, so each accepted socket
 * is the one just connected; any other connection is closed. Accepted ends never read
 * (pauseOnConnect), so no byte meant for git is taken here.
 */
export class SocketPairs {
  private readonly dir = mkdtempSync(join(tmpdir(), 'pg-spawn-'));
  private readonly path = join(this.dir, 's');
  private readonly server: Server;
  private waiting: ((s: Socket) => void) | null = null;
  private chain: Promise<unknown> = Promise.resolve();
  readonly ready: Promise<void>;

  constructor() {
    removeAtExit(this.dir);
    this.server = createServer({ pauseOnConnect: true }, (s) => {
      const w = this.waiting;
      this.waiting = null;
      if (w) w(s);
      else s.destroy();
    });
    this.ready = new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.path, () => resolve());
    });
    this.server.unref();
  }

  /** One connected pair: [the daemon's end, git's end]. */
  pair(): Promise<[Socket, Socket]> {
    const next = this.chain.then(() => new Promise<[Socket, Socket]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        mine.destroy();
        reject(new Error('no connection to the spawn socket within 5 s'));
      }, 5000);
      this.waiting = (theirs) => {
        clearTimeout(timer);
        resolve([mine, theirs]);
      };
      const mine = connect({ path: this.path, allowHalfOpen: true });
      mine.once('error', (err) => {
        clearTimeout(timer);
        this.waiting = null;
        reject(err);
      });
    }));
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** @internal the socket's path (the tests remove it to see a spawn fall back). */
  get socketPath(): string {
    return this.path;
  }

  close(): void {
    this.server.close();
    rmSync(this.dir, { recursive: true, force: true });
    openDirs.delete(this.dir);
  }
}
