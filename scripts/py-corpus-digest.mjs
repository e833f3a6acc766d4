// Proof tool for refactors of the Python contract extractor (src/contract/python*.ts):
// runs every exported entry point over a corpus of real Python files (and broken halves of
// them, the test fixture trees and generated expressions) and prints one sha256 over all
// rows, links and errors. Same digest before and after a change = no row changed.
//
//   node scripts/py-corpus-digest.mjs [--dist DIR] [--fixtures DIR] [--dump FILE] [ROOT...]
//
// ROOT defaults to /usr/lib/python3*. --fixtures is a folder holding trees.js and
// exprgen.js compiled from test/contract/python/ (tsc --outDir DIR those two files).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
let dist = 'dist';
let fixtures = null;
let dump = null;
const roots = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--dist') dist = args[++i];
  else if (args[i] === '--fixtures') fixtures = args[++i];
  else if (args[i] === '--dump') dump = args[++i];
  else roots.push(args[i]);
}
if (roots.length === 0) {
  for (const d of readdirSync('/usr/lib')) if (/^python3/.test(d)) roots.push(join('/usr/lib', d));
}

const py = await import(pathToFileURL(resolve(dist, 'contract/python.js')).href);
await py.initPython();

function walk(dir, out) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.isFile() && e.name.endsWith('.py')) out.push(p);
  }
}

const files = [];
for (const r of roots) walk(r, files);
files.sort();

const hash = createHash('sha256');
const lines = dump ? [] : null;
let count = 0;
let errors = 0;
function emit(s) {
  hash.update(s + '\n');
  if (lines) lines.push(s);
}
function errText(e) {
  const own = {};
  for (const k of Object.keys(e ?? {})) if (k !== 'cause') own[k] = e[k];
  return `ERR ${e?.constructor?.name} ${e?.message} ${JSON.stringify(own)} cause=${e?.cause?.constructor?.name}:${e?.cause?.message}`;
}
function run(label, f) {
  try {
    emit(`${label} ${JSON.stringify(f())}`);
  } catch (e) {
    errors++;
    emit(`${label} ${errText(e)}`);
  }
}
function all(source, path) {
  count++;
  emit(`== ${path} ${source.length}`);
  run('seed', () => py.extractPythonSeed(source, path));
  run('v1', () => py.extractPythonV1(source, path));
  run('analyse', () => py.analysePythonV1(source, path));
}

for (const f of files) {
  let buf;
  try {
    if (statSync(f).size > 4_000_000) continue;
    buf = readFileSync(f);
  } catch {
    continue;
  }
  const text = buf.toString('utf8');
  const rel = f.slice(1);
  all(text, rel);
  // A broken half of the file exercises the syntax-error paths.
  all(text.slice(0, Math.floor(text.length / 2)), `${rel}#half`);
}

if (fixtures) {
  const { TREES } = await import(pathToFileURL(resolve(fixtures, 'trees.js')).href);
  for (const t of TREES) for (const [rel, text] of Object.entries(t.files)) all(text, `${t.name}/${rel}`);
  const { generateExpressions } = await import(pathToFileURL(resolve(fixtures, 'exprgen.js')).href);
  const exprs = [...generateExpressions(20240501, 4000), ...generateExpressions(777, 2000, 5)];
  exprs.forEach((e, i) => {
    all(`def f(a: ${e} = ${e}, *b: ${e}, c: ${e}, **d: ${e}) -> ${e}: pass\n`, `gen/def${i}.py`);
    all(`class C(${e}, k=${e}):\n    x: ${e} = ${e}\n    def m(self, y: ${e}) -> ${e}: ...\nV: ${e} = ${e}\nW = ${e}\n__all__ = ['C', 'V', 'W']\n`, `gen/cls${i}.py`);
  });
}

const paths = files.map((f) => f.slice(1));
run('seedOrder', () => py.seedOrder(paths));
run('private', () => paths.map((p) => py.isPrivateModule(p)));
emit(`version ${py.PY_EXTRACTOR_VERSION}`);
emit(`exports ${Object.keys(py).sort().join(',')}`);

if (dump) writeFileSync(dump, lines.join('\n') + '\n');
console.log(`inputs ${count} (from ${files.length} files) errors ${errors}`);
console.log(hash.digest('hex'));
