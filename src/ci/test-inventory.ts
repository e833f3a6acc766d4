// The tests one test file defines, read from its source with the project's parsers (tree-sitter
// Python, typescript-estree), never run: their ids, their assertion counts and a digest of their
// body. `patchgate ci --evidence` (evidence.ts, issue 50) compares a test author's files with the
// trusted ones through this: a test that is gone, or has fewer assertions, weakens the oracle; a
// new test or a changed body is what must fail on the trusted tip.

import { createHash } from 'node:crypto';
import { parse, type TSESTree } from '@typescript-eslint/typescript-estree';
import type { Node } from 'web-tree-sitter';
import { pythonTree } from '../contract/python/grammar.js';

export type TestLanguage = 'python' | 'js';

export interface TestCase {
  /** pytest's node id (`tests/test_x.py::TestA::test_y`); JS: `path::describe > name`, as vitest's JUnit names it. */
  id: string;
  /** 1-based line of the definition. */
  line: number;
  /** `assert` statements, `assert*`/`raises`/`warns` calls (Python); `expect(...)`, `assert(...)`, `assert.x(...)` calls (JS). */
  assertions: number;
  /** sha256 of the body without comments and with runs of blanks as one: a change of layout is no change. */
  digest: string;
}

export interface Inventory {
  tests: TestCase[];
  /** Set when the file does not parse: its tests cannot be counted, so nothing about them can be judged. */
  problem?: string;
}

