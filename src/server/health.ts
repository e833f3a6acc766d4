// What GET /healthz checks. "ok" used to mean only "the HTTP front answers", while a push
// also needs the hook daemon (reachable by the shims through hook.endpoint) and the audit
// database (a failed audit write refuses every push). Each check returns why it is down, or
// nothing; the front answers 503 with those reasons. Reasons never carry the hook secret.

import net from 'node:net';
import { accessSync, constants, statSync } from 'node:fs';
import { errorMessage } from '../errors.js';
import type { AuditStore } from '../audit/store.js';
import type { HookService } from './hook-service.js';

/** The audit file as it was when the server opened it (a replaced or deleted file is down). */
export interface FileIdentity {
  dev: number;
  ino: number;
}

export function fileIdentity(path: string): FileIdentity {
  const st = statSync(path);
  return { dev: st.dev, ino: st.ino };
}

function connects(port: number, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    const done = (why: string | null): void => {
      sock.destroy();
      resolve(why);
    };
    sock.setTimeout(timeoutMs, () => done(`hook daemon on 127.0.0.1:${port} did not accept a connection within ${timeoutMs} ms`));
    sock.once('connect', () => done(null));
    sock.once('error', (err) => done(`hook daemon on 127.0.0.1:${port}: ${errorMessage(err)}`));
  });
}

export async function hookHealth(hooks: HookService, timeoutMs = 2000): Promise<string | null> {
  const h = hooks.health();
  if ('down' in h) return h.down;
  return connects(h.port, timeoutMs);
}

export function auditHealth(audit: AuditStore, dbPath: string, opened: FileIdentity): string | null {
  try {
    const now = fileIdentity(dbPath);
    if (now.dev !== opened.dev || now.ino !== opened.ino) return 'audit database file was replaced since the server opened it (restart the server)';
  } catch (err) {
    return `audit database file is gone: ${(err as { code?: string }).code ?? errorMessage(err)}`;
  }
  try {
    accessSync(dbPath, constants.R_OK | constants.W_OK);
  } catch (err) {
    return `audit database is not readable and writable: ${(err as { code?: string }).code ?? errorMessage(err)}`;
  }
  try {
    audit.db.prepare('SELECT last_id FROM chain_head').get();
  } catch (err) {
    return `audit database does not answer: ${errorMessage(err).split('\n')[0]}`;
  }
  return null;
}

/**
 * The body of a healthy /healthz: `ok`, or while the contract cache warms (pushes are still
 * judged: healthy) `ok, warming: DONE/TOTAL files, N repositories queued` (issue 24), and
 * while pushes wait for a judge slot `…, busy: N pushes waiting (S judged at once)`.
 */
export function healthyBody(hooks: HookService): string {
  const w = hooks.warmingStatus();
  const j = hooks.judgingStatus();
  const busy = j.waiting > 0 ? `busy: ${j.waiting} push${j.waiting === 1 ? '' : 'es'} waiting (${j.slots} judged at once)` : '';
  if (!w) return busy ? `ok, ${busy}` : 'ok';
  return `ok, warming: ${w.done}${w.total === null ? '' : `/${w.total}`} files, ${w.repositories} repositor${w.repositories === 1 ? 'y' : 'ies'} queued${busy ? `, ${busy}` : ''}`;
}
