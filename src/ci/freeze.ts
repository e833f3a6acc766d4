// `patchgate ledger freeze`: a person's command that adds one bounded freeze to the flake
// ledger in the work tree. It re-runs the failing test twice under the seed first, and a
// failure that reproduces both times is a defect, never a flake; the row it writes is bound
// to the current fixture digest and expires within the policy's maximum. Under a strict policy
// the re-runs are patchgate ci's (freeze-rerun.ts): sealed, the named test's own outcome.

import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { UsageError, errorMessage } from '../errors.js';
import { fixtureDigest, parseLock } from '../fixtures/lock.js';
import { Git } from '../git/git.js';
import { dayOf, parseDay, parseLedger, tripleKey, worktreeLedgerHistory, type LedgerHistory } from '../ledger/ledger.js';
import { loadPolicy, type Policy } from '../policy/config.js';
import { sealedReruns } from './freeze-rerun.js';
import type { SandboxMode } from './sandbox.js';
import { isExpired } from './apply-ledger.js';
import { runCommand, showArgv } from './process.js';
import type { CiIo } from './run.js';

export interface FreezeOptions {
  repo: string;
  nodeid: string;
  seed: string;
  expires?: string;
  reason: string;
  rerun: string[];
  today?: string;
  /** Strict policies: bwrap (default) or none, as `patchgate ci --sandbox`. */
  sandbox?: SandboxMode;
}

const PY_HASH_MAX = 4294967295;

/** A freeze's seed: a non-negative decimal integer (kept as a JSON number when it is a safe one). */
function parseFreezeSeed(s: string): { text: string; json: number | string } {
  const text = String(s ?? '').trim();
  if (!/^\d{1,40}$/.test(text)) throw new UsageError(`--seed: ${JSON.stringify(s)} is not a non-negative integer`);
  const canon = text.replace(/^0+(?=\d)/, '');
  const n = Number(canon);
  return { text: canon, json: Number.isSafeInteger(n) ? n : canon };
}

function addDays(d: Date, n: number): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + n));
}

async function readText(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new UsageError(`cannot read ${path}: ${errorMessage(e)}`, { cause: e });
  }
}

