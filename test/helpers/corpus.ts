// The real projects of ../shared/corpus (git bundles) for tests that read real code: where to
// find them (beside the project, or where the CI clone finds them) and a clone into a temp
// folder. A missing bundle fails the test in CI and skips it by hand, saying so.

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { GIT_ENV, tempDir } from './repo.js';

export const CORPUS = process.env.PATCHGATE_CORPUS ?? [join(process.cwd(), '..', 'shared', 'corpus'), '/work/shared/corpus'].find((d) => existsSync(d)) ?? join(process.cwd(), '..', 'shared', 'corpus');

/** A fresh clone of corpus project `name` (its HEAD checked out), or null when the bundle is missing (failed in CI, skipped by hand). */
export function cloneCorpus(t: Test, name: string): string | null {
  const bundle = join(CORPUS, `${name}.bundle`);
  if (!existsSync(bundle)) {
    if (process.env.CI) t.fail(`${bundle} is missing`);
    else (t.skip as unknown as (message: string) => void)(`${bundle} is missing`); // a skipped point, as the other tests' skips
    return null;
  }
  const dir = tempDir(`pg-corpus-${name}-`);
  execFileSync('git', ['clone', '-q', bundle, dir], { env: { ...process.env, ...GIT_ENV } });
  return dir;
}
