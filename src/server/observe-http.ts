// The HTTP side of the server's logs and metrics, kept out of app.ts: one structured log line
// per answered request (method, path without its query, status, ms, actor and repo once known),
// the request counter, and the Prometheus text for GET /metrics, on the main port (admin
// tokens only; app.ts checks) or on a separate listener bound to its own address.

import http from 'node:http';
import type { Logger } from '../log.js';
import type { GateMetrics } from './metrics.js';
import { StartupError, errorMessage } from '../errors.js';

export interface RequestNote {
  actor?: string;
  repo?: string;
}

const notes = new WeakMap<http.IncomingMessage, RequestNote>();

/** Remember who a request turned out to be, for its log line. */
export function noteRequest(req: http.IncomingMessage, note: RequestNote): void {
  notes.set(req, { ...notes.get(req), ...note });
}

function routeOf(path: string): string {
  if (path === '/healthz' || path === '/metrics') return path.slice(1);
  if (path.startsWith('/api/')) return 'api';
  if (/^\/[^/]+\.git\//.test(path)) return path.endsWith('git-receive-pack') ? 'git-receive-pack' : path.endsWith('git-upload-pack') ? 'git-upload-pack' : 'git-refs';
  return 'other';
}

/** Log and count `req` once its response is finished (or the connection closed first). */
export function observeRequest(req: http.IncomingMessage, res: http.ServerResponse, log: Logger, metrics: GateMetrics): void {
  const t0 = performance.now();
  let done = false;
  const finish = (): void => {
    if (done) return;
    done = true;
    const path = (req.url ?? '/').split('?')[0]!.slice(0, 300);
    const route = routeOf(path);
    const status = res.headersSent ? res.statusCode : 0;
    metrics.requests.inc({ route, code: String(status) });
    const note = notes.get(req) ?? {};
    log.info({ event: 'request', method: req.method, path, route, status, ms: Math.round(performance.now() - t0), remoteAddr: req.socket.remoteAddress, ...note }, `${req.method} ${path} ${status}`);
  };
  res.once('finish', finish);
  res.once('close', finish);
}

export async function sendMetrics(res: http.ServerResponse, metrics: GateMetrics): Promise<void> {
  const body = await metrics.registry.metrics();
  res.writeHead(200, { 'Content-Type': metrics.registry.contentType });
  res.end(body);
}

/** A listener that only answers GET /metrics, without a token: bind it where only the scraper reaches. */
export async function startMetricsListener(host: string, port: number, metrics: GateMetrics, log: Logger): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if ((req.url ?? '').split('?')[0] !== '/metrics' || req.method !== 'GET') {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      return void res.end('patchgate: this listener serves only GET /metrics\n');
    }
    sendMetrics(res, metrics).catch((err) => {
      log.error({ event: 'metrics', err: { message: errorMessage(err) } }, 'metrics failed');
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(new StartupError('LISTEN', `cannot listen for metrics on ${host}:${port}: ${err.code ?? errorMessage(err)}`, { cause: err })));
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections?.();
    }),
  };
}
