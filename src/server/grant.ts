// What a token may read of the audit log (issue 20, item 7): the rows of the repositories its
// grant covers (`token create --repos GLOB`), never a `*-holdout` repository's (the held-out
// tests' paths are for admins only), and no row without a repository (auth failures, token
// and admin rows). Admins read everything. The grant is a list of repository names handed to
// the store's query (QueryOptions.repos, TableFilter.repos, overview's repos), so a limit or a
// page counts only rows the token may see.

import { allowsRepo, type AuthenticatedToken } from '../audit/tokens.js';
import { listRepos } from './repos.js';

/** Repository names whose rows a token may read; null: every row (an admin). */
export type Grant = readonly string[] | null;

/** A held-out repository: its rows name the held-out tests' paths. */
export function isHoldoutName(repo: string): boolean {
  return /-holdout$/i.test(repo.normalize('NFC'));
}

export function grantOf(token: Pick<AuthenticatedToken, 'role' | 'repos'>, dataDir: string): Grant {
  if (token.role === 'admin') return null;
  return listRepos(dataDir).filter((r) => allowsRepo(token, r) && !isHoldoutName(r));
}

export function grantAllows(grant: Grant, repo: string | null | undefined): boolean {
  if (grant === null) return true;
  return typeof repo === 'string' && grant.includes(repo);
}
