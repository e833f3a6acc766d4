// Why this exists (issue 49): `ledger freeze tests/x.py::test_y` re-ran the whole command in the
// unsealed work tree, without src/ on the import path, so twelve other tests failed and the
// named one, which passed, was blamed. Under a strict policy (the default) each re-run is now
// what `patchgate ci` runs: a sealed copy of HEAD, the same import path and sandbox, the gate's
// reporter attached; pytest runs the named test alone (--patchgate-only), and the outcome is the
// named test's own, read from the reporter stream, never the exit status of other tests.

import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import { Git } from '../git/git.js';
import type { Policy } from '../policy/config.js';
import { runnerKind } from './channel.js';
import { MAX_SEED, showArgv } from './process.js';
import { sandboxAvailable, type SandboxMode } from './sandbox.js';
import { sealedRun, type StrictOptions } from './strict.js';
import type { CiIo } from './run.js';

export interface SealedRerunArgs {
  repo: string;
  head: string;
  policy: Policy;
  nodeid: string;
  seed: string;
  argv: string[];
  sandbox: SandboxMode;
}

/** Re-runs the named test twice as `patchgate ci` runs tests; returns how many of the two it failed. */
export async function sealedReruns(a: SealedRerunArgs, io: CiIo): Promise<number> {
  const seed = Number(a.seed);
  if (!Number.isSafeInteger(seed) || seed > MAX_SEED) throw new UsageError(`--seed ${a.seed}: a strict re-run takes a seed from 0 to ${MAX_SEED}, as patchgate ci prints them`);
  if (a.sandbox === 'bwrap') {
    const can = sandboxAvailable();
    if (!can.ok) throw new UsageError(`${can.why}; nothing was re-run`);
  }
  const kind = runnerKind(a.argv).kind;
  const git = new Git({ dir: a.repo });
  const tmp = await mkdtemp(join(tmpdir(), 'patchgate-freeze-'));
  try {
    const links = existsSync(join(a.repo, 'node_modules')) ? [{ name: 'node_modules', target: join(a.repo, 'node_modules') }] : [];
    const so: StrictOptions = { git, policy: a.policy, repo: a.repo, cmd: a.argv, seed, tmp, io, links, sandbox: a.sandbox, hidden: [a.repo] };
    let failures = 0;
    for (let i = 1; i <= 2; i++) {
      io.out(`patchgate: freeze: re-run ${i}/2 of ${a.nodeid}${kind === 'pytest' ? ' alone' : ''}: ${showArgv(a.argv)} in a sealed copy of HEAD ${a.head.slice(0, 12)}, as patchgate ci runs it (seed ${seed})`);
      const r = await sealedRun(so, a.head, `rerun${i}`, { quiet: true, ...(kind === 'pytest' ? { only: a.nodeid } : {}) });
      if (r.res.spawnError) throw new UsageError(r.res.spawnError);
      const own = r.stream?.tests.filter((x) => x.id === a.nodeid) ?? [];
      let failed: boolean;
      if (!r.stream || (kind !== 'pytest' && !r.stream.tests.length)) {
        // A runner without patchgate's reporter, or a command that ran no test it reports: only its exit status says anything.
        failed = r.res.code !== 0 || !!r.res.signal;
        io.out(`patchgate: freeze: re-run ${i}/2 ${failed ? `failed (exit ${r.res.code ?? r.res.signal})` : 'passed'} (exit status only: this runner has no patchgate reporter, so the named test's own outcome is not known)`);
      } else if (!own.length) {
        const ran = r.stream.tests.map((x) => x.id);
        throw new UsageError(`${a.nodeid} did not run in the re-run (${ran.length ? `it ran ${ran.slice(0, 5).join(', ')}${ran.length > 5 ? ', ...' : ''}` : 'no test ran'}): name the test by its id as patchgate ci prints it, e.g. patchgate ledger freeze tests/test_x.py::test_y --seed ${a.seed} --reason TEXT -- ${showArgv(a.argv)}`);
      } else {
        failed = own.some((x) => x.status === 'failed');
        const others = r.stream.tests.filter((x) => x.id !== a.nodeid && x.status === 'failed').map((x) => x.id);
        io.out(`patchgate: freeze: re-run ${i}/2: ${a.nodeid} ${failed ? 'failed' : own.every((x) => x.status === 'skipped') ? 'was skipped' : 'passed'}`);
        if (others.length) io.out(`patchgate: freeze: note: ${others.length} other test(s) failed in the same run (${others.slice(0, 5).join(', ')}${others.length > 5 ? ', ...' : ''}); they are not ${a.nodeid}'s outcome and count for nothing here`);
      }
      for (const f of r.findings) io.out(`patchgate: freeze: re-run ${i}/2: ${f.message}`);
      if (failed) failures++;
    }
    return failures;
  } finally {
    git.close();
    await rm(tmp, { recursive: true, force: true }).catch(() => {});
  }
}
