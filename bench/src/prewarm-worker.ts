// Worker thread for the benchmark's cache prewarm: computes the contract of some sub-folders
// of src/ with the real contractOf (so the cache keys are exactly the daemon's), and posts
// the cache entries back. The bench writes them to the cache.db the child server starts with,
// so that measurement (1) starts from a warm daemon without paying the cold parse on one core.

import { parentPort, workerData } from 'node:worker_threads';
import { Git } from '../../dist/git/git.js';
import { contractOf } from '../../dist/contract/digest.js';
import { DEFAULT_MAX_SOURCE_BYTES } from '../../dist/policy/config.js';

interface Job {
  dir: string;
  rev: string;
  roots: string[];
}

const job = workerData as Job;
const cache = new Map<string, unknown>();
const git = new Git({ dir: job.dir });
try {
  for (const root of job.roots) await contractOf(git, job.rev, [root], 'v1', cache, { maxSourceBytes: DEFAULT_MAX_SOURCE_BYTES });
} finally {
  git.close();
}
// Only what a daemon keeps on disk: `mem:` entries (tree contracts, a folder's last walk) hold
// closures, which cannot cross to the parent, and a restarted daemon would not have them anyway.
parentPort!.postMessage([...cache.entries()].filter(([k]) => !k.startsWith('mem:')));
