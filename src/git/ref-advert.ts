// A push's ref advertisement without a git start on its path (issue 24). Every push begins
// with `GET info/refs?service=git-receive-pack`, which node-git-server answers by starting
// `git-receive-pack --advertise-refs`: 3-5 ms of the push's wall at 1k files (client trace),
// for bytes that only change when a ref or the repository's config does. The advertisement is
// made ahead instead, when the repository's previous push has ended and no other is under way,
// and kept with a key of everything git's answer is made from: the loose refs, packed-refs,
// HEAD, shallow, the repository's config and the stat of the global ones, read before git runs
// and again after (the bytes are kept only when both agree). A request whose key (read again,
// in process) is the kept one gets the kept bytes; any other request starts git as before.
// A stale advertisement could only make a push refused, never one accepted unjudged:
// receive-pack compares each ref's old id when it updates it, and the hooks judge what is
// pushed. Repositories whose answer is not a function of that key are never kept: alternates
// (`.have` lines), push certificates (a nonce each time), session ids, config includes,
// reftable, a ref being written (a `.lock`), more refs than MAX_REF_FILES.

import { createHash, type Hash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';

/** Loose ref files read for a key at most; a repository with more is answered by git each time. */
export const MAX_REF_FILES = 512;
/** Advertisements kept at most, the most recently made kept. */
const MAX_KEPT = 256;
/** An advertisement larger than this is not kept. */
const MAX_BYTES = 1 << 20;
/** How long a run made ahead may take; then it is stopped and the requests waiting on it start their own git. */
const MAKE_MS = 10_000;
/** All kept advertisements together at most (the daemon's memory target is 300 MB). */
const MAX_TOTAL = 16 << 20;
/** Config that makes git's answer differ from one run to the next, or depend on files not in the key. */
const UNKEYED_CONFIG = /certnonceseed|advertisesid|^\s*\[\s*include|refstorage/im;

/** The arguments node-git-server starts a push's ref advertisement with (repository last). */
export function isPushAdvert(cmd: string, args: readonly unknown[]): boolean {
  return cmd === 'git-receive-pack' && args.length === 3 && args[0] === '--stateless-rpc' && args[1] === '--advertise-refs' && typeof args[2] === 'string';
}

/**
 * The key of a repository's push advertisement, or null when it cannot be kept (see the top of
 * the file) or anything could not be read. Synchronous: a handful of small reads, on the path
 * of a request that would otherwise wait for a process start.
 */
export function advertKey(repoDir: string): string | null {
  try {
    const h = createHash('sha256');
    if (!hashConfig(h, repoDir)) return null;
    if (existsSync(join(repoDir, 'objects', 'info', 'alternates')) || existsSync(join(repoDir, 'packed-refs.lock'))) return null;
    for (const f of ['HEAD', 'packed-refs', 'shallow']) h.update(f).update('\0').update(readOptional(join(repoDir, f))).update('\0');
    const count = { n: 0 };
    if (!hashRefs(h, join(repoDir, 'refs'), 'refs', count)) return null;
    return h.digest('hex');
  } catch {
    return null;
  }
}

/**
 * The configuration git reads at its start into `h`: the repository's config file and the stat
 * of the global ones. False when that config is not all there is to it (an include names other
 * files) or changes git's answer from run to run (UNKEYED_CONFIG). Throws when config cannot be read.
 */
export function hashConfig(h: Hash, repoDir: string): boolean {
  const config = readFileSync(join(repoDir, 'config'), 'utf8');
  if (UNKEYED_CONFIG.test(config)) return false;
  h.update(config).update('\0');
  for (const f of globalConfigs()) {
    const st = statSync(f, { throwIfNoEntry: false });
    h.update(`${f}\0${st ? `${st.ino}:${st.size}:${st.mtimeMs}` : '-'}\0`);
  }
  return true;
}

function readOptional(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.from('-');
    throw e;
  }
}

/** The global config files git reads for the daemon's processes (they inherit its environment). */
function globalConfigs(): string[] {
  const env = process.env;
  const out: string[] = [];
  if (env.GIT_CONFIG_GLOBAL) out.push(env.GIT_CONFIG_GLOBAL);
  else {
    const home = env.HOME ?? homedir();
    out.push(join(home, '.gitconfig'), join(env.XDG_CONFIG_HOME ?? join(home, '.config'), 'git', 'config'));
  }
  if (!env.GIT_CONFIG_NOSYSTEM) out.push(env.GIT_CONFIG_SYSTEM ?? '/etc/gitconfig');
  return out;
}

/** Every loose ref under `dir`, in a fixed order, into the key; false when one is being written or there are too many. */
function hashRefs(h: Hash, dir: string, rel: string, count: { n: number }): boolean {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw e;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    if (e.name.endsWith('.lock')) return false;
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      if (!hashRefs(h, path, `${rel}/${e.name}`, count)) return false;
    } else {
      if (++count.n > MAX_REF_FILES) return false;
      h.update(`${rel}/${e.name}\0`).update(readFileSync(path)).update('\0');
    }
  }
  return true;
}

/**
 * What the cache needs to start git's own advertisement, the same start node-git-server makes:
 * `helper` through the spawn helper (null when it is not there: nothing is made ahead then, a
 * fork of the daemon would block its loop), `direct` from the daemon when a request must be answered.
 */
export interface AdvertStart {
  helper(repoDir: string): AdvertChild | null;
  direct(repoDir: string): AdvertChild;
}

