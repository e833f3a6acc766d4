// Per-repository gate settings that are not git's: the upstream remote the gate sits in front
// of (with its credential) and the rollout mode (enforce or evaluate). One JSON file per
// repository, `<data>/repo-settings/NAME.json`, in a folder of mode 0700, the file 0600,
// written whole and renamed into place. The credential is kept apart from the URL and is
// never returned by anything that prints: `describeUpstream` and `redactor` exist so no
// caller has to remember that.

import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UpstreamError, UsageError } from '../errors.js';

export type GateMode = 'enforce' | 'evaluate';
export const GATE_MODES: readonly GateMode[] = ['enforce', 'evaluate'];

export interface UpstreamConfig {
  /** The URL without any user name or password. */
  url: string;
  user: string | null;
  secret: string | null;
}

export interface RepoSettings {
  mode: GateMode;
  upstream: UpstreamConfig | null;
}

const DEFAULTS: RepoSettings = { mode: 'enforce', upstream: null };

export function settingsDir(dataDir: string): string {
  return join(dataDir, 'repo-settings');
}

function settingsPath(dataDir: string, name: string): string {
  return join(settingsDir(dataDir), `${name}.json`);
}

/** The repository's settings; defaults when it has none. An unreadable file throws (the push is refused). */
export function readSettings(dataDir: string, name: string): RepoSettings {
  const p = settingsPath(dataDir, name);
  if (!existsSync(p)) return { ...DEFAULTS };
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(p, 'utf8'));
  } catch (err) {
    throw new UpstreamError('UPSTREAM_CONFIG', `the settings of repository ${name} (${p}) cannot be read; fix or remove the file, then run: patchgate repo upstream ${name} URL`, '', { cause: err });
  }
  const o = raw as Partial<RepoSettings>;
  const mode = GATE_MODES.includes(o.mode as GateMode) ? (o.mode as GateMode) : 'enforce';
  const u = o.upstream as UpstreamConfig | null | undefined;
  const upstream = u && typeof u.url === 'string' ? { url: u.url, user: typeof u.user === 'string' ? u.user : null, secret: typeof u.secret === 'string' ? u.secret : null } : null;
  return { mode, upstream };
}

export function writeSettings(dataDir: string, name: string, s: RepoSettings): void {
  const dir = settingsDir(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const p = settingsPath(dataDir, name);
  const tmp = `${p}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(s, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, p);
}

export function removeSettings(dataDir: string, name: string): void {
  rmSync(settingsPath(dataDir, name), { force: true });
}

/**
 * Parse `--upstream URL` (+ an optional credential file whose first line is the secret, or
 * `user:secret`). http(s) URLs may carry `user:secret@`; it is split off and stored apart.
 * `file://` is for tests and local mirrors. Anything else is refused: the gate's git reaches
 * upstream over HTTP(S) only, with the stored token. A token over plain http:// would cross the
 * network in clear text: refused unless the host is this machine (loopback) or the operator
 * says so with `--allow-http-credential` (issue 49).
 */
export function parseUpstream(raw: string, credentialFile?: string, opts: { allowHttpCredential?: boolean } = {}): UpstreamConfig {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--upstream: not a URL (give https://host/org/app.git, or file:///path for a local repository)`);
  }
  if (!['http:', 'https:', 'file:'].includes(url.protocol)) {
    throw new UsageError(`--upstream: ${url.protocol.replace(':', '')} URLs are not supported; give the repository's https:// URL and a token (see README "In front of GitHub or GitLab")`);
  }
  let user = url.username ? decodeURIComponent(url.username) : null;
  let secret = url.password ? decodeURIComponent(url.password) : null;
  url.username = '';
  url.password = '';
  if (credentialFile !== undefined) {
    let text: string;
    try {
      text = readFileSync(credentialFile, 'utf8');
    } catch (err) {
      throw new UsageError(`--upstream-credential-file: cannot read ${credentialFile}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, { cause: err });
    }
    const line = text.split(/\r?\n/)[0]!.trim();
    if (!line) throw new UsageError(`--upstream-credential-file: ${credentialFile} is empty (its first line is the token, or user:token)`);
    const colon = line.indexOf(':');
    if (colon > 0 && !/^[a-z]+:\/\//i.test(line)) {
      user = line.slice(0, colon);
      secret = line.slice(colon + 1);
    } else secret = line;
  }
  if (secret && !user) user = 'x-access-token';
  if (secret && url.protocol === 'http:' && !isLoopback(url.hostname) && !opts.allowHttpCredential) {
    throw new UsageError(`--upstream: http://${url.host} would carry the token in clear text; give the https:// URL, or pass --allow-http-credential if that network is private and you accept the risk`);
  }
  return { url: url.toString(), user, secret };
}

/** A host name that is this machine: localhost, 127.0.0.0/8, ::1. */
function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** What may be printed about an upstream: the URL without credentials, and whether one is stored. */
export function describeUpstream(u: UpstreamConfig | null): string {
  if (!u) return 'none';
  return `${u.url}${u.secret ? ` (credential stored for user ${u.user ?? 'x-access-token'})` : ' (no credential)'}`;
}

/**
 * A function that replaces the credential (as given, URL-encoded, and inside a Basic header)
 * and any `user:password@` in a URL with `***`. Every text from upstream or git passes it.
 */
export function redactor(u: UpstreamConfig | null): (text: string) => string {
  const forms = new Set<string>();
  if (u?.secret) {
    forms.add(u.secret);
    forms.add(encodeURIComponent(u.secret));
    forms.add(Buffer.from(`${u.user ?? ''}:${u.secret}`).toString('base64'));
  }
  const list = [...forms].filter((f) => f.length >= 1).sort((a, b) => b.length - a.length);
  return (text: string) => {
    let out = text;
    for (const f of list) out = out.split(f).join('***');
    return out.replace(/(\/\/)[^/@\s:]*:[^/@\s]*@/g, '$1***@');
  };
}
