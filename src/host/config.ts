// The one JSON config that `patchgate daemon --config FILE` and `patchgate hook install --host
// H --config FILE` share (DESIGN.md, "Pinned interface"): where the daemon keeps its state,
// which audit store it writes, and which host user names are people, agents or admins.
// A config that does not parse stops the daemon at start, never a push at run time.

import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError, errorMessage } from '../errors.js';
import { CLASS_NAME_RE } from '../policy/config.js';

const Globs = z.array(z.string().min(1)).default([]);
/** A branch name as `git check-ref-format --branch` takes it, without `refs/heads/`. */
const Branch = z.string().regex(/^(?!-)(?!.*\.\.)(?!.*\/\.)(?!.*@\{)(?!.*\.lock$)(?!.*\/$)(?!\.)[^\x00-\x20\x7f~^:?*[\\]+$/, 'not a branch name');

const Schema = z.strictObject({
  /** Folder of hook.endpoint, cache.db, the lock and the default audit log. */
  data: z.string().min(1),
  /** `sqlite:PATH` (default `sqlite:<data>/patchgate.db`) or `postgres://…`. */
  audit: z.string().min(1).optional(),
  humans: Globs,
  agents: Globs,
  admins: Globs,
  /**
   * Agent classes of the policy (issue 50, src/policy/classes.ts) by the host's user (or key)
   * name: globs to a class name, the first that matches wins; an agent no glob matches is of
   * the default class. Only agents have a class: a person's push is judged as a person's.
   */
  classes: z.record(z.string().min(1), z.string().regex(CLASS_NAME_RE, 'not a class name (lower case letters, digits, . _ -)')).default({}),
  /**
   * Which repositories are gated, by the repository's own folder (the real path of GIT_DIR):
   * a relative glob matches its path below one of `repoRoots` (`team/app` for
   * ROOT/team/app.git), an absolute one its whole real path; default all.
   */
  repos: z.array(z.string().min(1)).default(['**']),
  /** When set, a hook may only run in a repository below one of these folders. */
  repoRoots: z.array(z.string().min(1)).optional(),
  /**
   * The trusted branch, instead of the repository's HEAD: one branch for every repository, or
   * globs over the repository (as in `repos`) to a branch, the first that matches wins.
   */
  trusted: z.union([Branch, z.record(z.string().min(1), Branch)]).optional(),
  /** Seconds the policy may take per push (any host). */
  hookTimeout: z.number().positive().max(3600).default(30),
  /** The GHES budget for the whole hook, in ms (GitHub Enterprise allows 5 s for all hooks). */
  ghesBudgetMs: z.number().int().min(200).max(60_000).default(4500),
  /** Of that budget, what the daemon leaves for the shim to connect and relay (ms). */
  ghesReserveMs: z.number().int().min(50).max(10_000).default(500),
  /** `HOST:PORT` of the monitoring listener (/healthz, /metrics); port 0 picks one. */
  monitor: z.string().regex(/^[0-9A-Za-z.:[\]-]+:\d{1,5}$/).default('127.0.0.1:7006'),
  /** Each escalation (`git push -o patchgate.escalate=…`) is POSTed here as JSON (as `serve --notify-url`). */
  notifyUrl: z.string().regex(/^https?:\/\/\S+$/, 'an http:// or https:// URL').optional(),
  /** Bare repositories whose trusted tip is parsed into the cache at start. */
  warm: z.array(z.string().min(1)).default([]),
});

/**
 * `audit` is the log the config (or `daemon --audit`, or PATCHGATE_AUDIT_URL) gives, else the
 * default file; `auditFrom` says where a given one came from, null when none was given (then the
 * log the data folder records is used, src/server/folder-log.ts).
 */
export type DaemonConfig = z.infer<typeof Schema> & { audit: string; auditFrom: string | null; configPath: string | null };

/** Parse a config object; relative paths are taken from the config file's folder. */
export function parseDaemonConfig(raw: unknown, configPath: string | null = null): DaemonConfig {
  const r = Schema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new ConfigError(issue.path.join('.') || 'config', issue.message);
  }
  const base = configPath ? dirname(resolve(configPath)) : process.cwd();
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  const data = abs(r.data.data);
  // A relative `repos` glob names a repository by its path below a root: without roots it
  // could only be matched against a host variable, which never decides what is gated.
  const relative = r.data.repos.filter((p) => p !== '**' && !isAbsolute(p));
  if (relative.length && !r.data.repoRoots?.length) throw new ConfigError('repos', `${JSON.stringify(relative[0])} names repositories by their path below repoRoots: set repoRoots (the host's repository storage folder), or give absolute paths`);
  const trustedKeys = r.data.trusted && typeof r.data.trusted === 'object' ? Object.keys(r.data.trusted).filter((p) => p !== '**' && !isAbsolute(p)) : [];
  if (trustedKeys.length && !r.data.repoRoots?.length) throw new ConfigError('trusted', `${JSON.stringify(trustedKeys[0])} names repositories by their path below repoRoots: set repoRoots, or give absolute paths`);
  let audit = r.data.audit ?? `sqlite:${join(data, 'patchgate.db')}`;
  if (audit.startsWith('sqlite:')) audit = `sqlite:${abs(audit.slice('sqlite:'.length))}`;
  else if (!/^postgres(ql)?:\/\//.test(audit)) throw new ConfigError('audit', 'give sqlite:PATH or postgres://…');
  return {
    ...r.data, data, audit, auditFrom: r.data.audit ? (configPath ? `config ${resolve(configPath)}: audit` : 'config: audit') : null, configPath: configPath ? resolve(configPath) : null,
    repoRoots: r.data.repoRoots?.map(abs), warm: r.data.warm.map(abs),
  };
}

export function loadDaemonConfig(path: string): DaemonConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError('--config', `cannot read ${path}: ${(err as { code?: string }).code ?? errorMessage(err)}`, { cause: err });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError('--config', `${path} is not JSON: ${errorMessage(err)}`, { cause: err });
  }
  return parseDaemonConfig(raw, path);
}
