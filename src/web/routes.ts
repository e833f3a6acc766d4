// The audit page's HTTP side, mounted by src/server/app.ts: who may look (human and admin
// tokens, by HTTP Basic as for git or by the login form's session cookie), the routes
// (/, /pushes, /push/ID, /escalations, /chain, /login, /logout, /assets/NAME, /favicon.ico) and the headers every
// answer carries (a strict Content-Security-Policy: scripts and styles from this origin only).

import type http from 'node:http';
import { join } from 'node:path';
import type { AuditSink } from '../audit/sink.js';
import type { AuthenticatedToken, TokenSource } from '../audit/tokens.js';
import { errorMessage, UsageError } from '../errors.js';
import { parseBasic, type FailureLimiter } from '../server/auth.js';
import { grantAllows, grantOf } from '../server/grant.js';
import { overview, tablePage, type TableFilter } from '../audit/insights.js';
import { lastCheckpointInFile } from '../audit/checkpoint-publish.js';
import { verifyLog, walkYielding, type WalkProgress } from '../audit/verify-log.js';
import { describeLease, type CheckpointSigner, type LeaseState } from '../audit/checkpoint-lease.js';
import { asset } from './assets.js';
import { chainBlock, layout, loginPage, messagePage, overviewPage, pushesPage, pushPage, type ChainStatus } from './pages.js';
import { escalationsPage } from './escalations.js';
import type { EscalationWhere } from '../server/escalate.js';
import { listEscalations } from '../audit/escalation.js';
import { cookieHeader, readCookie, Sessions, COOKIE } from './session.js';
import { html } from './html.js';

export const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const MAX_FORM_BYTES = 4096;

export interface WebDeps {
  dataDir: string;
  /** The configured audit log (`--audit`): every page reads it, and failed logins are written to it. */
  audit: AuditSink;
  /** The tokens of that same log. */
  tokens: TokenSource;
  limiter: FailureLimiter;
  /** Served over TLS: the session cookie is marked Secure. */
  secure: boolean;
  log: (line: string) => void;
  /** What the printed escalation commands name: the data folder and the log (src/server/escalate.ts). */
  escalationWhere?: EscalationWhere;
  /** This node's name in a shared log's checkpoint lease (src/audit/checkpoint-lease.ts). */
  node?: string;
  /** How this node signs: `every-node` says so on the page instead of the lease's holder; `everySeconds` 0: it does not. */
  checkpoints?: { signer: CheckpointSigner; everySeconds: number };
  /** How long /chain waits for its walk of the whole log before it answers with how far the walk is (default 10 s). */
  chainWaitMs?: number;
}

const PAGE_RE = /^\/(?:|pushes|escalations|chain|login|logout|favicon\.ico|push\/[^/]+|assets\/[^/]+)$/;

export function isWebPath(pathname: string): boolean {
  return PAGE_RE.test(pathname);
}

