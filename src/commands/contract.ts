// `patchgate contract`: print the contract digest of a revision (last line of output) or, with
// --json, one JSON document holding the rows and the digest, so a person can add the digest to
// the allow file knowingly (and a script can read both with one JSON.parse).

import { contractFileCount, contractOf, type ContractFormat } from '../contract/digest.js';
import { Progress, stderrProgress } from '../progress.js';
import { Git } from '../git/git.js';
import { loadPolicy } from '../policy/config.js';

export async function runContract(args: { repo: string; rev: string; format?: ContractFormat; json: boolean }): Promise<string[]> {
  const git = new Git({ dir: args.repo });
  try {
    const rev = await git.resolveCommit(args.rev);
    const policy = await loadPolicy(git, rev);
    const format = args.format ?? policy.contract.format;
    // A large tree parses for seconds: progress on stderr once it has run for 2 s (src/progress.ts).
    const progress = new Progress({ ...stderrProgress(), delayMs: 2000 });
    progress.phase('patchgate: contract', await contractFileCount(git, rev, policy.contract.roots, format));
    const c = await contractOf(git, rev, policy.contract.roots, format, new Map(), { maxSourceBytes: policy.contract.maxSourceBytes, onFile: (n) => progress.tick(n) });
    progress.end();
    // The seed format reads the first root's .py files only: on a project with none (TypeScript)
    // its digest is the hash of nothing, which pins no API at all (issue 49).
    if (format === 'seed' && c.files === 0) process.stderr.write(`patchgate: contract: warning: the seed format reads .py files only and found none under ${policy.contract.roots[0] ?? '(no root)'}; this digest pins no API (use the v1 format for TypeScript)\n`);
    if (args.json) return [JSON.stringify({ rev, format, roots: policy.contract.roots, files: c.files, digest: c.digest, rows: c.rows })];
    return [c.digest];
  } finally {
    git.close();
  }
}
