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
// push and forwards nothing. What follows (the forward's outcome, the confirms of what
// really moved, from git's report to the client, `upstream.diverged`) goes through a row
// queue that retries and never drops, and the push's intent entry is removed only when the
// log and the refs agree. The shims wait for the daemon's own time limit plus a margin
// (`hook.endpoint` carries it).
//
// This file is the facade callers use (HookService, and every name they import); the work is
// in ./hook/, whose files import nothing of it: endpoint.ts (the HTTP server, the secret,
// hook.endpoint, `remote:` progress, the verdict line), request.ts (parsing what a shim
// sends), session.ts (PushSession), context.ts (the options and what the parts share),
// pre-receive.ts (one push from ref lines to verdict), judge.ts (the engine under the time
// limit), decision-log.ts (the audit side: intent entry, decision rows, settling),
// confirm.ts (update, the end of receive-pack), update-hook.ts (hooks/update while a push of
// several refs is in flight), stores.ts (the long-lived object readers) and warm.ts (the
// cache warm-ups at start).

import type http from 'node:http';
import { join } from 'node:path';
import { parsePool } from '../contract/parse-pool.js';
import { AuthRowLimiter } from './auth-rows.js';
import { UpstreamMirror } from '../upstream/remote.js';
import { recoverIntents } from '../upstream/recover.js';
import { IntentJournal, RowQueue } from './intents.js';
import { IdleGc } from './idle-gc.js';
import { Notifier } from './notify.js';
import type { HookServiceOptions } from './hook/context.js';
import { DecisionLog } from './hook/decision-log.js';
import { HookEndpoint, remoteProgress } from './hook/endpoint.js';
import { Judge } from './hook/judge.js';
import { preReceive, type HookParts } from './hook/pre-receive.js';
import { confirmEnded, confirmReported, update } from './hook/confirm.js';
import type { ReportOutcome } from './report-status.js';
import { UpdateHooks } from './hook/update-hook.js';
import { HookPasses } from './hook/pass.js';
import { inside, type HookRequest } from './hook/request.js';
import type { PushSession } from './hook/session.js';
import { MainStores } from './hook/stores.js';
import { Warmer } from './hook/warm.js';
import { warmParsers, type ParserWarmResult } from './hook/parser-warm.js';
import { pushesInFlight } from '../contract/priority.js';
import { prewarmPush } from './hook/prewarm.js';
import { pushPathOf, type PushPath } from './push-path.js';
import { Generations, judgeFromPack, type Ahead } from './hook/ahead.js';
import type { PushTarget } from '../policy/push-target.js';
import type { RefUpdate, Role } from '../policy/types.js';

export type { HookServiceOptions } from './hook/context.js';
export type { HookRequest } from './hook/request.js';
export type { PushSession } from './hook/session.js';
export { SHIM_MARGIN_S } from './hook/endpoint.js';

export class HookService {
  readonly sessions = new Map<number, PushSession>();
  /** Sessions whose receive-pack pid is still on its way from the spawn helper (src/server/app.ts). */
  readonly pendingSessions = new Set<Promise<unknown>>();
  /** One long-lived reader per repository of its own object store (no quarantine). */
  private readonly stores = new MainStores();
  /** Fires at stop(): ends the background warm-ups. */
  private readonly stopping = new AbortController();
  private readonly authRows: AuthRowLimiter;
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
  private readonly parts: HookParts;
  private readonly endpoint: HookEndpoint;
  private readonly warmer: Warmer;
  /** The update hook's shortcut for pushes pre-receive accepted whole (./hook/pass.ts); null without a data folder. */
  private readonly passes: HookPasses | null;
  /** hooks/update, present while a push of several refs is in flight (./hook/update-hook.ts). */
  readonly updateHooks: UpdateHooks;

  constructor(private readonly opts: HookServiceOptions) {
    this.authRows = new AuthRowLimiter(opts.audit, opts.authRows);
    this.upstream = new UpstreamMirror(opts.upstreamFreshMs);
    this.log = opts.log ?? ((l) => void process.stderr.write(l + '\n'));
    this.rows = new RowQueue(this.log);
    this.gc = new IdleGc({ log: this.log, ...opts.gc });
    const dir = opts.intentsDir ?? (opts.dataDir ? join(opts.dataDir, 'intents') : null);
    this.journal = dir ? new IntentJournal(dir, this.log) : null;
    this.notifier = opts.notifyUrl ? new Notifier(opts.notifyUrl, { log: this.log, ...opts.notify }) : null;
    this.updateHooks = new UpdateHooks(this.log);
    const ctx = { opts, log: this.log, upstream: this.upstream, journal: this.journal, rows: this.rows, notifier: this.notifier, stores: this.stores, updateHooks: this.updateHooks, generations: this.generations };
    this.parts = { ...ctx, judge: new Judge(ctx), decisions: new DecisionLog(ctx) };
    this.endpoint = new HookEndpoint({ endpointPath: opts.endpointPath, timeoutMs: opts.timeoutMs, authRows: this.authRows, onAnswer: opts.onAnswer, route: (hr, lines, gone, res) => this.route(hr, lines, gone, res) });
    this.warmer = new Warmer(ctx, this.stopping.signal, () => this.endpoint.listening);
    this.passes = opts.dataDir ? new HookPasses(join(opts.dataDir, 'hook-pass'), this.log) : null;
  }

