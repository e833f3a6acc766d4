// The sandbox of `patchgate ci`'s strict run (issue 25). Every test process runs under
// bubblewrap (Debian's `bubblewrap`): new user, pid, ipc, uts, cgroup and network namespaces,
// uid 65534, no capabilities, a private /tmp, HOME and cache folder per run. Only the sealed
// tree and patchgate's own report folder are writable; the toolchains (/usr, /etc, the
// interpreters on PATH) and the dependencies CI installed are read-only; nothing else of the
// machine is there: not the data folder, not the agent's checkout, not the gate's config,
// not the parent's /proc. The environment is an allow-list, so no token can ride into it.

import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export type SandboxMode = 'bwrap' | 'none';

/** What the run may see besides the system folders. */
export interface SandboxSpec {
  /** Writable, at the same path inside (the sealed tree, patchgate's report folder). */
  writable: string[];
  /** Read-only, at the same path inside (the dependencies CI installed). */
  readOnly: string[];
  /** Empty writable folders over read-only ones (a runner's cache under node_modules). */
  scratch?: string[];
  cwd: string;
  /** The environment the test process starts with (already an allow-list: `sandboxEnv`), in this order. */
  env: Record<string, string>;
  /** uid and gid inside (default 65534) and the hostname (default patchgate-ci): a later run varies them (vary.ts). */
  uid?: number;
  hostname?: string;
}

const SYSTEM = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'];
/** Variables a test run may inherit from the gate's environment; everything else stays out. */
const PASS_ENV = /^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TERM|TZ|NO_COLOR|FORCE_COLOR|PYENV_ROOT|PYENV_VERSION|NODE_PATH|CI)$/;

/** Where patchgate itself is installed (dist/ci/ -> the package root). */
const GATE_HOME = resolve(fileURLToPath(new URL('../../', import.meta.url)));

let probed: { ok: true } | { ok: false; why: string } | null = null;

/** Whether bubblewrap is installed and can make the namespaces here (probed once per process). */
export function sandboxAvailable(): { ok: true } | { ok: false; why: string } {
  if (probed) return probed;
  const r = spawnSync('bwrap', ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', '--uid', '65534', '--gid', '65534', '--', 'true'], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') probed = { ok: false, why: 'bubblewrap (bwrap) is not installed: install the Debian package bubblewrap (apt-get install bubblewrap), or opt out with --sandbox none' };
  else if (r.status !== 0) probed = { ok: false, why: `bubblewrap cannot make its namespaces here (${(r.stderr?.toString('utf8') || String(r.error ?? r.status)).trim().split('\n')[0]}): allow unprivileged user namespaces, or opt out with --sandbox none` };
  else probed = { ok: true };
  return probed;
}

function homes(): string[] {
  let users: string[] = [];
  try {
    users = readdirSync('/home').map((d) => join('/home', d));
  } catch {
    /* no /home */
  }
  return ['/root', '/home', homedir(), ...users].map((p) => resolve(p));
}

const under = (p: string, dir: string): boolean => p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

/**
 * The interpreters' folders on PATH that live outside the system folders, to mount read-only:
 * `X/bin` or `X/shims` mounts X when X is an interpreter's prefix (pyenv's root, a virtualenv,
 * a node version) and not a home folder or `/`; any other entry mounts itself. Entries inside
 * `hidden` never do.
 */
export function toolchainMounts(path: string, hidden: string[]): string[] {
  const out = new Set<string>();
  const home = homes();
  for (const raw of path.split(':')) {
    if (!raw || !isAbsolute(raw) || !existsSync(raw)) continue;
    let p: string;
    try {
      p = realpathSync(raw);
    } catch {
      continue;
    }
    if (SYSTEM.some((s) => under(p, s)) || !statSync(p).isDirectory()) continue;
    const parent = dirname(p);
    // The parent only when it is an interpreter's own prefix (pyenv/nodenv's `versions`, a
    // virtualenv's `pyvenv.cfg`, a prefix's `lib/`): `~/.cargo/bin` mounts itself, never
    // `~/.cargo` with its registry credentials.
    const prefix = ['versions', 'pyvenv.cfg', 'lib'].some((n) => existsSync(join(parent, n)));
    const mount = /^(bin|shims)$/.test(basename(p)) && parent !== '/' && !home.includes(parent) && prefix ? parent : p;
    // The gate's own folder (its config, its data by default) and package bins are no toolchain.
    if (/(^|\/)node_modules(\/|$)/.test(mount) || [...hidden, GATE_HOME].some((h) => under(mount, h) || under(h, mount))) continue;
    out.add(mount);
  }
  // A folder inside another mounted one is mounted with it.
  return [...out].filter((p) => ![...out].some((q) => q !== p && under(p, q)));
}

/** The environment inside: an allow-list of the gate's, HOME and caches per run, then `extra` (the runner's own variables). */
export function sandboxEnv(extra: Record<string, string>, home: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && PASS_ENV.test(k)) env[k] = v;
  // pyenv's shims find their root under HOME unless told: HOME is the run's own now.
  const shims = (env.PATH ?? '').split(':').find((p) => /\/\.pyenv\/shims$/.test(p));
  if (!env.PYENV_ROOT && shims) env.PYENV_ROOT = shims.replace(/\/shims$/, '');
  return { ...env, HOME: home, TMPDIR: '/tmp', XDG_CACHE_HOME: join(home, '.cache'), npm_config_cache: join(home, '.npm'), ...extra };
}

function mountSystem(args: string[]): void {
  for (const s of SYSTEM) {
    let st;
    try {
      st = lstatSync(s);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(s), s);
    else if (st.isDirectory()) args.push('--ro-bind', s, s);
  }
}

/**
 * Whether `file` names an executable as the sandboxed run would find it (a path from `cwd`, or a
 * name on `path`). Inside, bwrap's own execvp failure would read as a failed run; outside, the
 * gate says in one line that the command is not there.
 */
export function findExecutable(file: string, cwd: string, path: string): boolean {
  const ok = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (file.includes('/')) return ok(resolve(cwd, file));
  return path.split(':').some((d) => d && ok(join(d, file)));
}

/** bwrap's argv around `argv`. */
export function sandboxArgv(argv: string[], spec: SandboxSpec, hidden: string[]): string[] {
  const id = String(spec.uid ?? 65534);
  const a = ['bwrap', '--unshare-all', '--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--uid', id, '--gid', id, '--hostname', spec.hostname ?? 'patchgate-ci'];
  mountSystem(a);
  a.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
  const home = spec.env.HOME;
  if (home) a.push('--dir', home);
  const tmp = spec.env.TMPDIR;
  if (tmp && tmp !== '/tmp' && tmp.startsWith('/tmp/')) a.push('--dir', tmp);
  for (const p of toolchainMounts(spec.env.PATH ?? '', hidden)) a.push('--ro-bind', p, p);
  for (const p of spec.readOnly) a.push('--ro-bind', p, p);
  for (const p of spec.writable) a.push('--bind', p, p);
  for (const p of spec.scratch ?? []) {
    // A tmpfs needs its mount point in the read-only folder; an empty folder there is all it is.
    try {
      mkdirSync(p, { recursive: true });
      a.push('--tmpfs', p);
    } catch {
      /* the runner then finds its cache read-only and says so */
    }
  }
  // Exactly the run's environment, whatever the process that spawns bwrap adds to its own.
  a.push('--clearenv');
  for (const [k, v] of Object.entries(spec.env)) a.push('--setenv', k, v);
  a.push('--chdir', spec.cwd, '--', ...argv);
  return a;
}
