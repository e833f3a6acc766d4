// What stands between a client's git request and node-git-server, so that no client can
// crash or freeze the process. node-git-server re-emits every `error` of the request on its
// own objects, which have no error listener (one aborted body ended the process), waits
// forever for a ref command it cannot find, buffers the body while it waits, and never
// notices a client that went away. So node-git-server never sees the client's request:
//   - the body's command section is read and checked here (./pkt-line.ts) under a deadline
//     and a size limit; what git would never send is refused with one line;
//   - node-git-server gets a stand-in request (a stream this module owns, which never emits
//     `error`): the checked section as one chunk, then the rest of the body, counted;
//   - an aborted or timed-out client ends that stream, so git reads EOF (a truncated pack
//     fails `index-pack`; nothing moves), and the git child is not left blocked on a pipe;
//   - the git child's pipes get error listeners (an early exit gives EPIPE on its stdin);
//   - git's probe (a body of one flush-pkt, sent before any body over http.postBuffer, whose
//     real body then comes chunked) is answered here, as git http-backend answers it.

import type http from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { ChildProcess } from 'node:child_process';
import { RequestError, errorMessage } from '../errors.js';
import { CommandSectionReader, PktLineError, receivePackRefusal, type CommandSection, type GitService } from './pkt-line.js';
import { PACK_MAX } from '../git/pack-read.js';

export interface RequestLimits {
  /** The ref commands (or wants) must have arrived this long after the request started. */
  commandTimeoutMs: number;
  /** Longest a whole git request may take, response included. */
  requestTimeoutMs: number;
  /** A connection with no byte in either direction for this long is closed. */
  idleTimeoutMs: number;
  /** Largest command section (ref commands, wants) read before the pack. */
  maxCommandBytes: number;
  /** Largest request body (after gzip), pack included. */
  maxBodyBytes: number;
  /** Longest a request to anything but git (health, API) may take. */
  otherTimeoutMs: number;
}

export const DEFAULT_LIMITS: RequestLimits = {
  commandTimeoutMs: 30_000,
  requestTimeoutMs: 15 * 60_000,
  idleTimeoutMs: 120_000,
  maxCommandBytes: 4 * 1024 * 1024,
  maxBodyBytes: 2 * 1024 * 1024 * 1024,
  otherTimeoutMs: 60_000,
};

/** Per request: the stand-in stream, the section, and the git child once there is one. */
interface Exchange {
  service: GitService | null;
  view: PassThrough;
  section: CommandSection | null;
  child: ChildProcess | null;
  /** The client is gone or timed out: git gets EOF, its output is discarded. */
  gone: boolean;
  /** Called when the client goes away, to end the stand-in and let the child finish or stop. */
  abandon(why: string): void;
  /**
   * A receive-pack body's bytes after its command section (the pack, push options first when
   * there are any) once the body has ended, or null when it did not end whole or passed
   * PACK_MAX (src/server/hook/prewarm.ts reads it). Null for any other service.
   */
  pack: Promise<Buffer | null>;
}

const exchanges = new WeakMap<object, Exchange>();

/** The stand-in request node-git-server was handed for this `action.req`, if any. */
export function exchangeOf(view: unknown): Exchange | undefined {
  return typeof view === 'object' && view !== null ? exchanges.get(view) : undefined;
}

const PROBE_WITH_MORE = 'a request body that starts with a flush-pkt is a probe and carries nothing after it';

type Send = (res: http.ServerResponse, code: number, body: string, headers?: Record<string, string>) => void;

export interface FrontDeps {
  limits: RequestLimits;
  send: Send;
  log: (line: string) => void;
  /** How long a receive-pack may keep running after its client left (hook time and a margin). */
  orphanGraceMs: number;
  /** False: a push's pack is not kept for the read before the hook (switched off: ./push-path.ts). */
  keepPack?: boolean;
}

/**
 * Deadlines and error listeners that every request gets, git or not: the request, the
 * response and the socket each have an error listener, and a request that is not finished after `ms` is answered 503 (if nothing was sent yet) and
 * its connection closed.
 */