/** Returns the exit code: 0 frozen, 1 refused (a defect, or a revival too many), 2 usage error. */
export async function executeFreeze(args: FreezeOptions, io: CiIo): Promise<number> {
  const nodeid = args.nodeid?.trim();
  if (!nodeid) throw new UsageError('NODEID: name the failing test (its id as patchgate ci prints it)');
  if (/[\n\r]/.test(nodeid)) throw new UsageError('NODEID: must be one line');
  const reason = args.reason?.trim();
  if (!reason) throw new UsageError('--reason: say why this is a flake and not a defect');
  if (!args.rerun.length) throw new UsageError('name the command that re-runs the failing test after --, e.g. -- node --test tests/a.test.mjs');
  const seed = parseFreezeSeed(args.seed);
  const today = args.today !== undefined ? parseDay(args.today) : parseDay(dayOf(new Date()));
  if (!today) throw new UsageError(`--today: ${JSON.stringify(args.today)} is not a date YYYY-MM-DD`);
  const repo = resolve(args.repo);

  const git = new Git({ dir: repo });
  let head: string | null;
  let ledgerPath: string;
  let lockPath: string;
  let maxDays: number;
  let history: LedgerHistory;
  let text: string;
  let policy: Policy;
  try {
    head = await git.refTip('HEAD');
    policy = await loadPolicy(git, head);
    ledgerPath = policy.ledger.path;
    lockPath = policy.fixtures.lock;
    maxDays = policy.ledger.maxDays;
    text = (await readText(join(repo, ledgerPath))) ?? '';
    history = await worktreeLedgerHistory(git, head, ledgerPath, parseLedger(text).rows, today);
  } finally {
    git.close();
  }

  // The expiry: at most maxDays from today.
  const limit = addDays(today, maxDays);
  let expires = limit;
  if (args.expires !== undefined) {
    const e = parseDay(args.expires);
    if (!e) throw new UsageError(`--expires: ${JSON.stringify(args.expires)} is not a date YYYY-MM-DD`);
    if (e > limit) throw new UsageError(`--expires ${args.expires} is beyond the policy's maximum of ${maxDays} days; the latest allowed is ${dayOf(limit)}`);
    if (e < today) throw new UsageError(`--expires ${args.expires} is before today (${dayOf(today)})`);
    expires = e;
  }

  // The fixture digest of the work tree's lock (an absent lock is the empty lock).
  const lockText = await readText(join(repo, lockPath));
  const digest = fixtureDigest(lockText === null ? new Map() : parseLock(lockText, lockPath));
  const triple = { nodeid, seed: seed.text, fixture_digest: digest };

  const live = parseLedger(text).rows.filter((r) => tripleKey(r) === tripleKey(triple) && !isExpired(r, today));
  if (live.length) {
    io.err(`patchgate: ${nodeid} seed ${seed.text} is already frozen with this fixture digest until ${live[0]!.expires} (${ledgerPath}:${live[0]!.line}); another row would count as a revival`);
    return 1;
  }
  const times = history.triples.get(tripleKey(triple)) ?? 0;
  if (times >= 2) {
    io.err(`patchgate: refused: ${nodeid} seed ${seed.text} was frozen ${times} times already; a triple may be revived at most once. It keeps failing: treat it as a defect, not a flake`);
    return 1;
  }

  // Re-run twice under the seed; a failure that reproduces is a defect.
  let failures = 0;
  if (policy.ci.integrity === 'strict') {
    if (!head) throw new UsageError(`${repo} has no commit: a strict re-run runs a sealed copy of HEAD`);
    failures = await sealedReruns({ repo, head, policy, nodeid, seed: seed.text, argv: args.rerun.map((a) => a.split('{seed}').join(seed.text)), sandbox: args.sandbox ?? 'bwrap' }, io);
  } else {
    const tmp = await mkdtemp(join(tmpdir(), 'patchgate-freeze-'));
    try {
      const env: Record<string, string> = { PATCHGATE_SEED: seed.text, PATCHGATE_SEED_FILE: join(tmp, 'seeds.json') };
      if (Number(seed.text) <= PY_HASH_MAX) env.PYTHONHASHSEED = seed.text;
      const argv = args.rerun.map((a) => a.split('{seed}').join(seed.text));
      for (let i = 1; i <= 2; i++) {
        io.out(`patchgate: freeze: re-run ${i}/2: ${showArgv(argv)} (cwd ${repo}, PATCHGATE_SEED=${seed.text})`);
        const res = await runCommand(argv, { cwd: repo, env, onStdout: io.out, onStderr: io.err });
        if (res.spawnError) throw new UsageError(res.spawnError);
        const ok = res.code === 0 && !res.signal;
        io.out(`patchgate: freeze: re-run ${i}/2 ${ok ? 'passed' : res.signal ? `was killed by ${res.signal}` : `failed (exit ${res.code})`}`);
        if (!ok) failures++;
      }
    } finally {
      await rm(tmp, { recursive: true, force: true }).catch(() => {});
    }
  }
  if (failures === 2) {
    io.err(`patchgate: refused: ${nodeid} fails under seed ${seed.text} on both re-runs: it reproduces: a defect, not a flake. Fix it instead of freezing it`);
    return 1;
  }

  const row = { nodeid, seed: seed.json, fixture_digest: digest, expires: dayOf(expires), reason };
  const abs = join(repo, ledgerPath);
  await mkdir(dirname(abs), { recursive: true });
  await writeFile(abs, `${text}${text && !text.endsWith('\n') ? '\n' : ''}${JSON.stringify(row)}\n`);
  io.out(`patchgate: froze ${nodeid} seed ${seed.text} until ${dayOf(expires)} (fixture digest ${digest.slice(0, 12)}; ${failures} of 2 re-runs failed)`);
  io.out(`patchgate: appended to ${ledgerPath}: ${JSON.stringify(row)}`);
  io.out(`patchgate: commit it as a person: git add ${ledgerPath} && git commit -m 'freeze flake ${nodeid.replace(/'/g, '')}'; calendar the expiry ${dayOf(expires)}`);
  if (times === 1) io.out('patchgate: note: this triple was frozen once before; this is its one revival, a next one will be refused');
  return 0;
}
