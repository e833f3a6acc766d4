// The gate daemon's hook endpoint: an HTTP server on 127.0.0.1 that the hook shims call
// (bash over /dev/tcp, so a hook starts no process). The port and a per-start secret sit in
// `<data>/hook.endpoint` (mode 0600); a request without the secret is refused. It ties a hook
// to the authenticated pusher through the shim's parent pid (git-receive-pack, recorded from
// node-git-server's `service` event), runs the engine on the quarantined objects, writes the
// decision to the audit log, and only then answers `accept`. Unknown pid, bad input, wrong
// secret, timeout, engine error or audit failure: reject.
// The time limit really ends a judgement: it runs under an AbortSignal (src/cancel.ts) that
// the limit, or the hook hanging up, fires; the parse worker is terminated and the judge stops.
// Intent before effect (./intents.ts): an accepting decision, verdict included, is durable in
// the log before anything outside the gate changes: before the forward to upstream and before
// pre-receive answers accept (which lets git update the refs). A failed write refuses the
// push and forwards nothing. What follows (the forward's outcome, the post-receive confirms
// of what really moved, `upstream.diverged`) goes through a row queue that retries and never
// drops, and the push's intent entry is removed only when the log and the refs agree. The
// shims wait for the daemon's own time limit plus a margin (`hook.endpoint` carries it).

import type { PushTarget } from '../policy/push-target.js';
import http from 'node:http';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { sep } from 'node:path';
import { Git, QUARANTINE_VARS } from '../git/git.js';
import { AuditError, ContractParseError, errorMessage } from '../errors.js';
import { errorDecision, judgeUpdate, renderDecision } from '../policy/engine.js';
import { machineLine } from '../policy/machine-line.js';
import { loadPolicy, type Policy } from '../policy/config.js';
import { contractFileCount, contractOf } from '../contract/digest.js';
import { Progress, type SlowPhaseOptions } from '../progress.js';
import { parsePool } from '../contract/parse-pool.js';
import { runCancellable } from '../cancel.js';
import type { RefDecision, RefUpdate, Role } from '../policy/types.js';
import type { RecordPushInput } from '../audit/store.js';
import type { AuditSink } from '../audit/sink.js';
import { AuthRowLimiter, type AuthRowLimits } from './auth-rows.js';
import { UpstreamMirror } from '../upstream/remote.js';
import { rememberAccepted } from '../policy/carried.js';
import { afterJudging, beforeJudging, forwardOutcomes, refuseMovedRefs, upstreamBudget, upstreamRefused, recordDiverged, type ForwardRecord } from '../upstream/gate.js';
import { recoverIntents, settleIntent, type SettleDeps } from '../upstream/recover.js';
import { IntentJournal, RowQueue } from './intents.js';
import { IdleGc, type IdleGcOptions } from './idle-gc.js';
import { boundRecord } from '../audit/bound.js';
import { join } from 'node:path';
import type { Verdict } from '../audit/store.js';
import { readPushOptions } from '../audit/escalation.js';
import { recordEscalation } from './escalate.js';
import { Notifier, type NotifyOptions } from './notify.js';

export interface PushSession {
  pid: number;
  pushId: string;
  repo: string;
  repoDir: string;
  actor: string;
  role: Role;
  remoteAddr: string | null;
  userAgent: string | null;
  decisions: Map<string, RefDecision>;
  confirmed: Set<string>;
  /** receive-pack exited (set by endSession). */
  ended?: boolean;
  /**
   * Inside a git host (src/host/): only pre-receive runs and no receive-pack exit is seen, so
   * the decision (written and awaited before the accept, like every push) has no intent entry.
   */
  auditAtJudge?: boolean;
  /** This push has an entry in the intent journal (removed once the log and the refs agree). */
  journaled?: boolean;
  /** Whether the push was forwarded to an upstream (its journal entry says so). */
  viaUpstream?: boolean;
  /** This push's own time limit (the GHES budget), below the daemon's; its refusal says so. */
  timeoutMs?: number;
  timeoutMessage?: string;
  /** What the gate knows of the address the client pushed to (never a credential), for the printed fixes. */
  pushTarget?: PushTarget;
  /** The client asked for an --atomic push (its receive-pack capabilities). */
  atomic?: boolean;
  /** Updates (ref old new) that upstream took (src/upstream/gate.ts). */
  forwarded?: Set<string>;
  /** The trusted branch named by the host's config (src/host/identity.ts), instead of the repository's HEAD. */
  trustedBranch?: string;
}