export function createWeb(deps: WebDeps): (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => Promise<void> {
  const sessions = new Sessions();

  const send = (res: http.ServerResponse, code: number, type: string, body: string | Buffer, extra: Record<string, string | string[]> = {}): void => {
    if (res.headersSent) return void res.end();
    res.writeHead(code, {
      'Content-Type': type, 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'same-origin', 'X-Frame-Options': 'DENY', 'Cache-Control': 'no-store', ...extra,
    });
    res.end(body);
  };
  const page = (res: http.ServerResponse, code: number, body: string, extra: Record<string, string | string[]> = {}) => send(res, code, 'text/html; charset=utf-8', body, extra);

  const addr = (req: http.IncomingMessage) => req.socket.remoteAddress ?? 'unknown';

  /** The token behind this request, or null; a bad Basic secret counts as a failed login. */
  const identify = async (req: http.IncomingMessage): Promise<AuthenticatedToken | 'bad' | null> => {
    const sid = readCookie(req.headers.cookie);
    const s = sessions.get(sid);
    if (s) {
      const token = await deps.tokens.authenticateHash(s.secretHash);
      if (token) return token;
      sessions.end(sid); // revoked or expired since login
    }
    const creds = parseBasic(req.headers.authorization);
    if (!creds) return null;
    if (deps.limiter.blocked(addr(req), creds.user)) return 'bad';
    const token = await deps.tokens.authenticate(creds.secret);
    if (!token) {
      deps.limiter.fail(addr(req), creds.user);
      await deps.audit.appendAuthFailure({ remoteAddr: addr(req), user: creds.user, reason: 'audit page: bad or revoked token' });
      return 'bad';
    }
    // Only a token that may read the page forgives the failures of its claimed name: an agent
    // token's success, interleaved with guesses under the same name, must not reset them.
    if (token.role !== 'agent') deps.limiter.succeed(addr(req), creds.user);
    return token;
  };

  const challenge = (req: http.IncomingMessage, res: http.ServerResponse, message: string | null): void => {
    // A browser gets the login form; other clients the Basic challenge git and curl understand.
    const browser = /text\/html/.test(req.headers.accept ?? '');
    page(res, 401, loginPage(message), browser ? {} : { 'WWW-Authenticate': 'Basic realm="patchgate"' });
  };

  const sameOrigin = (req: http.IncomingMessage): boolean => {
    const origin = req.headers.origin;
    if (origin === undefined) return true;
    try {
      return new URL(origin).host === req.headers.host;
    } catch {
      return false;
    }
  };

  const readForm = (req: http.IncomingMessage): Promise<URLSearchParams | null> =>
    new Promise((resolve) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (b: Buffer) => {
        size += b.length;
        if (size > MAX_FORM_BYTES) return resolve(null);
        chunks.push(b);
      });
      req.on('end', () => resolve(size > MAX_FORM_BYTES ? null : new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
      req.on('error', () => resolve(null));
    });

  // The verdict of the configured log (src/audit/verify-log.ts, what `audit verify` says): /chain
  // walks the log afresh on every load (one walk at a time, shared by the loads that come while
  // it runs) and waits up to chainWaitMs for it; a longer walk (a large log) goes on, and the
  // page says how far it is. The overview shows the last verdict and when it was reached.
  let lastVerdict: ChainStatus['full'] = null;
  let walking: { done: Promise<void>; since: string; progress: WalkProgress; of: number } | null = null;
  const startWalk = async (): Promise<NonNullable<typeof walking>> => {
    if (walking) return walking;
    const progress: WalkProgress = { rows: null };
    const since = new Date().toISOString();
    const of = (await deps.audit.lastRow()).id;
    if (walking) return walking;
    const done = verifyLog(deps.audit, (s) => walkYielding(s, progress)).then(
      (v) => ({ ok: v.ok, text: v.lines.join('; '), at: new Date().toISOString() }),
      (err: unknown) => ({ ok: false, text: `could not be verified: ${errorMessage(err).split('\n')[0]}`, at: new Date().toISOString() }),
    ).then((r) => {
      lastVerdict = r;
      walking = null;
    });
    return (walking = { done, since, progress, of });
  };

  const signerStatus = async (): Promise<{ signer: ChainStatus['signer']; last: LeaseState['last'] }> => {
    const lease = deps.audit.checkpointLease?.();
    const off = deps.checkpoints?.everySeconds === 0;
    if (!lease) return { signer: off ? { text: 'none: checkpoints are off on this node (--checkpoint-every 0)', ok: false } : { text: 'this node (the log is its own SQLite file)', ok: true }, last: null };
    if (deps.checkpoints?.signer === 'every-node') return { signer: { text: `every node with checkpoints on signs with its own key (--checkpoint-signer every-node)${off ? '; this node does not (--checkpoint-every 0)' : ''}`, ok: true }, last: null };
    try {
      const l = await lease.current(deps.node);
      if (!l) return { signer: { text: 'no node has taken this shared log\'s signing lease: no checkpoints are made', ok: false }, last: null };
      const text = l.live ? `${describeLease(l)}${l.mine ? ' (this node)' : ''}` : `no node: the last lease (${describeLease(l)}) ran out, so no checkpoints are made now`;
      return { signer: { text, ok: l.live }, last: l.last };
    } catch (err) {
      return { signer: { text: `unknown: ${errorMessage(err).split('\n')[0]}`, ok: false }, last: null };
    }
  };

  const chainStatus = async (fresh: boolean): Promise<ChainStatus> => {
    let running: ChainStatus['running'] = null;
    if (fresh) {
      const w = await startWalk();
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([w.done.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), deps.chainWaitMs ?? 10_000)))]);
      clearTimeout(timer);
      if (!finished) running = { since: w.since, rows: w.progress.rows, of: w.of };
    } else if (walking) {
      running = { since: walking.since, rows: walking.progress.rows, of: walking.of };
    }
    const full = lastVerdict;
    const head = await deps.audit.lastRow();
    const last = head.id > 0 ? await deps.audit.get(head.id) : null;
    let lastCheckpoint: ChainStatus['lastCheckpoint'] = null;
    // A shared log: the lease says who signs, and the last checkpoint of any node (this node's file may have none).
    const { signer, last: leased } = await signerStatus();
    const cp = leased ?? lastCheckpointInFile(join(deps.dataDir, 'checkpoints.jsonl'));
    if (cp) {
      const row = cp.size > 0 ? await deps.audit.get(cp.size) : null;
      lastCheckpoint = { time: cp.time, rows: cp.size, matches: cp.size === 0 || row?.hash === cp.head, ...(leased ? { by: leased.by } : {}) };
    }
    return { signer, running, rows: head.id, head: head.hash, headOk: head.id === 0 || last?.hash === head.hash, lastCheckpoint, full };
  };

  return async (req, res, url) => {
    const path = url.pathname;
    // Browsers ask for it on every page, before any login: nothing to hide, nothing to log.
    if (path === '/favicon.ico') {
      if (res.headersSent) return void res.end();
      res.writeHead(204, { 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'public, max-age=86400' });
      return void res.end();
    }
    if (path.startsWith('/assets/')) {
      const a = req.method === 'GET' ? asset(path.slice('/assets/'.length)) : null;
      if (!a) return send(res, 404, 'text/plain; charset=utf-8', 'patchgate: no such asset\n');
      return send(res, 200, a.type, a.body, { 'Cache-Control': 'public, max-age=3600' });
    }
    if (path === '/login' && req.method === 'GET') return page(res, 200, loginPage(null));
    if (path === '/login' && req.method === 'POST') {
      if (!sameOrigin(req)) return page(res, 403, messagePage('Refused', 'cross-site login refused', null));
      if (deps.limiter.blocked(addr(req), 'web login')) return page(res, 429, loginPage('too many failed logins from this address; wait and retry'), { 'Retry-After': '600' });
      const form = await readForm(req);
      const secret = form?.get('token') ?? '';
      const token = secret ? await deps.tokens.authenticate(secret) : null;
      if (!token) {
        deps.limiter.fail(addr(req), 'web login');
        await deps.audit.appendAuthFailure({ remoteAddr: addr(req), user: 'web login', reason: 'audit page: bad or revoked token' });
        return page(res, 401, loginPage('bad or revoked token'));
      }
      // The form claims no name, so every login from this address shares one count: a success
      // (an agent token's, or anyone's) forgives nothing, or it would reset a guesser's count.
      if (token.role === 'agent') return page(res, 403, loginPage('agent tokens may not read the audit log; log in with a human or admin token'));
      const sid = sessions.create(token.name, secret);
      return page(res, 303, messagePage('Logged in', 'continue to the overview', token.name), { Location: '/', 'Set-Cookie': cookieHeader(sid, deps.secure) });
    }
    if (path === '/logout' && req.method === 'POST') {
      if (!sameOrigin(req)) return page(res, 403, messagePage('Refused', 'cross-site logout refused', null));
      sessions.end(readCookie(req.headers.cookie));
      return page(res, 303, messagePage('Logged out', 'you are logged out', null), { Location: '/login', 'Set-Cookie': `${COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${deps.secure ? '; Secure' : ''}` });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return page(res, 405, messagePage('Not allowed', `${req.method} is not allowed here`, null), { Allow: 'GET' });

    const who = await identify(req);
    if (who === null) return challenge(req, res, null);
    if (who === 'bad') return challenge(req, res, 'bad or revoked token');
    if (who.role === 'agent') return page(res, 403, messagePage('Refused', 'agent tokens may not read the audit log', null));
    // Only the rows of repositories this token may use (never a *-holdout one, unless admin).
    const grant = grantOf(who, deps.dataDir);
    const only = grant === null ? {} : { repos: grant };
    try {
      if (path === '/') return page(res, 200, overviewPage(await overview(deps.audit, only), await chainStatus(false), who.name, await listEscalations(deps.audit, { open: true, limit: 50, ...only }), deps.escalationWhere));
      if (path === '/escalations') return page(res, 200, escalationsPage(await listEscalations(deps.audit, { limit: 500, ...only }), who.name, deps.escalationWhere));
      if (path === '/chain') return page(res, 200, layout('Chain', html`<h1>Chain</h1>${chainBlock(await chainStatus(true))}`, who.name));
      if (path === '/pushes') {
        const f: TableFilter = {};
        for (const k of ['repo', 'actor', 'verdict', 'rule', 'row', 'since', 'until', 'before'] as const) {
          const v = url.searchParams.get(k);
          if (v) f[k] = v;
        }
        try {
          return page(res, 200, pushesPage(f, await tablePage(deps.audit, f, grant ?? undefined), who.name, null));
        } catch (err) {
          if (!(err instanceof UsageError)) throw err;
          return page(res, 400, pushesPage(f, { rows: [], next: null }, who.name, err.message));
        }
      }
      let id: string;
      try {
        id = decodeURIComponent(path.slice('/push/'.length));
      } catch {
        return page(res, 400, messagePage('Bad request', 'not a push id', who.name));
      }
      let trace = null;
      try {
        trace = await deps.audit.getPush(id);
      } catch (err) {
        if (!(err instanceof UsageError)) throw err;
      }
      // A push of a repository outside the grant is answered as one that does not exist.
      const repoOf = trace?.push?.repo ?? trace?.refs[0]?.repo ?? trace?.confirms[0]?.repo ?? null;
      if (!trace || !grantAllows(grant, repoOf)) return page(res, 404, messagePage('No such push', `no push ${id} in the audit log`, who.name));
      return page(res, 200, pushPage(trace, who.name));
    } catch (err) {
      deps.log(`patchgate: audit page error: ${errorMessage(err)}`);
      return page(res, 500, messagePage('Error', 'the audit log could not be read; see the server log', who.name));
    }
  };
}