export function guardRequest(req: http.IncomingMessage, res: http.ServerResponse, deps: FrontDeps, ms: number, onExpire?: () => void): void {
  const quiet = (): void => {};
  req.on('error', quiet);
  res.on('error', quiet);
  // A kept-alive socket serves several requests: its listener goes with the request. (Idle
  // sockets are closed by the server's own `timeout`, set to limits.idleTimeoutMs.)
  req.socket.on('error', quiet);
  res.on('close', () => req.socket.off('error', quiet));
  const timer = setTimeout(() => {
    onExpire?.();
    if (!res.headersSent) deps.send(res, 503, `patchgate: request took longer than ${Math.round(ms / 1000)} s; refused (nothing was changed unless git already reported it)`, { Connection: 'close' });
    // Give the refusal a moment to leave, then close the connection whatever the client does.
    setTimeout(() => req.socket.destroy(), 1000).unref();
  }, ms);
  timer.unref();
  res.on('close', () => clearTimeout(timer));
}

/** A request for node-git-server with no body: its method, url and headers, nothing to read. */
function standIn(req: http.IncomingMessage, headers: http.IncomingHttpHeaders): PassThrough {
  const view = new PassThrough();
  return Object.assign(view, {
    headers,
    method: req.method,
    url: req.url,
    httpVersion: req.httpVersion,
    httpVersionMajor: req.httpVersionMajor,
    httpVersionMinor: req.httpVersionMinor,
    socket: req.socket,
    connection: req.socket,
    trailers: {},
  });
}

/**
 * The request to give node-git-server for a GET (info/refs, HEAD): refused when it carries
 * a body (git never sends one), else a stand-in that has already ended.
 */
