// A TS/JS file's signature key (src/contract/typescript/parse.ts signatureKey) stands for its
// rows: a file whose key was seen before is given that file's rows without being converted.
// That holds only if equal keys always mean equal rows. Checked on every TS/JS file of zustand
// and jotai: edits inside every outer body, comments and blank lines between statements and at
// the end keep the key and the rows; every version of each file across their recent history
// whose key matches another's has its rows; signature edits move both. A file with a syntax
// error anywhere, a body included, is never answered from its key.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import ts from 'typescript';
import { extractTypeScriptKeyed } from '../../src/contract/typescript/parse.js';
import { extractRows, splitLinks } from '../../src/contract/extract.js';
import { ContractParseError } from '../../src/errors.js';
import { cloneCorpus } from '../helpers/corpus.js';

const TS = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;

function keyed(text: string, path: string): { rows: string[]; sig: string | null } | null {
  try {
    const r = extractTypeScriptKeyed(text, path);
    return { rows: [...new Set(r.rows)].sort(), sig: r.sig };
  } catch {
    return null; // does not parse: the contract rule refuses it, no key
  }
}

/** Positions just inside each outermost function body's `{`, found with TypeScript's own parser. */
function bodyStarts(text: string, path: string): number[] {
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, /\.(tsx|jsx)$/.test(path) ? ts.ScriptKind.TSX : path.endsWith('.js') ? ts.ScriptKind.JS : ts.ScriptKind.TS);
  const out: number[] = [];
  const visit = (n: ts.Node): void => {
    const body = ts.isFunctionLike(n) ? (n as { body?: ts.Node }).body : undefined;
    if (body && ts.isBlock(body)) {
      out.push(body.getStart(sf) + 1);
      return;
    }
    ts.forEachChild(n, visit);
  };
  ts.forEachChild(sf, visit);
  return out;
}

const files = (dir: string, rev = 'HEAD') => execFileSync('git', ['-C', dir, 'ls-tree', '-r', '--name-only', rev], { encoding: 'utf8' }).split('\n').filter((p) => TS.test(p) && !p.includes('node_modules'));
const show = (dir: string, spec: string) => execFileSync('git', ['-C', dir, 'show', spec], { encoding: 'utf8', maxBuffer: 1 << 26 });

t.test('edits the rows cannot see keep the key; the key never hides a row change (zustand, jotai)', async (t) => {
  for (const name of ['zustand', 'jotai']) {
    const dir = cloneCorpus(t, name);
    if (!dir) continue;
    let variants = 0;
    let wrong = 0;
    for (const path of files(dir)) {
      const text = show(dir, `HEAD:${path}`);
      const base = keyed(text, path);
      if (!base?.sig) continue;
      const starts = bodyStarts(text, path);
      const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
      const stmt = sf.statements[Math.floor(sf.statements.length / 2)];
      const edits: Array<[string, string]> = [
        ['a comment at the end', `${text}\n// an agent's note\n`],
        ...(stmt ? [['a comment and blank lines between statements', `${text.slice(0, stmt.getStart(sf))}/* moved */\n\n${text.slice(stmt.getStart(sf))}`] as [string, string]] : []),
        // Lines added inside every outer body at once (the line count of each body changes).
        ['lines inside every body', starts.reduceRight((s, at) => `${s.slice(0, at)}\n  void 0;\n  // changed\n${s.slice(at)}`, text)],
      ];
      for (const [what, changed] of edits) {
        const got = keyed(changed, path);
        if (!got) continue; // an edit that made the file unparsable (a body of an overload list, say)
        variants++;
        if (got.sig !== base.sig || JSON.stringify(got.rows) !== JSON.stringify(base.rows)) {
          wrong++;
          t.fail(`${name}:${path}: ${what}: key ${got.sig === base.sig ? 'kept' : 'moved'}, rows ${JSON.stringify(got.rows) === JSON.stringify(base.rows) ? 'kept' : 'moved'}`);
        }
      }
    }
    t.equal(wrong, 0, `${name}: ${variants} edits inside bodies or between statements keep key and rows`);
    t.ok(variants > 50, `${name}: a real number of edits (${variants})`);

    // Across history, as pushes see it: each change of a file against its parent's version.
    // Where the key is kept the rows are too (and those edits are what the key saves).
    const commits = execFileSync('git', ['-C', dir, 'rev-list', '--no-merges', '--max-count=100', 'HEAD', '--', 'src'], { encoding: 'utf8' }).trim().split('\n');
    let kept = 0;
    let changes = 0;
    for (const c of commits) {
      const changed = execFileSync('git', ['-C', dir, 'diff-tree', '--no-commit-id', '-r', '--diff-filter=M', '--name-only', `${c}^`, c], { encoding: 'utf8' }).split('\n').filter((p) => TS.test(p));
      for (const path of changed) {
        const before = keyed(show(dir, `${c}^:${path}`), path);
        const after = keyed(show(dir, `${c}:${path}`), path);
        if (!before?.sig || !after?.sig) continue;
        changes++;
        if (before.sig !== after.sig) continue;
        kept++;
        if (JSON.stringify(before.rows) !== JSON.stringify(after.rows)) t.fail(`${name}:${path}@${c.slice(0, 8)}: the key was kept, the rows moved`);
      }
    }
    t.ok(kept > 0, `${name}: ${kept} of ${changes} changed files over ${commits.length} commits keep their key, each with its rows`);
  }
});

t.test('a known key answers without conversion; a moved signature or a syntax error never does', async (t) => {
  const path = 'src/api.ts';
  const text = 'import { x } from "./x";\n\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport const k = 1;\n';
  const { sig } = extractTypeScriptKeyed(text, path);
  t.type(sig, 'string');
  const known = (s: string) => (s === sig ? ['SENTINEL'] : undefined);
  const body = text.replace('return a + b;', 'const s = a + b;\n  return s;');
  t.same(splitLinks(extractRows('v1', path, body, known)), { rows: ['SENTINEL'], links: null, sig }, 'a body edit is answered from the key');
  const moved = text.replace('b: number)', 'b: string)');
  t.not(splitLinks(extractRows('v1', path, moved, known)).rows, ['SENTINEL']);
  t.notSame(splitLinks(extractRows('v1', path, moved, known)).rows, ['SENTINEL'], 'a moved signature is converted');
  t.not(extractTypeScriptKeyed(moved, path).sig, sig);
  t.not(extractTypeScriptKeyed(text, 'src/other.ts').sig, sig, 'the path is part of the key (it starts every row)');
  const broken = text.replace('return a + b;', 'return a + ;');
  t.throws(() => extractTypeScriptKeyed(broken, path, known), ContractParseError, 'a syntax error inside a body still refuses');
  // A body that closes early and declares a new export is no body edit: the key moves.
  const escape = text.replace('return a + b;', 'return a + b;\n}\nexport function evil(): void {');
  t.not(extractTypeScriptKeyed(escape, path).sig, sig);
  t.match(extractTypeScriptKeyed(escape, path, known).rows.join('\n'), /evil/);
});
