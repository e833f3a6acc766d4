// Talking to a repository's upstream remote: fetching the trusted branch into the gate's bare
// repository (bounded in time, reused for a few seconds so a burst of pushes asks upstream
// once) and forwarding an accepted push's ref updates with the stored credential. The
// credential reaches git through a credential helper that reads it from the child's
// environment, so it is never in an argument list, a URL git could echo, or a log, and only
// for upstream's own scheme, host and port; git follows no redirect (one that points
// elsewhere would take the credential along), and a redirect is refused with one line. Every
// text that comes back from git or upstream is redacted before anyone sees it.

import { basename } from 'node:path';
import { credentialArgs, Git, isZeroId, REDIRECT_REFUSED } from '../git/git.js';
import { UpstreamError } from '../errors.js';
import { redactor, type UpstreamConfig } from './settings.js';

/** A fetch younger than this is reused by the next push. */
export const FRESH_MS = 3000;
/** Most one fetch or forward may take: two of them fit in the shims' margin past the hook time limit (SHIM_MARGIN_S, 30 s). */
export const UPSTREAM_TIMEOUT_MS = 14_000;

/** git options and environment that give git the upstream credential (and nothing else). */
function upstreamCredentialArgs(u: UpstreamConfig): { pre: string[]; env: Record<string, string> } {
  const c = credentialArgs(u.user, u.secret, u.url);
  return { pre: [...c.pre, '-c', 'protocol.file.allow=always'], env: c.env };
}

/** The one-line refusal of an upstream that answered with a redirect (git did not follow it), or null. */
function redirectReason(stderr: string, upstream: UpstreamConfig, repoDir: string, what: string): string | null {
  const m = REDIRECT_REFUSED.exec(stderr);
  if (!m) return null;
  const name = basename(repoDir).replace(/\.git$/, '');
  return `upstream ${upstream.url} answered the ${what} with a redirect (HTTP ${m[1]}), which the gate does not follow: its upstream credential goes only to that URL's own scheme, host and port; if the repository moved, point the gate at its new address: patchgate repo upstream ${name} NEW_URL`;
}

/** The lines of git's stderr worth showing (fatal/error/remote lines), redacted, at most `max`. */
function gitReason(stderr: string, redact: (s: string) => string, max = 6): string[] {
  const lines = redact(stderr).split('\n').map((l) => l.trimEnd()).filter((l) => l.trim());
  const useful = lines.filter((l) => /^(fatal|error|remote|hint: Updates were rejected)/i.test(l));
  return (useful.length ? useful : lines).slice(0, max);
}

export interface FetchResult {
  /** The trusted tip upstream has (null: upstream has no such branch yet). */
  tip: string | null;
  /** The gate's trusted tip changed with this fetch. */
  changed: boolean;
  /** Milliseconds the fetch took (0 when a fresh one was reused). */
  ms: number;
  reused: boolean;
}

/**
 * Fetches for every repository through one object, so concurrent pushes share one fetch
 * and a fetch younger than FRESH_MS is reused.
 */
export class UpstreamMirror {
  private readonly last = new Map<string, { at: number; tip: string | null }>();
  private readonly inflight = new Map<string, Promise<FetchResult>>();
  /** Refs that upstream took but the gate did not (its own update failed): fetched at the next sync. */
  readonly diverged = new Map<string, Set<string>>();

  constructor(private readonly freshMs = FRESH_MS) {}

  /**
   * Make the gate's `trustedRef` equal upstream's. Throws UpstreamError (redacted, naming
   * upstream) when upstream cannot be reached in `timeoutMs` or refuses the fetch.
   */
  refresh(repoDir: string, upstream: UpstreamConfig, trustedRef: string, opts: { timeoutMs?: number; force?: boolean; allHeads?: boolean } = {}): Promise<FetchResult> {
    const key = `${repoDir}\0${trustedRef}`;
    const last = this.last.get(key);
    // Reused only when nothing waits for repair (refs upstream moved that the gate did not).
    if (!opts.force && !opts.allHeads && !this.diverged.has(repoDir) && last && Date.now() - last.at < this.freshMs) return Promise.resolve({ tip: last.tip, changed: false, ms: 0, reused: true });
    const running = this.inflight.get(key);
    if (running && !opts.allHeads) return running;
    const p = fetchTrusted(repoDir, upstream, trustedRef, opts.timeoutMs ?? UPSTREAM_TIMEOUT_MS, [...(this.diverged.get(repoDir) ?? []), ...(opts.allHeads ? ['refs/heads/*'] : [])])
      .then((r) => {
        this.last.set(key, { at: Date.now(), tip: r.tip });
        this.diverged.delete(repoDir);
        return r;
      })
      .finally(() => this.inflight.delete(key));
    this.inflight.set(key, p);
    return p;
  }

