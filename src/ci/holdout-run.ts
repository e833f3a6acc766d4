// The held-out stage of `patchgate ci`'s strict run, after the visible suite: the held-out
// source is fetched (holdout.ts), its sealed expectations (`*.sealed.json`) are taken out
// before anything is copied into a sandbox and judged in the gate (sealed-call.ts), and its
// held-out tests run with the project's runner. The held-out tests are accounted for
// (issue 46): the trusted tree lists the ids first, and every one must come back from the
// judged run exactly once, from a process that exited 0; a missing, extra or repeated id, a
// non-zero exit or a death by signal is red and names the id.

import { readdir } from 'node:fs/promises';
import { constants } from 'node:os';
import { join } from 'node:path';
import { HoldoutError, SealedCaseError } from '../errors.js';
import { runnerKind, type Stream } from './channel.js';
import { materialiseHoldout } from './holdout.js';
import { runSealedCases } from './sealed-call.js';
import { extractSealed, type SealedSet } from './sealed-cases.js';
import { checkStream, heldInMemory, holdoutArgv, sealedRun, type StrictFinding, type StrictOptions } from './strict.js';

export interface HoldoutCounts {
  /** Held-out test ids the trusted tree listed (null: none could be listed). */
  handed: number | null;
  returned: number;
  passed: number;
}

export interface SealedCounts {
  files: number;
  cases: number;
  ran: number;
  passed: number;
}

export interface HoldoutStage {
  holdout: HoldoutCounts | null;
  sealed: SealedCounts | null;
}

const red = (kind: StrictFinding['kind'], message: string, test?: string): StrictFinding => ({ kind, row: 'holdout-red', message, ...(test !== undefined ? { test } : {}) });