/** Seconds the shims wait for an answer beyond the daemon's own hook time limit. */
export const SHIM_MARGIN_S = 30;

const key = (ref: string, oldId: string, newId: string) => `${ref} ${oldId} ${newId}`;

export interface HookServiceOptions {
  /** Where the shims find the daemon: "127.0.0.1 <port> <secret>", written on start. */
  endpointPath: string;
  /** The decisions' log (SQLite or PostgreSQL); every write is awaited before the verdict it records is answered. */
  audit: AuditSink;
  /** Engine time limit per push; past it the push is refused. */
  timeoutMs: number;
  cache: Map<string, unknown>;
  /** Test seam: runs before the engine, e.g. to stop the daemon mid-push. */
  beforeJudge?: () => Promise<void>;
  /** Rate limit of the `auth` rows the endpoint writes (tests shorten it). */
  authRows?: AuthRowLimits;
  /**
   * A hook request whose pid no authenticated front registered: the git-host daemon
   * (src/host/) makes a one-push session from the identity the shim sent, or throws; a string
   * instead says the repository is not gated (the push passes with that line).
   */
  sessionFor?: (hr: HookRequest) => PushSession | string;
  /** Called with every answer (the daemon's metrics). */
  onAnswer?: (hr: HookRequest | null, verdict: 'accept' | 'reject', ms: number) => void;
  /** The data folder (repository settings: upstream, mode); default: two levels above a repository. */
  dataDir?: string;
  /** An upstream fetch younger than this is reused by the next push (default FRESH_MS). */
  upstreamFreshMs?: number;
  /** Called when a push passes the time limit (for the hook-timeout metric). */
  onTimeout?: () => void;
  /** The intent journal's folder (default `<dataDir>/intents`); without a data folder, none. */
  intentsDir?: string;
  /** Where the row queue and recovery say what they did (default stderr). */
  log?: (line: string) => void;
  /** `serve --notify-url`: each escalation is POSTed there as JSON (./notify.ts), never holding up a push. */
  notifyUrl?: string;
  /** The notifier's time limit and retries (tests shorten them). */
  notify?: NotifyOptions;
  /** The idle `git gc --auto` (src/server/idle-gc.ts): its quiet period and bounds. */
  gc?: IdleGcOptions;
  /**
   * Where the warm-ups report progress (src/progress.ts): on a terminal one line updated in
   * place; default: through `log`, one line when a repository's warm-up starts and one when it ends.
   */
  progress?: { write: (text: string) => void; isTTY: boolean };
  /**
   * A push's long work (its first contract parse) says so on `remote:` once it has run this
   * long (default 2000 ms; tests set 0 to see the form).
   */
  remoteProgressDelayMs?: number;
}

export interface HookRequest {
  hook: string;
  ppid: number;
  dir: string;
  env: Record<string, string>;
  /** `id KEY VALUE` lines: the identity a git-host shim read from the host's variables. */
  id: Record<string, string>;
  lines: string[];
}

