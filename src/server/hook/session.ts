// One push as the hook service sees it: who pushed, to which repository, and what the gate
// decided and saw confirmed for each ref update. A floor of its own so that the hook service
// (../hook-service.ts), its parts in this folder and ../escalate.ts import it without
// importing one another (issue 22: this was the one import cycle left).

import type { FsckWarnings } from '../../git/push-fsck.js';
import type { PushTarget } from '../../policy/push-target.js';
import type { RefDecision, Role } from '../../policy/types.js';
import type { ReportOutcome } from '../report-status.js';
import type { Ahead } from './ahead.js';

export interface PushSession {
  pid: number;
  pushId: string;
  repo: string;
  repoDir: string;
  actor: string;
  role: Role;
  /** An agent's class of the policy (its token's, or the host's mapping: src/policy/classes.ts); absent: the default class. */
  agentClass?: string;
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
  /**
   * The sha256 of the token the push authenticated with (never the secret): its row is read
   * again when the decision is written (src/audit/credential.ts). None in a git host's sessions.
   */
  credential?: string;
  /** This push's own time limit (the GHES budget), below the daemon's; its refusal says so. */
  timeoutMs?: number;
  timeoutMessage?: string;
  /** What the gate knows of the address the client pushed to (never a credential), for the printed fixes. */
  pushTarget?: PushTarget;
  /** The client asked for an --atomic push (its receive-pack capabilities). */
  atomic?: boolean;
  /** Updates (ref old new) that upstream took (src/upstream/gate.ts). */
  forwarded?: Set<string>;
  /**
   * git's report-status to the client, read from receive-pack's output (../report-status.ts):
   * what moved. null: no report (the client asked for none, or it was cut off).
   */
  report?: () => ReportOutcome | null;
  /** The trusted branch named by the host's config (src/host/identity.ts), instead of the repository's HEAD. */
  trustedBranch?: string;
  /** Its rules judged from its pack before the hook asked (./ahead.ts), if that was tried. */
  ahead?: Promise<Ahead | null>;
  /**
   * A person's push: its receive-pack ran git's fsck relaxed for old history's format slips
   * (src/git/push-fsck.ts), and this is what git warned about on the way. Absent: strict.
   */
  fsckWarnings?: FsckWarnings;
}

/** The key of one ref update in a session's `decisions` and `confirmed`: "ref old new". */
export const key = (ref: string, oldId: string, newId: string) => `${ref} ${oldId} ${newId}`;
