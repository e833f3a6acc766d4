// The sealed work tree of `patchgate ci`: the judged tree written from git objects into a
// fresh folder outside the agent's checkout, the tests and fixtures made read-only, and a
// fingerprint of them (bytes, mode, inode, ctime) taken before the run and compared after.
// A test file rewritten during the run and restored at exit still changes its ctime, which
// no process can set back, so it is caught even when the run is root and the bytes match.

import { chmod, lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Git } from '../git/git.js';
import type { Policy } from '../policy/config.js';
import { protectedMatcher } from '../policy/match.js';
import { readLock } from '../fixtures/lock.js';

export interface Seal {
  root: string;
  guarded: (path: string) => boolean;
  before: Map<string, string>;
}

async function walk(root: string, rel = '', out: string[] = []): Promise<string[]> {
  for (const e of await readdir(join(root, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    out.push(p);
    if (e.isDirectory()) await walk(root, p, out);
  }
  return out;
}

async function fingerprint(root: string, guarded: (p: string) => boolean): Promise<Map<string, string>> {
  const m = new Map<string, string>();
  for (const p of await walk(root)) {
    if (!guarded(p)) continue;
    const abs = join(root, p);
    const st = await lstat(abs, { bigint: true });
    let body = '';
    if (st.isFile()) body = createHash('sha256').update(await readFile(abs)).digest('hex');
    else if (st.isSymbolicLink()) body = `-> ${await readlink(abs)}`;
    else if (st.isDirectory()) body = 'dir';
    m.set(p, `${st.mode.toString(8)} ${st.ino} ${st.ctimeNs} ${st.size} ${body}`);
  }
  return m;
}

/** Write `rev` into `root`, make the guarded paths read-only, fingerprint them. */
export async function sealTree(git: Git, rev: string, policy: Policy, root: string, afterExport?: () => Promise<void>): Promise<Seal> {
  await git.exportTree(rev, root);
  if (afterExport) await afterExport();
  const lock = await readLock(git, rev, policy.fixtures.lock);
  const locked = new Set(lock ? [...lock.keys()] : []);
  const lockedDirs = [...locked].map((p) => p.slice(0, p.lastIndexOf('/') + 1)).filter(Boolean);
  const prot = protectedMatcher([...policy.protected, ...policy.oracleFiles]);
  const guarded = (p: string): boolean => p === '.patchgate-holdout' || p.startsWith('.patchgate-holdout/') || prot(p) || locked.has(p) || lockedDirs.some((d) => p.startsWith(d) || `${p}/` === d);
  const paths = await walk(root);
  // Files first, then folders deepest first: a read-only folder would stop the files' chmod.
  for (const p of paths) if (guarded(p)) {
    const st = await lstat(join(root, p));
    if (st.isFile()) await chmod(join(root, p), st.mode & 0o111 ? 0o555 : 0o444);
  }
  for (const p of [...paths].reverse()) if (guarded(p) && (await lstat(join(root, p))).isDirectory()) await chmod(join(root, p), 0o555);
  return { root, guarded, before: await fingerprint(root, guarded) };
}

/** Paths of the guarded tree that changed, appeared or vanished since the seal. */
export async function verifySeal(seal: Seal): Promise<string[]> {
  const after = await fingerprint(seal.root, seal.guarded);
  const changed: string[] = [];
  for (const [p, f] of seal.before) {
    const g = after.get(p);
    if (g === undefined) changed.push(`${p} (removed)`);
    else if (g !== f) changed.push(`${p} (${g.split(' ').pop() !== f.split(' ').pop() ? 'bytes changed' : 'rewritten: its inode, mode or ctime changed'})`);
  }
  for (const p of after.keys()) if (!seal.before.has(p)) changed.push(`${p} (added)`);
  return changed.sort();
}

/** Make a sealed tree removable again (rm -r needs write permission on its folders). */
export async function unseal(root: string): Promise<void> {
  for (const p of await walk(root).catch(() => [] as string[])) {
    const st = await lstat(join(root, p)).catch(() => null);
    if (st?.isDirectory()) await chmod(join(root, p), 0o755).catch(() => {});
  }
}

/** The test process's environment: the gate's and the runners' own variables removed (`ownOnly`: patchgate's run variables alone; the sandbox adds its allow-list). */
export function sealedEnv(seed: number, extra: Record<string, string>, ownOnly = false): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of ownOnly ? [] : Object.entries(process.env)) {
    if (v === undefined) continue;
    if (/^(PATCHGATE_|GIT_|PYTEST_|_PYTEST|NODE_TEST|TAP_|PYTHONPATH$|PYTHONSTARTUP$|PYTHONUSERBASE$)/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, PYTHONHASHSEED: String(seed), PYTHONDONTWRITEBYTECODE: '1', PYTEST_DISABLE_PLUGIN_AUTOLOAD: '1', ...extra };
}
