// The in-process line diff tamper-scan uses instead of one `git diff` per changed file
// (src/policy/tamper/added-lines.ts): the added lines it finds are the ones `git diff -U0`
// reports. Compared with the real git on generated edits (exactly, where lines are unique and
// the answer is unique; as a valid minimal diff where lines repeat) and on ordinary code
// edits where git's indent heuristic decides the placement.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { addedLines } from '../../src/policy/tamper/added-lines.js';
import { tempDir } from '../helpers/repo.js';

const repo = tempDir('pg-diff-');
execFileSync('git', ['init', '-q', repo]);

/** What `git diff -U0 OLD NEW` of two blobs reports as the new side's lines (as tamper-scan used to read it). */
function gitAdded(a: string, b: string): number[] {
  const w = (s: string) => execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: repo, input: s }).toString().trim();
  const out = execFileSync('git', ['-c', 'diff.algorithm=myers', 'diff', '--no-color', '--no-ext-diff', '--no-textconv', '-U0', w(a), w(b)], { cwd: repo }).toString();
  const s: number[] = [];
  for (const m of out.matchAll(/^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/gm)) {
    const start = Number(m[1]);
    for (let i = start; i < start + (m[2] === undefined ? 1 : Number(m[2])); i++) s.push(i);
  }
  return s;
}
const mine = (a: string, b: string) => [...addedLines(a, b)].sort((x, y) => x - y);

let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const pick = <T>(a: T[]): T => a[Math.floor(rnd() * a.length)]!;
const POOL = ['}', '', '  return x;', '{', 'function f() {', '  if (a) {', '    b();', '  }', 'export const a = 1;', 'def g():', '    pass', '\treturn y'];
let uniq = 0;

function edit(repeat: boolean): [string, string] {
  const line = () => (repeat && rnd() < 0.6 ? pick(POOL) : `line ${uniq++}`);
  const a = Array.from({ length: Math.floor(rnd() * 40) }, line);
  const b = a.slice();
  for (let o = 1 + Math.floor(rnd() * 5); o > 0; o--) {
    const at = Math.floor(rnd() * (b.length + 1));
    const r = rnd();
    if (r < 0.4) b.splice(at, 0, ...Array.from({ length: 1 + Math.floor(rnd() * 4) }, line));
    else if (r < 0.7) b.splice(at, 1 + Math.floor(rnd() * 3));
    else b.splice(at, 1, line());
  }
  const end = rnd() < 0.2 ? '' : '\n'; // sometimes no newline at the end
  return [a.join('\n') + (a.length ? '\n' : ''), b.join('\n') + (b.length ? end : '')];
}

/** Length of the longest common subsequence of the two files' lines (with their line breaks). */
function lcs(a: string[], b: string[]): number {
  const prev = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    let diag = 0;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = a[i - 1] === b[j - 1] ? diag + 1 : Math.max(prev[j]!, prev[j - 1]!);
      diag = up;
    }
  }
  return prev[b.length]!;
}
const linesOf = (s: string) => s.match(/[^\n]*\n|[^\n]+$/g) ?? [];

t.test('unique lines: exactly the lines git diff reports', async (t) => {
  let same = 0;
  for (let c = 0; c < 150; c++) {
    const [a, b] = edit(false);
    const g = gitAdded(a, b);
    const m = mine(a, b);
    if (JSON.stringify(g) === JSON.stringify(m)) same++;
    else t.fail(`differs from git on ${JSON.stringify(a)} -> ${JSON.stringify(b)}: git ${g} here ${m}`);
  }
  t.equal(same, 150);
});

t.test('repeated lines: a valid minimal diff (and almost always git\'s)', async (t) => {
  let asGit = 0;
  const n = 150;
  for (let c = 0; c < n; c++) {
    const [a, b] = edit(true);
    const m = mine(a, b);
    const A = linesOf(a), B = linesOf(b);
    // The lines not marked are a common subsequence of old and new, as long as the longest one.
    const kept = B.filter((_, j) => !m.includes(j + 1));
    let i = 0;
    for (const l of kept) {
      while (i < A.length && A[i] !== l) i++;
      i++;
    }
    t.ok(i <= A.length, 'the unmarked lines appear in the old file in that order');
    t.equal(kept.length, lcs(A, B), 'no more lines marked than needed');
    if (JSON.stringify(gitAdded(a, b)) === JSON.stringify(m)) asGit++;
  }
  t.ok(asGit >= n * 0.95, `${asGit} of ${n} exactly as git`);
});

t.test('ordinary code edits: placed where git places them (indent heuristic, end of file)', async (t) => {
  const fns = 'function a() {\n  return 1;\n}\n\nfunction b() {\n  return 2;\n}\n';
  const cases: Array<[string, string, string]> = [
    ['a function added between two', fns, 'function a() {\n  return 1;\n}\n\nfunction x() {\n  process.exit(0);\n}\n\nfunction b() {\n  return 2;\n}\n'],
    ['a function added at the end', fns, fns + '\nfunction c() {\n  return 3;\n}\n'],
    ['an if block inside a function', 'def f(a):\n    if a:\n        return 1\n    return 2\n', 'def f(a):\n    if a:\n        return 1\n    if not a:\n        return 1\n    return 2\n'],
    ['a line changed', fns, fns.replace('return 2', 'return 3')],
    ['the last line loses its newline', 'a\nb\n', 'a\nb'],
    ['the last line gains a newline and a line', 'a\nb', 'a\nb\nc\n'],
    ['CRLF lines', 'a\r\nb\r\n', 'a\r\nx\r\nb\r\n'],
    ['a file emptied', 'a\nb\n', ''],
    ['a file filled', '', 'a\nb\n'],
    ['tabs and blank lines', 'if (a) {\n\tb();\n\n\tc();\n}\n', 'if (a) {\n\tb();\n\n\td();\n\n\tc();\n}\n'],
  ];
  for (const [name, a, b] of cases) t.same(mine(a, b), gitAdded(a, b), name);
  t.same(mine(fns, fns), [], 'no change, no lines');
});

t.test('bounded: past the work budget a region counts as changed on every line (never fewer lines)', async (t) => {
  const a = Array.from({ length: 3000 }, (_, i) => `old ${i}\n`).join('');
  const b = Array.from({ length: 3000 }, (_, i) => (i % 2 ? `old ${i}\n` : `new ${i}\n`)).join('');
  const full = addedLines(a, b);
  t.equal(full.size, 1500, 'within the budget: the changed lines only');
  const cut = addedLines(a, b, 1000);
  t.equal(cut.size, 2999, 'past a tiny budget: every line of the differing region (the common last line is trimmed first)');
  t.ok([...full].every((l) => cut.has(l)), 'a superset of the real answer');
});
