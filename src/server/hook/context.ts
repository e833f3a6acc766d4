// The hook service's options, and what its parts in this folder share (the options, the log,
// the upstream mirror, the intent journal, the row queue, the notifier, the object stores).
// The facade (../hook-service.ts) builds it once; the parts take it instead of importing the
// facade, so no import goes back up.

import type { EscalationWhere } from '../escalate.js';
import type { PushPath } from '../push-path.js';
import type { Generations } from './ahead.js';
import type { AuditSink } from '../../audit/sink.js';
import type { UpstreamMirror } from '../../upstream/remote.js';
import type { AuthRowLimits } from '../auth-rows.js';
import type { IdleGcOptions } from '../idle-gc.js';
import type { IntentJournal, RowQueue } from '../intents.js';
import type { Notifier, NotifyOptions } from '../notify.js';
import type { HookRequest } from './request.js';
import type { PushSession } from './session.js';
import type { MainStores } from './stores.js';
import type { UpdateHooks } from './update-hook.js';

export interface HookServiceOptions {
  /** Where the shims find the daemon: "127.0.0.1 <port> <secret>", written on start. */
  endpointPath: string;
  /** The decisions' log (SQLite or PostgreSQL); every write is awaited before the verdict it records is answered. */
  audit: AuditSink;
  /** Engine time limit per push; past it the push is refused. */
  timeoutMs: number;
  /**
   * How long a person's push waits for the rules whose findings are waived for a person
   * (src/policy/engine.ts waivedBudgetMs); default 1 s (./judge.ts WAIVED_WAIT_MS), or a
   * quarter of the push's time limit when that is less.
   */
  waivedWaitMs?: number;
  cache: Map<string, unknown>;
  /** Test seam: runs before the engine, e.g. to stop the daemon mid-push. */
  beforeJudge?: () => Promise<void>;
  /** Pushes judged at once (default ./slots.ts defaultJudgeSlots; 0: no bound). */
  judgeSlots?: number;
  /** The push path's mechanisms (../push-path.ts): here the pack read before the hook and the judgement ahead. */
  pushPath?: Partial<PushPath>;
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
  /**
   * The command that seeds the cache with a repository's contract outside any push's time
   * limit (`patchgate warm …`, src/commands/warm.ts), as a refusal for time prints it.
   */
  seedCommand?: (repoDir: string) => string;
  /** Called when a push passes the time limit (for the hook-timeout metric). */
  onTimeout?: () => void;
  /** What an escalation's printed close command names (src/server/escalate.ts): the data folder and the log. */
  escalationWhere?: EscalationWhere;
  /** The intent journal's folder (default `<dataDir>/intents`); without a data folder, none. */
  intentsDir?: string;
  /** Where the row queue and recovery say what they did (default stderr). */
  log?: (line: string) => void;
  /** `serve --notify-url`: each escalation is POSTed there as JSON (../notify.ts), never holding up a push. */
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

/** What the parts of the hook service share; the facade owns each of these. */
export interface HookContext {
  readonly opts: HookServiceOptions;
  /** Where the row queue and recovery say what they did. */
  readonly log: (line: string) => void;
  /** Fetches of upstream trusted branches, shared by every push (src/upstream/remote.ts). */
  readonly upstream: UpstreamMirror;
  /** Unsettled pushes (null: no data folder, e.g. a host daemon's one-push sessions only). */
  readonly journal: IntentJournal | null;
  /** Rows after a decision: retried in order until written. */
  readonly rows: RowQueue;
  /** Where escalations are announced (`--notify-url`), or null. */
  readonly notifier: Notifier | null;
  /** Each repository's own object store, kept open across pushes. */
  readonly stores: MainStores;
  /** hooks/update while a push of several refs is in flight (./update-hook.ts). */
  readonly updateHooks: UpdateHooks;
  /** Each repository's generation: a push judged ahead before it moved is judged again (./ahead.ts). */
  readonly generations: Generations;
}
