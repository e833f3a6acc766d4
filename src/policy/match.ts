// Path and ref matching. Protected patterns (paths for the write-block, branches for the
// refs rule) match case-insensitively after Unicode NFC, so `Tests/x.py`, `Release/1` or a
// decomposed "tésts/" cannot slip past `tests/**` or `release/**` (they collide with the
// protected name on a case-insensitive or normalising client); writable patterns match
// exactly (a path is writable only as written).

import picomatch from 'picomatch';

export type Matcher = (path: string) => boolean;

/** Compiled matchers by pattern list: a push's policy is usually the last push's policy. */
const compiled = new Map<string, Matcher>();

function compile(patterns: readonly string[], nocase: boolean): Matcher {
  const key = JSON.stringify([nocase, patterns]);
  let m = compiled.get(key);
  if (!m) {
    m = build(patterns, nocase);
    if (compiled.size >= 256) compiled.clear();
    compiled.set(key, m);
  }
  return m;
}

function build(patterns: readonly string[], nocase: boolean): Matcher {
  const fns = patterns.map((p) => picomatch(p.normalize('NFC'), { dot: true, nocase }));
  // `dir/**` also covers `dir` itself: a symlink or file put where the folder was.
  const bare = patterns.filter((p) => p.endsWith('/**')).map((p) => picomatch(p.slice(0, -3).normalize('NFC'), { dot: true, nocase }));
  const all = [...fns, ...bare];
  return (path: string) => {
    // picomatch's `*` does not cross a line break; a name with one must still match `tests/**`.
    const p = path.normalize('NFC').replace(/[\x00-\x1f\x7f]/g, '\uFFFD');
    return all.some((f) => f(p));
  };
}

export function protectedMatcher(patterns: readonly string[]): Matcher {
  return compile(patterns, true);
}

export function writableMatcher(patterns: readonly string[]): Matcher {
  return compile(patterns, false);
}

/**
 * Protected branch patterns (`release/**`), matched like protected paths: case-insensitive,
 * after NFC, and `release/**` also covers the branch `release` itself.
 */
export function protectedBranchMatcher(patterns: readonly string[]): Matcher {
  return compile(patterns, true);
}

/** A ref or branch name folded as the protected matchers fold it: NFC, then lower case. */
export function foldName(name: string): string {
  return name.normalize('NFC').toLowerCase();
}

/** Whether two branch names are the same name to a case-insensitive, normalising client. */
export function sameBranch(a: string, b: string): boolean {
  return a === b || foldName(a) === foldName(b) || a.normalize('NFC').toUpperCase() === b.normalize('NFC').toUpperCase();
}

/** The first pattern that matches, for messages. */
export function firstMatch(patterns: readonly string[], path: string, nocase: boolean): string | undefined {
  return patterns.find((p) => compile([p], nocase)(path));
}
