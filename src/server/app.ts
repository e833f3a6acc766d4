// The gate server, wired in one ordered sequence you can read top to bottom:
// config -> storage (the data folder's one audit log, ./folder-log.ts, and its tokens) -> repositories and their hooks -> hook daemon ->
// HTTP front (health, authenticate EVERY request, repo checks, API, git) -> shutdown.
// node-git-server only runs the git protocol; it never decides who may do what, and it never
// sees a client's request: ./git-front.ts reads and checks the body and hands it a stand-in.
// The data folder is locked for the server's life (./datadir-lock.ts).

import { readerConfig, readerEnvForAccept, withReaderEnv } from '../git/reader-env.js';
import { refuseEscalatedFetch } from './escalation-ref.js';
import { auditArg } from './escalate.js';
import { checkPublicUrl, requestPushUrl, type PushTarget } from '../policy/push-target.js';
import http from 'node:http';
import type { ChildProcess } from 'node:child_process';
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { privateDir } from '../private-files.js';
import { join, resolve } from 'node:path';
import { Git as GitServer } from 'node-git-server';
import { GitSpawner, HelperChild, primeAdvert, routeServiceSpawns } from '../git/spawner.js';
import type { SpareReceivePacks } from '../git/spare-receive.js';
import { fsckFor, fsckForAccept, fsckOf, FsckWarnings, withStartFsck } from '../git/push-fsck.js';
import type { RefAdverts } from '../git/ref-advert.js';
import { newPushId, type AuditStore, type QueryOptions } from '../audit/store.js';
import { allowsRepo, hashSecret, type AuthenticatedToken, type TokenSource } from '../audit/tokens.js';
import { ConfigError, errorMessage, StartupError, UsageError } from '../errors.js';
import { FailureLimiter, crossSite, parseCredentials, DEFAULT_LIMITER, type LimiterOptions } from './auth.js';
import { grantOf } from './grant.js';
import { silentLogger, type Logger } from '../log.js';
import { createMetrics, observeAudit, type GateMetrics } from './metrics.js';
import { restorePushCounts } from './metrics-restore.js';
import { noteRequest, observeRequest, sendMetrics, startMetricsListener } from './observe-http.js';
import { HookService } from './hook-service.js';
import { ContentCache, PersistentCache } from '../cache/content-cache.js';
import type { NotifyOptions } from './notify.js';
import type { IdleGcOptions } from './idle-gc.js';
import { stderrProgress } from '../progress.js';
import { checkHooks, ensureRepoConfig, listRepos, normalizeRepoName, reposDir, resolveRepo, createRepo, holdoutOf } from './repos.js';
import { writeAdminToken } from './admin-token.js';
import { holdForeground } from '../contract/priority.js';
import { interposeStdout, ReportStatusReader } from './report-status.js';
import type { Ahead } from './hook/ahead.js';
import { DEFAULT_LIMITS, exchangeOf, guardRequest, preparePost, prepareGet, trackChild, type FrontDeps, type RequestLimits } from './git-front.js';
import { refreshForClone, warmWithUpstream } from '../upstream/serve.js';
import { lockDataDir } from './datadir-lock.js';
import { healthyBody, hookHealth } from './health.js';
import { createWeb, isWebPath } from '../web/routes.js';
import { startCheckpointSchedule } from '../audit/checkpoint-schedule.js';
import { nodeName, type CheckpointSigner } from '../audit/checkpoint-lease.js';
import { tokensFor, type AuditSink } from '../audit/sink.js';
import { openServerLog } from './folder-log.js';
import { runUndo } from '../undo.js';
import { warmCommand } from '../commands/warm.js';

