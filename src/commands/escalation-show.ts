// What `patchgate escalation show ID` prints below the escalation: the commits its push kept
// under refs/patchgate/escalations/ID (src/server/escalation-ref.ts) and their diff against
// what the push would have changed (the ref's old tip, or for a new branch its merge base
// with the trusted branch), so a person reviews an API or test change with the code in view.

import { gitEnv, runGit } from '../git/exec.js';
import { isZeroId } from '../git/git.js';
import { escalationRef, escalationTips } from '../server/escalation-ref.js';
import type { Escalation } from '../audit/escalation.js';

export interface EscalationDiff {
  /** The commit kept for review, or null (closed, a deleted ref, a push before it was kept). */
  kept: string | null;
  base: string | null;
  commits: string[];
  text: string;
  lines: string[];
}

/** Most bytes of diff printed; a longer one ends with how to see the rest. */
const MAX_DIFF = 4 << 20;

async function exists(dir: string, oid: string): Promise<boolean> {
  const r = await runGit(dir, gitEnv(), ['cat-file', '-e', `${oid}^{commit}`], { okExit: [1, 128] });
  return r.code === 0;
}

export async function escalationDiff(repoDir: string | null, e: Escalation): Promise<EscalationDiff> {
  const none = (why: string): EscalationDiff => ({ kept: null, base: null, commits: [], text: '', lines: [`  (no diff: ${why})`] });
  if (!repoDir) return none(`repository ${e.repo ?? '?'} is not in this data folder`);
  const kept = (await escalationTips(repoDir)).get(e.id) ?? null;
  if (!kept) return none(e.open ? `no commits were kept for it (${escalationRef(e.id)} is missing: a deleted ref, or a push from before commits were kept)` : 'it is closed, and its kept commits were let go');
  let base: string | null = e.old && !isZeroId(e.old) && (await exists(repoDir, e.old)) ? e.old : null;
  if (!base) {
    const head = await runGit(repoDir, gitEnv(), ['merge-base', 'HEAD', kept], { okExit: [1, 128] });
    base = head.code === 0 ? head.stdout.toString('utf8').trim() || null : null;
  }
  const range = base ? [`${base}..${kept}`] : [kept];
  const log = await runGit(repoDir, gitEnv(), ['log', '--format=%H %an <%ae> %s', '--max-count=200', ...range]);
  const commits = log.stdout.toString('utf8').split('\n').filter(Boolean);
  const diffArgs = base ? ['diff', '--stat', '--patch', base, kept] : ['show', '--stat', '--patch', '--format=', kept];
  const out = await runGit(repoDir, gitEnv(), ['-c', 'core.quotepath=false', ...diffArgs]);
  let text = out.stdout.toString('utf8');
  const cut = text.length > MAX_DIFF;
  if (cut) text = text.slice(0, MAX_DIFF);
  const lines = [
    `  kept for review: ${escalationRef(e.id)} = ${kept} (until it is closed)`,
    `  base: ${base ?? '(none: the kept commit is a root)'}; ${commits.length} commit(s):`,
    ...commits.map((c) => `    ${c.slice(0, 12)} ${c.slice(41)}`),
    `  fetch it with a person's token: git fetch http://YOU:TOKEN@GATE/${e.repo ?? 'REPO'}.git ${escalationRef(e.id)}`,
    '',
    ...text.replace(/\n$/, '').split('\n'),
    ...(cut ? [`(cut at ${MAX_DIFF} bytes: git -C ${repoDir} diff ${base ?? ''} ${kept})`] : []),
  ];
  return { kept, base, commits: commits.map((c) => c.slice(0, 40)), text, lines };
}
