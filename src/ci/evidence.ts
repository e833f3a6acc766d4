// `patchgate ci --evidence` (issue 50, item 4): a test author's push proves its tests are new
// evidence. Read statically from git objects (test-inventory.ts), the push may not weaken the
// oracle: no test of the trusted version is gone and none has fewer assertions. Then only its
// new and changed tests run, in the same sealed, sandboxed run as every strict run (strict.ts),
// on the trusted tip's code with the push's test files laid over it; each must fail there: a
// test that already passes proves nothing about the change to come. Nothing of the push runs in
// the gate's own process. A check that cannot judge throws EvidenceError (one line, exit 2).

import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { EvidenceError } from '../errors.js';
import { Git } from '../git/git.js';
import { protectedMatcher } from '../policy/match.js';
import { runnerKind } from './channel.js';
import { sealedRun, type StrictFinding, type StrictOptions } from './strict.js';
import { inventory, testLanguage, type TestCase } from './test-inventory.js';

export type EvidenceKind = 'test-deleted' | 'assertions-removed' | 'passes-on-tip' | 'skipped-on-tip' | 'no-new-test' | 'test-unparsable';

export interface EvidenceFinding {
  kind: EvidenceKind | StrictFinding['kind'];
  row: string;
  message: string;
  test?: string;
}

/** What the report keeps (`evidence` in the JSON report). */
export interface EvidenceCounts {
  /** The push's fork point from the trusted branch: what "the trusted version" of a test file is. */
  mergeBase: string;
  files: string[];
  new: string[];
  changed: string[];
  /** New or changed tests that failed on the trusted tip (the evidence). */
  failOnTip: string[];
  /** The tree the tests ran in: the trusted tip with the push's test files over it (null: not run). */
  tree: string | null;
}

interface Judged {
  tc: TestCase;
  path: string;
  how: 'new' | 'changed';
}

const short = (id: string) => id.slice(0, 12);
const isFile = (k: string | null) => k === 'regular' || k === 'executable';

/**
 * The whole check. `rerun` is the command line that runs it again, for the next step of every
 * finding; `add` takes the findings (rows test-weakened and not-evidence, or the run's own).
 */
export async function evidenceStage(so: StrictOptions, revs: { baseId: string; headId: string }, rerun: string, add: (f: EvidenceFinding) => void): Promise<EvidenceCounts> {
  const { git, io } = so;
  const mb = await git.mergeBase(revs.baseId, revs.headId);
  if (!mb) throw new EvidenceError(`--head ${short(revs.headId)} shares no history with --base ${short(revs.baseId)}: there is no trusted version of its tests to compare with`);
  const changes = (await git.diffTree(mb, revs.headId)).filter((c) => testLanguage(c.path));
  const out: EvidenceCounts = { mergeBase: mb, files: changes.map((c) => c.path), new: [], changed: [], failOnTip: [], tree: null };
  const judged: Judged[] = [];
  let weakened = 0;
  for (const c of changes) {
    const before = isFile(c.oldKind) ? await textAt(git, c.oldId) : null;
    const after = isFile(c.newKind) ? await textAt(git, c.newId) : null;
    const old = before === null ? { tests: [] } : await inventory(c.path, before);
    if (old.problem) throw new EvidenceError(`the trusted version of ${c.path} (at ${short(mb)}) cannot be read: ${old.problem}`);
    const now = after === null ? { tests: [] } : await inventory(c.path, after);
    if (now.problem) {
      add({ kind: 'test-unparsable', row: 'not-evidence', message: `${now.problem} (at ${short(revs.headId)}): a test that cannot be read proves nothing; fix it, then run again: ${rerun}` });
      continue;
    }
    const byId = new Map(now.tests.map((t) => [t.id, t]));
    for (const o of old.tests) {
      const n = byId.get(o.id);
      if (!n) {
        weakened++;
        add({ kind: 'test-deleted', row: 'test-weakened', test: o.id, message: `${o.id} (${c.path}:${o.line} at ${short(mb)}) is deleted by this push: a test author adds and strengthens tests, never removes one; put it back (git show ${short(mb)}:${c.path} shows it), then run again: ${rerun}` });
      } else if (n.assertions < o.assertions) {
        weakened++;
        add({ kind: 'assertions-removed', row: 'test-weakened', test: o.id, message: `${o.id} (${c.path}:${n.line}) has ${n.assertions} assertion(s), ${o.assertions} at ${short(mb)}: a removed assertion weakens the oracle; put it back (git diff ${short(mb)} ${short(revs.headId)} -- ${c.path} shows it), then run again: ${rerun}` });
      }
    }
    const had = new Map(old.tests.map((t) => [t.id, t]));
    for (const n of now.tests) {
      const o = had.get(n.id);
      if (!o) judged.push({ tc: n, path: c.path, how: 'new' });
      else if (o.digest !== n.digest) judged.push({ tc: n, path: c.path, how: 'changed' });
    }
  }
  out.new = judged.filter((j) => j.how === 'new').map((j) => j.tc.id);
  out.changed = judged.filter((j) => j.how === 'changed').map((j) => j.tc.id);
  io.out(`patchgate: evidence: ${changes.length} test file(s) changed since ${short(mb)}: ${out.new.length} new test(s), ${out.changed.length} changed, ${weakened} weakened`);
  if (!judged.length) {
    if (!weakened) add({ kind: 'no-new-test', row: 'not-evidence', message: `the push adds or changes no test (test files: test_*.py, *_test.py, *.test.*, *.spec.*, __tests__/): it brings no new evidence; run again once it does: ${rerun}` });
    return out;
  }
  if (weakened) {
    io.out('patchgate: evidence: the new tests were not run: the push weakens the oracle (below)');
    return out;
  }
  out.tree = await overlayTree(so, revs.baseId, mb, revs.headId);
  const argv = evidenceArgv(so.cmd, judged);
  io.out(`patchgate: evidence: running the ${judged.length} new or changed test(s) on the trusted tip ${short(revs.baseId)} with this push's test files (tree ${short(out.tree)}); each must fail there`);
  const run = await sealedRun(so, out.tree, 'evidence', { argv, quiet: true });
  run.findings.forEach(add);
  const s = run.stream;
  if (!s?.started || !s.ended) throw new EvidenceError(`the new tests sent no complete result from the trusted tip ${short(revs.baseId)} (the command exited ${run.res.signal ?? run.res.code}): nothing shows whether they fail there`);
  const missing: string[] = [];
  for (const j of judged) {
    const results = s.tests.filter((t) => t.id === j.tc.id || t.id.startsWith(`${j.tc.id}[`) || t.id.startsWith(`${j.tc.id} #`));
    const where = `${j.path}:${j.tc.line}`;
    if (!results.length) {
      if (s.collectErrors.includes(j.path)) out.failOnTip.push(j.tc.id);
      else missing.push(j.tc.id);
      continue;
    }
    if (results.some((r) => r.status === 'failed')) {
      out.failOnTip.push(j.tc.id);
      continue;
    }
    const passed = results.some((r) => r.status === 'passed');
    add({
      kind: passed ? 'passes-on-tip' : 'skipped-on-tip', row: 'not-evidence', test: j.tc.id,
      message: `${j.tc.id} (${where}, ${j.how}) ${passed ? 'passes' : 'is skipped'} on the trusted tip ${short(revs.baseId)}: it proves nothing about the change to come; make it assert what the change must do (it must fail until the code is written), then run again: ${rerun}`,
    });
  }
  if (missing.length) throw new EvidenceError(`no result came back from the trusted tip ${short(revs.baseId)} for ${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` and ${missing.length - 3} more` : ''}: the check cannot say whether they fail there`);
  const notes = s.collectErrors.filter((f) => judged.some((j) => j.path === f));
  if (notes.length) io.out(`patchgate: evidence: ${notes.join(', ')} cannot be collected on the trusted tip (e.g. it imports a name the code does not have yet): its tests count as failing there`);
  io.out(`patchgate: evidence: ${out.failOnTip.length} of ${judged.length} new or changed test(s) fail on the trusted tip`);
  return out;
}