export interface ServerOptions {
  dataDir: string;
  port: number;
  host: string;
  tlsCert?: string;
  tlsKey?: string;
  hookTimeoutMs?: number;
  /** How long a person's push waits for the rules waived for a person (default: a quarter of the hook time limit). */
  waivedWaitMs?: number;
  /** The audit log, `sqlite:PATH` or `postgres://…` (must be the one the folder records, and is recorded: ./folder-log.ts); default: the recorded one, else `<data>/patchgate.db`. */
  auditUrl?: string;
  /** Where auditUrl came from, for messages and the record (`--audit`, `PATCHGATE_AUDIT_URL`, `config FILE: audit`). */
  auditFrom?: string;
  limiter?: LimiterOptions;
  /** Deadlines and size limits per request (defaults: DEFAULT_LIMITS in ./git-front.ts). */
  limits?: Partial<RequestLimits>;
  /** Test seam passed to the hook daemon. */
  beforeJudge?: () => Promise<void>;
  /** Pushes judged at once (default: two per core; PATCHGATE_JUDGE_SLOTS). */
  judgeSlots?: number;
  /** How long an upstream fetch is reused (ms; default src/upstream/remote.ts FRESH_MS). */
  upstreamFreshMs?: number;
  /** A push's long work says so on `remote:` after this long (default 2000 ms; HookService). */
  remoteProgressDelayMs?: number;
  /** The daemon's idle `git gc --auto` (quiet period and bounds; src/server/idle-gc.ts). */
  gc?: IdleGcOptions;
  log?: (line: string) => void;
  /** Seconds between signed audit checkpoints (0: off; default 3600) and where they are published (src/audit/checkpoint-publish.ts). */
  checkpointEverySeconds?: number;
  checkpointPublish?: string[];
  /** Where checkpointPublish came from (`--checkpoint-publish`: a URL with a password there is refused), and the anchor credential file. */
  checkpointPublishFrom?: string;
  checkpointCredentialFile?: string;
  /** On a shared log: `lease` (default), one node signs at a time; `every-node`, each signs with its own key (src/audit/checkpoint-lease.ts). */
  checkpointSigner?: CheckpointSigner;
  /** Structured log (one line per request and per push decision); default: silent. */
  logger?: Logger;
  /** The prom-client registry and metrics (default: a new one); GET /metrics with an admin token. */
  metrics?: GateMetrics;
  /** Also serve GET /metrics without a token on this port, bound to metricsHost (default 127.0.0.1). */
  metricsPort?: number;
  metricsHost?: string;
  /** The base URL clients use (behind a proxy); else the request's Host header. Printed in fixes, so no credentials. */
  publicUrl?: string;
  /** `--notify-url`: each escalation is POSTed there (./notify.ts); `notify` shortens its limits (tests). */
  notifyUrl?: string;
  notify?: NotifyOptions;
  /** The push path's mechanisms, each on unless false (./push-path.ts; `serve` reads PATCHGATE_PUSH_PATH_OFF). */
  pushPath?: Partial<import('./push-path.js').PushPath>;
}

export interface RunningServer {
  url: string;
  port: number;
  /** The SQLite store when the audit log is a SQLite file (`sink` itself); null when it is PostgreSQL (no SQLite file is opened then). */
  audit: AuditStore | null;
  /** The audit log as people read it (no password), e.g. for the start line. */
  auditLog: string;
  /** The audit log. Every reader reads this one. */
  sink: AuditSink;
  /** The tokens of `sink` (sync on SQLite, async on PostgreSQL: await them). */
  tokens: TokenSource;
  hooks: HookService;
  /**
   * Push ref advertisements made ahead (src/git/ref-advert.ts), for tests and the bench: this
   * server's own; when one process runs several servers (tests), the newest one's serve them all.
   */
  adverts: RefAdverts;
  /** Push receive-packs started while their clients pack (src/git/spare-receive.ts), for tests and the bench. */
  spares: SpareReceivePacks;
  metrics: GateMetrics;
  /** The port of the separate metrics listener, when one was asked for. */
  metricsPort: number | null;
  /** A one-time admin secret when this start created the first token (never printed). */
  firstAdminSecret: string | null;
  /** Where that secret was written (`<data>/admin-token`, mode 0600), or null. */
  adminTokenFile: string | null;
  /** Stop taking requests, let in-flight pushes finish, close everything. */
  close(): Promise<void>;
}

/** What a push's receive-pack showed on its way out: git's report, and the confirm rows' write. */
interface Seen {
  report: ReportStatusReader;
  /** Settles the exit's write (the answer's end waits for it when no report was read). */
  settle: (w?: Promise<void>) => void;
  /** receive-pack's pid once registered (0 before). */
  pid: number;
  /** The confirm rows written from the report, once it was whole. */
  confirmed: Promise<void> | null;
  /** The push judged from its pack before its hook (src/server/hook/ahead.ts). */
  ahead?: Promise<Ahead | null>;
  /** A person's push: what git's relaxed fsck warned about (src/git/push-fsck.ts). */
  fsckWarnings?: FsckWarnings;
}

/** `credential`: the sha256 of the token (never the secret), read again when a push's decision is written (src/audit/credential.ts). */
type Identity = AuthenticatedToken & { credential: string; remoteAddr: string; userAgent: string | null; repo: string; repoDir: string; pushTarget?: PushTarget };

/** The hook names a metric label may carry (what a shim sends is not trusted to be one). */
const HOOK_LABELS = new Set<string>(['pre-receive', 'update']);
/**
 * Longest a push's HTTP answer is held after receive-pack's output ended, for its confirm rows
 * (one try of the write; a store that does not answer leaves them queued and the intent entry).
 */
