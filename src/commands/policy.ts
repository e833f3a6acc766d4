// `patchgate policy check [--repo DIR] [--rev REV] [--json]`: the policy, and the allow file,
// fixture lock and flake ledger it names, checked as the gate checks them in a push
// (src/policy/policy-files.ts), before anyone pushes them (issue 48). Without --rev it reads the
// work tree's files as they are now, uncommitted edits included (as `ledger check` and
// `fixtures verify` do), or HEAD's in a bare repository; with --rev, the files as committed at
// REV. Exit 0 valid, 1 invalid, 2 error (the cli maps them).

import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import { Git } from '../git/git.js';
import { checkPolicyFiles, problemLine, type PolicyFileProblem, type PolicyFileReader } from '../policy/policy-files.js';
import { POLICY_PATH } from '../policy/config.js';
import { short } from '../policy/types.js';

export interface PolicyCheckResult {
  ok: boolean;
  /** What was read: `work tree` or `REV (commit id)`. */
  source: string;
  checked: string[];
  problems: PolicyFileProblem[];
  lines: string[];
}

/** The work tree's file at `path`: null when absent, `notFile` for a folder or anything else. */
function worktreeReader(repo: string): PolicyFileReader {
  return async (path) => {
    try {
      return { text: await readFile(join(repo, path), 'utf8') };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return null;
      if (code === 'EISDIR') return { notFile: 'folder' };
      throw err;
    }
  };
}

function revReader(git: Git, rev: string): PolicyFileReader {
  return async (path) => {
    const at = await git.pathId(rev, path);
    if (!at) return null;
    if (at.type !== 'blob') return { notFile: at.type };
    return { text: (await git.readBlob(at.id))?.toString('utf8') ?? '' };
  };
}

export async function runPolicyCheck(args: { repo: string; rev?: string }): Promise<PolicyCheckResult> {
  if (!existsSync(args.repo)) throw new UsageError(`--repo: ${args.repo} does not exist`);
  // A bare repository has no work tree: its HEAD is what would be pushed from.
  const bare = !existsSync(join(args.repo, '.git')) && existsSync(join(args.repo, 'objects')) && existsSync(join(args.repo, 'HEAD'));
  const revArg = args.rev ?? (bare ? 'HEAD' : undefined);
  let source: string;
  let report: Awaited<ReturnType<typeof checkPolicyFiles>>;
  if (revArg === undefined) {
    source = `the work tree of ${args.repo}`;
    report = await checkPolicyFiles(worktreeReader(args.repo));
  } else {
    const git = new Git({ dir: args.repo, bare });
    try {
      const rev = await git.resolveCommit(revArg).catch((err: unknown) => {
        throw new UsageError(`--rev: ${JSON.stringify(revArg)} is not a commit in ${args.repo}`, { cause: err });
      });
      source = `${revArg} (${short(rev)})`;
      report = await checkPolicyFiles(revReader(git, rev), (p) => `${p}@${short(rev)}`);
    } finally {
      git.close();
    }
  }
  const { checked, problems } = report;
  const lines = problems.map(problemLine);
  if (problems.length) {
    lines.push(`${problems.length} problem(s) in ${source}: a push of ${problems.length === 1 ? 'this file' : 'these files'} would be refused (docs/policy.md)`);
  } else if (!checked.length) {
    lines.push(`ok: no ${POLICY_PATH} in ${source} (the documented defaults apply) and none of the files they name`);
  } else {
    lines.push(`ok: ${checked.join(', ')} valid in ${source}${checked.includes(POLICY_PATH) ? '' : ` (no ${POLICY_PATH}: the documented defaults apply)`}`);
  }
  return { ok: problems.length === 0, source, checked, problems, lines };
}