async function textAt(git: Git, id: string): Promise<string> {
  const b = await git.readBlob(id);
  if (!b) throw new EvidenceError(`blob ${short(id)} is missing from the repository`);
  return b.toString('utf8');
}

/**
 * The trusted tip's tree with the push's oracle side laid over it: every path changed since the
 * merge base that is a test file or a protected path (conftest.py, fixtures, runner
 * configuration), as the push has it. Code stays the trusted tip's. Written through a private
 * index file, so neither the work tree nor the repository's index is touched.
 */
async function overlayTree(so: StrictOptions, baseId: string, mb: string, headId: string): Promise<string> {
  const oracle = protectedMatcher([...so.policy.protected, ...so.policy.oracleFiles]);
  const changes = (await so.git.diffTree(mb, headId)).filter((c) => testLanguage(c.path) || oracle(c.path));
  const dir = await mkdtemp(join(so.tmp, 'evidence-index-'));
  const g = new Git({ dir: so.git.dir, env: { GIT_INDEX_FILE: join(dir, 'index') } });
  try {
    await g.run(['read-tree', baseId]);
    const zero = '0'.repeat(mb.length);
    const lines = changes.map((c) => (c.newKind === null ? `0 ${zero}\t${c.path}` : `${c.newMode} ${c.newId}\t${c.path}`));
    if (lines.length) await g.run(['update-index', '-z', '--index-info'], { input: lines.map((l) => `${l}\0`).join('') });
    return (await g.text(['write-tree'])).trim();
  } finally {
    g.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The project's runner on the judged tests only: pytest node ids; node:test, vitest and jest the changed files. */
function evidenceArgv(cmd: string[], judged: Judged[]): string[] {
  const { kind, at } = runnerKind(cmd);
  const files = [...new Set(judged.map((j) => j.path))];
  // A parametrized case's brackets are part of its own id; the function's id selects every case.
  if (kind === 'pytest') return [...cmd.slice(0, at), '--continue-on-collection-errors', ...judged.map((j) => j.tc.id)];
  if (kind === 'node') return [cmd[0]!, '--test', ...files];
  if (kind === 'vitest') return [...cmd.slice(0, at), 'run', ...files];
  if (kind === 'jest') return [...cmd.slice(0, at), ...files];
  throw new EvidenceError(`--evidence runs the new tests with pytest, node --test, vitest or jest; ${cmd[0] ?? 'the command'} is none of them`);
}
