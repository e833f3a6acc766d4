// Workarounds for tree-sitter-python's separate `type` grammar: finds annotations (in the
// tree, or by scanning the text when the tree is broken) and wraps them in parentheses so
// they parse as ordinary expressions.

import type { Node, Tree } from 'web-tree-sitter';
import { typeFormQuery } from './grammar.js';
import type { Scope } from './scope.js';

/**
 * tree-sitter-python parses annotations with a separate `type` rule that rejects some
 * valid expressions (`x[1:]`, `a[b][c]`) and shapes others differently from Python
 * (`list[int]` becomes a `generic_type`). Parenthesising an annotation never changes its
 * Python AST and puts it back into the ordinary expression grammar, so annotations are
 * wrapped in parentheses and the text parsed again:
 *  - when the tree has errors, every annotation found by scanning the text (see
 *    `textualAnnotationRegions`; the broken tree cannot be trusted to locate them);
 *  - otherwise, the annotations whose `type` node uses one of the type-only forms.
 */
export function typeFormRegions(root: Node, scope: Scope): Region[] {
  const regions: Region[] = [];
  for (const { node } of typeFormQuery!.captures(root)) {
    const owner = node.parent;
    if (!owner) continue;
    if (scope === 'seed') {
      // Only the return annotations of module-level functions are ever read.
      if (owner.type !== 'function_definition') continue;
      const up = owner.parent?.type === 'decorated_definition' ? owner.parent.parent : owner.parent;
      if (up?.type !== 'module') continue;
    } else if (insideFunctionBody(owner)) continue;
    regions.push([node.startIndex, node.endIndex]);
  }
  return regions;
}

/** Is n inside the body of a def or a lambda (whose annotations no extractor reads)? */
function insideFunctionBody(n: Node): boolean {
  for (let a = n.parent; a; a = a.parent) {
    if (a.type === 'lambda') return true;
    if (a.type === 'block' && a.parent?.type === 'function_definition') return true;
  }
  return false;
}

type Region = [number, number];

/** Skip a string literal whose opening quote is at i; returns the index after it. */
function skipString(text: string, i: number): number {
  const c = text[i]!;
  const triple = text.startsWith(c.repeat(3), i);
  const q = triple ? c.repeat(3) : c;
  i += q.length;
  while (i < text.length && !text.startsWith(q, i)) {
    if (text[i] === '\\') i++;
    else if (!triple && text[i] === '\n') return i;
    i++;
  }
  return Math.min(i + q.length, text.length);
}

const IDENT_START = /[\p{L}\p{Nl}_\u1885\u1886\u2118\u212e\u309b\u309c]/u;
const IDENT_PART = /[\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}_\u00b7\u0387\u1369-\u1371\u19da\u1885\u1886\u2118\u212e\u309b\u309c]/u;
const STRING_PREFIX = /^(?:[rRuUbBfF]|[rR][bBfF]|[bBfF][rR])$/;
const KEYWORDS = new Set([
  'False', 'None', 'True', 'and', 'as', 'assert', 'async', 'await', 'break', 'class', 'continue', 'def', 'del', 'elif', 'else',
  'except', 'finally', 'for', 'from', 'global', 'if', 'import', 'in', 'is', 'lambda', 'nonlocal', 'not', 'or', 'pass', 'raise',
  'return', 'try', 'while', 'with', 'yield',
]);

function identAt(text: string, i: number): string {
  const first = text.codePointAt(i);
  if (first === undefined || !IDENT_START.test(String.fromCodePoint(first))) return '';
  let j = i + (first > 0xffff ? 2 : 1);
  while (j < text.length) {
    const cp = text.codePointAt(j)!;
    if (!IDENT_PART.test(String.fromCodePoint(cp))) break;
    j += cp > 0xffff ? 2 : 1;
  }
  return text.slice(i, j);
}

/** Skip blanks, comments and (inside brackets) newlines and line continuations. */
function skipBlank(text: string, i: number, newlines: boolean): number {
  for (;;) {
    const c = text[i];
    if (c === ' ' || c === '\t' || c === '\f') i++;
    else if (c === '\\' && text[i + 1] === '\n') i += 2;
    else if (newlines && c === '\n') i++;
    else if (newlines && c === '#') while (i < text.length && text[i] !== '\n') i++;
    else return i;
  }
}

