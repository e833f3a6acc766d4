// Source preparation and syntax checking: turns source text into a tree-sitter tree that
// is valid Python 3, or a ContractParseError at the offending line and column.

import type { Node } from 'web-tree-sitter';
import { ContractParseError } from '../../errors.js';
import { editForWraps, flattenBrackets, textualAnnotationRegions, typeFormRegions, wrapRegions } from './annotations.js';
import { named } from './cst.js';
import { requireParser } from './grammar.js';
import { BIN_INT, checkNumber, DEC_INT, FLOAT, HEX_INT, IMAG_INT, NUMBER_LIKE, OCT_INT } from './literals.js';
import { positionOf, PyError } from './position.js';
import type { Scope } from './scope.js';

/** Python reads source with universal newlines; tree positions below refer to this text. */
export function normaliseNewlines(source: string): string {
  return source.indexOf('\r') === -1 ? source : source.replace(/\r\n?/g, '\n');
}

function firstErrorNode(n: Node): Node | null {
  if (n.isError || n.isMissing) return n;
  for (const c of n.children) {
    if (c && (c.hasError || c.isMissing || c.isError)) {
      const r = firstErrorNode(c);
      if (r) return r;
    }
  }
  return null;
}

function errorDetail(n: Node): string {
  if (n.isMissing) return `missing ${JSON.stringify(n.type)}`;
  const snippet = n.text.split('\n')[0]!.slice(0, 40);
  return snippet ? `syntax error near ${JSON.stringify(snippet)}` : 'syntax error';
}

export interface Parsed {
  /** The text the tree was parsed from (may have parentheses added around annotations). */
  text: string;
  root: Node;
  /** Maps an index in `text` to the index in the original text. */
  toOriginal: (i: number) => number;
  release(): void;
}

const INVISIBLE_SPACE = /[\uFEFF\u2060\u200B]/g;

export type { Scope } from './scope.js';

export function parsePython(original: string, path: string, scope: Scope): Parsed {
  const p = requireParser();
  const fail = (index: number, detail: string): never => {
    const pos = positionOf(original, index);
    throw new ContractParseError(path, pos.line, pos.column, detail);
  };
  const parse = (text: string) => {
    const tree = p.parse(text);
    if (!tree) throw new ContractParseError(path, 1, 1, 'parser returned no tree');
    return tree;
  };
  const nul = original.indexOf('\0');
  if (nul !== -1) fail(nul, 'source contains a NUL character');

  let tree = parse(original);
  let text = original;
  let toOriginal = (i: number): number => i;
  if (tree.rootNode.hasError) {
    const first = firstErrorNode(tree.rootNode);
    const idx = first ? first.startIndex : 0;
    const detail = first ? errorDetail(first) : 'syntax error';
    // Retry with the two workarounds for tree-sitter-python's known problems.
    const flat = flattenBrackets(original);
    const regions = textualAnnotationRegions(flat);
    let rescued = false;
    if (regions.length > 0 || flat !== original) {
      const w = wrapRegions(flat, regions);
      const again = parse(w.text);
      if (!again.rootNode.hasError) {
        tree.delete();
        tree = again;
        text = w.text;
        toOriginal = w.back;
        rescued = true;
      } else again.delete();
    }
    if (!rescued) {
      tree.delete();
      fail(idx, detail);
    }
  }
  const typeForms = typeFormRegions(tree.rootNode, scope);
  if (typeForms.length > 0) {
    const w = wrapRegions(text, typeForms);
    editForWraps(tree, text, w.kept);
    const again = p.parse(w.text, tree);
    tree.delete();
    if (!again) throw new ContractParseError(path, 1, 1, 'parser returned no tree');
    const prev = toOriginal;
    toOriginal = (i: number): number => prev(w.back(i));
    if (again.rootNode.hasError) {
      const first = firstErrorNode(again.rootNode);
      again.delete();
      fail(first ? toOriginal(first.startIndex) : 0, first ? errorDetail(first) : 'syntax error');
    }
    tree = again;
    text = w.text;
  }
  const t = tree;
  const root = t.rootNode;
  try {
    // Constructs the tree-sitter grammar accepts but Python 3 does not.
    for (const n of root.descendantsOfType(['print_statement', 'exec_statement', '<>'])) {
      // `print >>f, x` is a valid Python 3 expression (a tuple); other print statements are not.
      if (!n || (n.type === 'print_statement' && named(n)[0]?.type === 'chevron')) continue;
      throw new PyError(n.startIndex, `not Python 3 syntax: ${n.type.replace('_', ' ')}`);
    }
    for (const m of text.matchAll(NUMBER_LIKE)) {
      if (FLOAT.test(m[0]) || DEC_INT.test(m[0]) || HEX_INT.test(m[0]) || OCT_INT.test(m[0]) || BIN_INT.test(m[0]) || IMAG_INT.test(m[0])) continue;
      // Not a valid literal as a whole: ask the tree what is really there (it may be in a
      // string or a comment, or be a number followed by a keyword, like `1if`).
      const at = root.descendantForIndex(m.index, m.index + 1);
      if (at && (at.type === 'integer' || at.type === 'float')) checkNumber(at);
    }
    for (const m of text.matchAll(INVISIBLE_SPACE)) {
      const at = root.descendantForIndex(m.index, m.index + 1);
      let ok = false;
      for (let a: Node | null = at; a; a = a.parent) {
        if (a.type === 'string' || a.type === 'comment') {
          ok = true;
          break;
        }
      }
      if (!ok) throw new PyError(m.index, `invalid non-printable character U+${m[0].codePointAt(0)!.toString(16).toUpperCase()}`);
    }
  } catch (err) {
    t.delete();
    if (err instanceof PyError) fail(toOriginal(err.index), err.detail);
    throw err;
  }
  return { text, root, toOriginal, release: () => t.delete() };
}
