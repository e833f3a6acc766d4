// A never-seen tree is streamed (issue 24): a bounded number of files are read at once, and
// two contracts over trees that share folders (a push and the warm-up of its base) read each
// shared file once. Real repositories and a real cat-file reader; reads are only counted.

import t from 'tap';
import { Git } from '../../src/git/git.js';
import { contractOf } from '../../src/contract/digest.js';
import { TestRepo } from '../helpers/repo.js';

function tree(n: number): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) files[`src/d${i % 12}/s${i % 3}/f${i}.ts`] = `export function f${i}(a: number): number { return a + ${i}; }\n`;
  return files;
}

/** Counts blob reads through `git`, and the most in flight at once. */
function countReads(git: Git): { reads: Map<string, number>; max: () => number } {
  const reads = new Map<string, number>();
  let now = 0;
  let max = 0;
  const readBlob = git.readBlob.bind(git);
  git.readBlob = async (spec: string) => {
    reads.set(spec, (reads.get(spec) ?? 0) + 1);
    max = Math.max(max, ++now);
    try {
      return await readBlob(spec);
    } finally {
      now--;
    }
  };
  return { reads, max: () => max };
}

t.test('a cold walk of 300 files reads at most 32 at once', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', tree(300));
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const seen = countReads(git);
  const c = await contractOf(git, 'HEAD', ['src/'], 'v1', new Map());
  t.equal(c.files, 300);
  t.equal(seen.reads.size, 300, 'every file read');
  t.ok(seen.max() <= 32, `at most 32 reads in flight (saw ${seen.max()})`);
  t.ok(seen.max() > 1, 'but more than one: the reads overlap');
});

t.test('two revisions computed at once read each shared file once', async (t) => {
  const r = TestRepo.init(t);
  const base = r.commit('base', tree(120));
  const head = r.commit('one change', { 'src/d5/s2/f65.ts': 'export function f65(a: number, b?: number): number { return a; }\n' });
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const seen = countReads(git);
  const cache = new Map<string, unknown>();
  const [a, b] = await Promise.all([contractOf(git, base, ['src/'], 'v1', cache), contractOf(git, head, ['src/'], 'v1', cache)]);
  t.not(a.digest, b.digest, 'the change moved the digest');
  t.equal(seen.reads.size, 121, '120 files and the changed one');
  t.same([...seen.reads.values()].filter((n) => n > 1), [], 'none read twice');
  const fresh = await contractOf(git, head, ['src/'], 'v1', new Map());
  t.equal(b.digest, fresh.digest, 'the shared walk gives the digest a walk of its own gives');
  t.same(b.rows, fresh.rows);
});
