// Is the v1 contract of one revision equal to another's, decided from the files that differ
// between them alone? A push that arrives while nothing of its base is cached (a never-seen
// repository, a daemon still warming it) would otherwise parse the whole tree inside its
// hook time limit (issue 24: "a push that arrives during a warm-up is judged ahead of it, on
// the files it touches"). The v1 digest is a Merkle digest over per-file lines (digest.ts), and
// a file's rows depend on its blob and path only, so two trees whose differing contract files
// all give the same rows have the same digest. The one thing that crosses files, Python
// re-exports of private definitions (py-reexport.ts), is a function of the public files'
// exports and the private modules' links: those are compared too, and a private module added
// or removed is left to the full digest.

import type { Git } from '../git/git.js';
import type { Change } from '../git/trees.js';
import { ContractParseError, ContractSizeError } from '../errors.js';
import { initPython, isPrivateModule, type PyLinks } from './python.js';
import { fileLinks, fileRows, isContractFile, limitOf, normRoot, rootTree, type ContractLimits, type Lim } from './digest.js';

/** More differing contract files than this and the full digest is asked for instead (a push that large is not the one-file case this is for). */
export const MAX_COMPARED_FILES = 256;

export type Sameness =
  /** Every differing contract file gives the same rows (and Python links): the digests are equal. */
  | { verdict: 'equal'; compared: string[] }
  /**
   * Some give other rows (the first is `path`), every other link is the same: the digests
   * differ, and `before`/`after` are the differing files' rows on each side, in path order,
   * from which the full contracts' row diff follows (every other row is the same).
   */
  | { verdict: 'moved'; compared: string[]; path: string; before: string[]; after: string[] }
  /** Not decidable from the differing files (see `why`): compute the digests. */
  | { verdict: 'unknown'; why: string };

/**
 * Whether the v1 contracts of `baseRev` and `headRev` under `roots` are equal, judged from the
 * files that differ between the two trees only; unchanged files are never read. 'unknown' when
 * a differing file does not parse or is over the size limit (the full digest gives the verdict
 * and its message), when a Python private module appears or disappears, or when more than
 * MAX_COMPARED_FILES contract files differ.
 */
export async function sameContract(git: Git, baseRev: string, headRev: string, roots: string[], cache: Map<string, unknown>, limits: ContractLimits = {}): Promise<Sameness> {
  await initPython();
  const lim = limitOf(limits);
  const compared: string[] = [];
  const moved: Array<{ path: string; before: string[]; after: string[] }> = [];
  for (const root of roots) {
    const [a, b] = await Promise.all([rootTree(git, baseRev, root), rootTree(git, headRev, root)]);
    if (a === b) continue; // both absent, or the same tree
    if (!a || !b) return { verdict: 'unknown', why: `root ${root} exists at only one of the two revisions` };
    const r = normRoot(root);
    const changes = await git.diffTrees(a, b, r ? `${r}/` : '');
    const relevant = changes.filter((c) => isContractSide(c.oldKind, c.path) || isContractSide(c.newKind, c.path));
    if (compared.length + relevant.length > MAX_COMPARED_FILES) return { verdict: 'unknown', why: `more than ${MAX_COMPARED_FILES} contract files differ` };
    for (const c of relevant) {
      const out = await compareFile(git, cache, c, lim);
      if (out.verdict === 'unknown') return { verdict: 'unknown', why: `${c.path}: other Python re-export links, a private module added or removed, or a file that does not parse or is too large` };
      compared.push(c.path);
      if (out.verdict === 'moved') moved.push({ path: c.path, before: out.before, after: out.after });
    }
  }
  if (!moved.length) return { verdict: 'equal', compared };
  // Each row once, as in a contract (roots that overlap see a file twice).
  return { verdict: 'moved', compared, path: moved[0]!.path, before: [...new Set(moved.flatMap((m) => m.before))], after: [...new Set(moved.flatMap((m) => m.after))] };
}

function isContractSide(kind: Change['oldKind'], path: string): boolean {
  return kind !== null && isContractFile(kind, path);
}

/** One side of a change as the contract sees it: its rows and (Python) links; absent or not a contract file: none. */
async function sideOf(git: Git, cache: Map<string, unknown>, kind: Change['oldKind'], id: string, path: string, lim: Lim): Promise<{ rows: string[]; links: PyLinks | null } | null> {
  if (!isContractSide(kind, path)) return null;
  const rows = await fileRows(git, cache, { mode: '100644', kind: kind!, type: 'blob', id, path }, 'v1', lim.max);
  const links = path.endsWith('.py') ? await fileLinks(git, cache, path, id, lim.max) : null;
  return { rows, links };
}

async function compareFile(git: Git, cache: Map<string, unknown>, c: Change, lim: Lim): Promise<{ verdict: 'equal' | 'moved'; before: string[]; after: string[] } | { verdict: 'unknown' }> {
  let before: Awaited<ReturnType<typeof sideOf>>;
  let after: Awaited<ReturnType<typeof sideOf>>;
  try {
    [before, after] = await Promise.all([sideOf(git, cache, c.oldKind, c.oldId, c.path, lim), sideOf(git, cache, c.newKind, c.newId, c.path, lim)]);
  } catch (err) {
    // The full digest refuses with its own message (or, for the base, matches nothing).
    if (err instanceof ContractParseError || err instanceof ContractSizeError) return { verdict: 'unknown' };
    throw err;
  }
  if (c.path.endsWith('.py')) {
    // A private module's presence is part of the root's re-export index: left to the full digest.
    if (isPrivateModule(c.path) && (!before || !after)) return { verdict: 'unknown' };
    // Public modules count in the index by what they re-export; private ones by all their links.
    // Other links may still resolve to the same re-export rows: only the full digest can say.
    const part = (s: typeof before): unknown => (isPrivateModule(c.path) ? s?.links ?? {} : s?.links?.exports ?? []);
    if (JSON.stringify(part(before)) !== JSON.stringify(part(after))) return { verdict: 'unknown' };
  }
  const rowsBefore = before?.rows ?? [];
  const rowsAfter = after?.rows ?? [];
  return { verdict: sameRows(rowsBefore, rowsAfter) ? 'equal' : 'moved', before: rowsBefore, after: rowsAfter };
}

function sameRows(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((r, i) => r === b[i]);
}