  /** At start: settle what the previous run left in the intent journal (a crash, a kill, a store that was down). */
  async recover(): Promise<{ settled: number; left: number }> {
    if (!this.journal) return { settled: 0, left: 0 };
    return recoverIntents(this.parts.decisions.settleDeps, this.log);
  }

  /** Pushes whose changed files (and tips' contracts) were worked out ahead from their packs (./hook/prewarm.ts), and those judged ahead (./hook/ahead.ts), for tests and the bench. */
  readonly prewarms = { pushes: 0, files: 0, contracts: 0, failed: 0, judged: 0 };
  /** Each repository's generation (./hook/ahead.ts). */
  readonly generations = new Generations();
  private pushPath: PushPath | undefined;

  /**
   * Parse what a push's pack changes into the caches the rules read, while receive-pack unpacks
   * it (./hook/prewarm.ts), then judge its ref commands from it (./hook/ahead.ts) when it is the
   * only push of its repository under way. Never throws: a pack it cannot read, or a judgement
   * that fails there, leaves the hook to do it all (null).
   */
  prewarm(repoDir: string, role: Role, pack: Buffer, commands: readonly RefUpdate[], pushTarget?: PushTarget, agentClass?: string): Promise<Ahead | null> {
    // Either switched off (./push-path.ts): the hook does it all, as it does for a pack over PACK_MAX.
    const path = (this.pushPath ??= pushPathOf(this.opts.pushPath));
    if (this.stopping.signal.aborted || !path.prewarm) return Promise.resolve(null);
    const generation = this.generations.of(repoDir);
    const store = this.stores.get(repoDir);
    return prewarmPush({ store, cache: this.opts.cache, agent: role === 'agent', pack, tips: commands.map((c) => c.newId) }).then(
      async (r) => {
        this.prewarms.pushes++;
        this.prewarms.files += r.files;
        this.prewarms.contracts += r.contracts;
        // Judged ahead only when that parses nothing more than was just parsed (bounded above), and
        // then under its own time limit: a push that needs more is judged by its hook alone.
        if (!path.ahead || !r.whole || !commands.length || this.gc.inFlight(repoDir) > 1 || this.stopping.signal.aborted) return null;
        const a = await judgeFromPack({ repoDir, store, cache: this.opts.cache, role, ...(role === 'agent' && agentClass ? { agentClass } : {}), ...(pushTarget ? { pushTarget } : {}), updates: commands, view: r.view, trusted: r.trusted, generation }).catch(() => null);
        if (a) this.prewarms.judged++;
        return a;
      },
      () => ((this.prewarms.failed++), null),
    );
  }

  /** Judgements still running, including cancelled ones that have not stopped yet (for tests). */
  get judging(): number {
    return this.parts.judge.judging;
  }

  /** What the shims wait for an answer, in whole seconds: the hook time limit plus a margin. */
  get shimWaitSeconds(): number {
    return this.endpoint.shimWaitSeconds;
  }

  async start(): Promise<void> {
    // No parse on this thread from now on: it serves HTTP and the hooks. One file's parse may
    // take at most the hook time limit (a push would be refused by then anyway).
    parsePool.isolate({ jobTimeoutMs: this.opts.timeoutMs });
    this.passes?.reset();
    await this.endpoint.listen();
    // The parsers' JIT warm-up (./hook/parser-warm.ts): background, once per process, giving way to pushes.
    // Busy: a receive-pack is running (its pack streams through this loop) or a hook is being answered.
    this.parserWarm = warmParsers({ signal: this.stopping.signal, busy: () => this.sessions.size > 0 || this.judging > 0 || this.endpoint.busy > 0 || pushesInFlight() });
  }

  /** The parsers' warm-up, once start() ran (for tests and the benchmark). */
  parserWarm: Promise<ParserWarmResult> | null = null;

  async stop(): Promise<void> {
    this.stopping.abort(new Error('the server is stopping'));
    this.authRows.close();
    const gcStopped = this.gc.stop();
    this.stores.closeAll();
    try {
      const closed = this.endpoint.close();
      if (!closed) return void (await gcStopped);
      await closed;
      await Promise.all([...this.background]);
      await this.rows.flush();
      await this.journal?.close();
      await this.notifier?.stop();
      await gcStopped;
      this.endpoint.removeEndpointFile();
    } finally {
      // The rows written while stopping (a receive-pack that exits now: its confirms, its
      // intent entry's settling) read through the stores again: those readers end here too,
      // or their processes would keep this one alive.
      this.stores.closeAll();
    }
  }

