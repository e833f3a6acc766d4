// Where the agent pushed, as far as the gate can know it without a secret, and the one shell
// command that turns that into a remote the printed fix can name. Issue 12: a remediation
// ending in `git push origin …` fails for an agent that pushed to a URL, and one ending in the
// gate's URL fails for an agent whose token sits in its remote's URL. So the first printed
// command sets up a remote `patchgate-fix` in the agent's own clone: the URL of the agent's
// remote that points at this gate (credentials and all, copied locally, never printed), else
// the gate's URL without credentials (for a client whose token comes from a credential
// helper or GIT_ASKPASS). Every later line names `patchgate-fix`, so each runs as printed,
// one per shell. Only values checked against a strict character set reach the command.

/** What the gate knows of the address the client used: never a credential. */
export interface PushTarget {
  /** The repository's URL as the client addressed it, without user or token (own server, upstream mode). */
  url?: string;
  /** Inside a git host: the repository's path on the host (`group/project`), matched against the clone's remotes. */
  path?: string;
  /** Inside a git host (its label): people push with their key or account there, not with a gate token. */
  host?: string;
}

/** The remote the remediation sets up and then names. */
export const FIX_REMOTE = 'patchgate-fix';

const SAFE_URL = /^https?:\/\/(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?(?:\/[A-Za-z0-9._~%+-]+)*$/;
const SAFE_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
const SAFE_PATH = /^[A-Za-z0-9._~+-]+(?:\/[A-Za-z0-9._~+-]+)*$/;

/**
 * The URL of repository `rawName` (as it appeared in the request path, before `.git`) from
 * the client's Host header, or from `publicUrl` (the base URL clients use, for a gate behind
 * a proxy). Null when neither gives a URL made only of safe characters.
 */
export function requestPushUrl(opts: { publicUrl?: string; host?: string; tls: boolean; rawName: string }): string | null {
  if (!/^[A-Za-z0-9._~%+-]+$/.test(opts.rawName)) return null;
  let base: string | null = null;
  if (opts.publicUrl) base = opts.publicUrl.replace(/\/+$/, '');
  else if (opts.host && SAFE_HOST.test(opts.host)) base = `${opts.tls ? 'https' : 'http'}://${opts.host}`;
  if (!base) return null;
  const url = `${base}/${opts.rawName}.git`;
  return SAFE_URL.test(url) ? url : null;
}

/** Check a configured public base URL (`--public-url`); throws a one-line reason. */
export function checkPublicUrl(raw: string): string {
  const base = raw.replace(/\/+$/, '');
  if (!SAFE_URL.test(`${base}/x.git`)) {
    throw new Error(`not a base URL of plain characters like https://git.example.com or https://example.com/gate (no user, token, query or quotes): ${JSON.stringify(raw.slice(0, 100))}`);
  }
  return base;
}

/** A host repository path safe to print (else undefined). */
export function hostRepoPath(path: string | undefined): string | undefined {
  const p = (path ?? '').replace(/^\/+|\/+$/g, '').replace(/\.git$/, '');
  return p && SAFE_PATH.test(p) ? p : undefined;
}

/**
 * The command that sets `remote.patchgate-fix.url` in the agent's clone, or null when the
 * gate knows nothing of the address. awk picks the first push URL of a remote (other than
 * `patchgate-fix` itself, which may be stale from an earlier refusal) that, with any
 * `user:token@` taken out, is the gate's URL (or, in a host, ends in the repository's path);
 * the fallback is the gate's URL, or in a host the push URL of `origin`.
 */
export function fixRemoteCommand(target: PushTarget | undefined): string | null {
  if (target?.url && SAFE_URL.test(target.url)) {
    const awk =
      `$3 == "(push)" && $1 != "${FIX_REMOTE}" && f == "" { s = $2; sub(/\\/\\/[^\\/@]*@/, "//", s); sub(/\\/+$/, "", s); if (s == u) f = $2 } ` +
      `END { if (f == "") print "no remote of this clone points at " u ": the push asks your credential helper; if it holds no token, put yours in: git config remote.${FIX_REMOTE}.url http://USER:TOKEN@..." > "/dev/stderr"; print (f != "" ? f : u) }`;
    return `git config remote.${FIX_REMOTE}.url "$(git remote -v | awk -v u='${target.url}' '${awk}')"`;
  }
  const path = hostRepoPath(target?.path);
  if (path) {
    const awk =
      `$3 == "(push)" && $1 != "${FIX_REMOTE}" && f == "" { s = $2; sub(/\\/+$/, "", s); sub(/\\.git$/, "", s); n = length(s) - length(p); ` +
      `if (n > 0 && (substr(s, n) == "/" p || substr(s, n) == ":" p)) f = $2 } ` +
      `END { if (f == "") { "git remote get-url --push origin" | getline f } print f }`;
    return `git config remote.${FIX_REMOTE}.url "$(git remote -v | awk -v p='${path}' '${awk}')"`;
  }
  return null;
}