/**
 * Every annotation of a def's return (`-> X`), parameters (`name: X`, `*a: X`) and of an
 * annotated assignment at the start of a logical line (`name: X` / `a.b: X`), found by
 * scanning tokens. Only used to recover from tree-sitter errors; wrapping something that
 * is not an annotation (a lambda body after `lambda x, y:` in a default) is harmless,
 * because any complete expression may be parenthesised.
 */
export function textualAnnotationRegions(text: string): Region[] {
  const regions: Region[] = [];
  const stack: string[] = []; // bracket kinds: 'params' for a def's parameter list
  let lineStart = true;
  let afterDef = 0; // 1: just saw `def`, 2: saw its name
  const param = (from: number): number => {
    // At the start of one parameter: [*|**]NAME [':' annotation]
    let i = skipBlank(text, from, true);
    if (text.startsWith('**', i)) i += 2;
    else if (text[i] === '*') i += 1;
    i = skipBlank(text, i, true);
    const name = identAt(text, i);
    if (!name) return from;
    i = skipBlank(text, i + name.length, true);
    if (text[i] === ':' && text[i + 1] !== '=') {
      const end = annotationEnd(text, i + 1, 'param');
      regions.push([i + 1, end]);
      return end;
    }
    return from;
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (lineStart && stack.length === 0) {
      lineStart = false;
      let j = skipBlank(text, i, false);
      let name = identAt(text, j);
      const start = j;
      while (name && !KEYWORDS.has(name)) {
        j = skipBlank(text, j + name.length, false);
        if (text[j] !== '.') break;
        j = skipBlank(text, j + 1, false);
        name = identAt(text, j);
      }
      if (name && !KEYWORDS.has(name) && j > start && text[j] === ':' && text[j + 1] !== '=') {
        const end = annotationEnd(text, j + 1, 'assign');
        regions.push([j + 1, end]);
        i = end;
        continue;
      }
      i = skipBlank(text, i, false);
      continue;
    }
    if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
      continue;
    }
    if (c === '\\' && text[i + 1] === '\n') {
      i += 2;
      continue;
    }
    if (c === '\n' || c === ';') {
      if (stack.length === 0) lineStart = true;
      i++;
      continue;
    }
    if (c === "'" || c === '"') {
      i = skipString(text, i);
      afterDef = 0;
      continue;
    }
    const name = identAt(text, i);
    if (name) {
      i += name.length;
      if (STRING_PREFIX.test(name) && (text[i] === "'" || text[i] === '"')) {
        i = skipString(text, i);
        afterDef = 0;
      } else if (name === 'def') afterDef = 1;
      else afterDef = afterDef === 1 ? 2 : 0;
      continue;
    }
    if (c === '-' && text[i + 1] === '>') {
      const end = annotationEnd(text, i + 2, 'return');
      regions.push([i + 2, end]);
      i = end;
      afterDef = 0;
      continue;
    }
    if (c === '(' || c === '[' || c === '{') {
      const isParams = c === '(' && afterDef === 2;
      stack.push(isParams ? 'params' : c);
      afterDef = 0;
      i++;
      if (isParams) i = param(i);
      continue;
    }
    if (c === ')' || c === ']' || c === '}') {
      stack.pop();
      i++;
      continue;
    }
    if (c === ',' && stack[stack.length - 1] === 'params') {
      i = param(i + 1);
      continue;
    }
    if (c !== ' ' && c !== '\t') afterDef = 0;
    i++;
  }
  return regions;
}

/**
 * Where an annotation that starts at `from` ends: before the first top-level ':' (return
 * annotation), ',' / ')' / '=' (parameter) or '=' / ';' / newline (variable annotation),
 * skipping bracketed text, strings and comments. Trailing blanks and comments stay outside.
 */
