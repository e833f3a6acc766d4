// Lists the import cycles among src/**/*.ts (static, `import type`, `export … from` and
// dynamic `import('…')` alike, since each is an arrow a reader follows), one line per cycle,
// by Tarjan's strongly connected components. Exit 1 when there is one. No dependencies.
//
//   node scripts/import-cycles.mjs [DIR]     (default: src)
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? 'src');
const files = [];
const walk = (d) => {
  for (const e of readdirSync(d, { withFileTypes: true })) {
    const p = join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) files.push(p);
  }
};
walk(root);
const known = new Set(files);
const edges = new Map();
const RE = /(?:\bimport\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?|\bexport\s+(?:type\s+)?[\w*{}\s,$]+?\s+from\s+|\bimport\s*\(\s*)['"](\.[^'"]+)['"]/g;
for (const f of files) {
  const text = readFileSync(f, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  const out = new Set();
  for (const m of text.matchAll(RE)) {
    const target = resolve(dirname(f), m[1].replace(/\.js$/, '.ts'));
    if (known.has(target) && target !== f) out.add(target);
  }
  edges.set(f, [...out]);
}
// Tarjan
let index = 0;
const idx = new Map();
const low = new Map();
const stack = [];
const on = new Set();
const sccs = [];
const strong = (v) => {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  on.add(v);
  for (const w of edges.get(v)) {
    if (!idx.has(w)) {
      strong(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const c = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      c.push(w);
    } while (w !== v);
    if (c.length > 1) sccs.push(c);
  }
};
for (const f of files.sort()) if (!idx.has(f)) strong(f);
for (const c of sccs) console.log(`cycle: ${c.map((f) => relative(root, f)).sort().join(' <-> ')}`);
console.log(`${files.length} files, ${sccs.length} cycle(s)`);
process.exit(sccs.length ? 1 : 0);