function parseRequest(body: string): HookRequest {
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

function parseRefLine(line: string): RefUpdate {
  const m = /^([0-9a-f]{40}|[0-9a-f]{64}) ([0-9a-f]{40}|[0-9a-f]{64}) (\S.*)$/.exec(line.trim());
  if (!m) throw new Error(`malformed ref line ${JSON.stringify(line.slice(0, 200))}`);
  return { oldId: m[1]!, newId: m[2]!, ref: m[3]! };
}

function inside(root: string, p: string): boolean {
  try {
    const real = realpathSync(p);
    return real === root || real.startsWith(root + sep);
  } catch {
    return false;
  }
}

export class HookService {
  readonly sessions = new Map<number, PushSession>();
  /** Sessions whose receive-pack pid is still on its way from the spawn helper (src/server/app.ts). */
  readonly pendingSessions = new Set<Promise<unknown>>();
  private server: http.Server | null = null;
  private inflight = 0;
  /** One long-lived reader per repository of its own object store (no quarantine), most recent last. */
  private readonly stores = new Map<string, Git>();
  private readonly secret = Buffer.from(randomBytes(32).toString('hex'));
  private warming: Promise<void> = Promise.resolve();
  /** Warm-ups queued or running, and the running one's progress (for /healthz). */
  private warmQueued = 0;
  private warmProgress: Progress | null = null;
  /** Fires at stop(): ends the background warm-ups. */
  private readonly stopping = new AbortController();
  private readonly authRows: AuthRowLimiter;
  private judges = 0;
  /** Audit writes of ended sessions still on their way (an async log). */
  private readonly background = new Set<Promise<void>>();
  /** Fetches of upstream trusted branches, shared by every push (src/upstream/remote.ts). */
  readonly upstream: UpstreamMirror;
  /** Unsettled pushes (null: no data folder, e.g. a host daemon's one-push sessions only). */
  readonly journal: IntentJournal | null;
  /** Rows after a decision: retried in order until written. */
  readonly rows: RowQueue;
  /** `git gc --auto` when a repository is quiet (gated repositories have receive.autogc=false). */
  readonly gc: IdleGc;
  private readonly log: (line: string) => void;
  /** Where escalations are announced (`--notify-url`), or null. */
  readonly notifier: Notifier | null;

  constructor(private readonly opts: HookServiceOptions) {
    this.authRows = new AuthRowLimiter(opts.audit, opts.authRows);
    this.upstream = new UpstreamMirror(opts.upstreamFreshMs);
    this.log = opts.log ?? ((l) => void process.stderr.write(l + '\n'));
    this.rows = new RowQueue(this.log);
    this.gc = new IdleGc({ log: this.log, ...opts.gc });
    const dir = opts.intentsDir ?? (opts.dataDir ? join(opts.dataDir, 'intents') : null);
    this.journal = dir ? new IntentJournal(dir) : null;
    this.notifier = opts.notifyUrl ? new Notifier(opts.notifyUrl, { log: this.log, ...opts.notify }) : null;
  }

  private get settleDeps(): SettleDeps {
    return { audit: this.opts.audit, mirror: this.upstream, journal: this.journal!, dataDir: this.opts.dataDir, timeoutMs: upstreamBudget(this.opts.timeoutMs), storeFor: (dir) => this.mainStore(dir) };
  }

  /** At start: settle what the previous run left in the intent journal (a crash, a kill, a store that was down). */
  async recover(): Promise<{ settled: number; left: number }> {
    if (!this.journal) return { settled: 0, left: 0 };
    return recoverIntents(this.settleDeps, this.log);
  }

  /** Judgements still running, including cancelled ones that have not stopped yet (for tests). */
  get judging(): number {
    return this.judges;
  }

  /** What the shims wait for an answer, in whole seconds: the hook time limit plus a margin. */
  get shimWaitSeconds(): number {
    return Math.ceil(this.opts.timeoutMs / 1000) + SHIM_MARGIN_S;
  }

  async start(): Promise<void> {
    // No parse on this thread from now on: it serves HTTP and the hooks. One file's parse may
    // take at most the hook time limit (a push would be refused by then anyway).
    parsePool.isolate({ jobTimeoutMs: this.opts.timeoutMs });
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

  /** The repository's object store without any push's quarantine; kept open across pushes. */
  private mainStore(repoDir: string): Git {
    let g = this.stores.get(repoDir);
    if (g) this.stores.delete(repoDir);
    else g = new Git({ dir: repoDir, bare: true });
    this.stores.set(repoDir, g);
    while (this.stores.size > 32) {
      const [oldest, og] = this.stores.entries().next().value as [string, Git];
      og.close();
      this.stores.delete(oldest);
    }
    return g;
  }

  async stop(): Promise<void> {
    this.stopping.abort(new Error('the server is stopping'));
    this.authRows.close();
    const gcStopped = this.gc.stop();
    for (const g of this.stores.values()) g.close();
    this.stores.clear();
    const s = this.server;
    this.server = null;
    if (!s) return void (await gcStopped);
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    s.closeAllConnections();
    await closed;
    await Promise.all([...this.background]);
    await this.rows.flush();
    await this.notifier?.stop();
    await gcStopped;
    if (existsSync(this.opts.endpointPath)) rmSync(this.opts.endpointPath, { force: true });
  }

  /**
   * Fill the cache with the contract of the repository's trusted tip, in the background, at
   * start. An agent's first push then differs from a cached tree by a few files instead of
   * parsing the whole repository inside its hook time limit. (A push through the gate needs
   * no warm-up afterwards: judging it computed the new tip's contract.) Only a cache: a
   * failure here changes nothing but speed, and it reads through its own cat-file so pushes
   * never queue behind it.
   */
  warmRepo(repoDir: string, before?: () => Promise<unknown>): void {
    // `before`: what must happen first, in the same queue (an upstream fetch); its failure only logs.
    const first = (): Promise<unknown> => (before ? before().catch((err: unknown) => process.stderr.write(`patchgate: ${errorMessage(err).split('\n')[0]}\n`)) : Promise.resolve());
    this.warmQueued++;
    this.warming = this.warming.then(() => runCancellable(this.stopping.signal, async () => (await first(), this.warm(repoDir)))).catch((err: unknown) => {
      if (!this.server) return; // stopped on the way: nothing to report
      process.stderr.write(`patchgate: cache warm-up of ${repoDir} stopped: ${errorMessage(err).split('\n')[0]}\n`);
    }).finally(() => {
      this.warmQueued--;
    });
  }

  /** While warm-ups are queued or running: how many, and the running one's files done of its total (null: none). */
  warmingStatus(): { repositories: number; done: number; total: number | null } | null {
    if (this.warmQueued <= 0) return null;
    const cur = this.warmProgress?.current;
    return { repositories: this.warmQueued, done: cur?.done ?? 0, total: cur?.total ?? null };
  }

  /** Settles when the warm-ups queued so far are done (for tests and the benchmark). */
  get warmed(): Promise<void> {
    return this.warming;
  }

  private async warm(repoDir: string): Promise<void> {
    if (!this.server) return;
    const git = new Git({ dir: repoDir, bare: true });
    try {
      const { trustedTip: tip, policy } = await trustedState(git);
      if (!tip) return;
      const { roots, format, maxSourceBytes } = policy.contract;
      const out = this.opts.progress ?? { write: (t: string) => this.log(t.replace(/\n$/, '')), isTTY: false };
      const progress = new Progress(out);
      this.warmProgress = progress;
      progress.phase(`patchgate: warming ${repoDir}`, await contractFileCount(git, tip, roots, format));
      let note = '';
      await contractOf(git, tip, roots, format, this.opts.cache, { maxSourceBytes, onFile: (n) => progress.tick(n) }).catch((err: unknown) => {
        if (!(err instanceof ContractParseError)) throw err; // a trusted tree that does not parse: nothing to warm
        note = 'the trusted tip does not parse (nothing more cached)';
      });
      progress.end(note);
    } finally {
      this.warmProgress = null;
      git.close();
    }
  }

  /**
   * For /healthz: the port the shims can reach, or why they cannot (not listening, or
   * hook.endpoint missing or naming another daemon). Never returns the secret.
   */
  /** The one line of hook.endpoint: address, port, secret, and how long a shim waits for a verdict. */
  private endpointLine(port: number): string {
    return `127.0.0.1 ${port} ${this.secret.toString()} ${this.shimWaitSeconds}\n`;
  }

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

  get busy(): number {
    return this.inflight;
  }

  /** Called when receive-pack exits: refs that were judged but never confirmed did not move. */
  endSession(pid: number): void {
    const s = this.sessions.get(pid);
    if (!s) return;
    this.sessions.delete(pid);
    s.ended = true;
    // Accepted but never delivered (the pre-receive shim gave up or died before git ran the
    // update hook): nothing moved, and the audit says refused.
    const unmoved = [...s.decisions.values()].filter((d) => !s.confirmed.has(key(d.ref, d.oldId, d.newId)));
    const items = unmoved.map((d) => ({ ref: d.ref, new: d.newId, moved: false }));
    // In order, through the row queue (retried, never dropped): the diverged row, the confirms
    // of refs that did not move, then the settling of the intent entry (which checks the log
    // against the refs and records anything still missing). stop() waits for these writes.
    const write = (async () => {
      // Upstream took refs the gate did not move: audited, and the next fetch repairs the gate.
      const diverged = s.forwarded?.size ? unmoved.filter((d) => s.forwarded!.has(key(d.ref, d.oldId, d.newId))) : [];
      if (diverged.length) await this.rows.write(s.pushId, 'the upstream.diverged row', () => recordDiverged(this.opts.audit, this.upstream, s, diverged));
      if (items.length) await this.rows.write(s.pushId, 'the confirm rows of refs that did not move', () => this.opts.audit.confirmRefs(s.pushId, items, { repo: s.repo }));
      if (s.journaled && this.journal) this.settleLater(s);
    })();
    this.background.add(write);
    void write.finally(() => this.background.delete(write));
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
        this.authRows.record('hook-secret', { reason: 'hook request without the daemon secret' });
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
      // A receive-pack the spawn helper started has its pid registered a moment after it
      // starts (src/git/spawner.ts): a hook that comes first waits for those registrations.
      if (!this.sessions.has(hr.ppid) && this.pendingSessions.size) await Promise.all([...this.pendingSessions]);
      const found = this.sessions.get(hr.ppid) ?? this.opts.sessionFor?.(hr);
      const session = typeof found === 'object' ? found : undefined;
      if (typeof found === 'string') {
        // A git host's repository its daemon's config does not gate: passed through, said so.
        lines.push(found);
        verdict = 'accept';
      } else if (!session) {
        this.authRows.record('hook-pid', { reason: `hook ${hr.hook.slice(0, 40)} from unknown receive-pack pid ${hr.ppid} (${hr.dir.slice(0, 300)})` });
        throw new Error(`this push did not come through the authenticated gate (unknown pusher pid ${hr.ppid})`);
      } else {
        if (!inside(session.repoDir, hr.dir)) throw new Error('the hook runs in another repository than the one the pusher was authorised for');
        const remote = this.remoteProgress(res);
        if (hr.hook === 'pre-receive' && session.auditAtJudge) {
          // A git host's push (no receive-pack seen here): no idle gc while it is judged.
          const release = await this.gc.enter(session.repoDir);
          try {
            verdict = await this.preReceive(session, hr, lines, gone.signal, remote);
          } finally {
            release();
          }
        } else if (hr.hook === 'pre-receive') verdict = await this.preReceive(session, hr, lines, gone.signal, remote);
        else if (hr.hook === 'update') verdict = await this.update(session, hr, lines);
        else if (hr.hook === 'post-receive') verdict = await this.postReceive(session, hr);
        else throw new Error(`unknown hook ${hr.hook}`);
      }
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

  /**
   * Progress lines of a push's long work, sent to the shim while it waits (they show as
   * `remote:` lines at once). Each line is followed by an empty one: the shims print a line
   * when the next one arrives (only the very last may be the verdict) and never print an
   * empty one, so the line shows now and the verdict stays last. Never a terminal: one line
   * per phase. The status is 200 from the first line on (a refusal is the verdict line).
   */
  private remoteProgress(res: http.ServerResponse): SlowPhaseOptions {
    return {
      isTTY: false,
      delayMs: this.opts.remoteProgressDelayMs ?? 2000,
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

  private async preReceive(s: PushSession, hr: HookRequest, lines: string[], gone: AbortSignal, remote?: SlowPhaseOptions): Promise<'accept' | 'reject'> {
    const updates = hr.lines.map(parseRefLine);
    const options = readPushOptions(hr.env);
    const env: Record<string, string> = {};
    for (const v of QUARANTINE_VARS) {
      const val = hr.env[v];
      if (val === undefined) continue;
      for (const p of val.split(':').filter(Boolean)) {
        if (!inside(s.repoDir, p)) throw new Error(`${v} points outside the repository`);
      }
      env[v] = val;
    }
    const t0 = Date.now();
    // The push's object reader (started through the spawn helper, src/git/spawner.ts) now: its
    // start-up overlaps the setup reads below, which the repository's long-lived reader answers.
    const git = new Git({ dir: s.repoDir, env, bare: true, store: this.mainStore(s.repoDir) });
    git.start();
    let decisions: RefDecision[];
    const timings: Record<string, number> = {};
    let shown: string[] | null = null;
    let auditVerdict = (d: RefDecision): Verdict => d.verdict;
    let forward: ForwardRecord | null = null;
    let mode: 'enforce' | 'evaluate' = 'enforce';
    let enforce = false;
    try {
      // Upstream and evaluate mode (src/upstream/gate.ts): refresh the trusted branch first,
      // forward what was accepted after; the engine's judgement in between is the same.
      const pre = await beforeJudging(this.upstream, this.opts.dataDir, s.repoDir, this.opts.timeoutMs).catch((err: unknown) => err as Error);
      if (pre instanceof Error) {
        decisions = updates.map((u) => upstreamRefused(u, pre));
      } else {
        if (pre.fetch) timings.upstreamFetch = pre.fetch.ms;
        if (pre.settings.mode === 'evaluate') mode = 'evaluate';
        enforce = pre.settings.mode === 'enforce';
        decisions = await this.judgeAll(git, s, updates, timings, gone, s.timeoutMs ?? this.opts.timeoutMs, remote);
        // A push that escalates already did what its refusal would suggest: that line is left out.
        if (options.escalate !== null) decisions = decisions.map((d) => (d.escalate ? { ...d, escalate: undefined } : d));
        // A ref that moved on the gate since receive-pack read it (the refresh just now) would
        // fail git's lock after an accept: refused before anything is written or forwarded.
        decisions = await refuseMovedRefs(this.mainStore(s.repoDir), decisions);
        if ((pre.settings.upstream || pre.settings.mode === 'evaluate') && !gone.aborted) {
          const fin = await afterJudging({
            settings: pre.settings, repo: s.repo, repoDir: s.repoDir, env, git, atomic: !!s.atomic, decisions, actor: s.actor, pushId: s.pushId, hookMs: this.opts.timeoutMs, mirror: this.upstream,
            // The decision row, before the forward: a failed write forwards nothing (and throws).
            intent: async (ds, verdictOf) => {
              const record = this.recordOf(s, ds, verdictOf, { ...timings, total: Date.now() - t0 });
              if (s.ended || gone.aborted) {
                await this.recordUndelivered(s, record);
                throw new Error('the hook went away before its verdict, so nothing was forwarded');
              }
              await this.writeDecision(s, record, true);
              this.remember(ds, verdictOf, enforce, s.pushId);
            },
          });
          decisions = fin.decisions;
          shown = fin.lines;
          auditVerdict = fin.auditVerdict;
          forward = fin.forward;
          s.forwarded = new Set([...(s.forwarded ?? []), ...fin.forwarded]);
          Object.assign(timings, fin.timings);
        }
      }
    } finally {
      git.close();
    }
    const accepted = decisions.filter((d) => d.verdict === 'accept').length;
    if (forward) {
      // The decision is in the log already (written before the forward); its outcome follows.
      for (const d of decisions) s.decisions.set(key(d.ref, d.oldId, d.newId), d);
      for (const row of forwardOutcomes(forward, s)) await this.rows.write(s.pushId, `the ${row.action} row`, () => this.opts.audit.appendAdmin(row));
    } else {
      const record = this.recordOf(s, decisions, auditVerdict, { ...timings, total: Date.now() - t0 });
      if (accepted === 0) {
        // A refusal changes nothing: written now (a failed write still refuses).
        await this.opts.audit.recordPush(record);
      } else if (s.ended || gone.aborted) {
        // Nobody is left to receive the accept: audited as refused, answered as refused.
        await this.recordUndelivered(s, record);
        lines.push(`patchgate: push ${s.pushId} refused: the hook went away before its verdict`);
        return 'reject';
      } else {
        // Before the accept is answered (git updates the refs only after it): a failed write refuses.
        await this.writeDecision(s, record, false);
        this.remember(decisions, auditVerdict, enforce, s.pushId);
      }
      for (const d of decisions) s.decisions.set(key(d.ref, d.oldId, d.newId), d);
    }
    if (shown) lines.push(...shown);
    else for (const d of decisions) lines.push(...renderDecision(d, s.actor));
    for (const name of options.unknown) lines.push(`patchgate: push option ${name} is not one patchgate knows (it knows patchgate.escalate); ignored`);
    const escalation = options.escalate !== null && decisions.length ? await recordEscalation({ audit: this.opts.audit, notifier: this.notifier, log: this.log }, s, decisions, auditVerdict, options.escalate, lines) : null;
    // For machines: one patchgate-json line per refused or would-be-refused ref (src/policy/machine-line.ts).
    for (const d of decisions) {
      const verdict = auditVerdict(d);
      if (verdict !== 'accept') lines.push(machineLine(d, { verdict, mode, pushId: s.pushId, ...(escalation ? { escalation } : {}) }));
    }
    lines.push(`patchgate: push ${s.pushId} ${accepted ? 'judged' : 'audited'} (${accepted}/${decisions.length} ref(s) accepted)`);
    return accepted > 0 ? 'accept' : 'reject';
  }

  /** The record is durable in the audit log: an agent's enforce-mode accepts may skip those commits next time (src/policy/carried.ts). */
  private remember(decisions: RefDecision[], verdictOf: (d: RefDecision) => Verdict, enforce: boolean, pushId: string): void {
    if (!enforce) return;
    const judged = decisions.filter((d) => d.judged && d.verdict === 'accept' && verdictOf(d) === 'accept').map((d) => d.judged!);
    if (judged.length) rememberAccepted(this.opts.cache, judged, pushId);
  }

  /** The push row and its ref rows as they go to the log, bounded in size (src/audit/bound.ts). */
  private recordOf(s: PushSession, decisions: RefDecision[], auditVerdict: (d: RefDecision) => Verdict, timings: Record<string, number>): RecordPushInput {
    const accepted = decisions.filter((d) => d.verdict === 'accept').length;
    return boundRecord({
      pushId: s.pushId, repo: s.repo, actor: s.actor, role: s.role, remoteAddr: s.remoteAddr, userAgent: s.userAgent,
      verdict: accepted < decisions.length ? 'reject' : decisions.some((d) => auditVerdict(d) === 'would-reject') ? 'would-reject' : 'accept',
      timings,
      refs: decisions.map((d) => ({
        ref: d.ref, old: d.oldId, new: d.newId, verdict: auditVerdict(d), decision: d.row,
        rules: JSON.parse(JSON.stringify(d.outcomes)) as unknown[],
        contractBase: d.contract.base, contractHead: d.contract.head, timings: { total: d.ms, ...(d.commitsMs !== undefined ? { commits: d.commitsMs } : {}) },
      })),
    });
  }

  /**
   * Write a decision that lets something happen (an accept, before the forward or the answer):
   * its intent entry first (when there is a journal), then the rows, awaited. Either failing
   * throws AuditError, and the caller refuses; an entry whose rows may or may not have landed
   * is settled from the log later (the row queue).
   */
  private async writeDecision(s: PushSession, record: RecordPushInput, viaUpstream: boolean): Promise<void> {
    const journaled = !!this.journal && !s.auditAtJudge && record.refs.some((r) => r.verdict !== 'reject');
    const refuse = (what: string, err: unknown): AuditError => {
      this.log(`patchgate: audit: push ${s.pushId} refused, ${what}: ${errorMessage(err)}`);
      return new AuditError(`the audit log could not record push ${s.pushId}, so nothing is accepted${viaUpstream ? ' or forwarded' : ''}; push again, and if this repeats ask a person to check the gate's audit store`, { cause: err });
    };
    if (journaled) {
      try {
        this.journal!.open({ pushId: s.pushId, repo: s.repo, repoDir: s.repoDir, upstream: viaUpstream });
      } catch (err) {
        throw refuse('its intent entry could not be written', err);
      }
    }
    try {
      await this.opts.audit.recordPush(record);
    } catch (err) {
      if (journaled) this.settleLater({ ...s, viaUpstream });
      throw refuse('its decision could not be written', err);
    }
    s.journaled = journaled;
    s.viaUpstream = viaUpstream;
  }

  /** Settle the push's intent entry through the row queue: record what the log lacks, then remove it. */
  private settleLater(s: Pick<PushSession, 'pushId' | 'repo' | 'repoDir' | 'viaUpstream'>): void {
    const entry = { pushId: s.pushId, repo: s.repo, repoDir: s.repoDir, upstream: !!s.viaUpstream, time: new Date().toISOString() };
    void this.rows.write(s.pushId, 'the settling of its intent entry', async () => {
      for (const l of await settleIntent(this.settleDeps, entry)) this.log(`patchgate: audit: ${l}`);
    });
  }

  /**
   * Write a judged accept as refused: the verdict cannot reach git (the pre-receive shim gave
   * up waiting or died first), so nothing moves. Every ref row keeps the rules' outcomes and
   * adds a `delivery` entry that says why.
   */
  private async recordUndelivered(s: PushSession, record: RecordPushInput): Promise<void> {
    const why = 'the accept never reached git: the pre-receive hook ended (it gave up waiting or was killed) before its verdict, so nothing moved';
    try {
      await this.opts.audit.recordPush({
        ...record,
        verdict: 'reject',
        refs: record.refs.map((r) => ({
          ...r,
          verdict: 'reject',
          decision: r.verdict !== 'reject' ? 'gate-error' : r.decision,
          rules: r.verdict !== 'reject' ? [...r.rules, { rule: 'delivery', status: 'fail', findings: [], details: { error: why, judged: 'accept' } }] : r.rules,
        })),
      });
    } catch (err) {
      this.log(`patchgate: audit: could not record the undelivered push ${s.pushId}: ${errorMessage(err)}`);
    }
  }

  private async judgeAll(git: Git, s: PushSession, updates: RefUpdate[], timings: Record<string, number>, gone: AbortSignal, limitMs: number, remote?: SlowPhaseOptions): Promise<RefDecision[]> {
    // Cancelled by the time limit or by the hook hanging up; the parse worker holding this
    // push's file is terminated and the judge stops at its next check (src/cancel.ts).
    const cancel = new AbortController();
    const onGone = () => cancel.abort(gone.reason);
    gone.addEventListener('abort', onGone, { once: true });
    this.judges++;
    const work = runCancellable(cancel.signal, async () => {
      if (this.opts.beforeJudge) await this.opts.beforeJudge();
      const t0 = performance.now();
      const store = this.mainStore(s.repoDir);
      // One policy for the whole push: every ref is judged against the same trusted tip.
      const { trustedTip, trustedBranch, policy } = await trustedState(store, s.trustedBranch);
      // Where a push's time goes, kept in the audit row (ms): setup = trusted tip and policy.
      timings.setup = Math.round(performance.now() - t0);
      const out: RefDecision[] = [];
      for (const u of updates) {
        if (cancel.signal.aborted) break;
        out.push(await judgeUpdate({ git, role: s.role === 'agent' ? 'agent' : 'human', mode: 'push', trustedTip, trustedBranch, policy, cache: this.opts.cache, mainStore: store, ...(s.pushTarget ? { pushTarget: s.pushTarget } : {}), ...(remote ? { progress: remote } : {}) }, u));
      }
      timings.refs = Math.round(performance.now() - t0) - timings.setup;
      return out;
    }).finally(() => {
      this.judges--;
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<RefDecision[]>((resolve) => {
      timer = setTimeout(() => {
        const parsing = parsePool.pathsOf(cancel.signal);
        this.opts.onTimeout?.();
        cancel.abort(new Error(`the hook time limit of ${limitMs} ms passed`));
        resolve(updates.map((u) => timedOut(u, limitMs, parsing, s.timeoutMessage)));
      }, limitMs);
    });
    try {
      const out = await Promise.race([work.catch((err) => updates.map((u) => failed(u, err))), timeout]);
      // Cancelled (the hook hung up) while a ref was judged: nothing of it is an accept.
      if (cancel.signal.aborted && out.length !== updates.length) return updates.map((u) => failed(u, cancel.signal.reason));
      return cancel.signal.aborted ? out.map((d) => (d.verdict === 'accept' ? failed(d, cancel.signal.reason) : d)) : out;
    } finally {
      clearTimeout(timer);
      gone.removeEventListener('abort', onGone);
    }
  }

  private async update(s: PushSession, hr: HookRequest, lines: string[]): Promise<'accept' | 'reject'> {
    const [u] = hr.lines.map(parseRefLine);
    if (!u) throw new Error('update hook sent no ref');
    const d = s.decisions.get(key(u.ref, u.oldId, u.newId));
    if (!d) {
      lines.push(`patchgate: ${u.ref} refused: it was not judged by the pre-receive gate`);
      return 'reject';
    }
    // The decision was written before pre-receive answered accept: nothing more to write here.
    return d.verdict;
  }

  private async postReceive(s: PushSession, hr: HookRequest): Promise<'accept'> {
    const items = hr.lines.map(parseRefLine).map((u) => {
      s.confirmed.add(key(u.ref, u.oldId, u.newId));
      return { ref: u.ref, new: u.newId, moved: true };
    });
    // The refs moved already: a failed write cannot refuse anything, so it is queued and retried.
    if (items.length) await this.rows.write(s.pushId, 'the confirm rows of refs that moved', () => this.opts.audit.confirmRefs(s.pushId, items, { repo: s.repo }));
    return 'accept';
  }
}

/** The trusted branch (the bare repo's HEAD), its tip and the policy read from that tip. */
async function trustedState(git: Git, branch?: string): Promise<{ trustedBranch: string; trustedTip: string | null; policy: Policy }> {
  const trustedRef = branch ? `refs/heads/${branch}` : ((await git.symbolicHead()) ?? 'refs/heads/main');
  const trustedTip = await git.refTip(trustedRef);
  return { trustedBranch: trustedRef.replace(/^refs\/heads\//, ''), trustedTip, policy: await loadPolicy(git, trustedTip) };
}

/** The time limit passed; when files were still being parsed, the refusal names them and says what to do. */
function timedOut(u: RefUpdate, ms: number, parsing: string[] = [], lead = ''): RefDecision {
  const files = [...new Set(parsing)].slice(0, 3);
  if (!files.length) return errorDecision(u, new Error(`${lead}the policy did not finish within ${ms} ms (the judgement was stopped)`), Date.now());
  const d = errorDecision(u, new Error(`${lead}the policy did not finish within ${ms} ms: still parsing ${files.join(', ')} (the parse was stopped)`), Date.now());
  if (d.reasons[0]) d.reasons[0] = { ...d.reasons[0], path: files[0]! };
  return { ...d, remediation: `split or simplify ${files.join(', ')} so each parses quickly (or move generated code out of the contract roots), commit, and push again` };
}

function failed(u: RefUpdate, err: unknown): RefDecision {
  return errorDecision(u, err, Date.now());
}
