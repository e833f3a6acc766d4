// Python re-exports from private modules, resolved over a whole contract root. Per-file rows
// stay pure (one blob in, rows out, cached per blob id), but a public module that exports a
// name defined in a private module (`from ._impl import parse` in an `__init__.py` without
// `__all__`, or listed in `__all__`) makes that definition API under the public name. Its rows
// depend on another file's content, so they are computed here, after the per-file step, from
// the root's index (which public file exports what from where, and the blob id of every
// private module: both built per tree in digest.ts, so they follow git's Merkle trees) and the
// private modules' per-blob links. A change to only a private module changes the root tree id,
// hence the index, hence these rows; the public file's cached rows are never reused for them.

import type { PyLinks } from './python.js';
import { isPrivateModule } from './python.js';

/** One tree's share of the root index: exports of its public .py files and its private modules. */
export interface PyIndex {
  /** [public file path, exported name, module as written, name there ('*': star re-export)]. */
  x: Array<[string, string, string, string]>;
  /** [private module path, blob id]. */
  p: Array<[string, string]>;
}

export const EMPTY_INDEX: PyIndex = { x: [], p: [] };

/** Chains through private modules are followed this deep; a longer one is reported, not followed. */
export const MAX_DEPTH = 8;

export function isPyIndex(v: unknown): v is PyIndex {
  const o = v as PyIndex | null;
  return !!o && Array.isArray(o.x) && Array.isArray(o.p)
    && o.x.every((e) => Array.isArray(e) && e.length === 4 && e.every((s) => typeof s === 'string'))
    && o.p.every((e) => Array.isArray(e) && e.length === 2 && e.every((s) => typeof s === 'string'));
}

/** A cached PyLinks value has the shape extractRows gives it; anything else is recomputed. */
export function isPyLinks(v: unknown): v is PyLinks {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  const strs = (x: unknown, n: number): boolean => Array.isArray(x) && x.length === n && x.every((s) => typeof s === 'string');
  const strList = (x: unknown): boolean => Array.isArray(x) && x.every((s) => typeof s === 'string');
  const rec = (x: unknown, ok: (y: unknown) => boolean): boolean => !!x && typeof x === 'object' && !Array.isArray(x) && Object.values(x).every(ok);
  return Object.keys(o).every((k) => ['exports', 'defs', 'imports', 'stars', 'all'].includes(k))
    && (o.exports === undefined || (Array.isArray(o.exports) && o.exports.every((e) => strs(e, 3))))
    && (o.defs === undefined || rec(o.defs, strList))
    && (o.imports === undefined || rec(o.imports, (y) => strs(y, 2)))
    && (o.stars === undefined || strList(o.stars))
    && (o.all === undefined || o.all === null || strList(o.all));
}

export function mergeIndex(parts: PyIndex[]): PyIndex {
  if (parts.every((p) => !p.x.length && !p.p.length)) return EMPTY_INDEX;
  return { x: parts.flatMap((p) => p.x), p: parts.flatMap((p) => p.p) };
}

function dirOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

function join(dir: string, rest: string): string {
  return dir ? `${dir}/${rest}` : rest;
}

type Target = { path: string; blob: string } | { missing: string } | null;

/**
 * The private module `spec` names when imported from `from`: relative (`._impl`, `.._x.y`)
 * from the importing file's package, absolute (`pkg._impl`) from each folder between that
 * package and the root. null: a public or outside module (its names count where they are
 * defined, or not at all); `missing`: a private module that is not in the tree.
 */