export function prepareGet(req: http.IncomingMessage, res: http.ServerResponse, deps: FrontDeps): http.IncomingMessage | null {
  const hasBody = (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') || req.headers['transfer-encoding'] !== undefined;
  if (hasBody) {
    deps.send(res, 400, 'patchgate: a git GET request carries no body', { Connection: 'close' });
    req.socket.destroySoon?.();
    return null;
  }
  const view = standIn(req, { ...req.headers });
  view.end();
  return view as unknown as http.IncomingMessage;
}

/**
 * Read and check a git POST body's command section, then resolve with the stand-in request
 * for node-git-server (the section first, as one chunk, then the rest of the body). Resolves
 * null when the request was refused here (the response is sent).
 */
export function preparePost(req: http.IncomingMessage, res: http.ServerResponse, service: GitService, deps: FrontDeps): Promise<http.IncomingMessage | null> {
  const { limits } = deps;
  return new Promise((resolvePrepared) => {
    let settled = false;
    let started = false; // reading the body has begun (stop() has something to stop)
    const settle = (v: http.IncomingMessage | null): void => {
      if (settled) return;
      settled = true;
      resolvePrepared(v);
    };
    const refuse = (err: RequestError): void => {
      if (started) stop();
      if (!res.headersSent) deps.send(res, err.status, `patchgate: ${err.message}`, { Connection: 'close' });
      // Whatever is still coming is not read; the connection is closed once the refusal is out.
      res.once('finish', () => req.socket.destroySoon?.());
      settle(null);
    };

    const type = req.headers['content-type'];
    if (type !== `application/x-git-${service}-request`) return refuse(new RequestError(415, `git-${service} expects Content-Type application/x-git-${service}-request`));
    const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding !== 'identity' && encoding !== 'gzip') return refuse(new RequestError(415, `Content-Encoding ${encoding} is not accepted (identity or gzip)`));
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limits.maxBodyBytes) return refuse(new RequestError(413, `request body of ${declared} bytes is larger than this server accepts (${limits.maxBodyBytes})`));

    // node-git-server must not decode again: the stand-in carries the decoded body.
    const headers = { ...req.headers };
    delete headers['content-encoding'];
    delete headers['content-length'];
    const view = standIn(req, headers);
    let source: Readable = req;
    if (encoding === 'gzip') {
      const gunzip = createGunzip();
      gunzip.on('error', (err) => {
        if (!reader && !probe) return endView();
        refuse(new RequestError(400, 'request body is not valid gzip', { cause: err }));
      });
      req.pipe(gunzip);
      source = gunzip;
    }

    let reader: CommandSectionReader | null = new CommandSectionReader(service, limits.maxCommandBytes);
    /** The body began with a flush-pkt: git's probe, answered once the body ends with nothing more. */
    let probe = false;
    started = true;
    let total = 0;
    let ended = false;
    const endView = (): void => {
      if (ended) return;
      ended = true;
      view.end();
    };
    // The pack, kept for the cache warm-up while it stays small (receive-pack only).
    let packParts: Buffer[] | null = service === 'receive-pack' && deps.keepPack !== false ? [] : null;
    let packSize = 0;
    let settlePack: (b: Buffer | null) => void = () => {};
    const keepPack = (b: Buffer): void => {
      if (!packParts) return;
      packSize += b.length;
      if (packSize > PACK_MAX) packParts = null;
      else packParts.push(b);
    };
    const ex: Exchange = {
      pack: packParts ? new Promise<Buffer | null>((r) => (settlePack = r)) : Promise.resolve(null),
      service, view, section: null, child: null, gone: false,
      abandon: (why) => {
        if (ex.gone) return;
        ex.gone = true;
        settlePack(null);
        endView();
        stop();
        const child = ex.child;
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        // Nobody reads the child's output any more: drain it so it never blocks on a full pipe.
        child.stdout?.unpipe();
        child.stdout?.resume();
        if (service === 'upload-pack') {
          child.kill('SIGKILL'); // a fetch changes nothing; stop building a pack for nobody
          return;
        }
        // receive-pack is let finish (its hooks judge and audit what it got, and a truncated
        // pack fails unpack); past the hook time limit and a margin it is stopped.
        const t = setTimeout(() => {
          if (child.exitCode === null && child.signalCode === null) {
            deps.log(`patchgate: git-receive-pack ${child.pid} still running ${Math.round(deps.orphanGraceMs / 1000)} s after its client left (${why}); killed`);
            child.kill('SIGKILL');
          }
        }, deps.orphanGraceMs);
        t.unref();
        child.once('exit', () => clearTimeout(t));
      },
    };
    exchanges.set(view, ex);

    const commandTimer = setTimeout(() => {
      if (reader || probe) refuse(new RequestError(408, `the request's ${service === 'receive-pack' ? 'ref commands' : 'want lines'} did not arrive within ${Math.round(limits.commandTimeoutMs / 1000)} s`));
    }, limits.commandTimeoutMs);
    const onData = (chunk: Buffer): void => {
      total += chunk.length;
      if (total > limits.maxBodyBytes) {
        if (reader) return refuse(new RequestError(413, `request body is larger than this server accepts (${limits.maxBodyBytes} bytes)`));
        deps.log(`patchgate: git-${service} body passed ${limits.maxBodyBytes} bytes; connection closed`);
        ex.abandon('body too large');
        req.socket.destroy();
        return;
      }
      if (probe) return refuse(new RequestError(400, PROBE_WITH_MORE));
      if (!reader) {
        keepPack(chunk);
        if (!ended && !view.write(chunk)) source.pause();
        return;
      }
      let done: ReturnType<CommandSectionReader['push']>;
      try {
        done = reader.push(chunk);
      } catch (err) {
        return refuse(new RequestError(err instanceof PktLineError && err.tooLarge ? 413 : 400, errorMessage(err), { cause: err }));
      }
      if (!done) return;
      reader = null;
      if (done.section.probe) {
        if (done.rest.length) return refuse(new RequestError(400, PROBE_WITH_MORE));
        probe = true; // the deadline for the command section still runs until the body ends
        return;
      }
      clearTimeout(commandTimer);
      ex.section = done.section;
      if (service === 'receive-pack' && !done.section.commands.some((c) => /^refs\/(heads|tags)\//.test(c.ref))) {
        return refuseAfterBody(done.section, `only refs/heads/* and refs/tags/* can be pushed here (got ${done.section.commands.map((c) => c.ref).join(', ')})`);
      }
      // node-git-server finds the ref command (or want) in its first chunk: this one.
      view.write(done.section.bytes);
      keepPack(done.rest);
      if (done.rest.length && !view.write(done.rest)) source.pause();
      settle(view as unknown as http.IncomingMessage);
    };
    view.on('drain', () => source.resume());
    const onEnd = (): void => {
      if (probe) return answerProbe();
      if (reader) {
        const got = reader.received;
        return refuse(new RequestError(400, got === 0 ? `empty git-${service} request body` : `request body ended inside its command section (truncated pkt-line after ${got} bytes)`));
      }
      settlePack(packParts && !ex.gone ? Buffer.concat(packParts) : null);
      packParts = null;
      endView();
    };
    source.on('data', onData);
    source.on('end', onEnd);
    req.on('error', () => ex.abandon('request error'));
    req.on('close', () => {
      if (!req.complete) ex.abandon('client closed the request');
    });
    res.on('close', () => {
      if (!res.writableFinished) ex.abandon('client closed the connection');
    });
    res.on('finish', () => clearTimeout(commandTimer));

    function stop(): void {
      settlePack(null);
      packParts = null;
      clearTimeout(commandTimer);
      source.off('data', onData);
      source.off('end', onEnd);
      source.resume(); // whatever still arrives is discarded
      reader = null;
    }

    /**
     * git's probe (a body of one flush-pkt, sent before a body over http.postBuffer): answered
     * as git http-backend answers it, 200 with the service's result type and an empty body
     * (the git child reads no command and writes nothing). The client is authenticated by
     * now, which is what the probe is for; nothing reaches node-git-server or git.
     */
    function answerProbe(): void {
      stop();
      probe = false;
      if (res.headersSent) return settle(null);
      res.writeHead(200, { 'Content-Type': `application/x-git-${service}-result`, 'Content-Length': '0', 'Cache-Control': 'no-cache, max-age=0, must-revalidate', Pragma: 'no-cache', Expires: 'Fri, 01 Jan 1980 00:00:00 GMT' });
      res.end();
      settle(null);
    }

    /** A receive-pack whose refs are all out of scope: read the rest, answer in git's own format. */
    function refuseAfterBody(section: CommandSection, reason: string): void {
      source.off('data', onData);
      source.off('end', onEnd);
      let drained = 0;
      source.on('data', (c: Buffer) => {
        drained += c.length;
        if (drained > limits.maxBodyBytes) req.socket.destroy();
      });
      source.once('end', () => {
        clearTimeout(commandTimer);
        if (res.headersSent) return;
        res.writeHead(200, { 'Content-Type': 'application/x-git-receive-pack-result', 'Cache-Control': 'no-cache' });
        res.end(receivePackRefusal(section, `patchgate: ${reason}`, [
          `patchgate: REJECT: ${reason}`,
          'patchgate:   next step: push a branch (refs/heads/NAME) instead',
        ]));
      });
      settle(null);
    }
  });
}

/** Tie node-git-server's git child to its request: listeners on its pipes, and what to do when the client leaves. */
export function trackChild(view: unknown, ps: ChildProcess, log: (l: string) => void): void {
  const quiet = (what: string) => (err: Error) => log(`patchgate: git child ${ps.pid} ${what}: ${errorMessage(err)}`);
  ps.stdin?.on('error', quiet('stdin'));
  ps.stdout?.on('error', quiet('stdout'));
  ps.stderr?.on('error', quiet('stderr'));
  ps.stderr?.resume();
  const ex = exchangeOf(view);
  if (!ex) return;
  ex.child = ps;
  if (ex.gone) {
    // The client left between the check and the spawn.
    const why = 'client left before git started';
    ex.gone = false;
    ex.abandon(why);
  }
}