/** Which parser reads a test file, by pytest's and the JS runners' default naming; null: not a test file. */
export function testLanguage(path: string): TestLanguage | null {
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (/^test_.*\.py$|_test\.py$/.test(name)) return 'python';
  if (/\.(test|spec)\.[cm]?[jt]sx?$/.test(name) || (/(^|\/)__tests__\//.test(path) && /\.[cm]?[jt]sx?$/.test(name))) return 'js';
  return null;
}

const digestOf = (text: string): string => createHash('sha256').update(text.replace(/\s+/g, ' ').trim()).digest('hex');

/** The tests `text` (the file at `path`) defines. */
export async function inventory(path: string, text: string): Promise<Inventory> {
  const lang = testLanguage(path);
  if (lang === 'python') return pythonTests(path, text);
  if (lang === 'js') return jsTests(path, text);
  return { tests: [] };
}

// ---- Python: pytest's default collection (test* functions, Test* classes and their test* methods)

const PY_ASSERT_CALL = /^(assert\w*|raises|warns|deprecated_call|fail)$/;

async function pythonTests(path: string, text: string): Promise<Inventory> {
  const tree = await pythonTree(text);
  try {
    const root = tree.rootNode;
    if (root.hasError) {
      const bad = firstError(root);
      return { tests: [], problem: `${path}${bad ? `:${bad.startPosition.row + 1}` : ''} does not parse as Python` };
    }
    const tests: TestCase[] = [];
    const walk = (block: Node, prefix: string): void => {
      for (const child of block.namedChildren) {
        if (!child) continue;
        const def = child.type === 'decorated_definition' ? child.childForFieldName('definition') : child;
        if (!def) continue;
        const name = def.childForFieldName('name')?.text ?? '';
        if (def.type === 'function_definition' && name.startsWith('test')) {
          tests.push({ id: `${prefix}::${name}`, line: child.startPosition.row + 1, assertions: pyAssertions(def), digest: digestOf(withoutComments(child)) });
        } else if (def.type === 'class_definition' && name.startsWith('Test')) {
          const body = def.childForFieldName('body');
          if (body) walk(body, `${prefix}::${name}`);
        }
      }
    };
    walk(root, path);
    return { tests };
  } finally {
    tree.delete();
  }
}

function firstError(n: Node): Node | null {
  if (n.type === 'ERROR' || n.isMissing) return n;
  for (const c of n.children) {
    if (c?.hasError || c?.isMissing) {
      const f = firstError(c);
      if (f) return f;
    }
  }
  return null;
}

function pyAssertions(fn: Node): number {
  let n = 0;
  const visit = (x: Node): void => {
    if (x.type === 'assert_statement') n++;
    else if (x.type === 'call') {
      const f = x.childForFieldName('function');
      const name = f?.type === 'attribute' ? f.childForFieldName('attribute')?.text : f?.type === 'identifier' ? f.text : undefined;
      if (name && PY_ASSERT_CALL.test(name)) n++;
    }
    for (const c of x.namedChildren) if (c) visit(c);
  };
  const body = fn.childForFieldName('body');
  if (body) visit(body);
  return n;
}

function withoutComments(n: Node): string {
  const src = n.text;
  const cuts: Array<[number, number]> = [];
  const visit = (x: Node): void => {
    if (x.type === 'comment') cuts.push([x.startIndex - n.startIndex, x.endIndex - n.startIndex]);
    for (const c of x.children) if (c) visit(c);
  };
  visit(n);
  // startIndex is in bytes; a file that is all ASCII (the usual case) cuts exactly, others keep their comments.
  if (Buffer.byteLength(src) !== src.length) return src;
  let out = '';
  let at = 0;
  for (const [a, b] of cuts) {
    out += src.slice(at, a);
    at = b;
  }
  return out + src.slice(at);
}

// ---- JS/TS: test()/it() calls with a literal name, inside describe() groups

const TEST_FNS = new Set(['test', 'it']);
const GROUP_FNS = new Set(['describe', 'suite', 'context']);
const MODIFIERS = new Set(['only', 'skip', 'todo', 'concurrent', 'sequential', 'fails', 'skipIf', 'runIf']);

/** `test`, `it.only`, `describe.skip`, `test.skipIf(x)`: the runner function a callee names, or null. */
function calleeName(c: TSESTree.Node): string | null {
  if (c.type === 'Identifier') return c.name;
  if (c.type === 'MemberExpression' && !c.computed && c.property.type === 'Identifier' && MODIFIERS.has(c.property.name)) return calleeName(c.object);
  if (c.type === 'CallExpression') return calleeName(c.callee);
  return null;
}

function literalName(a: TSESTree.Node | undefined): string | null {
  if (!a) return null;
  if (a.type === 'Literal' && typeof a.value === 'string') return a.value;
  if (a.type === 'TemplateLiteral' && a.expressions.length === 0) return a.quasis.map((q) => q.value.cooked).join('');
  return null;
}

function isNode(v: unknown): v is TSESTree.Node {
  return !!v && typeof v === 'object' && typeof (v as { type?: unknown }).type === 'string';
}

function children(n: TSESTree.Node): TSESTree.Node[] {
  const out: TSESTree.Node[] = [];
  for (const [k, v] of Object.entries(n)) {
    if (k === 'parent' || k === 'loc' || k === 'range') continue;
    if (Array.isArray(v)) for (const x of v) { if (isNode(x)) out.push(x); }
    else if (isNode(v)) out.push(v);
  }
  return out;
}

function jsAssertions(n: TSESTree.Node): number {
  let count = 0;
  const visit = (x: TSESTree.Node): void => {
    if (x.type === 'CallExpression') {
      const c = x.callee;
      if (c.type === 'Identifier' && (c.name === 'expect' || c.name === 'assert')) count++;
      else if (c.type === 'MemberExpression' && c.object.type === 'Identifier' && (c.object.name === 'assert' || (c.object.name === 'expect' && c.property.type === 'Identifier' && c.property.name === 'soft'))) count++;
    }
    for (const k of children(x)) visit(k);
  };
  visit(n);
  return count;
}

function jsTests(path: string, text: string): Inventory {
  let ast: TSESTree.Program;
  try {
    ast = parse(text, { loc: true, range: true, comment: false, jsx: /\.[jt]sx$/.test(path) });
  } catch (e) {
    const line = (e as { lineNumber?: number }).lineNumber;
    return { tests: [], problem: `${path}${line ? `:${line}` : ''} does not parse as TypeScript/JavaScript` };
  }
  const tests: TestCase[] = [];
  const visit = (x: TSESTree.Node, groups: string[]): void => {
    if (x.type === 'CallExpression') {
      const fn = calleeName(x.callee);
      const name = literalName(x.arguments[0]);
      if (fn && name !== null && TEST_FNS.has(fn)) {
        const body = x.arguments[1] ?? x;
        tests.push({ id: `${path}::${[...groups, name].join(' > ')}`, line: x.loc.start.line, assertions: jsAssertions(body), digest: digestOf(text.slice(x.range[0], x.range[1])) });
        return;
      }
      if (fn && name !== null && GROUP_FNS.has(fn)) {
        for (const a of x.arguments.slice(1)) visit(a, [...groups, name]);
        return;
      }
    }
    for (const k of children(x)) visit(k, groups);
  };
  visit(ast, []);
  return { tests };
}