/** The whole held-out stage; every problem is a finding on `add` (row holdout-red unless it is another row's). */
export async function heldOutStage(so: StrictOptions, spec: string, revs: { headId: string; baseId: string }, add: (f: StrictFinding) => void): Promise<HoldoutStage> {
  const { io } = so;
  const out: HoldoutStage = { holdout: null, sealed: null };
  // A URL, a bare repository or a folder (holdout.ts), fetched only now: the visible run never saw it.
  const got = await materialiseHoldout(spec, so.tmp).catch((e: unknown) => {
    if (!(e instanceof HoldoutError)) throw e;
    add(red('holdout-unavailable', `the held-out tests cannot be had: ${e.message}`));
    return null;
  });
  if (!got) return out;
  io.out(`patchgate: held-out tests from ${got.source === 'folder' ? 'the folder' : 'the repository'} ${got.shown}${got.commit ? ` at ${got.commit.slice(0, 12)}` : ''} (${got.files} file(s))`);
  // The sealed files leave the held-out folder before any copy of it is made.
  let sealed: SealedSet | null = null;
  try {
    sealed = await extractSealed(got.dir, join(so.tmp, 'sealed-src'));
  } catch (e) {
    if (!(e instanceof SealedCaseError)) throw e;
    add(red('sealed-invalid', `the sealed expectations cannot be read: ${e.message}`, e.index === null ? e.file : `${e.file}#${e.index}`));
  }
  const left = (await readdir(got.dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).length;
  if (left) out.holdout = await heldOutTests(so, got.dir, revs, add, !!sealed?.cases.length);
  if (sealed?.cases.length) {
    const r = await runSealedCases(so, revs.headId, sealed.cases);
    r.findings.forEach(add);
    out.sealed = { files: sealed.files.length, cases: sealed.cases.length, ran: r.ran, passed: r.passed };
    io.out(`patchgate: sealed cases: ${r.passed} of ${sealed.cases.length} passed (${r.ran} ran; ${sealed.files.length} file(s); expected values compared by the gate, outside the sandbox)`);
  }
  return out;
}

/** The held-out tests in `dir`: listed on the trusted tree, run on the judged tree, every id accounted for. */
async function heldOutTests(so: StrictOptions, dir: string, revs: { headId: string; baseId: string }, add: (f: StrictFinding) => void, haveSealed: boolean): Promise<HoldoutCounts | null> {
  const { io } = so;
  const kind = runnerKind(so.cmd).kind;
  const argv = await holdoutArgv(so.cmd, dir);
  if (!argv) {
    add(red('holdout-no-stream', 'the held-out tests need pytest or node as the test command'));
    return null;
  }
  if (kind === 'node' && !argv.slice(2).length) {
    // `node --test` with no file would find the visible suite's files instead.
    if (!haveSealed) add(red('holdout-no-stream', 'the held-out source holds no node test file (*.test.js, *.spec.mjs, test*.js, ...): no held-out test can vouch for the patch'));
    return null;
  }
  const held = await heldInMemory(so.cmd, dir);
  const how = held ? { argv, quiet: true, held } : { argv, quiet: true, extraFiles: dir };
  // The ids handed to the run: what the trusted tree lists (pytest: collected only; node: run, outcomes ignored).
  const listing = await sealedRun(so, revs.baseId, 'holdout-ids', { ...how, collectOnly: kind === 'pytest' });
  const ls = listing.stream;
  const handed = ls?.started && ls.ended ? (kind === 'pytest' ? ls.collected : ls.tests.map((x) => x.id)) : null;
  const unlisted = ls?.collectErrors ?? [];
  const h = await sealedRun(so, revs.headId, 'holdout', how);
  io.out(`patchgate: held-out tests ${held ? 'handed to the runner from memory (no file of theirs in the sealed tree)' : 'sealed read-only under .patchgate-holdout/ (only pytest test modules and node ES modules (.mjs) can be handed over from memory)'}`);
  h.findings.forEach(add);
  const s = h.stream;
  if (!s?.started || !s.ended || !s.tests.length) add(red('holdout-no-stream', 'the held-out tests produced no complete stream: they cannot vouch for the patch'));
  if (!s?.started) return { handed: handed?.length ?? null, returned: 0, passed: 0 };
  // A run cut short still says which ids came back: the accounting below names the rest.
  for (const f of checkStream(h, null)) if (f.kind !== 'no-stream') add({ ...f, message: `${f.message} (held-out run)` });
  const bad = s.tests.filter((x) => x.status !== 'passed');
  for (const x of bad) add(red('holdout-failed', `held-out test ${x.id} ${x.status}: the patch does not hold for inputs the visible tests do not show`, x.id));
  if (!handed) add(red('holdout-no-stream', `the held-out tests could not be listed on the trusted tree ${revs.baseId.slice(0, 12)} (its run ${ls?.started ? 'did not finish' : 'sent nothing'}): nothing shows how many held-out results should come back`));
  else {
    const acc = accountHeldOut(handed, unlisted, s, { code: h.res.code, signal: h.res.signal });
    acc.findings.forEach(add);
    if (unlisted.length) io.out(`patchgate: note: the trusted tree could not collect ${unlisted.slice(0, 3).join(', ')}${unlisted.length > 3 ? ', ...' : ''}; the ids of those files are taken from the run itself (each at most once)`);
  }
  const passed = s.tests.length - bad.length;
  io.out(`patchgate: held-out tests: ${passed} of ${handed ? handed.length : s.tests.length} passed${handed ? ` (${handed.length} handed to the run, ${s.tests.length} result(s) came back)` : ''}`);
  return { handed: handed?.length ?? null, returned: s.tests.length, passed };
}

/**
 * Every id handed to a run comes back exactly once, from a process that exited 0 (or 1 with a
 * failure that says why) and was not killed. An id of a file in `unlisted` (the trusted tree
 * could not collect it) is taken from the run, at most once.
 */
export function accountHeldOut(handed: string[], unlisted: string[], s: Stream, exit: { code: number | null; signal: string | null }): { findings: StrictFinding[] } {
  const findings: StrictFinding[] = [];
  const want = new Set(handed);
  const back = new Set<string>();
  const ofUnlisted = (id: string) => unlisted.some((f) => id === f || id.startsWith(`${f}::`));
  for (const t of s.tests) {
    // Streams number a repeated id `id #2`; the trusted listing numbers a repeated name the same way.
    const rep = /^(.*) #\d+$/.exec(t.id);
    if (want.has(t.id)) back.add(t.id);
    else if (rep && (want.has(rep[1]!) || ofUnlisted(rep[1]!))) findings.push(red('holdout-extra', `held-out test ${rep[1]} came back more than once: the results are not evidence`, rep[1]));
    else if (!ofUnlisted(t.id)) findings.push(red('holdout-extra', `held-out run reported ${t.id}, which was never handed to it: the results are not evidence`, t.id));
  }
  for (const id of handed) if (!back.has(id)) findings.push(red('holdout-missing', `held-out test ${id} was handed to the run but no result came back: it did not run, or its result was removed`, id));
  const last = s.tests[s.tests.length - 1]?.id;
  const failed = s.tests.some((t) => t.status === 'failed');
  // Under bubblewrap a test process killed by a signal is seen as bwrap's exit status 128+N.
  const bySignal = exit.code !== null && exit.code > 128 && exit.code <= 128 + 64 ? Object.entries(constants.signals).find(([, n]) => n === exit.code! - 128)?.[0] : undefined;
  const signal = exit.signal ?? (bySignal ? `${bySignal} (exit status ${exit.code})` : null);
  if (signal) findings.push(red('holdout-exit', `the held-out run was killed by ${signal}${last ? ` after ${last}` : ''}: its results are not evidence`, last));
  else if (exit.code !== 0 && !failed) findings.push(red('holdout-exit', `the held-out run exited ${exit.code} although no held-out test failed${last ? ` (last result: ${last})` : ''}: the exit status and the results disagree`, last));
  return { findings };
}
