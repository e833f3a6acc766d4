// The update hook's shortcut. git runs hooks/update once per ref after pre-receive, and that
// shim used to ask the daemon each time for a verdict pre-receive had already given: a
// connection, a request and an answer (about 3 ms of every push). The hook is there only
// during a push of several refs (./update-hook.ts); when pre-receive accepted every ref of
// such a push, the daemon leaves `<data>/hook-pass/<receive-pack pid>` (0600, in a
// 0700 folder) with those ref lines, "old new ref" each, and the update shim accepts a ref it
// finds there, line for line, without asking. No file, another line, or a push with a refused
// ref: the shim asks the daemon as before, which refuses what pre-receive did not judge.
//
// A pid's file is written or removed at every pre-receive answer of that pid (so a reused pid
// never finds an earlier push's lines), removed when its receive-pack exits, and the folder is
// emptied when the daemon starts. A file that cannot be written is no file: the shim asks.

import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RefDecision } from '../../policy/types.js';

export class HookPasses {
  constructor(private readonly dir: string, private readonly log: (line: string) => void) {}

  /** At start: the folder exists and is empty (nothing a previous run left is trusted). */
  reset(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    for (const f of readdirSync(this.dir)) rmSync(join(this.dir, f), { force: true, recursive: true });
  }

  /** pre-receive answered for receive-pack `pid`: every ref accepted leaves the pass, anything else none. */
  answered(pid: number, verdict: 'accept' | 'reject', decisions: Iterable<RefDecision>): void {
    const all = [...decisions];
    if (verdict !== 'accept' || all.length === 0 || all.some((d) => d.verdict !== 'accept')) return this.remove(pid);
    const file = join(this.dir, String(pid));
    const tmp = `${file}.tmp`;
    try {
      writeFileSync(tmp, all.map((d) => `${d.oldId} ${d.newId} ${d.ref}\n`).join(''), { mode: 0o600 });
      renameSync(tmp, file);
    } catch (err) {
      this.log(`patchgate: hook pass for receive-pack ${pid} not written (${(err as Error).message}); its update hook asks the daemon`);
      this.remove(pid);
    }
  }

  /** The receive-pack ended (or its pre-receive did not accept every ref). */
  remove(pid: number): void {
    try {
      rmSync(join(this.dir, String(pid)), { force: true });
    } catch (err) {
      this.log(`patchgate: hook pass for receive-pack ${pid} not removed: ${(err as Error).message}`);
    }
  }
}