/** The parts of a child process the cache and node-git-server use. */
export interface AdvertChild extends EventEmitter {
  stdout: Readable | null;
  stderr?: Readable | null;
  kill?(signal?: NodeJS.Signals): boolean;
}

interface Kept {
  key: string;
  bytes: Buffer;
}

interface Making {
  key: string;
  done: Promise<Buffer | null>;
}

export class RefAdverts {
  private readonly kept = new Map<string, Kept>();
  /** Bytes of every kept advertisement. */
  private total = 0;
  private readonly making = new Map<string, Making>();
  /** Counters, for tests and the bench: answers from the kept bytes, from a run made ahead, from git. */
  readonly stats = { kept: 0, ahead: 0, git: 0 };

  private readonly makeMs: number;

  constructor(private readonly start: AdvertStart, opts: { makeMs?: number } = {}) {
    this.makeMs = opts.makeMs ?? MAKE_MS;
  }

  /**
   * node-git-server's start of a push advertisement: the kept bytes when the key still holds,
   * the run made ahead when it started with this key, else git. The key is read only when
   * there is something to compare it with: a repository that is pushed to by several agents at
   * once has none (nothing is made ahead while another push is under way), and its requests
   * cost no reads. Only runs made ahead are kept; a key that moved drops what was kept.
   */
  answer(repoDir: string): AdvertChild {
    const kept = this.kept.get(repoDir);
    const making = this.making.get(repoDir);
    const key = kept || making ? advertKey(repoDir) : null;
    if (key !== null && kept?.key === key) {
      this.stats.kept++;
      return fromBytes(Promise.resolve(kept.bytes), () => this.run(repoDir));
    }
    if (key !== null && making?.key === key) {
      this.stats.ahead++;
      return fromBytes(making.done, () => this.run(repoDir));
    }
    if (kept) this.drop(repoDir);
    this.stats.git++;
    return this.run(repoDir);
  }

  /** Make the repository's advertisement now, ahead of its next push (after a push ended). */
  prime(repoDir: string): void {
    const key = advertKey(repoDir);
    if (key === null || this.kept.get(repoDir)?.key === key || this.making.get(repoDir)?.key === key) return;
    const child = this.start.helper(repoDir);
    if (child) this.make(repoDir, key, child);
  }

  /** Whether the repository has an advertisement kept, once any run making one has ended (for tests). */
  async isKept(repoDir: string): Promise<boolean> {
    await this.making.get(repoDir)?.done;
    return this.kept.has(repoDir);
  }

  /** git's answer for a request (node-git-server reads it). */
  private run(repoDir: string): AdvertChild {
    return this.start.helper(repoDir) ?? this.start.direct(repoDir);
  }

  /** A run made ahead: its whole answer is kept under `key` when the key read again after it is the same. */
  private make(repoDir: string, key: string, child: AdvertChild): void {
    child.stderr?.resume();
    if (!child.stdout) return;
    const chunks: Buffer[] = [];
    let size = 0;
    child.stdout.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BYTES) chunks.push(c);
    });
    let settle!: (b: Buffer | null) => void;
    const done = new Promise<Buffer | null>((r) => (settle = r));
    const making: Making = { key, done };
    this.making.set(repoDir, making);
    let ended = false;
    const end = (ok: boolean): void => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      if (this.making.get(repoDir) === making) this.making.delete(repoDir);
      const bytes = ok && size <= MAX_BYTES && advertKey(repoDir) === key ? Buffer.concat(chunks) : null;
      if (bytes) this.keep(repoDir, { key, bytes });
      settle(bytes);
    };
    // A git that hangs must not hold every request of the repository that waits on it.
    const timer = setTimeout(() => {
      child.kill?.('SIGKILL');
      end(false);
    }, this.makeMs);
    timer.unref();
    child.once('error', () => end(false));
    child.once('close', (code: number | null) => end(code === 0));
  }

  private keep(repoDir: string, k: Kept): void {
    this.drop(repoDir);
    this.kept.set(repoDir, k);
    this.total += k.bytes.length;
    for (const dir of this.kept.keys()) {
      if (this.kept.size <= MAX_KEPT && this.total <= MAX_TOTAL) break;
      this.drop(dir);
    }
  }

  private drop(repoDir: string): void {
    const k = this.kept.get(repoDir);
    if (!k) return;
    this.kept.delete(repoDir);
    this.total -= k.bytes.length;
  }
}

/**
 * A stand-in child whose stdout is `bytes` once they are there; when they are not (the run made
 * ahead failed or its key moved), git's own answer through `fallback`, errors included.
 */
function fromBytes(bytes: Promise<Buffer | null>, fallback: () => AdvertChild): AdvertChild {
  const stdout = new PassThrough();
  const child = Object.assign(new EventEmitter(), { stdout, pid: undefined, exitCode: null as number | null, kill: () => false });
  void bytes.then((b) => {
    if (b) {
      stdout.end(b);
      child.exitCode = 0;
      setImmediate(() => (child.emit('exit', 0, null), child.emit('close', 0, null)));
      return;
    }
    let real: AdvertChild;
    try {
      real = fallback();
    } catch (e) {
      stdout.end();
      return void child.emit('error', e);
    }
    real.once('error', (e: Error) => child.emit('error', e));
    real.once('exit', (...a: unknown[]) => child.emit('exit', ...a));
    real.once('close', (...a: unknown[]) => child.emit('close', ...a));
    if (real.stdout) real.stdout.pipe(stdout);
    else stdout.end();
  });
  return child;
}