  /** The cache warm-up of a repository's trusted tip, in the background (./hook/warm.ts). */
  warmRepo(repoDir: string, before?: () => Promise<unknown>): void {
    this.warmer.warmRepo(repoDir, before);
  }

  /** While warm-ups are queued or running: how many, and the running one's files done of its total (null: none). */
  /** Pushes waiting for a judge slot, and how many are judged at once (src/server/hook/slots.ts). */
  judgingStatus(): { busy: number; waiting: number; slots: number } {
    const sl = this.parts.judge.slots;
    return { busy: sl.busy, waiting: sl.waiting, slots: sl.size };
  }

  warmingStatus(): { repositories: number; done: number; total: number | null } | null {
    return this.warmer.warmingStatus();
  }

  /** Settles when the warm-ups queued so far are done (for tests and the benchmark). */
  get warmed(): Promise<void> {
    return this.warmer.warmed;
  }

  /**
   * For /healthz: the port the shims can reach, or why they cannot (not listening, or
   * hook.endpoint missing or naming another daemon). Never returns the secret.
   */
  health(): { port: number } | { down: string } {
    return this.endpoint.health();
  }

  get busy(): number {
    return this.endpoint.busy;
  }

  /**
   * git's report to the client is whole (src/server/report-status.ts): the confirm rows of what
   * it says moved and did not, written now. Returns their write (settled once tried), or
   * undefined when the pid has no session.
   */
  confirmReported(pid: number, report: ReportOutcome): Promise<void> | undefined {
    const s = this.sessions.get(pid);
    if (!s) return undefined;
    const write = confirmReported(this.parts, s, report);
    this.background.add(write);
    void write.finally(() => this.background.delete(write));
    return write;
  }

  /**
   * Called when receive-pack exits: the confirm rows of what moved and what did not. Returns
   * their write (settled once tried; the push's HTTP answer waits for it), or undefined when
   * the pid had no session.
   */
  endSession(pid: number): Promise<void> | undefined {
    const s = this.sessions.get(pid);
    if (!s) return undefined;
    this.sessions.delete(pid);
    this.passes?.remove(pid);
    this.updateHooks.release(s.repoDir, pid);
    s.ended = true;
    // Its refs and objects are in place (or never will be): what was judged ahead of now is stale.
    this.generations.bump(s.repoDir);
    const write = confirmEnded(this.parts, s);
    this.background.add(write);
    void write.finally(() => this.background.delete(write));
    return write;
  }

  /** A request with the secret: the session its pid names (or the host's), then the hook it is. */
  private async route(hr: HookRequest, lines: string[], gone: AbortSignal, res: http.ServerResponse): Promise<'accept' | 'reject'> {
    // A receive-pack the spawn helper started has its pid registered a moment after it
    // starts (src/git/spawner.ts): a hook that comes first waits for those registrations.
    if (!this.sessions.has(hr.ppid) && this.pendingSessions.size) await Promise.all([...this.pendingSessions]);
    const found = this.sessions.get(hr.ppid) ?? this.opts.sessionFor?.(hr);
    const session = typeof found === 'object' ? found : undefined;
    if (typeof found === 'string') {
      // A git host's repository its daemon's config does not gate: passed through, said so.
      lines.push(found);
      return 'accept';
    } else if (!session) {
      this.authRows.record('hook-pid', { reason: `hook ${hr.hook.slice(0, 40)} from unknown receive-pack pid ${hr.ppid} (${hr.dir.slice(0, 300)})` });
      throw new Error(`this push did not come through the authenticated gate (unknown pusher pid ${hr.ppid})`);
    } else {
      if (!inside(session.repoDir, hr.dir)) throw new Error('the hook runs in another repository than the one the pusher was authorised for');
      const remote = remoteProgress(res, this.opts.remoteProgressDelayMs);
      if (hr.hook === 'pre-receive' && session.auditAtJudge) {
        // A git host's push (no receive-pack seen here): no idle gc while it is judged.
        const release = await this.gc.enter(session.repoDir);
        try {
          return await preReceive(this.parts, session, hr, lines, gone, remote);
        } finally {
          release();
        }
      } else if (hr.hook === 'pre-receive') {
        let verdict: 'accept' | 'reject' = 'reject';
        try {
          verdict = await preReceive(this.parts, session, hr, lines, gone, remote);
          return verdict;
        } finally {
          // Before the answer leaves: what this receive-pack's update hook may take without asking.
          // A one-ref push has no update hook (a leftover one asks, and is answered the same).
          if (this.sessions.get(hr.ppid) === session && !session.ended && hr.lines.length > 1) this.passes?.answered(hr.ppid, verdict, session.decisions.values());
          else this.passes?.remove(hr.ppid);
        }
      }
      else if (hr.hook === 'update') return await update(session, hr, lines);
      else throw new Error(`unknown hook ${hr.hook}`);
    }
  }
}