  /** Forget the cached fetch (after a forward moved upstream, or when the upstream changes). */
  forget(repoDir: string): void {
    for (const k of [...this.last.keys()]) if (k.startsWith(`${repoDir}\0`)) this.last.delete(k);
  }

  markDiverged(repoDir: string, ref: string): void {
    let s = this.diverged.get(repoDir);
    if (!s) this.diverged.set(repoDir, (s = new Set()));
    s.add(ref);
  }
}

/** One fetch of the trusted branch (and `extra` refs) from upstream into the bare repository. */
export async function fetchTrusted(repoDir: string, upstream: UpstreamConfig, trustedRef: string, timeoutMs: number, extra: string[] = []): Promise<FetchResult> {
  const redact = redactor(upstream);
  const git = new Git({ dir: repoDir, bare: true });
  const t0 = Date.now();
  try {
    const before = await git.refTip(trustedRef);
    const { pre, env } = upstreamCredentialArgs(upstream);
    const specs = [...new Set([trustedRef, ...extra])].map((r) => `+${r}:${r}`);
    const r = await git.remote([...pre, 'fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--end-of-options', upstream.url, ...specs], { env, timeoutMs });
    const ms = Date.now() - t0;
    if (r.timedOut) throw new UpstreamError('UPSTREAM_UNREACHABLE', `upstream ${upstream.url} did not answer the fetch of ${trustedRef} within ${Math.round(timeoutMs / 1000)} s`);
    if (r.code !== 0) {
      const moved = redirectReason(r.stderr, upstream, repoDir, `fetch of ${trustedRef}`);
      if (moved) throw new UpstreamError('UPSTREAM_REFUSED', redact(moved));
      const why = gitReason(r.stderr, redact);
      // An upstream without the trusted branch yet (a new, empty repository): nothing to mirror.
      // A ref to repair that upstream no longer has: fetch the trusted branch alone.
      if (why.some((l) => /couldn't find remote ref/i.test(l)) && extra.length > 0) return fetchTrusted(repoDir, upstream, trustedRef, timeoutMs);
      if (why.some((l) => /couldn't find remote ref/i.test(l))) {
        if (before) await git.run(['update-ref', '-d', trustedRef, before]);
        return { tip: null, changed: before !== null, ms, reused: false };
      }
      throw new UpstreamError('UPSTREAM_UNREACHABLE', `upstream ${upstream.url} could not be fetched (${trustedRef}): ${why.join(' / ') || `git exit ${r.code}`}`, why.join('\n'));
    }
    const tip = await git.refTip(trustedRef);
    return { tip, changed: tip !== before, ms, reused: false };
  } finally {
    git.close();
  }
}

/**
 * Upstream's tips of `refs` (a ref upstream does not have is absent from the map), for the
 * recovery of a forward whose outcome is unknown. Throws UpstreamError when upstream does not answer.
 */
export async function upstreamTips(repoDir: string, upstream: UpstreamConfig, refs: string[], timeoutMs: number): Promise<Map<string, string>> {
  const redact = redactor(upstream);
  const git = new Git({ dir: repoDir, bare: true });
  try {
    const { pre, env } = upstreamCredentialArgs(upstream);
    const r = await git.remote([...pre, 'ls-remote', '--refs', '--end-of-options', upstream.url, ...refs], { env, timeoutMs });
    if (r.timedOut) throw new UpstreamError('UPSTREAM_UNREACHABLE', `upstream ${upstream.url} did not answer ls-remote within ${Math.round(timeoutMs / 1000)} s`);
    if (r.code !== 0) {
      const why = gitReason(r.stderr, redact);
      throw new UpstreamError('UPSTREAM_UNREACHABLE', `upstream ${upstream.url} could not be listed: ${why.join(' / ') || `git exit ${r.code}`}`, why.join('\n'));
    }
    const want = new Set(refs);
    const tips = new Map<string, string>();
    for (const line of r.stdout.split('\n')) {
      const m = /^([0-9a-f]{40,64})\t(\S+)$/.exec(line);
      if (m && want.has(m[2]!)) tips.set(m[2]!, m[1]!);
    }
    return tips;
  } finally {
    git.close();
  }
}

export interface ForwardItem {
  ref: string;
  oldId: string;
  newId: string;
  /** The update is not a fast-forward (or a delete): pushed with a lease on oldId. */
  forced: boolean;
}

export interface ForwardAnswer {
  ref: string;
  ok: boolean;
  /** Upstream's answer for this ref, redacted (e.g. "[new branch]", "[remote rejected] (pre-receive hook declined)"). */
  answer: string;
  /** Upstream's remote: lines and git's error lines, redacted. */
  messages: string[];
}

/**
 * Push the accepted updates to the same refs upstream, with the objects still in
 * receive-pack's quarantine (`env` holds its object-directory variables). `atomic` keeps an
 * `--atomic` push all-or-nothing upstream too. Never throws: every ref gets an answer.
 */
export async function forwardPush(repoDir: string, env: Record<string, string>, upstream: UpstreamConfig, items: ForwardItem[], opts: { atomic: boolean; timeoutMs: number }): Promise<{ answers: ForwardAnswer[]; ms: number }> {
  const redact = redactor(upstream);
  const t0 = Date.now();
  const objEnv: Record<string, string> = {};
  for (const k of ['GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES']) if (env[k]) objEnv[k] = env[k]!;
  const git = new Git({ dir: repoDir, bare: true, env: objEnv });
  const { pre, env: credEnv } = upstreamCredentialArgs(upstream);
  const args = [...pre, 'push', '--porcelain', '--no-verify'];
  if (opts.atomic) args.push('--atomic');
  for (const it of items) if (it.forced) args.push(`--force-with-lease=${it.ref}:${isZeroId(it.oldId) ? '' : it.oldId}`);
  args.push('--end-of-options', upstream.url);
  for (const it of items) args.push(isZeroId(it.newId) ? `:${it.ref}` : `${it.forced ? '+' : ''}${it.newId}:${it.ref}`);
  const r = await git.remote(args, { env: credEnv, timeoutMs: opts.timeoutMs });
  git.close();
  const ms = Date.now() - t0;
  const messages = gitReason(r.stderr, redact, 20);
  const moved = r.code !== 0 ? redirectReason(r.stderr, upstream, repoDir, 'push') : null;
  if (moved) return { ms, answers: items.map((it) => ({ ref: it.ref, ok: false, answer: redact(moved), messages: [] })) };
  if (r.timedOut) {
    return { ms, answers: items.map((it) => ({ ref: it.ref, ok: false, answer: `upstream ${upstream.url} did not answer within ${Math.round(opts.timeoutMs / 1000)} s`, messages })) };
  }
  // --porcelain: "<flag>\t<from>:<to>\t<summary> (<reason>)" per ref on stdout.
  const byRef = new Map<string, { flag: string; summary: string }>();
  for (const line of r.stdout.split('\n')) {
    const m = /^(.)\t([^\t]*):([^\t]+)\t(.*)$/.exec(line);
    if (m) byRef.set(m[3]!, { flag: m[1]!, summary: redact(m[4]!) });
  }
  const answers = items.map((it): ForwardAnswer => {
    const got = byRef.get(it.ref);
    if (!got) {
      const why = messages.filter((l) => !/^remote: *$/.test(l)).join(' / ') || `git push exit ${r.code}`;
      return { ref: it.ref, ok: false, answer: `upstream ${upstream.url} did not take the push: ${why}`, messages };
    }
    return { ref: it.ref, ok: got.flag !== '!', answer: got.summary, messages };
  });
  // An atomic push is all or nothing: one refusal refuses every ref.
  if (opts.atomic && answers.some((a) => !a.ok)) for (const a of answers) if (a.ok) Object.assign(a, { ok: false, answer: `${a.answer} (not applied: the atomic push failed on another ref)` });
  return { ms, answers };
}