function annotationEnd(text: string, from: number, kind: 'return' | 'param' | 'assign'): number {
  let depth = 0;
  let lambdas = 0; // unbracketed lambdas still waiting for their ':'
  let lastSignificant = from;
  let i = from;
  while (i < text.length) {
    const c = text[i]!;
    const word = identAt(text, i);
    if (word) {
      if (word === 'lambda' && depth === 0) lambdas++;
      i += word.length;
      lastSignificant = i;
      continue;
    }
    if (c === '#') {
      if (depth === 0 && kind !== 'param') break;
      while (i < text.length && text[i] !== '\n') i++;
      continue;
    }
    if (c === '\\' && text[i + 1] === '\n') {
      i += 2;
      continue;
    }
    if (c === "'" || c === '"') {
      i = skipString(text, i);
      lastSignificant = i;
      continue;
    }
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      if (depth === 0) break;
      depth--;
    } else if (depth === 0) {
      const next = text[i + 1];
      const prev = text[i - 1];
      if (c === ':' && next !== '=' && lambdas > 0) lambdas--;
      else if (lambdas > 0 && (c === ',' || c === '=')) {
        // a lambda's own parameters and defaults
      } else {
        if (kind === 'return' && c === ':' && next !== '=') break;
        if (kind === 'param' && c === ',') break;
        if (kind !== 'return' && c === '=' && next !== '=' && !'=<>!:'.includes(prev ?? '')) break;
      }
      if (kind !== 'param' && (c === ';' || c === '\n')) break;
    }
    if (!/\s/.test(c)) lastSignificant = i + 1;
    i++;
  }
  return lastSignificant;
}

/**
 * Newlines, comments and line continuations inside brackets mean nothing to Python, but
 * tree-sitter-python's scanner can emit a DEDENT for a continuation line inside `[...]`
 * that is indented less than its block. Replacing them by spaces (same length, so every
 * offset stays valid) removes the problem without changing the Python AST.
 */
export function flattenBrackets(text: string): string {
  let out = '';
  let depth = 0;
  let from = 0;
  let i = 0;
  const blank = (end: number): void => {
    out += text.slice(from, i) + ' '.repeat(end - i);
    i = from = end;
  };
  while (i < text.length) {
    const c = text[i]!;
    if (c === '#') {
      let end = i;
      while (end < text.length && text[end] !== '\n') end++;
      if (depth > 0) blank(end);
      else i = end;
      continue;
    }
    if (c === "'" || c === '"') {
      i = skipString(text, i);
      continue;
    }
    if (depth > 0 && c === '\n') {
      blank(i + 1);
      continue;
    }
    if (depth > 0 && c === '\\' && text[i + 1] === '\n') {
      blank(i + 2);
      continue;
    }
    if (c === '(' || c === '[' || c === '{') depth++;
    else if ((c === ')' || c === ']' || c === '}') && depth > 0) depth--;
    i++;
  }
  return out + text.slice(from);
}

/** Insert '(' and ')' around each region; returns the new text and a map back. */
export function wrapRegions(text: string, regions: Region[]): { text: string; kept: Region[]; back: (i: number) => number } {
  const sorted = [...regions].filter((r) => r[1] > r[0]).sort((a, b) => a[0] - b[0]);
  const kept: Region[] = [];
  for (const r of sorted) {
    const last = kept[kept.length - 1];
    if (last && r[0] < last[1]) continue;
    kept.push(r);
  }
  let out = '';
  let pos = 0;
  const inserted: number[] = []; // positions in the new text of the added characters
  for (const [s, e] of kept) {
    out += text.slice(pos, s);
    inserted.push(out.length);
    out += '(' + text.slice(s, e);
    inserted.push(out.length);
    out += ')';
    pos = e;
  }
  out += text.slice(pos);
  const back = (i: number): number => {
    let n = 0;
    for (const p of inserted) if (p < i) n++;
    return i - n;
  };
  return { text: out, kept, back };
}

/**
 * Tell the old tree about the inserted parentheses so the second parse is incremental
 * (web-tree-sitter counts indices and columns in UTF-16 code units, like JS strings).
 */
export function editForWraps(tree: Tree, text: string, kept: Region[]): void {
  const lineStarts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lineStarts.push(i + 1);
  const point = (i: number): { row: number; column: number } => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= i) lo = mid;
      else hi = mid - 1;
    }
    return { row: lo, column: i - lineStarts[lo]! };
  };
  const insert = (i: number): void => {
    const at = point(i);
    tree.edit({ startIndex: i, oldEndIndex: i, newEndIndex: i + 1, startPosition: at, oldEndPosition: at, newEndPosition: { row: at.row, column: at.column + 1 } });
  };
  for (let k = kept.length - 1; k >= 0; k--) {
    insert(kept[k]![1]);
    insert(kept[k]![0]);
  }
}
