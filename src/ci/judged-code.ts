// The tested code must be the sealed tree's. On a src-layout project, pytest (and any
// interpreter a test starts) imports the copy installed in site-packages unless the sealed
// source root comes first on the import path; then a broken patch is judged by the installed
// package's behaviour. This module names the sealed tree's Python source roots (which the run
// puts first on PYTHONPATH), the project's top-level modules, and checks where patchgate's
// pytest plugin saw each of them imported from: one loaded from outside the sealed tree is red
// (`not-the-judged-code`).

import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Git } from '../git/git.js';

/** The sealed tree's Python source roots, first on PYTHONPATH: `src/` when the tree has one, else the root. */
export function pythonSourceRoots(root: string): string[] {
  const src = join(root, 'src');
  return existsSync(src) && statSync(src).isDirectory() ? [src] : [root];
}

// sitecustomize and usercustomize are site.py's start-up hooks; the strict run puts patchgate's stand-in first (channel/sitecustomize.py).
const NOT_MODULES = new Set(['sitecustomize', 'usercustomize', 'conftest', 'setup', 'noxfile', 'fabfile', 'tasks', 'docs', 'examples', 'test', 'tests', 'testing']);

/**
 * The project's top-level Python modules at `rev`, by import name, with their path in the
 * tree: packages (folders with `__init__.py`, or under `src/` any folder holding `.py` files)
 * and `NAME.py` files, of `src/` when the tree has one, else of the root.
 */
export async function projectModules(git: Git, rev: string): Promise<Map<string, string>> {
  const top = await git.lsTree(rev);
  const hasSrc = top.some((e) => e.path === 'src' && e.type === 'tree');
  const base = hasSrc ? 'src/' : '';
  const entries = hasSrc ? await git.lsTree(rev, { recursive: true, path: 'src/' }) : await git.lsTree(rev, { recursive: true });
  const out = new Map<string, string>();
  for (const e of entries) {
    if (e.type !== 'blob' || !e.path.startsWith(base) || !e.path.endsWith('.py')) continue;
    const rel = e.path.slice(base.length).split('/');
    if (rel.length === 1) {
      const name = rel[0]!.slice(0, -3);
      if (/^[A-Za-z_]\w*$/.test(name) && !NOT_MODULES.has(name)) out.set(name, e.path);
    } else {
      const name = rel[0]!;
      if (!/^[A-Za-z_]\w*$/.test(name) || NOT_MODULES.has(name)) continue;
      // At the root, only a real package counts (a folder of scripts is not imported by name).
      if (hasSrc || (rel.length === 2 && rel[1] === '__init__.py')) out.set(name, `${base}${name}/`);
    }
  }
  return out;
}

export interface ForeignModule {
  name: string;
  /** Where the run imported it from. */
  file: string;
  /** Where it is in the judged tree. */
  inTree: string;
}

/** Project modules the run imported from outside the sealed tree `root` (a module named like the runner's is the runner's: `runnerShadows`). */
export function foreignModules(imported: Record<string, string>, project: Map<string, string>, root: string, plugins: string[] = []): ForeignModule[] {
  const out: ForeignModule[] = [];
  for (const [name, inTree] of project) {
    if (isRunnerModule(name, plugins)) continue;
    const file = imported[name];
    if (file === undefined) continue;
    if (file === root || file.startsWith(root + '/')) continue;
    out.push({ name, file, inTree });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

// The runner's own top-level modules (issue 46): patchgate's stand-in sitecustomize pins them to
// folders outside the sealed tree (channel/sitecustomize.py), so a project package of one of
// these names is never what runs the tests. Keep in step with that file's list.
const RUNNER_MODULES = ['pytest', '_pytest', 'pluggy', 'iniconfig', 'py', 'patchgate_channel', 'patchgate_sealed', 'sitecustomize', 'usercustomize'];

/** The top-level names of the policy's `-p` plugins (`xdist.plugin` -> `xdist`), pinned like pytest. */
export function pluginModules(plugins: string[]): string[] {
  return plugins.map((p) => p.split('.')[0]!).filter((n) => /^[A-Za-z_]\w*$/.test(n));
}

export function isRunnerModule(name: string, plugins: string[] = []): boolean {
  return RUNNER_MODULES.includes(name) || name.startsWith('pytest_') || pluginModules(plugins).includes(name);
}

/**
 * The judged tree's modules named like the runner's, at the root (where `python -m` looks
 * first) and in `src/`: never imported in the runner's place; the run says so.
 */
export async function runnerShadows(git: Git, rev: string, plugins: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const dir of ['', 'src/']) {
    const entries = dir ? await git.lsTree(rev, { path: dir }).catch(() => []) : await git.lsTree(rev);
    for (const e of entries) {
      if (!e.path.startsWith(dir)) continue;
      const base = e.path.slice(dir.length);
      const name = e.type === 'tree' ? base : e.type === 'blob' && base.endsWith('.py') ? base.slice(0, -3) : null;
      if (name && !base.includes('/') && isRunnerModule(name, plugins)) out.push(e.type === 'tree' ? `${e.path}/` : e.path);
    }
  }
  return out.sort();
}

/** The runner's modules the run imported from inside the sealed tree `root` (the pin failed: the run is not evidence). */
export function runnerFromTree(imported: Record<string, string>, root: string, plugins: string[]): Array<{ name: string; file: string }> {
  return Object.entries(imported)
    .filter(([name, file]) => isRunnerModule(name, plugins) && (file === root || file.startsWith(root + '/')))
    .map(([name, file]) => ({ name, file: file.slice(root.length + 1) || '.' }));
}

/** The one-line reason of a foreign module, with the fix. */
export function foreignMessage(m: ForeignModule): string {
  return `${m.name} was imported from ${m.file}, not from the judged tree's ${m.inTree}: the run tested other code than the patch. Fix: let nothing put another copy first on the import path (sys.path.insert, pytest's pythonpath/rootdir settings, a .pth file); patchgate already puts the sealed source root first on PYTHONPATH. If an installed copy still wins, uninstall it (python3 -m pip uninstall ${m.name}) or run from a virtualenv without it`;
}
