// The tamper scan of TypeScript/JavaScript sees a construct only if its walk reaches the node:
// `children` (src/policy/tamper/stack-js.ts) must hand out every node under every AST-valued
// property. Checked on every TS/JS file of two real projects from ../shared/corpus (zustand,
// jotai) against a plain deep traversal of the same trees, and on constructs that hide in rarely
// walked places (decorators, parameters' defaults, JSX attributes).

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, type TSESTree } from '@typescript-eslint/typescript-estree';
import { children } from '../../src/policy/tamper/stack-js.js';
import { scanTypeScript } from '../../src/policy/tamper/scan-typescript.js';
import { cloneCorpus } from '../helpers/corpus.js';


/** Every node reachable through any own property but parent/loc/range, by a plain recursion. */
function deep(root: unknown): Set<unknown> {
  const seen = new Set<unknown>();
  const visit = (v: unknown): void => {
    if (!v || typeof v !== 'object') return;
    if (Array.isArray(v)) return v.forEach(visit);
    const o = v as Record<string, unknown>;
    if (typeof o.type === 'string') {
      if (seen.has(o)) return;
      seen.add(o);
    }
    for (const [k, x] of Object.entries(o)) if (k !== 'parent' && k !== 'loc' && k !== 'range') visit(x);
  };
  visit(root);
  return seen;
}

function walked(root: TSESTree.Node): Set<unknown> {
  const seen = new Set<unknown>();
  const visit = (n: TSESTree.Node): void => {
    seen.add(n);
    for (const c of children(n)) visit(c);
  };
  visit(root);
  return seen;
}

const parseAs = (text: string, path: string) => parse(text, { loc: true, jsx: /\.(tsx|jsx)$/.test(path), range: false, comment: false }) as unknown as TSESTree.Node;

t.test('children reaches every node of every TS/JS file of zustand and jotai', async (t) => {
  let files = 0;
  let nodes = 0;
  for (const name of ['zustand', 'jotai']) {
    const dir = cloneCorpus(t, name);
    if (!dir) continue;
    const list = execFileSync('git', ['-C', dir, 'ls-files', '-z'], { encoding: 'utf8' }).split('\0').filter((p) => /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/.test(p) && !p.endsWith('.d.ts'));
    let missed = 0;
    for (const p of list) {
      let ast: TSESTree.Node;
      try {
        ast = parseAs(readFileSync(join(dir, p), 'utf8'), p);
      } catch {
        continue; // what does not parse is the contract rule's refusal, not a walk
      }
      const all = deep(ast);
      const got = walked(ast);
      files++;
      nodes += all.size;
      if (all.size !== got.size || [...all].some((n) => !got.has(n))) {
        missed++;
        t.fail(`${name}:${p}: the walk reached ${got.size} of ${all.size} nodes`);
      }
    }
    t.equal(missed, 0, `${name}: every node of ${list.length} file(s) is walked`);
  }
  if (files) t.ok(nodes > 10_000, `a real amount of code was walked (${files} files, ${nodes} nodes)`);
});

t.test('constructs in rarely walked places are found', async (t) => {
  const src = [
    'function deco(x: unknown) { return x; }',
    '@deco(process.env.PATCHGATE_TOKEN)',
    'export class A<T> { m(x = process.env.NODE_TEST_CONTEXT): T | string | undefined { return x; } }',
    'export const el = <div title={process.env.PYTEST_CURRENT_TEST} />;',
    '',
  ].join('\n');
  const hits = scanTypeScript(src, 'src/a.tsx', new Set([2, 3, 4]));
  const lines = hits.filter((h) => h.check === 'env-read').map((h) => h.line);
  t.ok(lines.includes(2), 'inside a decorator');
  t.ok(lines.includes(3), "inside a method parameter's default");
  t.ok(lines.includes(4), 'inside a JSX attribute');
  t.notOk(lines.includes(1), 'and nothing on the honest line');
});
