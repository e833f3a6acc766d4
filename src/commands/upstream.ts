// The operator's commands for a repository in front of an upstream remote: `repo create
// --upstream/--mode`, `repo upstream NAME URL|none`, `repo sync NAME`, `repo mode NAME
// enforce|evaluate`, and the hidden `repo warm NAME` a create or sync starts in the
// background to fill the contract cache for the fetched trusted tip. Every change is an
// audited admin action in the data folder's log (./folder-log.ts: `--audit`, else
// PATCHGATE_AUDIT_URL, else the log the folder records), opened before anything changes; the
// credential is never printed or audited.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeAudit } from '../audit/sink.js';
import { folderLog, withFolderLog } from './folder-log.js';
import { ContractParseError, UsageError } from '../errors.js';
import { Git } from '../git/git.js';
import { checkHooks, createRepo, holdoutOf, listRepos, normalizeRepoName, resolveRepo } from '../server/repos.js';
import { fetchTrusted } from '../upstream/remote.js';
import { describeUpstream, GATE_MODES, parseUpstream, readSettings, writeSettings, type GateMode, type UpstreamConfig } from '../upstream/settings.js';

/** Who ran the command, as the operating system names them (for the admin row; never a secret). */
function osUser(): string | null {
  try {
    return userInfo().username;
  } catch {
    return null;
  }
}

/** The CLI's own fetch (a first clone of a large repository may take minutes). */
const CLI_FETCH_TIMEOUT_MS = 10 * 60_000;

/** Appends one admin row to the folder's log. */
type Audit = (action: string, subject: string, detail: unknown) => Promise<unknown>;

/** The folder's log, open for `fn`, as the `audit` function the commands write their rows with. */
function withAudit<T>(args: { data: string; audit?: string }, fn: (audit: Audit) => Promise<T>): Promise<T> {
  return withFolderLog(args, (s) => fn(async (action, subject, detail) => s.appendAdmin({ actor: 'cli', action, subject, detail })));
}

/** The folder's log as people read it (no password). */
function describeFolderLog(args: { data: string; audit?: string }): string {
  return describeAudit(folderLog(args).location);
}

function repoDirOf(data: string, raw: string): { name: string; dir: string } {
  const name = normalizeRepoName(raw);
  const dir = resolveRepo(resolve(data), name);
  if (!dir) throw new UsageError(`no repository ${name} under ${resolve(data, 'repos')}; create it with: patchgate repo create ${name} --data ${data}`);
  return { name, dir };
}

async function trustedRef(dir: string): Promise<string> {
  const git = new Git({ dir, bare: true });
  try {
    return (await git.symbolicHead()) ?? 'refs/heads/main';
  } finally {
    git.close();
  }
}

/** Fetch now; a failure throws one redacted line naming upstream. */
async function syncNow(audit: Audit, data: string, name: string, dir: string, u: UpstreamConfig, all: boolean, wait = false): Promise<string> {
  const ref = await trustedRef(dir);
  // The first fetch of a large repository may take minutes; a push's own fetch has the short limit.
  const r = await fetchTrusted(dir, u, ref, CLI_FETCH_TIMEOUT_MS, all ? ['refs/heads/*'] : []);
  await audit('repo.sync', name, { upstream: u.url, ref, tip: r.tip, changed: r.changed, ms: r.ms });
  if (!r.tip) return `upstream ${u.url} has no ${ref} yet`;
  const got = `${ref} is ${r.tip} from upstream ${u.url}${r.changed ? ' (updated)' : ' (unchanged)'}`;
  // --wait: the warm-up runs here, with its progress on stderr, and the command returns when it is done.
  if (wait) return `${got}; ${(await runRepoWarm({ data, name })).join('; ')}`;
  startWarm(data, name);
  return `${got}; contract cache warming in the background`;
}

/** `repo warm NAME` in a detached child: the CLI returns while the cache fills. */
function startWarm(data: string, name: string): void {
  const cli = fileURLToPath(new URL('../cli.js', import.meta.url));
  if (!existsSync(cli)) return; // run from the sources (tests): nothing built to start
  const child = spawn(process.execPath, [cli, 'repo', 'warm', name, '--data', resolve(data)], { detached: true, stdio: 'ignore' });
  child.on('error', () => {});
  child.unref();
}

export async function runRepoCreateUpstream(args: { data: string; name: string; trusted: string; upstream?: string; credentialFile?: string; allowHttpCredential?: boolean; mode?: GateMode; wait?: boolean; audit?: string }): Promise<string[]> {
  const u = args.upstream && args.upstream !== 'none' ? parseUpstream(args.upstream, args.credentialFile, { allowHttpCredential: args.allowHttpCredential }) : null;
  return withAudit(args, async (audit) => {
    const dir = await createRepo(resolve(args.data), args.name, args.trusted);
    const name = normalizeRepoName(args.name);
    await audit('repo.create', name, { dir, trusted: args.trusted, upstream: u ? u.url : null, mode: args.mode ?? 'enforce' });
    await audit('repo.mode', name, { from: null, to: args.mode ?? 'enforce', user: osUser() });
    writeSettings(resolve(args.data), name, { mode: args.mode ?? 'enforce', upstream: u });
    const out = [`created ${dir} (trusted branch ${args.trusted}, hooks installed, receive.fsckObjects on, packs over 1 GiB refused)`];
    if (args.mode === 'evaluate') out.push(`mode: evaluate (pushes are judged and audited; one refused only for its content is accepted as would-reject; the refs rule and the policy files stay enforced)`);
    if (u) {
      out.push(`upstream: ${describeUpstream(u)}`);
      out.push(await syncNow(audit, args.data, name, dir, u, false, !!args.wait));
    }
    return out;
  });
}

