// What a hook shim sends the daemon, and how it is read: a head of `KEY VALUE` lines (hook,
// ppid, dir once each; env and id lines), a blank line, then the hook's stdin (ref lines).
// Pure parsing, kept apart from the HTTP endpoint (./endpoint.ts) that receives it.

import { realpathSync } from 'node:fs';
import { sep } from 'node:path';
import type { RefUpdate } from '../../policy/types.js';

export interface HookRequest {
  hook: string;
  ppid: number;
  dir: string;
  env: Record<string, string>;
  /** `id KEY VALUE` lines: the identity a git-host shim read from the host's variables. */
  id: Record<string, string>;
  lines: string[];
}

export function parseRequest(body: string): HookRequest {
  const blank = body.indexOf('\n\n');
  const head = (blank < 0 ? body : body.slice(0, blank)).split('\n');
  const rest = blank < 0 ? '' : body.slice(blank + 2);
  const req: HookRequest = { hook: '', ppid: 0, dir: '', env: {}, id: {}, lines: rest.split('\n').filter((l) => l.trim()) };
  const seen = new Set<string>();
  for (const line of head) {
    const sp = line.indexOf(' ');
    const k = line.slice(0, sp);
    const v = line.slice(sp + 1);
    // Each of these once: a forwarded value (a push option) can never stand in for them.
    if (k === 'hook' || k === 'ppid' || k === 'dir') {
      if (seen.has(k)) throw new Error('malformed hook request');
      seen.add(k);
    }
    if (k === 'hook') req.hook = v;
    else if (k === 'ppid') req.ppid = Number(v);
    else if (k === 'dir') req.dir = v;
    else if (k === 'env') {
      const s2 = v.indexOf(' ');
      req.env[v.slice(0, s2)] = v.slice(s2 + 1);
    } else if (k === 'id') {
      const s2 = v.indexOf(' ');
      if (s2 > 0) req.id[v.slice(0, s2)] = v.slice(s2 + 1);
    }
  }
  if (!req.hook || !Number.isInteger(req.ppid) || req.ppid <= 0 || !req.dir) throw new Error('malformed hook request');
  return req;
}

export function parseRefLine(line: string): RefUpdate {
  const m = /^([0-9a-f]{40}|[0-9a-f]{64}) ([0-9a-f]{40}|[0-9a-f]{64}) (\S.*)$/.exec(line.trim());
  if (!m) throw new Error(`malformed ref line ${JSON.stringify(line.slice(0, 200))}`);
  return { oldId: m[1]!, newId: m[2]!, ref: m[3]! };
}

/** Whether `p` (a hook's folder, a quarantine path) resolves inside `root` (the session's repository). */
export function inside(root: string, p: string): boolean {
  try {
    const real = realpathSync(p);
    return real === root || real.startsWith(root + sep);
  } catch {
    return false;
  }
}