export function resolveModule(from: string, spec: string, priv: Map<string, string>, rootPrefix: string): Target {
  const dots = /^\.*/.exec(spec)![0].length;
  const rest = spec.slice(dots);
  const parts = rest ? rest.split('.') : [];
  const tails = parts.length ? [`${parts.join('/')}.py`, `${parts.join('/')}/__init__.py`] : ['__init__.py'];
  const bases: string[] = [];
  let dir = dirOf(from);
  if (dots) {
    for (let i = 1; i < dots; i++) dir = dirOf(dir);
    bases.push(dir);
  } else {
    const root = rootPrefix.replace(/\/$/, '');
    for (;;) {
      bases.push(dir);
      if (dir === root || !dir) break;
      dir = dirOf(dir);
    }
  }
  for (const b of bases) {
    for (const tail of tails) {
      const path = join(b, tail);
      const blob = priv.get(path);
      if (blob) return { path, blob };
    }
  }
  // Nothing private found: a module named private (a `_` part) is a re-export of something
  // the gate cannot see, which is reported; anything else is a public or outside module.
  if (parts.length && isPrivateModule(join(bases[0]!, tails[0]!))) return { missing: spec };
  return null;
}

/** The names a star import of a private module binds: its `__all__`, else its names without `_`. */
function starNames(l: PyLinks): string[] {
  if (l.all) return l.all;
  return [...new Set([...Object.keys(l.defs ?? {}), ...Object.keys(l.imports ?? {})])].filter((n) => !n.startsWith('_'));
}

/**
 * The resolved rows of a root: `<public file>::export <name> -> <row of the definition>` for
 * each row of each re-exported private definition (signature, class members and bases, type
 * alias value: whatever the public module would have had, under the name it exports), or
 * `-> unresolved (...)` when the name cannot be followed, so that removing it still moves the
 * digest. Sorted, each row once. `linksOf` reads a private module's links (cached per blob).
 */
export async function resolveReexports(index: PyIndex, rootPrefix: string, linksOf: (path: string, blob: string) => Promise<PyLinks>): Promise<string[]> {
  if (!index.x.length) return [];
  const priv = new Map(index.p);
  const out = new Set<string>();
  const cache = new Map<string, Promise<PyLinks>>();
  const links = (t: { path: string; blob: string }): Promise<PyLinks> => {
    let p = cache.get(t.path);
    if (!p) cache.set(t.path, (p = linksOf(t.path, t.blob)));
    return p;
  };

  /** The rows `name` has in private module `t`, following imports; each prefixed by nothing. */
  const rowsOf = async (t: { path: string; blob: string }, name: string, depth: number, seen: Set<string>): Promise<string[]> => {
    const key = `${t.path}\u0000${name}`;
    if (seen.has(key)) return [`unresolved (import cycle at ${t.path} ${name})`];
    if (depth >= MAX_DEPTH) return [`unresolved (more than ${MAX_DEPTH} private modules deep at ${t.path} ${name})`];
    const next = new Set(seen).add(key);
    const l = await links(t);
    const d = l.defs?.[name];
    if (d?.length) return d;
    const imp = l.imports?.[name];
    if (imp) return follow(t.path, imp[0], imp[1], depth + 1, next);
    // Later star imports win, as in Python.
    for (const s of [...(l.stars ?? [])].reverse()) {
      const u = resolveModule(t.path, s, priv, rootPrefix);
      if (!u || 'missing' in u) continue;
      const ul = await links(u);
      if (starNames(ul).includes(name)) return rowsOf(u, name, depth + 1, next);
    }
    return [`unresolved (${name} is not defined in ${t.path})`];
  };

  const follow = async (from: string, spec: string, name: string, depth: number, seen: Set<string>): Promise<string[]> => {
    const t = resolveModule(from, spec, priv, rootPrefix);
    if (!t) return depth ? [`from ${spec} import ${name}`] : [];
    if ('missing' in t) return [`unresolved (module ${t.missing} is not in the tree)`];
    return rowsOf(t, name, depth, seen);
  };

  for (const [file, name, spec, orig] of index.x) {
    if (orig === '*') {
      const t = resolveModule(file, spec, priv, rootPrefix);
      if (!t || 'missing' in t) continue;
      for (const n of starNames(await links(t))) {
        for (const r of await rowsOf(t, n, 0, new Set())) out.add(`${file}::export ${n} -> ${r}`);
      }
      continue;
    }
    for (const r of await follow(file, spec, orig, 0, new Set())) out.add(`${file}::export ${name} -> ${r}`);
  }
  return [...out].sort();
}
