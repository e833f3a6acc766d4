// What git itself told the pusher: receive-pack's report-status, read from its output on the
// way to the client. A repository served here has no post-receive hook (one bash start, one
// connection and one request less per push, issue 24): the confirm rows of the refs that moved
// are written from this report as soon as it is whole, and the client's HTTP answer is held
// open until they are (./app.ts), as it was held while post-receive ran.
//
// Format (git's Documentation/gitprotocol-pack.txt): with side-band-64k (receive-pack has no
// other side band), the output is pkt-lines whose first byte is the band (1 data, 2 progress, 3 error); band 1
// carries the report, itself pkt-lines: PKT("unpack " status) *PKT("ok " ref | "ng " ref SP
// reason | "option " ...) FLUSH. Without a side band the report is the output itself. A
// client that asked for no report gets none: then `outcome` is null and the caller reads the
// refs instead. Anything that does not parse also gives null: nothing is guessed.

import { PassThrough, type Readable } from 'node:stream';
import type { ChildProcess } from 'node:child_process';

/** Longest pkt-line git writes (LARGE_PACKET_MAX). */
const MAX_PKT = 65520;

/** One pkt-line stream, fed in chunks: complete payloads out, flush-pkts as null. */
class PktStream {
  private buf: Buffer = Buffer.alloc(0);
  broken = false;

  push(chunk: Buffer, out: (payload: Buffer | null) => void): void {
    if (this.broken) return;
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let pos = 0;
    while (this.buf.length - pos >= 4) {
      const hex = this.buf.toString('latin1', pos, pos + 4);
      const len = /^[0-9a-f]{4}$/.test(hex) ? parseInt(hex, 16) : -1;
      if (len < 0 || (len > 0 && len < 4) || len > MAX_PKT) {
        this.broken = true;
        this.buf = Buffer.alloc(0);
        return;
      }
      if (len === 0 || len === 1 || len === 2) {
        // flush-pkt (and protocol v2's delim/response-end, which receive-pack v0 never sends)
        pos += 4;
        out(null);
        continue;
      }
      if (this.buf.length - pos < len) break;
      out(this.buf.subarray(pos + 4, pos + len));
      pos += len;
    }
    this.buf = pos ? this.buf.subarray(pos) : this.buf;
  }
}

export interface ReportOutcome {
  /** "unpack ok", or git's reason. */
  unpackOk: boolean;
  /** Every ref the report names: true for `ok` (the ref moved), false for `ng`. */
  refs: Map<string, boolean>;
}

/**
 * Reads receive-pack's output for its report-status. `caps` are the capabilities the client
 * asked for (the first command line's), which decide the framing and whether there is a report.
 */
export class ReportStatusReader {
  private readonly outer = new PktStream();
  private readonly inner = new PktStream();
  private readonly sideband: boolean;
  private readonly expected: boolean;
  private unpack: boolean | null = null;
  private readonly refs = new Map<string, boolean>();
  private complete = false;
  private bad = false;

  /** `onProgress` is shown each payload of band 2 (git's progress and warnings, e.g. fsck's: src/git/push-fsck.ts). */
  constructor(caps: readonly string[], private readonly onProgress?: (payload: Buffer) => void) {
    // receive-pack speaks side-band-64k only (a client's plain `side-band` gets no band).
    this.sideband = caps.includes('side-band-64k');
    this.expected = caps.includes('report-status') || caps.includes('report-status-v2');
  }

  push(chunk: Buffer): void {
    if (!this.expected || this.complete || this.bad) return;
    if (!this.sideband) return this.inner.push(chunk, (p) => this.line(p));
    this.outer.push(chunk, (p) => {
      // band 1 is the report; 2 and 3 are progress and errors; a flush ends the output
      if (p && p.length && p[0] === 1) this.inner.push(p.subarray(1), (q) => this.line(q));
      else if (p && p.length > 1 && p[0] === 2) this.onProgress?.(p.subarray(1));
    });
  }

  private line(p: Buffer | null): void {
    if (this.complete || this.bad) return;
    if (p === null) {
      // The report's flush: complete only if it began with the unpack line.
      if (this.unpack === null) this.bad = true;
      else this.complete = true;
      return;
    }
    const s = p.toString('utf8').replace(/\n$/, '');
    if (this.unpack === null) {
      if (!s.startsWith('unpack ')) return void (this.bad = true);
      this.unpack = s === 'unpack ok';
    } else if (s.startsWith('ok ')) {
      this.refs.set(s.slice(3), true);
    } else if (s.startsWith('ng ')) {
      const rest = s.slice(3);
      const sp = rest.indexOf(' ');
      this.refs.set(sp < 0 ? rest : rest.slice(0, sp), false);
    } else if (!s.startsWith('option ')) {
      this.bad = true;
    }
  }

  /** git's report, once whole; null when there is none (not asked for, cut off, or not parsable). */
  get outcome(): ReportOutcome | null {
    // A stream that broke, even right after the report, gives none: nothing is guessed.
    return this.complete && !this.bad && !this.outer.broken && !this.inner.broken && this.unpack !== null ? { unpackOk: this.unpack, refs: new Map(this.refs) } : null;
  }
}

/**
 * Put a stream of our own between `ps.stdout` and where the next `pipe` of it goes
 * (node-git-server pipes it into the HTTP answer right after its 'service' event): every chunk
 * goes through as it comes and is shown to `tap`; the end is passed on only once git's output
 * ended and what `hold` returns then has settled, or `maxHoldMs` after git's output ended, whichever is first (a
 * hold never keeps a client waiting on a store that does not answer: the rows stay queued, and
 * the push's intent entry records them at the latest at the next start). `ps.stdout` itself
 * stays the same object (the spawn helper's child writes into it).
 */
export function interposeStdout(ps: ChildProcess, tap: (chunk: Buffer) => void, hold: () => Promise<unknown>, maxHoldMs: number): void {
  const real = ps.stdout as Readable | null;
  if (!real) return;
  const out = new PassThrough();
  real.on('data', (c: Buffer) => {
    try {
      tap(c);
    } catch {
      // The report is only read; a reader fault must not touch the bytes.
    }
  });
  let done = false;
  const finish = (): void => {
    if (done) return;
    done = true;
    out.end();
  };
  let sawEnd = false;
  const ended = (): void => {
    if (sawEnd) return;
    sawEnd = true;
    const timer = setTimeout(finish, maxHoldMs);
    timer.unref();
    void hold().then(finish, finish).finally(() => clearTimeout(timer));
  };
  real.once('end', ended);
  // Destroyed without an end (an error, a killed helper): the same hold, then the end.
  real.once('close', ended);
  real.once('error', ended);
  const pipe = real.pipe;
  real.pipe = function <T extends NodeJS.WritableStream>(dest: T, options?: { end?: boolean }): T {
    real.pipe = pipe;
    pipe.call(real, out, { end: false });
    return out.pipe(dest, options);
  };
}