const CONFIRM_HOLD_MS = 10_000;

/** `/NAME.git/<git route>` -> name and route. */
const GIT_ROUTE = /^\/([^/]+)\.git\/(info\/refs|HEAD|git-upload-pack|git-receive-pack)$/;

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const logger = opts.logger ?? silentLogger();
  const log = opts.log ?? (opts.logger ? (l: string) => logger.warn(l) : (l: string) => void process.stderr.write(l + '\n'));
  const metrics = opts.metrics ?? createMetrics();
  // --- config
  const dataDir = resolve(opts.dataDir);
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) throw new ConfigError('--port', `not a port number: ${opts.port}`);
  const hookTimeoutMs = opts.hookTimeoutMs ?? 30_000;
  if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined)) throw new ConfigError('--tls-cert/--tls-key', 'give both or neither');
  const limits: RequestLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  let publicUrl: string | undefined;
  try {
    publicUrl = opts.publicUrl === undefined ? undefined : checkPublicUrl(opts.publicUrl);
  } catch (err) {
    throw new ConfigError('--public-url', errorMessage(err));
  }
  privateDir(reposDir(dataDir)); // a new data folder is 0700

  // --- one server per data folder; everything opened from here on is closed again if the start fails
  const lock = lockDataDir(dataDir);
  const undo: Array<() => unknown> = [() => lock.release()];
  try {
    return await startLocked();
  } catch (err) {
    await runUndo(undo);
    throw err;
  }

  async function startLocked(): Promise<RunningServer> {
    // --- storage
    const opened = await openServerLog(dataDir, opts.auditUrl === undefined ? null : { value: opts.auditUrl, from: opts.auditFrom ?? '--audit' }, 'serve');
    const { sink, store: audit } = opened;
    undo.push(() => sink.close());
    const tokens = await tokensFor(sink);

    // --- repositories: every hook must be ours, or the repo is not served (checked again on every request)
    for (const name of listRepos(dataDir)) {
      const dir = resolveRepo(dataDir, name);
      const state = dir ? checkHooks(dir) : { ok: false as const, reason: 'repository path escapes the data folder' };
      if (!state.ok) {
        log(`patchgate: NOT serving repository ${name}: ${state.reason} (reinstall with: patchgate repo hooks ${name})`);
      } else {
        // git's push limits, also on repositories made before them; the policy's limits apply in the hook either way.
        const set = await ensureRepoConfig(dir!).catch((err: unknown) => (log(`patchgate: repository ${name}: could not set git's push limits: ${errorMessage(err)}`), []));
        if (set.length) log(`patchgate: repository ${name}: set ${set.join(', ')}`);
      }
    }

    // --- hook daemon
    const disk = new PersistentCache(join(dataDir, 'cache.db'));
    undo.push(() => disk.close());
    const cache = new ContentCache(disk);
    metrics.watchCache(cache);
    // What an escalation's printed close command names: this data folder, and the log when it is not the folder's own.
    const pgUrl = auditArg(opened.where.location.kind === 'postgres' ? opened.where.location.url : undefined);
    const escalationWhere = { dataDir, ...(pgUrl ? { audit: pgUrl } : {}) };
    const hooks = new HookService({ endpointPath: join(dataDir, 'hook.endpoint'), audit: sink, timeoutMs: hookTimeoutMs, ...(opts.waivedWaitMs !== undefined ? { waivedWaitMs: opts.waivedWaitMs } : {}), cache, beforeJudge: opts.beforeJudge, seedCommand: (dir) => warmCommand({ data: dataDir }, dir), ...(opts.judgeSlots !== undefined ? { judgeSlots: opts.judgeSlots } : {}), pushPath: opts.pushPath, dataDir, upstreamFreshMs: opts.upstreamFreshMs, ...(opts.remoteProgressDelayMs !== undefined ? { remoteProgressDelayMs: opts.remoteProgressDelayMs } : {}), ...(opts.gc ? { gc: opts.gc } : {}), ...(opts.log ? {} : { progress: opts.logger ? { write: (t: string) => logger.info(t.replace(/\n$/, '')), isTTY: false } : stderrProgress() }), onTimeout: () => metrics.hookTimeouts.inc(), onAnswer: (hr, verdict) => metrics.hookAnswers.inc({ hook: hr && HOOK_LABELS.has(hr.hook) ? hr.hook : 'other', verdict }), log, escalationWhere, ...(opts.notifyUrl ? { notifyUrl: opts.notifyUrl, notify: opts.notify } : {}) });
    undo.push(() => hooks.stop());
    await hooks.start();
    // Pushes the last run left unsettled (killed, or its log was down): compared with the real
    // refs (upstream's too) and recorded before the first request is served.
    await hooks.recover();
    // The counters start from what the log holds (after the recovery's rows, which can turn an
    // accept into an upstream refusal), then count where decisions become rows.
    await restorePushCounts(sink, metrics);
    observeAudit(sink, metrics, logger);
    for (const name of listRepos(dataDir)) {
      const dir = resolveRepo(dataDir, name);
      if (dir && checkHooks(dir).ok) warmWithUpstream(hooks, dataDir, name, dir, log);
    }

    // --- git services started by a small helper process, not by this big one (src/git/spawner.ts)
    const spawner = new GitSpawner(log, { pushPath: opts.pushPath });
    spawner.start();
    const unroute = routeServiceSpawns(spawner);
    const stopSpawner = (): void => {
      unroute();
      spawner.stop();
    };
    undo.push(stopSpawner);

    // --- git protocol (node-git-server), never trusted with identity
    const identities = new WeakMap<http.IncomingMessage, Identity>();
    const servicePids = new Set<number>();
    const gitServer = new GitServer((dir?: string) => join(reposDir(dataDir), dir ?? ''), { autoCreate: false });
    const registered = new WeakSet<object>();
    // node-git-server's objects re-emit errors of the response and of git's child: each gets a listener.
    const onGitError = (err: unknown): void => log(`patchgate: git request error: ${errorMessage(err)}`);
    const onReceive = (action: any): void => {
      // node-git-server emits once per ref line: the first one decides (and accepts, below).
      if (registered.has(action)) return;
      registered.add(action);
      action.on('error', onGitError);
      const who = identities.get(action.req as http.IncomingMessage);
      if (!who) return action.reject(403, 'patchgate: unauthenticated push');
      // No idle `git gc --auto` of this repository while the push runs (src/server/idle-gc.ts):
      // held from here to receive-pack's exit (or the request's end, if git never started).
      void hooks.gc.enter(who.repoDir).then((release) => {
        let started = false;
        action.res?.once?.('close', () => started || release());
        accept(action, who, () => (started = true), release);
        if (action.status !== 'accepted') release();
      }, (err: unknown) => onGitError(err));
    };
    const accept = (action: any, who: Identity, onStart: () => void, release: () => void): void => {
      action.once('service', (ps: ChildProcess) => {
        onStart();
        // The changed files are parsed, and the push judged, while receive-pack unpacks the pack
        // (src/server/hook/prewarm.ts, ahead.ts); the hook takes that judgement if it still holds.
        const ex = exchangeOf(action.req);
        const ahead = ex?.pack.then((pack) => (pack ? hooks.prewarm(who.repoDir, who.role === 'agent' ? 'agent' : 'human', pack, ex.section?.commands ?? [], who.pushTarget, who.agentClass) : null));
        // Once receive-pack has exited and the answer is sent, the advertisement for the next push
        // is made (src/git/ref-advert.ts), unless another push of the repository is under way
        // (its refs would move before it is used). Off the path of this push and of the next.
        let ends = 0;
        const ended = (): void => void (++ends === 2 && hooks.gc.inFlight(who.repoDir) === 0 && primeAdvert(who.repoDir));
        ps.once('exit', release);
        ps.once('exit', ended); // after release: this push is no longer in flight
        action.res?.once?.('close', ended);
        // git's report-status on its way to the client is what moved (no post-receive hook:
        // src/server/report-status.ts); the answer ends once the session's rows are written.
        // A person's receive-pack only warns about old history's format slips (src/git/push-fsck.ts): what it warned about is audited.
        const fsckWarnings = fsckOf(ps) === 'relaxed' ? new FsckWarnings() : null;
        const report = new ReportStatusReader(exchangeOf(action.req)?.section?.caps ?? [], fsckWarnings ? (p) => fsckWarnings.push(p) : undefined);
        let settle: (w?: Promise<void>) => void = () => {};
        const written = new Promise<void>((r) => (settle = r));
        // Registered or not (no pid: nothing was judged), without a report the answer's end waits for the exit.
        ps.once('exit', () => setImmediate(() => settle(undefined)));
        const seen: Seen = { report, settle, pid: 0, confirmed: null, ...(ahead ? { ahead } : {}), ...(fsckWarnings ? { fsckWarnings } : {}) };
        let reported = false;
        const tap = (c: Buffer): void => {
          report.push(c);
          if (reported || !seen.pid) return;
          const whole = report.outcome;
          if (!whole) return;
          // The report is whole: its confirm rows now, before receive-pack has exited. (A session
          // already ended, its output read after its exit: the exit's write is what the end waits for.)
          reported = true;
          seen.confirmed = hooks.confirmReported(seen.pid, whole) ?? null;
        };
        interposeStdout(ps, tap, () => seen.confirmed ?? written, CONFIRM_HOLD_MS);
        trackChild(action.req, ps, log);
        if (ps.pid) return register(ps, ps.pid, seen);
        if (!(ps instanceof HelperChild)) return;
        // Started by the spawn helper: the pid follows in a moment; its hooks wait for it.
        const pending = ps.pidReady.then((pid) => {
          if (pid && ps.exitCode === null && ps.signalCode === null) register(ps, pid, seen);
        }).finally(() => {
          hooks.pendingSessions.delete(pending);
          if (draining && servicePids.size === 0 && hooks.pendingSessions.size === 0) drained?.();
        });
        hooks.pendingSessions.add(pending);
      });
      const register = (ps: ChildProcess, pid: number, seen: Seen): void => {
        servicePids.add(pid);
        seen.pid = pid;
        hooks.sessions.set(pid, {
          pid, pushId: newPushId(), repo: who.repo, repoDir: who.repoDir, actor: who.name, role: who.role, ...(who.role === 'agent' && who.agentClass ? { agentClass: who.agentClass } : {}),
          remoteAddr: who.remoteAddr, userAgent: who.userAgent, decisions: new Map(), confirmed: new Set(), credential: who.credential,
          atomic: exchangeOf(action.req)?.section?.caps.includes('atomic') ?? false,
          ...(who.pushTarget ? { pushTarget: who.pushTarget } : {}),
          report: () => seen.report.outcome,
          ...(seen.ahead ? { ahead: seen.ahead } : {}),
          ...(seen.fsckWarnings ? { fsckWarnings: seen.fsckWarnings } : {}),
        });
        ps.on('exit', () => {
          servicePids.delete(pid);
          seen.settle(hooks.endSession(pid));
          if (draining && servicePids.size === 0 && hooks.pendingSessions.size === 0) drained?.();
        });
      };
      // Its receive-pack checks objects with the pusher's fsck (src/git/push-fsck.ts).
      fsckForAccept(action, fsckFor(who.role));
      action.accept();
    };
    // Its info/refs answer reports a failed spawn of git on the server object itself: without
    // a listener that error would end the daemon (the CI run of eda25fe, request-fuzz).
    (gitServer as unknown as NodeJS.EventEmitter).on('error', onGitError);
    gitServer.on('push', onReceive);
    gitServer.on('tag', onReceive);
    gitServer.on('fetch', (a: any) => {
      if (registered.has(a)) return a.accept();
      registered.add(a);
      a.on('error', onGitError);
      a.once('service', (ps: ChildProcess) => trackChild(a.req, ps, log));
      // A person's upload-pack sees the escalation refs; an agent's does not (src/git/reader-env.ts).
      const who = identities.get(a.req as http.IncomingMessage);
      readerEnvForAccept(a, readerConfig(who?.role ?? 'agent'));
      a.accept();
    });
    for (const ev of ['info', 'head'] as const) {
      gitServer.on(ev as 'fetch', (a: any) => {
        a.on('error', onGitError);
        // A push's advertisement: the spare receive-pack it primes gets this pusher's fsck (src/git/spare-receive.ts).
        const who = identities.get(a.req as http.IncomingMessage);
        withReaderEnv(readerConfig(who?.role ?? 'agent'), () => withStartFsck(who ? fsckFor(who.role) : 'strict', () => a.accept()));
      });
    }

    // --- HTTP front
    const limiter = new FailureLimiter(opts.limiter ?? DEFAULT_LIMITER);
    let draining = false;
    let drained: (() => void) | null = null;

    const send = (res: http.ServerResponse, code: number, body: string, headers: Record<string, string> = {}): void => {
      if (res.headersSent) return void res.end();
      res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
      res.end(body.endsWith('\n') ? body : body + '\n');
    };

    const authenticate = async (req: http.IncomingMessage, res: http.ServerResponse, repo: string | null): Promise<(AuthenticatedToken & { credential: string }) | null> => {
      const addr = req.socket.remoteAddress ?? 'unknown';
      const creds = parseCredentials(req.headers.authorization);
      if (limiter.blocked(addr, creds?.user)) {
        send(res, 429, 'patchgate: too many failed logins from this address; wait and retry', { 'Retry-After': '600' });
        return null;
      }
      if (!creds) {
        // git sends credentials only after a 401 challenge; a missing header is not a failure yet.
        send(res, 401, 'patchgate: authentication required (HTTP Basic, token as password)', { 'WWW-Authenticate': 'Basic realm="patchgate"' });
        return null;
      }
      let token: AuthenticatedToken | null;
      try {
        token = await tokens.authenticate(creds.secret);
      } catch (err) {
        // The tokens live in the audit log: no answer from it, no access (fail closed).
        log(`patchgate: cannot check a token: ${errorMessage(err)}`);
        send(res, 503, 'patchgate: the audit log does not answer, so no token can be checked and nothing is accepted; retry shortly', { 'Retry-After': '5' });
        return null;
      }
      if (!token) {
        const delay = limiter.fail(addr, creds.user);
        await sink.appendAuthFailure({ remoteAddr: addr, user: creds.user, repo, reason: 'bad or revoked token' });
        if (delay) await new Promise((r) => setTimeout(r, delay));
        send(res, 401, 'patchgate: bad credentials', { 'WWW-Authenticate': 'Basic realm="patchgate"' });
        return null;
      }
      limiter.succeed(addr, creds.user);
      noteRequest(req, { actor: token.name });
      // Checked here once; a push's decision reads the token again by this hash (src/audit/credential.ts).
      return { ...token, credential: hashSecret(creds.secret) };
    };

    const handleApi = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> => {
      const token = await authenticate(req, res, null);
      if (!token) return;
      if (url.pathname === '/api/audit' && req.method === 'GET') {
        if (token.role === 'agent') return send(res, 403, 'patchgate: agents may not read the audit log');
        // Only the rows of repositories this token may use (never a *-holdout one, unless admin).
        const grant = grantOf(token, dataDir);
        const q: QueryOptions = grant === null ? {} : { repos: grant };
        for (const k of ['repo', 'actor', 'verdict', 'since', 'until', 'kind'] as const) {
          const v = url.searchParams.get(k);
          if (v !== null) q[k] = v;
        }
        const limit = url.searchParams.get('limit');
        if (limit !== null) {
          if (!/^\d{1,7}$/.test(limit)) return send(res, 400, `patchgate: query parameter limit: must be an integer from 1 to 1000000 (got ${JSON.stringify(limit.slice(0, 40))})`);
          q.limit = Number(limit);
        }
        try {
          const rows = await sink.query(q);
          res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
          res.end(rows.map((r) => JSON.stringify(r) + '\n').join(''));
        } catch (err) {
          if (err instanceof UsageError) return send(res, 400, `patchgate: ${err.message.replace(/--([a-z-]+)/g, 'query parameter $1')}`);
          throw err;
        }
        return;
      }
      if (url.pathname === '/api/repos' && req.method === 'POST') {
        if (token.role !== 'admin') return send(res, 403, 'patchgate: only admin tokens manage repositories');
        const name = url.searchParams.get('name') ?? '';
        try {
          await createRepo(dataDir, name);
          const repoName = normalizeRepoName(name);
          await sink.appendAdmin({ actor: token.name, action: 'repo.create', subject: repoName, detail: { via: 'api' } });
          // The server's own paths stay on the server: the answer names the repository and its URL path.
          return send(res, 201, `created repository ${repoName} (/${repoName}.git)`);
        } catch (err) {
          if (err instanceof UsageError) return send(res, 400, `patchgate: query parameter name: ${err.message.split(dataDir).join('<data>')}`);
          throw err;
        }
      }
      if (url.pathname === '/api/tokens' && req.method === 'GET') {
        if (token.role !== 'admin') return send(res, 403, 'patchgate: only admin tokens list tokens');
        res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
        return void res.end((await tokens.list()).map((r) => JSON.stringify(r) + '\n').join(''));
      }
      send(res, 404, 'patchgate: no such API route');
    };

    const handleGit = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL, m: RegExpExecArray): Promise<void> => {
      let name: string;
      try {
        name = normalizeRepoName(decodeURIComponent(m[1]!));
      } catch {
        return send(res, 400, 'patchgate: bad repository name');
      }
      noteRequest(req, { repo: name });
      const token = await authenticate(req, res, name);
      if (!token) return;
      if (!allowsRepo(token, name)) {
        await sink.appendAuthFailure({ remoteAddr: req.socket.remoteAddress ?? null, user: token.name, repo: name, reason: 'token has no grant for this repository' });
        return send(res, 403, `patchgate: token ${token.name} has no grant for repository ${name}`);
      }
      const repoDir = resolveRepo(dataDir, name);
      if (!repoDir) return send(res, 404, `patchgate: no repository ${name}`);
      // Held-out tests (issue 11): to an agent token the repository does not exist, whatever its grant.
      if (token.role === 'agent' && holdoutOf(repoDir) !== null) {
        await sink.appendAuthFailure({ remoteAddr: req.socket.remoteAddress ?? null, user: token.name, repo: name, reason: 'agent token on a held-out repository' });
        return send(res, 404, `patchgate: no repository ${name}`);
      }
      const state = checkHooks(repoDir);
      if (!state.ok) return send(res, 503, `patchgate: repository ${name} is not served: ${state.reason}`);
      const service = m[2] === 'info/refs' ? url.searchParams.get('service') : m[2];
      if (service !== null && service !== 'git-upload-pack' && service !== 'git-receive-pack' && m[2] !== 'HEAD') return send(res, 403, 'patchgate: service not available');
      // A push's requests (ref advertisement, receive-pack and the hooks it runs) go ahead of
      // any warm-up's parses until they end (src/contract/priority.ts).
      if (service === 'git-receive-pack') res.on('close', holdForeground());
      // node-git-server gets a stand-in for the request: a POST only once its command section was read and checked.
      const post = m[2] === 'git-receive-pack' || m[2] === 'git-upload-pack';
      if (post !== (req.method === 'POST')) return send(res, 405, `patchgate: ${req.method} is not the method for ${m[2]}`);
      const view = post ? await preparePost(req, res, m[2] === 'git-receive-pack' ? 'receive-pack' : 'upload-pack', front) : prepareGet(req, res, front);
      if (!view) return;
      if (draining) return send(res, 503, 'patchgate: shutting down; retry shortly', { Connection: 'close' });
      // An agent never gets what only an escalation ref reaches, even by its id (src/server/escalation-ref.ts).
      if (m[2] === 'git-upload-pack' && token.role === 'agent' && (await refuseEscalatedFetch(repoDir, view, res, (why) => sink.appendAuthFailure({ remoteAddr: req.socket.remoteAddress ?? null, user: token.name, repo: name, reason: why })))) return;
      // Agents clone and fetch upstream's current trusted branch from the gate too.
      if (service === 'git-upload-pack' && m[2] === 'info/refs') await refreshForClone(hooks, dataDir, name, repoDir, log);
      // The URL the client addressed, without credentials: the printed fixes point a remote at it (src/policy/push-target.ts).
      // Only a push needs it: its refusals print fixes that name this URL.
      const pushUrl = m[2] === 'git-receive-pack' ? requestPushUrl({ ...(publicUrl ? { publicUrl } : {}), ...(req.headers.host ? { host: req.headers.host } : {}), tls: opts.tlsCert !== undefined, rawName: m[1]! }) : null;
      identities.set(view, { ...token, remoteAddr: req.socket.remoteAddress ?? 'unknown', userAgent: req.headers['user-agent'] ?? null, repo: name, repoDir, ...(pushUrl ? { pushTarget: { url: pushUrl } } : {}) });
      gitServer.handle(view, res);
    };

    const front: FrontDeps = { limits, send, log, orphanGraceMs: hookTimeoutMs + 60_000, keepPack: spawner.pushPath.prewarm };
    const node = nodeName(dataDir);
    const web = createWeb({ dataDir, audit: sink, tokens, limiter, secure: opts.tlsCert !== undefined, log, escalationWhere, node, checkpoints: { signer: opts.checkpointSigner ?? 'lease', everySeconds: opts.checkpointEverySeconds ?? 3600 } });
    // Checkpoints sign the configured store (`sink`), not the data folder's file when --audit names another.
    const checkpoints = startCheckpointSchedule({
      dataDir, audit: sink, everySeconds: opts.checkpointEverySeconds ?? 3600, targets: opts.checkpointPublish ?? [], log, node, signer: opts.checkpointSigner ?? 'lease',
      ...(opts.checkpointPublishFrom ? { targetsFrom: opts.checkpointPublishFrom } : {}), ...(opts.checkpointCredentialFile ? { credentialFile: opts.checkpointCredentialFile } : {}),
    });
    undo.push(() => checkpoints.stop());

    /** Every part a push needs; an empty list is healthy. */
    const health = async (): Promise<string[]> => {
      if (draining) return ['draining'];
      const down = [await hookHealth(hooks), await opened.health()];
      return down.filter((d): d is string => d !== null);
    };

    const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      observeRequest(req, res, logger, metrics);
      const isGit = GIT_ROUTE.test((req.url ?? '/').split('?')[0]!);
      guardRequest(req, res, front, isGit ? limits.requestTimeoutMs : limits.otherTimeoutMs);
      void (async () => {
        const url = new URL(req.url ?? '/', 'http://patchgate');
        if (url.pathname === '/healthz') {
          const down = await health();
          return send(res, down.length ? 503 : 200, down.length ? `down: ${down.join('; ')}` : healthyBody(hooks));
        }
        if (draining) return send(res, 503, 'patchgate: shutting down; retry shortly', { Connection: 'close' });
        // A browser on another site may hold Basic credentials or a session for this one: it
        // changes nothing here (git and API clients send no Origin).
        if (req.method !== 'GET' && req.method !== 'HEAD' && crossSite(req)) return send(res, 403, 'patchgate: cross-site request refused (its Origin is not this server); send it from this server\'s own page, or without a browser');
        if (url.pathname === '/metrics' && req.method === 'GET') {
          const token = await authenticate(req, res, null);
          if (!token) return;
          if (token.role !== 'admin') return send(res, 403, 'patchgate: only admin tokens read /metrics (or scrape the --metrics-port listener)');
          return sendMetrics(res, metrics);
        }
        if (url.pathname.startsWith('/api/')) return handleApi(req, res, url);
        const m = GIT_ROUTE.exec(url.pathname);
        if (m) return handleGit(req, res, url, m);
        if (isWebPath(url.pathname)) return web(req, res, url);
        if (url.pathname.includes('..') || url.pathname.includes('%2e%2e') || url.pathname.includes('%2E%2E')) return send(res, 400, 'patchgate: bad path');
        return send(res, 404, 'patchgate: not found');
      })().catch((err) => {
        log(`patchgate: request error: ${errorMessage(err)}`);
        send(res, 500, 'patchgate: internal error; nothing was changed');
      });
    };

    const server = opts.tlsCert
      ? https.createServer({ cert: readFileSync(opts.tlsCert), key: readFileSync(opts.tlsKey!) }, onRequest)
      : http.createServer(onRequest);
    // Node's own limits as a backstop to the per-request deadlines of guardRequest.
    server.headersTimeout = Math.min(60_000, limits.otherTimeoutMs);
    server.requestTimeout = limits.requestTimeoutMs + 60_000;
    server.timeout = limits.idleTimeoutMs; // an idle connection, before or between requests, is closed
    server.on('clientError', (_err, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      socket.destroy();
    });
    await new Promise<void>((resolveListen, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        const hint = err.code === 'EADDRINUSE' ? ': the address is in use (another server on this port?); choose another --port' : '';
        reject(new StartupError('LISTEN', `cannot listen on ${opts.host}:${opts.port}: ${err.code ?? errorMessage(err)}${hint}`, { cause: err }));
      });
      server.listen(opts.port, opts.host, () => resolveListen());
    });
    server.on('error', (err) => log(`patchgate: server error: ${errorMessage(err)}`));
    undo.push(() => new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections?.();
    }));
    // Only once the server is up: a start that fails must not mint the one-time admin token unseen.
    let firstAdminSecret: string | null = null;
    let adminTokenFile: string | null = null;
    if ((await tokens.count()) === 0) {
      try {
        firstAdminSecret = await tokens.create('admin', 'admin', { actor: 'serve (first start)' });
      } catch (err) {
        // Another node on the same shared log made it first: that node wrote the file.
        if (!(err instanceof UsageError && (await tokens.count()) > 0)) throw err;
      }
      if (firstAdminSecret !== null) {
        adminTokenFile = writeAdminToken(dataDir, firstAdminSecret, () => void Promise.resolve(tokens.revoke('admin', { actor: 'serve (first start)' })).catch(() => {}));
      }
    }
    const port = (server.address() as { port: number }).port;
    let metricsPort: number | null = null;
    let closeMetrics: (() => Promise<void>) | null = null;
    if (opts.metricsPort !== undefined) {
      const m = await startMetricsListener(opts.metricsHost ?? '127.0.0.1', opts.metricsPort, metrics, logger);
      undo.push(() => m.close());
      metricsPort = m.port;
      closeMetrics = () => m.close();
    }
    const url = `${opts.tlsCert ? 'https' : 'http'}://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`;

    // --- shutdown: refuse new work, let in-flight pushes finish, then close
    const close = async (): Promise<void> => {
      if (draining) return;
      draining = true;
      await new Promise<void>((r) => server.close(() => r()));
      if (servicePids.size > 0 || hooks.pendingSessions.size > 0) {
        await Promise.race([new Promise<void>((r) => (drained = r)), new Promise((r) => setTimeout(r, hookTimeoutMs + 5000))]);
      }
      server.closeAllConnections?.();
      await checkpoints.stop();
      await closeMetrics?.();
      await hooks.stop();
      stopSpawner();
      await sink.close();
      disk.close();
      lock.release();
    };

    return { url, port, audit, auditLog: opened.described, sink, tokens, hooks, adverts: spawner.adverts, spares: spawner.spares, metrics, metricsPort, firstAdminSecret, adminTokenFile, close };
  }
}
