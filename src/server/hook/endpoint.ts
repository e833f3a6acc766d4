// The HTTP endpoint the hook shims call: a server on 127.0.0.1 (the shims are bash over
// /dev/tcp, so a hook starts no process) whose port and per-start secret sit in
// `<data>/hook.endpoint` (mode 0600, written whole then moved into place). Here: the secret
// check, reading and parsing the request (./request.ts), the `remote:` progress lines sent
// while a push waits, and the answer (its lines, then `patchgate-verdict: accept|reject`).
// What a hook means is the route the hook service (../hook-service.ts) gives it.

import http from 'node:http';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { errorMessage } from '../../errors.js';
import type { SlowPhaseOptions } from '../../progress.js';
import type { AuthRowLimiter } from '../auth-rows.js';
import { parseRequest, type HookRequest } from './request.js';

/** Seconds the shims wait for an answer beyond the daemon's own hook time limit. */
export const SHIM_MARGIN_S = 30;

export interface HookEndpointOptions {
  /** Where the shims find the daemon (hook.endpoint). */
  endpointPath: string;
  /** The daemon's hook time limit (the shims wait this plus SHIM_MARGIN_S). */
  timeoutMs: number;
  /** Where a request without the secret is recorded (an `auth` row, rate-limited). */
  authRows: AuthRowLimiter;
  /** Called with every answer (the daemon's metrics). */
  onAnswer?: (hr: HookRequest | null, verdict: 'accept' | 'reject', ms: number) => void;
  /** A parsed request from a shim with the secret: its verdict, with its `remote:` lines added to `lines`; a throw refuses. */
  route: (hr: HookRequest, lines: string[], gone: AbortSignal, res: http.ServerResponse) => Promise<'accept' | 'reject'>;
}

export class HookEndpoint {
  private server: http.Server | null = null;
  private inflight = 0;
  private readonly secret = Buffer.from(randomBytes(32).toString('hex'));

  constructor(private readonly opts: HookEndpointOptions) {}

  /** What the shims wait for an answer, in whole seconds: the hook time limit plus a margin. */
  get shimWaitSeconds(): number {
    return Math.ceil(this.opts.timeoutMs / 1000) + SHIM_MARGIN_S;
  }

  /** Listening (from start until stop). */
  get listening(): boolean {
    return this.server !== null;
  }

  get busy(): number {
    return this.inflight;
  }

  /** Listen on a free port of 127.0.0.1, then write hook.endpoint. */
  async listen(): Promise<void> {
    const server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    const { port } = server.address() as AddressInfo;
    // Written whole, readable by the server's user only, then moved into place.
    const tmp = `${this.opts.endpointPath}.${process.pid}.tmp`;
    writeFileSync(tmp, this.endpointLine(port), { mode: 0o600 });
    renameSync(tmp, this.opts.endpointPath);
  }

  /** Stop listening and drop every connection; settles when the server closed (null: it was not listening). */
  close(): Promise<void> | null {
    const s = this.server;
    this.server = null;
    if (!s) return null;
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    s.closeAllConnections();
    return closed;
  }

  /** The last step of stop: hook.endpoint removed. */
  removeEndpointFile(): void {
    if (existsSync(this.opts.endpointPath)) rmSync(this.opts.endpointPath, { force: true });
  }

  /** The one line of hook.endpoint: address, port, secret, and how long a shim waits for a verdict. */
  private endpointLine(port: number): string {
    return `127.0.0.1 ${port} ${this.secret.toString()} ${this.shimWaitSeconds}\n`;
  }

  /**
   * For /healthz: the port the shims can reach, or why they cannot (not listening, or
   * hook.endpoint missing or naming another daemon). Never returns the secret.
   */
  health(): { port: number } | { down: string } {
    const s = this.server;
    if (!s?.listening) return { down: 'hook daemon is not listening' };
    const { port } = s.address() as AddressInfo;
    let line: string;
    try {
      line = readFileSync(this.opts.endpointPath, 'utf8');
    } catch {
      return { down: 'hook.endpoint is missing (the hooks cannot reach the daemon)' };
    }
    if (line !== this.endpointLine(port)) return { down: 'hook.endpoint names another daemon than this one' };
    return { port };
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.inflight++;
    res.setHeader('Content-Type', 'text/plain; charset=utf-8');
    // The shim hung up before its answer (it gave up waiting, or was killed): stop judging for it.
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort(new Error('the hook hung up before its verdict (it gave up waiting or was killed)'));
    });
    const lines: string[] = [];
    let verdict: 'accept' | 'reject' = 'reject';
    let parsed: HookRequest | null = null;
    const began = performance.now();
    try {
      const given = Buffer.from(String(req.headers['x-patchgate-secret'] ?? ''));
      if (given.length !== this.secret.length || !timingSafeEqual(given, this.secret)) {
        res.statusCode = 403;
        req.resume();
        this.opts.authRows.record('hook-secret', { reason: 'hook request without the daemon secret' });
        throw new Error('the hook did not present the gate daemon\'s secret');
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const c of req) {
        size += (c as Buffer).length;
        if (size > 4 * 1024 * 1024) throw new Error('hook request too large');
        chunks.push(c as Buffer);
      }
      const hr = parseRequest(Buffer.concat(chunks).toString('utf8'));
      parsed = hr;
      verdict = await this.opts.route(hr, lines, gone.signal, res);
    } catch (err) {
      lines.push(`patchgate: push refused: ${errorMessage(err).split('\n')[0]}`);
      verdict = 'reject';
    } finally {
      this.inflight--;
    }
    this.opts.onAnswer?.(parsed, verdict, performance.now() - began);
    // A path may hold a line break; escape control characters so no message can forge a verdict line.
    const safe = lines.map((l) => l.replace(/[\x00-\x1f\x7f]/g, (c) => JSON.stringify(c).slice(1, -1)));
    res.end(safe.map((l) => l + '\n').join('') + `patchgate-verdict: ${verdict}\n`);
  }
}

/**
 * Progress lines of a push's long work, sent to the shim while it waits (they show as
 * `remote:` lines at once). Each line is followed by an empty one: the shims print a line
 * when the next one arrives (only the very last may be the verdict) and never print an
 * empty one, so the line shows now and the verdict stays last. Never a terminal: one line
 * per phase. The status is 200 from the first line on (a refusal is the verdict line).
 */
export function remoteProgress(res: http.ServerResponse, delayMs = 2000): SlowPhaseOptions {
  return {
    isTTY: false,
    delayMs,
    write: (text) => {
      if (res.writableEnded || res.destroyed) return;
      for (const l of text.split('\n')) {
        if (!l) continue;
        if (!res.headersSent) res.writeHead(200);
        res.write(`${l.replace(/[\x00-\x1f\x7f]/g, (c) => JSON.stringify(c).slice(1, -1))}\n\n`);
      }
    },
  };
}
