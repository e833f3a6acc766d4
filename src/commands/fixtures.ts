// `patchgate fixtures lock DIR...` (a person regenerates the lock) and `fixtures verify`
// (the work tree, or --rev, against the lock). Exit 0 ok, 1 drift.

import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Git } from '../git/git.js';
import { fixtureDigest, gitSource, parseLock, readLock, verifyLock, type Drift } from '../fixtures/lock.js';
import { buildLock, serializeLock, worktreeSource } from '../fixtures/worktree.js';

export async function runFixturesLock(args: { repo: string; dirs: string[]; lock: string }): Promise<string[]> {
  const lock = await buildLock(args.repo, args.dirs);
  const target = join(args.repo, args.lock);
  await mkdir(dirname(target), { recursive: true });
  await writeFile(target, serializeLock(lock));
  return [`wrote ${args.lock}: ${lock.size} fixture(s), fixture digest ${fixtureDigest(lock)}`];
}

export async function runFixturesVerify(args: { repo: string; lock: string; rev?: string }): Promise<{ lines: string[]; drift: Drift[] }> {
  let drift: Drift[];
  let size: number;
  if (args.rev) {
    const git = new Git({ dir: args.repo });
    try {
      const rev = await git.resolveCommit(args.rev);
      const lock = await readLock(git, rev, args.lock);
      if (!lock) return { lines: [`no ${args.lock} at ${args.rev}: nothing to verify`], drift: [] };
      size = lock.size;
      drift = await verifyLock(gitSource(git, rev), lock);
    } finally {
      git.close();
    }
  } else {
    let text: string;
    try {
      text = await readFile(join(args.repo, args.lock), 'utf8');
    } catch {
      return { lines: [`no ${args.lock}: nothing to verify`], drift: [] };
    }
    const lock = parseLock(text, args.lock);
    size = lock.size;
    drift = await verifyLock(worktreeSource(args.repo), lock);
  }
  const lines = drift.map((d) => `drift: ${d.kind} ${d.path}${d.expected ? ` (lock ${d.expected}${d.actual ? `, file ${d.actual}` : ''})` : ''}`);
  lines.push(drift.length ? `${drift.length} drifted of ${size} locked fixture(s)` : `ok: ${size} locked fixture(s) match`);
  return { lines, drift };
}