export async function runRepoUpstream(args: { data: string; name: string; url: string; credentialFile?: string; allowHttpCredential?: boolean; audit?: string }): Promise<string[]> {
  const { name, dir } = repoDirOf(args.data, args.name);
  const settings = readSettings(resolve(args.data), name);
  const u = args.url === 'none' ? null : parseUpstream(args.url, args.credentialFile, { allowHttpCredential: args.allowHttpCredential });
  return withAudit(args, async (audit) => {
    // A new upstream is stored only once a fetch with it worked: a typo never replaces a working one.
    const synced = u ? await syncNow(audit, args.data, name, dir, u, false) : '';
    await audit('repo.upstream', name, { upstream: u ? u.url : null, credential: u?.secret ? 'stored' : 'none' });
    writeSettings(resolve(args.data), name, { ...settings, upstream: u });
    if (!u) return [`repository ${name} has no upstream now: pushes are judged and kept on the gate only`];
    return [`upstream of ${name}: ${describeUpstream(u)}`, synced];
  });
}

export async function runRepoSync(args: { data: string; name: string; audit?: string }): Promise<string[]> {
  const { name, dir } = repoDirOf(args.data, args.name);
  const { upstream } = readSettings(resolve(args.data), name);
  if (!upstream) throw new UsageError(`repository ${name} has no upstream; set one with: patchgate repo upstream ${name} URL`);
  return withAudit(args, async (audit) => [await syncNow(audit, args.data, name, dir, upstream, true)]);
}

export async function runRepoMode(args: { data: string; name: string; mode: string; audit?: string }): Promise<string[]> {
  const { name } = repoDirOf(args.data, args.name);
  if (!GATE_MODES.includes(args.mode as GateMode)) throw new UsageError(`mode must be enforce or evaluate (got ${JSON.stringify(args.mode)})`);
  const settings = readSettings(resolve(args.data), name);
  // The admin row first: a switch the audit log cannot record does not happen.
  const log = await withAudit(args, async (audit) => {
    await audit('repo.mode', name, { from: settings.mode, to: args.mode, user: osUser() });
    return describeFolderLog(args);
  });
  writeSettings(resolve(args.data), name, { ...settings, mode: args.mode as GateMode });
  return [args.mode === 'evaluate'
    ? `repository ${name} is in evaluate mode: every push is judged and audited; one that would be refused only for its content (write-block outside the policy files, contract, fixtures, ledger, tamper-scan) is accepted and audited as would-reject (list them: patchgate audit --verdict would-reject); the refs rule and the policy files stay enforced`
    : `repository ${name} is in enforce mode: pushes the policy refuses are refused`,
  `recorded in the audit log ${log} (repo.mode ${settings.mode} -> ${args.mode})`];
}

/** Fill `<data>/cache.db` with the contract of the trusted tip (what the server reads on a miss). */
export async function runRepoWarm(args: { data: string; name: string; progress?: { write: (text: string) => void; isTTY: boolean } }): Promise<string[]> {
  const { name, dir } = repoDirOf(args.data, args.name);
  const { PersistentCache, ContentCache } = await import('../cache/content-cache.js');
  const { loadPolicy } = await import('../policy/config.js');
  const { CONTRACT_SKIPPED_WHY, contractFileCount, contractOf } = await import('../contract/digest.js');
  const { Progress, stderrProgress } = await import('../progress.js');
  const disk = new PersistentCache(join(resolve(args.data), 'cache.db'), () => {});
  const git = new Git({ dir, bare: true });
  try {
    const tip = await git.refTip(await trustedRef(dir));
    if (!tip) return [`${name}: no trusted tip to warm`];
    const policy = await loadPolicy(git, tip);
    const t0 = Date.now();
    const { roots, format, maxSourceBytes } = policy.contract;
    // Files read of the total, the rate and the time left, on stderr (src/progress.ts).
    const progress = new Progress({ ...(args.progress ?? stderrProgress()), skippedWhy: CONTRACT_SKIPPED_WHY });
    progress.phase(`patchgate: warming ${name}`, await contractFileCount(git, tip, roots, format));
    const c = await contractOf(git, tip, roots, format, new ContentCache(disk), { maxSourceBytes, onFile: (n) => progress.tick(n) }).catch((err: unknown) => {
      if (err instanceof ContractParseError) return null;
      throw err;
    });
    progress.end(c ? '' : 'the trusted tip does not parse');
    return [`${name}: contract of ${tip} ${c ? 'cached' : 'does not parse (nothing cached)'} in ${Date.now() - t0} ms`];
  } finally {
    git.close();
    disk.close();
  }
}

export interface RepoInfo {
  name: string;
  dir: string;
  trusted: string | null;
  mode: GateMode;
  /** The upstream URL (no credential ever), or null. */
  upstream: string | null;
  upstreamCredential: boolean;
  /** `ok`, or why the repository is not served (a missing or foreign hook). */
  hooks: string;
  holdoutOf: string | null;
}

/** `repo list`: every repository under the data folder, as the server would see it at start. */
export async function listRepoInfo(args: { data: string }): Promise<RepoInfo[]> {
  const data = resolve(args.data);
  const out: RepoInfo[] = [];
  for (const name of listRepos(data)) {
    const dir = resolveRepo(data, name);
    if (!dir) continue;
    const settings = readSettings(data, name);
    const state = checkHooks(dir);
    out.push({
      name, dir, trusted: (await trustedRef(dir).catch(() => null))?.replace(/^refs\/heads\//, '') ?? null,
      mode: settings.mode, upstream: settings.upstream?.url ?? null, upstreamCredential: !!settings.upstream?.secret,
      hooks: state.ok ? 'ok' : state.reason, holdoutOf: holdoutOf(dir),
    });
  }
  return out;
}
