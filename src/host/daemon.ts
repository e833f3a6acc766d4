// `patchgate daemon --config FILE`: the hook daemon of one git-host node, without the HTTP git
// front. The same HookService, engine, caches (cache.db) and warm-up as `serve`; the session
// of a push is made from the identity the host's shim sends (./identity.ts) instead of an
// authenticated HTTP request. A second listener answers GET /healthz and GET /metrics.

import http from 'node:http';
import { privateDir } from '../private-files.js';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { AuditSink } from '../audit/sink.js';
import { openServerLog } from '../server/folder-log.js';
import { ContentCache, PersistentCache } from '../cache/content-cache.js';
import { StartupError, errorMessage } from '../errors.js';
import { HookService } from '../server/hook-service.js';
import { lockDataDir } from '../server/datadir-lock.js';
import { healthyBody, hookHealth } from '../server/health.js';
import type { DaemonConfig } from './config.js';
import { DaemonMetrics } from './daemon-metrics.js';
import { hostSession } from './identity.js';
import { stderrProgress } from '../progress.js';
import type { IdleGcOptions } from '../server/idle-gc.js';
import { runUndo } from '../undo.js';
import { warmCommand } from '../commands/warm.js';

export interface RunningDaemon {
  hooks: HookService;
  audit: AuditSink;
  /** The audit log as people read it (never a password). */
  auditLog: string;
  metrics: DaemonMetrics;
  /** http://HOST:PORT of /healthz and /metrics */
  monitorUrl: string;
  health(): Promise<string[]>;
  close(): Promise<void>;
}

export async function startDaemon(cfg: DaemonConfig, opts: { log?: (l: string) => void; beforeJudge?: () => Promise<void>; gc?: IdleGcOptions } = {}): Promise<RunningDaemon> {
  const log = opts.log ?? ((l: string) => process.stderr.write(l + '\n'));
  privateDir(cfg.data);
  const lock = lockDataDir(cfg.data);
  const undo: Array<() => unknown> = [() => lock.release()];
  try {
    // The same log the gate server uses: SQLite under the data folder, or one PostgreSQL log
    // that every node of the host appends to (src/audit/sink.ts); the one the data folder
    // records when the config gives none, and recorded there when it does (src/server/folder-log.ts).
    const opened = await openServerLog(cfg.data, cfg.auditFrom ? { value: cfg.audit, from: cfg.auditFrom } : null, 'daemon');
    const audit = opened.sink;
    undo.push(() => audit.close());
    const disk = new PersistentCache(join(cfg.data, 'cache.db'), log);
    undo.push(() => disk.close());
    const metrics = new DaemonMetrics();
    const hooks = new HookService({
      endpointPath: join(cfg.data, 'hook.endpoint'), audit, timeoutMs: cfg.hookTimeout * 1000, cache: new ContentCache(disk),
      sessionFor: (hr) => hostSession(hr, cfg), onAnswer: metrics.observe, beforeJudge: opts.beforeJudge,
      // A refusal for time names the command that seeds this daemon's cache from the repository (issue 47).
      seedCommand: (dir) => warmCommand(cfg.configPath ? { config: cfg.configPath } : { data: cfg.data }, dir),
      ...(cfg.notifyUrl ? { notifyUrl: cfg.notifyUrl } : {}),
      ...(opts.log ? { log: opts.log } : { progress: stderrProgress() }), ...(opts.gc ? { gc: opts.gc } : {}),
    });
    undo.push(() => hooks.stop());
    await hooks.start();
    for (const dir of cfg.warm) hooks.warmRepo(dir);
    // Said once the caches hold the trusted tips of `warm` (the benchmark waits for it; a GHES
    // node should too: a cold 10k-file repository does not parse within 4.5 s).
    if (cfg.warm.length) void hooks.warmed.then(() => log(`patchgate daemon: cache warm-up of ${cfg.warm.length} repositor${cfg.warm.length === 1 ? 'y' : 'ies'} finished`));

    const health = async (): Promise<string[]> => [
      await hookHealth(hooks),
      await opened.health(),
    ].filter((d): d is string => d !== null);
    const monitor = http.createServer((req, res) => {
      void (async () => {
        const path = (req.url ?? '/').split('?')[0];
        if (req.method !== 'GET') return void res.writeHead(405).end('patchgate: GET only\n');
        if (path === '/healthz') {
          const down = await health();
          metrics.up.set(down.length ? 0 : 1);
          res.writeHead(down.length ? 503 : 200, { 'Content-Type': 'text/plain; charset=utf-8' });
          return void res.end(down.length ? `down: ${down.join('; ')}\n` : `${healthyBody(hooks)}\n`);
        }
        if (path === '/metrics') {
          metrics.up.set((await health()).length ? 0 : 1);
          res.writeHead(200, { 'Content-Type': metrics.registry.contentType });
          return void res.end(await metrics.text());
        }
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('patchgate: not found (GET /healthz, GET /metrics)\n');
      })().catch((err) => {
        log(`patchgate: monitor request error: ${errorMessage(err)}`);
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
    const m = /^(.*):(\d+)$/.exec(cfg.monitor)!;
    const mhost = m[1]!.replace(/^\[|\]$/g, '');
    await new Promise<void>((resolve, reject) => {
      monitor.once('error', (err: NodeJS.ErrnoException) => reject(new StartupError('LISTEN', `cannot listen on ${cfg.monitor} (monitor): ${err.code ?? errorMessage(err)}`, { cause: err })));
      monitor.listen(Number(m[2]), mhost, () => resolve());
    });
    undo.push(() => new Promise<void>((r) => {
      monitor.close(() => r());
      monitor.closeAllConnections();
    }));
    const { port } = monitor.address() as AddressInfo;
    const monitorUrl = `http://${mhost.includes(':') ? `[${mhost}]` : mhost}:${port}`;
    let closed = false;
    const close = async (): Promise<void> => {
      if (closed) return;
      closed = true;
      for (const f of undo.reverse()) await f();
    };
    return { hooks, audit, auditLog: opened.described, metrics, monitorUrl, health, close };
  } catch (err) {
    await runUndo(undo);
    throw err;
  }
}
