// The policy a push is judged under when the trusted branch's own no longer validates (issue 48).
// A policy is checked before a push lands it (rule `policy`), but a trusted branch can still
// get a broken one: a ref moved by hand, a host hook installed on such a repository, an older
// gate. Such a policy used to refuse every push, the person's fix included, and nothing
// documented got out of it. Now:
// - an agent's push is refused (decision row `policy-broken`): no agent may move anything
//   while nobody can say what the policy is;
// - a person's push is judged under the newest policy on the trusted branch's first-parent
//   history that validates (at most FALLBACK_DEPTH commits back), else the documented
//   defaults; rule `policy` then requires the pushed tree's own policy to validate, and its
//   outcome in the audit row records the fallback (`details.fallback`).

import { PolicyFileError } from '../errors.js';
import type { Git } from '../git/git.js';
import { defaultPolicy, loadPolicy, POLICY_PATH, type Policy, type PolicyFallback } from './config.js';
import { short } from './types.js';

/** First-parent commits below a broken trusted tip that are searched for a policy that validates. */
export const FALLBACK_DEPTH = 100;

/**
 * The policy of the trusted tip; when it does not validate, the fallback (a Policy with
 * `fallback` set). Throws only what is not the policy's fault (a git failure).
 */
export async function trustedPolicy(git: Git, tip: string | null): Promise<Policy> {
  let broken: PolicyFileError;
  try {
    return await loadPolicy(git, tip);
  } catch (e) {
    if (!(e instanceof PolicyFileError) || !tip) throw e;
    broken = e;
  }
  const why = { tip, path: broken.path, line: broken.line, error: broken.message };
  // Blob ids of policy files known not to validate: each version is read once.
  const seen = new Set<string>();
  const own = await git.pathId(tip, POLICY_PATH);
  if (own) seen.add(own.id);
  let at = tip;
  for (let n = 0; n < FALLBACK_DEPTH; n++) {
    const parent = (await git.commitHeader(at))?.parents[0];
    if (!parent) break;
    at = parent;
    const file = await git.pathId(at, POLICY_PATH);
    if (file && seen.has(file.id)) continue;
    try {
      const policy = await loadPolicy(git, at);
      return withFallback(policy, { ...why, under: at }, file ? `${POLICY_PATH}@${short(at)}` : `(defaults, no ${POLICY_PATH} at ${short(at)})`);
    } catch (e) {
      if (!(e instanceof PolicyFileError)) throw e;
      if (file) seen.add(file.id);
    }
  }
  return withFallback(defaultPolicy(), { ...why, under: null }, '(defaults)');
}

function withFallback(policy: Policy, fallback: PolicyFallback, from: string): Policy {
  return { ...policy, source: `${from}, in place of the broken ${POLICY_PATH}@${short(fallback.tip)}`, fallback };
}

/** What the fallback was, for a message: `ci/patchgate.json:3 … (judged under the policy of abc123)`. */
export function describeFallback(f: PolicyFallback): string {
  return `${f.path}${f.line !== null ? `:${f.line}` : ''} on the trusted branch (${short(f.tip)}) does not validate: ${f.error}`;
}

/** Where the fallback policy came from, in words. */
export function fallbackUnder(f: PolicyFallback): string {
  return f.under ? `the policy of ${short(f.under)}, the newest valid one on the trusted branch` : `the documented defaults (no valid policy within ${FALLBACK_DEPTH} commits of the trusted branch)`;
}
