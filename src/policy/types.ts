// The shapes every rule shares: what a rule is given (a push context), what it reports
// (findings with a message id), and what the engine makes of them (outcomes, a decision).

import type { PushTarget } from './push-target.js';
import type { Git, CommitInfo, Change, FormProblem, OddMode } from '../git/git.js';
import type { Policy } from './config.js';
import type { Judged } from './carried.js';
import type { SlowPhaseOptions } from '../progress.js';

export type Role = 'agent' | 'human' | 'admin';
export type RuleId = 'limits' | 'refs' | 'write-block' | 'policy' | 'contract' | 'fixtures' | 'tamper-scan' | 'ledger';

export interface RefUpdate {
  ref: string;
  oldId: string;
  newId: string;
}

export type UpdateKind = 'create' | 'update' | 'delete';

/** Everything a rule may look at for one ref update. Rules read git only through `git`. */
export interface RuleContext {
  git: Git;
  policy: Policy;
  role: Role;
  /** 'push' in the server's hook; 'check' for `patchgate check` (no real ref moves). */
  mode: 'push' | 'check';
  update: RefUpdate;
  kind: UpdateKind;
  /** The trusted branch tip (in check mode: --base). Null when the trusted branch does not exist yet. */
  trustedTip: string | null;
  /**
   * The commits judged for this update, oldest first. For an agent's push: every commit the new
   * tip reaches that the trusted tip does not, less those already accepted for an agent under
   * the same policy (src/policy/carried.ts). Otherwise (a person's push): the commits the
   * repository did not have; in `check`: those of head not reachable from base.
   */
  newCommits: CommitInfo[];
  /** An agent's push: carried commits not judged again because the cache holds their accept. */
  reusedCommits?: number;
  /**
   * In a push, when `newCommits` is one line of commits ending at the new tip: the commit
   * below it (see policy/ancestry.ts). Null otherwise, and always in `check`.
   */
  linearBase: string | null;
  /** Paths a commit changes (memoised; merges as DESIGN.md says). */
  changes(commit: CommitInfo): Promise<Change[]>;
  /** Tree entries a commit wrote with mode digits git never writes (memoised with `changes`). */
  oddModes(commit: CommitInfo): Promise<OddMode[]>;
  /** Trees a commit brought in a form git never writes: entries out of order or twice, names fsck refuses (memoised with `changes`). */
  forms(commit: CommitInfo): Promise<FormProblem[]>;
  /** Shared caches that live as long as the daemon (contract rows, digests). */
  cache: Map<string, unknown>;
  /** In a push: what the gate knows of the address the agent pushed to (never a credential), for the printed fix. */
  pushTarget?: PushTarget;
  /** In a push: where long work (a first push's contract parse) reports progress, as `remote:` lines (src/progress.ts slowPhase). */
  progress?: SlowPhaseOptions;
}

export interface Finding {
  messageId: string;
  /** Values for the message template's {placeholders}. */
  data: Record<string, string | number>;
  path?: string;
  commit?: string;
}

export interface RuleResult {
  findings: Finding[];
  /** Rule-specific facts for the audit trace (digests, counts). */
  details?: Record<string, unknown>;
}

export interface Rule {
  id: RuleId;
  description: string;
  /** Message templates by id; `{name}` is replaced with finding.data.name. */
  messages: Record<string, string>;
  /** When true, a human's push reports the findings but is not refused by them. */
  waivedForHumans: boolean;
  check(ctx: RuleContext): Promise<RuleResult>;
  /** A command or steps an agent can run itself to clear these findings. */
  remediation(ctx: RuleContext, findings: Finding[]): string;
}

export type OutcomeStatus = 'pass' | 'fail' | 'waived' | 'skipped';

export interface RuleOutcome {
  rule: RuleId;
  status: OutcomeStatus;
  findings: Array<Finding & { message: string }>;
  remediation?: string;
  details?: Record<string, unknown>;
  ms: number;
}

export interface Reason {
  rule: RuleId | 'error' | 'upstream';
  message: string;
  path?: string;
  commit?: string;
  ref?: string;
  messageId?: string;
  /** The decision-table row this finding fires. */
  row?: string;
}

export interface RefDecision {
  ref: string;
  oldId: string;
  newId: string;
  verdict: 'accept' | 'reject';
  /** The decision-table row that fired, or 'accept'. */
  row: string;
  action: string;
  remediation: string;
  /**
   * A refusal a wrong oracle could cause (a test-tree write, the contract, the fixtures): the
   * honest exit, `git push -o patchgate.escalate="…" …` for a person instead of an edited test
   * (src/policy/remedy.ts escalateStep). Absent elsewhere.
   */
  escalate?: { when: string; command: string; setup: string | null };
  reasons: Reason[];
  outcomes: RuleOutcome[];
  contract: { base: string | null; head: string | null };
  ms: number;
  /** Of `ms`, the time spent listing the new commits (absent on an error decision). */
  commitsMs?: number;
  /** An agent's push: the policy digest and the commits judged, for the accept cache (src/policy/carried.ts). */
  judged?: Judged;
  /** An agent's push: the class of the policy it was judged under (src/policy/classes.ts; `default` for none). */
  agentClass?: string;
}

export function formatMessage(template: string, data: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (_, k: string) => (k in data ? String(data[k]) : `{${k}}`));
}

/** Quote a word for a POSIX shell command line printed to the agent. */
export function shq(s: string): string {
  return /^[A-Za-z0-9_./:@=+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export function short(id: string): string {
  return id.slice(0, 12);
}
