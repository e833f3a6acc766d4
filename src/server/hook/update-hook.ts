// hooks/update, only while a push needs it. git runs hooks/update once per ref after
// pre-receive, and pre-receive's answer holds for the whole push; so the update hook only adds
// something to a push of several refs, where one ref may be refused and the others accepted
// (or, with --atomic, the whole push fails). A one-ref push, nearly every agent push, gets the
// same verdict from pre-receive alone, without the update hook's bash start (issue 24).
//
// So a repository's hooks/update is there while a push of more than one ref is in flight: put
// in place (written and renamed, so git never runs half a file) when such a push's pre-receive
// request arrives, before it is judged, and removed when the last of them has ended. git looks
// for the hook when it runs it, after pre-receive, so every such push finds it. A hook that
// cannot be put in place refuses the push unjudged (every ref, audited as a gate error). A
// hook found already there (a daemon killed mid-push left it) is ours (checkHooks) and is
// removed like one put there, once the pushes that needed it have ended.

import { chmodSync, copyFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PatchgateError } from '../../errors.js';
import { PACKAGE_HOOKS } from '../repos.js';

/** The update hook could not be put in place: the push is refused (naming why). */
export class UpdateHookError extends PatchgateError {
  /** What the pusher can do (the refusal's remediation line). */
  readonly next = 'nothing was accepted; push each ref on its own (git push REMOTE BRANCH, one branch per push), or ask a person to check the server\'s disk';
  constructor(message: string, options?: { cause?: unknown }) {
    super('UPDATE_HOOK', message, options);
  }
}

export class UpdateHooks {
  /** Per repository: receive-pack pids of the multi-ref pushes in flight. */
  private readonly needing = new Map<string, Set<number>>();

  constructor(private readonly log: (line: string) => void) {}

  /** A push of several refs (receive-pack `pid`) begins: the repository's hooks/update is in place when this returns. */
  need(repoDir: string, pid: number): void {
    let pids = this.needing.get(repoDir);
    if (!pids) this.needing.set(repoDir, (pids = new Set()));
    if (pids.size === 0) {
      const target = join(repoDir, 'hooks', 'update');
      const tmp = `${target}.patchgate-${process.pid}.tmp`;
      try {
        copyFileSync(join(PACKAGE_HOOKS, 'update'), tmp);
        chmodSync(tmp, 0o755);
        renameSync(tmp, target);
      } catch (err) {
        try {
          rmSync(tmp, { force: true });
        } catch {
          // (a folder in its way, say): the refusal below names the first failure
        }
        this.needing.delete(repoDir);
        throw new UpdateHookError(`the gate could not put its per-ref hook (hooks/update) in place for this push of several refs (${(err as Error).message}), so none of them was judged`, { cause: err });
      }
    }
    pids.add(pid);
  }

  /** As need(), returning its error (it throws no other) instead of throwing it: the push is refused with it. */
  tryNeed(repoDir: string, pid: number): UpdateHookError | null {
    try {
      this.need(repoDir, pid);
      return null;
    } catch (err) {
      return err as UpdateHookError;
    }
  }

  /** receive-pack `pid` ended: the last multi-ref push of its repository removes hooks/update. */
  release(repoDir: string, pid: number): void {
    const pids = this.needing.get(repoDir);
    if (!pids?.delete(pid) || pids.size) return;
    this.needing.delete(repoDir);
    try {
      rmSync(join(repoDir, 'hooks', 'update'), { force: true });
    } catch (err) {
      // Left in place it is only slower (it asks the daemon, which answers as pre-receive did).
      this.log(`patchgate: could not remove ${repoDir}/hooks/update after its push (${(err as Error).message}); later pushes run it until it is removed`);
    }
  }

  /** Repositories with a multi-ref push in flight (for tests). */
  get repos(): number {
    return this.needing.size;
  }
}
