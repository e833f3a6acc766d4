// Python contract extraction. The gate must read the public API of pushed Python code
// without running a Python interpreter on it, so this module parses source with the
// tree-sitter Python grammar (WebAssembly, in-process), lowers the parts it needs into a
// small model of Python's `ast` nodes, and prints expressions exactly as CPython 3.11's
// `ast.unparse` does. Two row formats come out of it:
//   - `seed`: byte-for-byte the rows and digest of the seed article's public_signatures /
//     contract_digest, so existing allow files keep matching;
//   - `v1`: a richer, normalised description of a module's public surface.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Language, Parser, Query, type Node, type Tree } from 'web-tree-sitter';
import { ContractParseError } from '../errors.js';

/** Bumped whenever the rows produced for the same source could change. */
export const PY_EXTRACTOR_VERSION = 3;

// ---------------------------------------------------------------------------------------
// Grammar loading

let parser: Parser | null = null;
let typeFormQuery: Query | null = null;
let loading: Promise<void> | null = null;

const TYPE_FORMS = '[(generic_type) (union_type) (member_type) (constrained_type)]';
const TYPE_FORM_QUERY = `
(function_definition return_type: (type ${TYPE_FORMS}) @t)
(typed_parameter type: (type ${TYPE_FORMS}) @t)
(typed_default_parameter type: (type ${TYPE_FORMS}) @t)
(assignment type: (type ${TYPE_FORMS}) @t)
`;

/** Load the grammar (idempotent). */
export function initPython(): Promise<void> {
  if (parser) return Promise.resolve();
  if (!loading) {
    loading = (async () => {
      await Parser.init();
      const require = createRequire(import.meta.url);
      const wasm = await readFile(require.resolve('tree-sitter-python/tree-sitter-python.wasm'));
      const language = await Language.load(new Uint8Array(wasm.buffer, wasm.byteOffset, wasm.byteLength));
      const p = new Parser();
      p.setLanguage(language);
      typeFormQuery = new Query(language, TYPE_FORM_QUERY);
      parser = p;
    })();
    loading.catch(() => {
      loading = null;
    });
  }
  return loading;
}

function requireParser(): Parser {
  if (!parser) throw new Error('python contract extractor used before initPython() resolved');
  return parser;
}

// ---------------------------------------------------------------------------------------
// A model of the Python `ast` expression nodes the unparser needs.

type PyStr = number[]; // code points; Python strings may hold lone surrogates
type ConstValue =
  | { t: 'str'; s: PyStr }
  | { t: 'bytes'; b: number[] }
  | { t: 'int'; v: bigint }
  | { t: 'float'; v: number }
  | { t: 'complex'; imag: number }
  | { t: 'None' }
  | { t: 'bool'; v: boolean }
  | { t: 'Ellipsis' };

interface Arg {
  arg: string;
  annotation: Expr | null;
}
interface Arguments {
  posonlyargs: Arg[];
  args: Arg[];
  vararg: Arg | null;
  kwonlyargs: Arg[];
  kw_defaults: (Expr | null)[];
  kwarg: Arg | null;
  defaults: Expr[];
}
interface Keyword {
  arg: string | null;
  value: Expr;
}
interface Comprehension {
  target: Expr;
  iter: Expr;
  ifs: Expr[];
  isAsync: boolean;
}
interface ConstantNode {
  k: 'Constant';
  value: ConstValue;
  kind: 'u' | null;
}
interface FormattedValue {
  k: 'FormattedValue';
  value: Expr;
  conversion: number;
  formatSpec: JoinedStr | null;
}
interface JoinedStr {
  k: 'JoinedStr';
  values: (ConstantNode | FormattedValue)[];
}

type Expr =
  | { k: 'Name'; id: string }
  | ConstantNode
  | JoinedStr
  | FormattedValue
  | { k: 'Attribute'; value: Expr; attr: string }
  | { k: 'Subscript'; value: Expr; slice: Expr }
  | { k: 'Slice'; lower: Expr | null; upper: Expr | null; step: Expr | null }
  | { k: 'Starred'; value: Expr }
  | { k: 'BinOp'; op: string; left: Expr; right: Expr }
  | { k: 'UnaryOp'; op: string; operand: Expr }
  | { k: 'BoolOp'; op: 'and' | 'or'; values: Expr[] }
  | { k: 'Compare'; left: Expr; ops: string[]; comparators: Expr[] }
  | { k: 'Call'; func: Expr; args: Expr[]; keywords: Keyword[] }
  | { k: 'List' | 'Tuple' | 'Set'; elts: Expr[] }
  | { k: 'Dict'; keys: (Expr | null)[]; values: Expr[] }
  | { k: 'Lambda'; args: Arguments; body: Expr }
  | { k: 'IfExp'; test: Expr; body: Expr; orelse: Expr }
  | { k: 'Await'; value: Expr }
  | { k: 'Yield'; value: Expr | null }
  | { k: 'YieldFrom'; value: Expr }
  | { k: 'NamedExpr'; target: Expr; value: Expr }
  | { k: 'ListComp' | 'SetComp' | 'GeneratorExp'; elt: Expr; generators: Comprehension[] }
  | { k: 'DictComp'; key: Expr; value: Expr; generators: Comprehension[] };

// ---------------------------------------------------------------------------------------
// Source preparation and syntax checking

/** Python reads source with universal newlines; tree positions below refer to this text. */
function normaliseNewlines(source: string): string {
  return source.indexOf('\r') === -1 ? source : source.replace(/\r\n?/g, '\n');
}

class PyError extends Error {
  constructor(
    readonly index: number,
    readonly detail: string,
  ) {
    super(detail);
  }
}

function positionOf(text: string, index: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  let column = 1;
  for (let i = lineStart; i < index && i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < index) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    column++;
  }
  return { line, column };
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
function typeFormRegions(root: Node, scope: Scope): Region[] {
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
function textualAnnotationRegions(text: string): Region[] {
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
function flattenBrackets(text: string): string {
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
function wrapRegions(text: string, regions: Region[]): { text: string; kept: Region[]; back: (i: number) => number } {
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
function editForWraps(tree: Tree, text: string, kept: Region[]): void {
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

interface Parsed {
  /** The text the tree was parsed from (may have parentheses added around annotations). */
  text: string;
  root: Node;
  /** Maps an index in `text` to the index in the original text. */
  toOriginal: (i: number) => number;
  release(): void;
}

const INVISIBLE_SPACE = /[\uFEFF\u2060\u200B]/g;

type Scope = 'seed' | 'v1';

function parsePython(original: string, path: string, scope: Scope): Parsed {
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

// ---------------------------------------------------------------------------------------
// Literals

const DIGITPART = String.raw`\d(?:_?\d)*`;
/** Candidate number tokens in source text (a superset; checked against the tree on doubt). */
const NUMBER_LIKE = /(?<![\p{L}\p{N}_.])(?:\d|\.\d)(?:[eE][+-]|[\p{L}\p{N}_.])*/gu;
const DEC_INT = /^(?:0(?:_?0)*|[1-9](?:_?\d)*)$/;
const HEX_INT = /^0[xX](?:_?[0-9a-fA-F])+$/;
const OCT_INT = /^0[oO](?:_?[0-7])+$/;
const BIN_INT = /^0[bB](?:_?[01])+$/;
const IMAG_INT = new RegExp(`^${DIGITPART}[jJ]$`);
const FLOAT = new RegExp(`^(?:(?:(?:${DIGITPART})?\\.${DIGITPART}|${DIGITPART}\\.)(?:[eE][+-]?${DIGITPART})?|${DIGITPART}[eE][+-]?${DIGITPART})[jJ]?$`);

function checkNumber(n: Node): void {
  const s = n.text;
  const ok = n.type === 'integer' ? DEC_INT.test(s) || HEX_INT.test(s) || OCT_INT.test(s) || BIN_INT.test(s) || IMAG_INT.test(s) : FLOAT.test(s);
  if (!ok) throw new PyError(n.startIndex, `invalid number literal ${JSON.stringify(s)}`);
}

function numberConstant(n: Node): ConstValue {
  const s = n.text.replace(/_/g, '');
  if (/[jJ]$/.test(s)) return { t: 'complex', imag: Number(s.slice(0, -1)) };
  if (n.type === 'float') return { t: 'float', v: Number(s) };
  const lower = s.length > 1 && s[0] === '0' ? s.slice(0, 2).toLowerCase() + s.slice(2) : s;
  if (/^0+$/.test(lower)) return { t: 'int', v: 0n };
  return { t: 'int', v: BigInt(lower) };
}

const SIMPLE_ESCAPES: Record<string, number> = {
  '\\': 0x5c,
  "'": 0x27,
  '"': 0x22,
  a: 7,
  b: 8,
  f: 12,
  n: 10,
  r: 13,
  t: 9,
  v: 11,
};

interface StrFlags {
  raw: boolean;
  bytes: boolean;
  fmt: boolean;
}

/**
 * Decode the body of a string literal the way Python's tokenizer does. `at` maps an offset
 * in `raw` to a source index for error reporting.
 */
function decodeBody(raw: string, flags: StrFlags, at: (i: number) => number, strictNamedEscapes: boolean): number[] {
  const out: number[] = [];
  const hex = (from: number, len: number): number => {
    const h = raw.slice(from, from + len);
    if (h.length !== len || !/^[0-9a-fA-F]+$/.test(h)) throw new PyError(at(from - 2), 'truncated escape sequence in string literal');
    return parseInt(h, 16);
  };
  for (let i = 0; i < raw.length; ) {
    const cp = raw.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    if (flags.bytes && cp > 0x7f) throw new PyError(at(i), 'bytes can only contain ASCII literal characters');
    if (flags.fmt && (cp === 0x7b || cp === 0x7d) && raw.charCodeAt(i + 1) === cp) {
      out.push(cp);
      i += 2;
      continue;
    }
    if (cp !== 0x5c || flags.raw) {
      out.push(cp);
      i += width;
      continue;
    }
    const next = raw[i + 1];
    if (next === undefined) {
      out.push(0x5c);
      i += 1;
      continue;
    }
    if (next === '\n') {
      i += 2;
      continue;
    }
    if (Object.hasOwn(SIMPLE_ESCAPES, next)) {
      out.push(SIMPLE_ESCAPES[next]!);
      i += 2;
      continue;
    }
    if (next >= '0' && next <= '7') {
      let j = i + 1;
      let v = 0;
      while (j < raw.length && j < i + 4 && raw[j]! >= '0' && raw[j]! <= '7') v = v * 8 + (raw.charCodeAt(j++) - 48);
      out.push(flags.bytes ? v & 0xff : v);
      i = j;
      continue;
    }
    if (next === 'x') {
      out.push(hex(i + 2, 2));
      i += 4;
      continue;
    }
    if (!flags.bytes && (next === 'u' || next === 'U')) {
      const len = next === 'u' ? 4 : 8;
      const v = hex(i + 2, len);
      if (v > 0x10ffff) throw new PyError(at(i), 'illegal Unicode character in string literal');
      out.push(v);
      i += 2 + len;
      continue;
    }
    if (!flags.bytes && next === 'N') {
      const close = raw.indexOf('}', i);
      if (raw[i + 2] !== '{' || close === -1) throw new PyError(at(i), 'malformed \\N character escape');
      // No Unicode name database is available here: keep the escape as written.
      if (strictNamedEscapes) throw new PyError(at(i), '\\N{...} escapes are not supported by the seed-compatible extractor');
      for (const ch of raw.slice(i, close + 1)) out.push(ch.codePointAt(0)!);
      i = close + 1;
      continue;
    }
    out.push(0x5c); // unknown escape: the backslash stays
    i += 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// tree-sitter CST -> ast model

const BINOPS = new Set(['+', '-', '*', '@', '/', '%', '//', '**', '|', '&', '^', '<<', '>>']);
const CMPOPS = new Set(['<', '<=', '==', '!=', '>=', '>', 'in', 'not in', 'is', 'is not']);

function nfkc(name: string): string {
  // Python normalises non-ASCII identifiers to NFKC while parsing.
  return /^[\x00-\x7f]*$/.test(name) ? name : name.normalize('NFKC');
}

function isTrivia(n: Node): boolean {
  const t = n.type;
  return t === 'comment' || t === 'line_continuation';
}

// (Node#children fetches all children in one call; child(i) walks from the first each time.)
function named(n: Node): Node[] {
  return n.namedChildren.filter((c): c is Node => c !== null && !isTrivia(c));
}

function all(n: Node): Node[] {
  return n.children.filter((c): c is Node => c !== null && !isTrivia(c));
}

class Lowerer {
  constructor(
    private readonly text: string,
    private readonly strictNamedEscapes: boolean,
  ) {}

  fail(n: Node, detail: string): never {
    throw new PyError(n.startIndex, detail);
  }

  name(n: Node): string {
    if (n.type !== 'identifier') this.fail(n, `expected a name, found ${n.type}`);
    return nfkc(n.text);
  }

  expr(n: Node): Expr {
    switch (n.type) {
      case 'identifier':
        return { k: 'Name', id: nfkc(n.text) };
      case 'true':
        return constant({ t: 'bool', v: true });
      case 'false':
        return constant({ t: 'bool', v: false });
      case 'none':
        return constant({ t: 'None' });
      case 'ellipsis':
        return constant({ t: 'Ellipsis' });
      case 'integer':
      case 'float':
        checkNumber(n);
        return constant(numberConstant(n));
      case 'string':
        return this.strings([n]);
      case 'concatenated_string':
        return this.strings(named(n).filter((c) => c.type === 'string'));
      case 'type':
        return this.typeExpr(n);
      case 'parenthesized_expression': {
        const inner = named(n);
        if (inner.length !== 1) this.fail(n, 'malformed parenthesised expression');
        const c = inner[0]!;
        if (c.type === 'list_splat' || c.type === 'parenthesized_expression' && named(c)[0]?.type === 'list_splat') {
          this.fail(c, 'cannot use starred expression here');
        }
        return c.type === 'yield' ? this.yieldExpr(c) : this.expr(c);
      }
      case 'attribute': {
        const attr = this.name(n.childForFieldName('attribute')!);
        return this.postfix(n.childForFieldName('object')!, (value) => ({ k: 'Attribute', value, attr }));
      }
      case 'subscript':
        return this.subscript(n);
      case 'call':
        return this.call(n);
      case 'binary_operator':
      case 'unary_operator':
      case 'await':
        return this.arithmetic(n);
      case 'not_operator':
        return { k: 'UnaryOp', op: 'not', operand: this.expr(n.childForFieldName('argument')!) };
      case 'boolean_operator':
        return this.boolOp(n);
      case 'comparison_operator':
        return this.compare(n);
      case 'lambda': {
        const params = n.childForFieldName('parameters');
        return { k: 'Lambda', args: params ? this.parameters(params) : emptyArguments(), body: this.expr(n.childForFieldName('body')!) };
      }
      case 'conditional_expression': {
        const [body, test, orelse] = named(n);
        if (!body || !test || !orelse) this.fail(n, 'malformed conditional expression');
        if (body.type === 'named_expression') {
          // tree-sitter reads `y := a if b else c` as `(y := a) if b else c`; Python does not.
          const target: Expr = { k: 'Name', id: this.name(body.childForFieldName('name')!) };
          const value: Expr = { k: 'IfExp', body: this.expr(body.childForFieldName('value')!), test: this.expr(test), orelse: this.expr(orelse) };
          return { k: 'NamedExpr', target, value };
        }
        return { k: 'IfExp', body: this.expr(body), test: this.expr(test), orelse: this.expr(orelse) };
      }
      case 'named_expression':
        return { k: 'NamedExpr', target: { k: 'Name', id: this.name(n.childForFieldName('name')!) }, value: this.expr(n.childForFieldName('value')!) };
      case 'list':
        return { k: 'List', elts: this.elements(n) };
      case 'tuple':
        return { k: 'Tuple', elts: this.elements(n) };
      case 'set':
        return { k: 'Set', elts: this.elements(n) };
      case 'expression_list':
      case 'pattern_list':
        return { k: 'Tuple', elts: this.elements(n) };
      case 'dictionary': {
        const keys: (Expr | null)[] = [];
        const values: Expr[] = [];
        for (const c of named(n)) {
          if (c.type === 'pair') {
            keys.push(this.expr(c.childForFieldName('key')!));
            values.push(this.expr(c.childForFieldName('value')!));
          } else if (c.type === 'dictionary_splat') {
            keys.push(null);
            values.push(this.expr(named(c)[0]!));
          } else this.fail(c, `unexpected ${c.type} in dict display`);
        }
        return { k: 'Dict', keys, values };
      }
      case 'list_comprehension':
      case 'set_comprehension':
      case 'generator_expression': {
        const k = n.type === 'list_comprehension' ? 'ListComp' : n.type === 'set_comprehension' ? 'SetComp' : 'GeneratorExp';
        return { k, elt: this.expr(n.childForFieldName('body')!), generators: this.comprehension(n) };
      }
      case 'dictionary_comprehension': {
        const pair = n.childForFieldName('body')!;
        return {
          k: 'DictComp',
          key: this.expr(pair.childForFieldName('key')!),
          value: this.expr(pair.childForFieldName('value')!),
          generators: this.comprehension(n),
        };
      }
      case 'list_splat':
      case 'list_splat_pattern':
        return { k: 'Starred', value: this.expr(named(n)[0]!) };
      case 'yield':
        return this.yieldExpr(n);
      case 'union_type': {
        const [l, r] = named(n);
        return { k: 'BinOp', op: '|', left: this.expr(l!), right: this.expr(r!) };
      }
      case 'member_type': {
        const [v, a] = named(n);
        return { k: 'Attribute', value: this.expr(v!), attr: this.name(a!) };
      }
      case 'generic_type': {
        const [v, params] = named(n);
        return { k: 'Subscript', value: { k: 'Name', id: this.name(v!) }, slice: this.typeParameterSlice(params!) };
      }
      case 'splat_type': {
        if (n.child(0)?.type !== '*') this.fail(n, 'invalid ** in annotation');
        return { k: 'Starred', value: { k: 'Name', id: this.name(named(n)[0]!) } };
      }
      default:
        return this.fail(n, `unsupported expression ${n.type}`);
    }
  }

  private typeExpr(n: Node): Expr {
    const c = named(n);
    if (c.length !== 1) this.fail(n, 'malformed annotation');
    return this.expr(c[0]!);
  }

  private typeParameterSlice(n: Node): Expr {
    const items = named(n);
    const commas = all(n).filter((c) => c.type === ',').length;
    const elts = items.map((t) => {
      const inner = t.type === 'type' && named(t).length === 1 ? named(t)[0]! : t;
      if (inner.type === 'constrained_type') {
        const parts: Node[] = [];
        let cur: Node = inner;
        while (cur.type === 'constrained_type') {
          const [l, r] = named(cur);
          parts.push(l!);
          const rr = r!.type === 'type' && named(r!).length === 1 ? named(r!)[0]! : r!;
          cur = rr;
        }
        parts.push(cur);
        if (parts.length > 3) this.fail(inner, 'invalid slice');
        return { k: 'Slice', lower: this.expr(parts[0]!), upper: this.expr(parts[1]!), step: parts[2] ? this.expr(parts[2]) : null } as Expr;
      }
      return this.expr(inner);
    });
    if (elts.length === 1 && commas === 0 && elts[0]!.k !== 'Starred') return elts[0]!;
    return { k: 'Tuple', elts };
  }

  private yieldExpr(n: Node): Expr {
    const kids = all(n);
    const v = named(n)[0];
    if (kids[1]?.type === 'from') return { k: 'YieldFrom', value: this.expr(v!) };
    return { k: 'Yield', value: v ? this.expr(v) : null };
  }

  private elements(n: Node): Expr[] {
    return named(n).map((c) => {
      if (c.type === 'parenthesized_list_splat') this.fail(c, 'cannot use starred expression here');
      return c.type === 'yield' ? this.yieldExpr(c) : this.expr(c);
    });
  }

  /**
   * tree-sitter binds `*a[i]` / `*a.b` / `*f()` as `(*a)[i]`; Python stars the whole
   * primary. Lower the base, and move a star on it outwards.
   */
  private postfix(base: Node, make: (value: Expr) => Expr): Expr {
    const v = this.expr(base);
    if (v.k === 'Starred' && base.type !== 'parenthesized_expression') return { k: 'Starred', value: make(v.value) };
    return make(v);
  }

  /**
   * Binary, unary and await operators. tree-sitter's precedences differ from Python's
   * (it ranks `^` above `&`, and `await` below `**`), so the operator chain is flattened
   * back into tokens in source order and regrouped with Python's grammar:
   *   star: '*' bor | bor;  bor: bxor ('|' bxor)*;  ... term: factor (op factor)*;
   *   factor: ('+'|'-'|'~') factor | power;  power: await_primary ['**' factor];
   *   await_primary: 'await' primary | primary
   */
  private arithmetic(n: Node): Expr {
    type Tok = { op: string; node: Node } | { operand: Node };
    const toks: Tok[] = [];
    const flatten = (x: Node): void => {
      if (x.type === 'binary_operator') {
        const op = x.childForFieldName('operator')!;
        if (!BINOPS.has(op.type)) this.fail(x, `unknown operator ${op.type}`);
        flatten(x.childForFieldName('left')!);
        toks.push({ op: op.type, node: op });
        flatten(x.childForFieldName('right')!);
      } else if (x.type === 'unary_operator') {
        const op = x.childForFieldName('operator')!;
        toks.push({ op: 'u' + op.type, node: op });
        flatten(x.childForFieldName('argument')!);
      } else if (x.type === 'await') {
        toks.push({ op: 'await', node: x });
        flatten(named(x)[0]!);
      } else toks.push({ operand: x });
    };
    flatten(n);
    let pos = 0;
    const peek = (): string | null => {
      const t = toks[pos];
      return t && 'op' in t ? t.op : null;
    };
    const levels: string[][] = [['|'], ['^'], ['&'], ['<<', '>>'], ['+', '-'], ['*', '@', '/', '%', '//']];
    // A star on the first operand applies to the whole chain (`*a + b` is `*(a + b)`).
    let starred = false;
    const operand = (): Expr => {
      const at = pos;
      const t = toks[pos++];
      if (!t || 'op' in t) return this.fail(t ? t.node : n, 'invalid syntax');
      const e = this.expr(t.operand);
      if (e.k === 'Starred' && t.operand.type !== 'parenthesized_expression') {
        if (at !== 0) this.fail(t.operand, 'cannot use starred expression here');
        starred = true;
        return e.value;
      }
      return e;
    };
    const factor = (): Expr => {
      const op = peek();
      if (op === 'u-' || op === 'u+' || op === 'u~') {
        pos++;
        return { k: 'UnaryOp', op: op.slice(1), operand: factor() };
      }
      let base: Expr;
      if (op === 'await') {
        pos++;
        if (peek() !== null) this.fail((toks[pos] as { node: Node }).node, 'invalid syntax');
        base = { k: 'Await', value: operand() };
      } else if (op !== null) {
        return this.fail((toks[pos] as { node: Node }).node, 'invalid syntax');
      } else base = operand();
      if (peek() === '**') {
        pos++;
        return { k: 'BinOp', op: '**', left: base, right: factor() };
      }
      return base;
    };
    const level = (i: number): Expr => {
      if (i === levels.length) return factor();
      let left = level(i + 1);
      for (let op = peek(); op !== null && levels[i]!.includes(op); op = peek()) {
        pos++;
        left = { k: 'BinOp', op, left, right: level(i + 1) };
      }
      return left;
    };
    const e = level(0);
    if (pos !== toks.length) {
      const t = toks[pos]!;
      this.fail('op' in t ? t.node : t.operand, 'invalid syntax');
    }
    return starred ? { k: 'Starred', value: e } : e;
  }

  private subscript(n: Node): Expr {
    const valueNode = n.childForFieldName('value')!;
    const base = this.expr(valueNode);
    const hoist = base.k === 'Starred' && valueNode.type !== 'parenthesized_expression';
    const value = hoist ? (base as { value: Expr }).value : base;
    const items = n.childrenForFieldName('subscript').filter((c): c is Node => !!c);
    let afterBracket = false;
    let commas = 0;
    for (const c of all(n)) {
      if (c.type === '[') afterBracket = true;
      else if (afterBracket && c.type === ',') commas++;
    }
    const elts = items.map((c) => (c.type === 'slice' ? this.slice(c) : this.expr(c)));
    const slice: Expr = elts.length === 1 && commas === 0 && elts[0]!.k !== 'Starred' ? elts[0]! : { k: 'Tuple', elts };
    const sub: Expr = { k: 'Subscript', value, slice };
    return hoist ? { k: 'Starred', value: sub } : sub;
  }

  private slice(n: Node): Expr {
    const parts: (Expr | null)[] = [null];
    for (const c of all(n)) {
      if (c.type === ':') parts.push(null);
      else parts[parts.length - 1] = this.expr(c);
    }
    return { k: 'Slice', lower: parts[0] ?? null, upper: parts[1] ?? null, step: parts[2] ?? null };
  }

  callArguments(list: Node): { args: Expr[]; keywords: Keyword[] } {
    const args: Expr[] = [];
    const keywords: Keyword[] = [];
    for (const c of named(list)) {
      if (c.type === 'keyword_argument') {
        keywords.push({ arg: this.name(c.childForFieldName('name')!), value: this.expr(c.childForFieldName('value')!) });
      } else if (c.type === 'dictionary_splat') {
        keywords.push({ arg: null, value: this.expr(named(c)[0]!) });
      } else {
        if (keywords.length > 0 && c.type !== 'list_splat') this.fail(c, 'positional argument follows keyword argument');
        if (keywords.some((k) => k.arg === null) && c.type === 'list_splat') this.fail(c, 'iterable argument unpacking follows keyword argument unpacking');
        args.push(this.expr(c));
      }
    }
    return { args, keywords };
  }

  private call(n: Node): Expr {
    const a = n.childForFieldName('arguments')!;
    return this.postfix(n.childForFieldName('function')!, (func) => {
      if (a.type === 'generator_expression') return { k: 'Call', func, args: [this.expr(a)], keywords: [] };
      return { k: 'Call', func, ...this.callArguments(a) };
    });
  }

  private boolOp(n: Node): Expr {
    const op = n.childForFieldName('operator')!.type as 'and' | 'or';
    const left = n.childForFieldName('left')!;
    const right = n.childForFieldName('right')!;
    const values: Expr[] = [];
    // Python flattens an unparenthesised chain of one operator into one BoolOp.
    if (left.type === 'boolean_operator' && left.childForFieldName('operator')!.type === op) {
      const l = this.boolOp(left) as { k: 'BoolOp'; values: Expr[] };
      values.push(...l.values);
    } else values.push(this.expr(left));
    values.push(this.expr(right));
    return { k: 'BoolOp', op, values };
  }

  private compare(n: Node): Expr {
    const operands: Expr[] = [];
    const ops: string[] = [];
    for (const c of all(n)) {
      if (c.isNamed) operands.push(this.expr(c));
      else {
        const op = c.type.replace(/\s+/g, ' ');
        if (!CMPOPS.has(op)) this.fail(c, `invalid comparison operator ${JSON.stringify(c.text)}`);
        ops.push(op);
      }
    }
    if (operands.length !== ops.length + 1) this.fail(n, 'malformed comparison');
    return { k: 'Compare', left: operands[0]!, ops, comparators: operands.slice(1) };
  }

  private target(n: Node): Expr {
    switch (n.type) {
      case 'pattern_list':
      case 'tuple_pattern':
        return { k: 'Tuple', elts: named(n).map((c) => this.target(c)) };
      case 'list_pattern':
        return { k: 'List', elts: named(n).map((c) => this.target(c)) };
      case 'list_splat_pattern':
        return { k: 'Starred', value: this.target(named(n)[0]!) };
      default:
        return this.expr(n);
    }
  }

  private comprehension(n: Node): Comprehension[] {
    const gens: Comprehension[] = [];
    const body = n.childForFieldName('body');
    for (const c of named(n)) {
      if (body && c.equals(body)) continue;
      if (c.type === 'for_in_clause') {
        const rights = c.childrenForFieldName('right').filter((x): x is Node => !!x && !isTrivia(x));
        if (rights.length !== 1) this.fail(c, 'comprehension iterable must be a single expression');
        gens.push({
          target: this.target(c.childForFieldName('left')!),
          iter: this.expr(rights[0]!),
          ifs: [],
          isAsync: c.child(0)?.type === 'async',
        });
      } else if (c.type === 'if_clause') {
        gens[gens.length - 1]!.ifs.push(this.expr(named(c)[0]!));
      }
    }
    return gens;
  }

  /** Lower `parameters` / `lambda_parameters` into Python's `arguments`. */
  parameters(n: Node): Arguments {
    const a = emptyArguments();
    const positional: Arg[] = [];
    let star = false;
    let sawDefault = false;
    for (const c of named(n)) {
      const add = (arg: Arg, dflt: Expr | null, node: Node): void => {
        if (a.kwarg) this.fail(node, 'arguments cannot follow var-keyword argument');
        if (star) {
          a.kwonlyargs.push(arg);
          a.kw_defaults.push(dflt);
          return;
        }
        if (dflt) {
          sawDefault = true;
          a.defaults.push(dflt);
        } else if (sawDefault) this.fail(node, 'non-default argument follows default argument');
        positional.push(arg);
      };
      const ann = (): Expr | null => {
        const t = c.childForFieldName('type');
        return t ? this.expr(t) : null;
      };
      switch (c.type) {
        case 'identifier':
          add({ arg: nfkc(c.text), annotation: null }, null, c);
          break;
        case 'default_parameter':
          add({ arg: this.name(c.childForFieldName('name')!), annotation: null }, this.expr(c.childForFieldName('value')!), c);
          break;
        case 'typed_default_parameter':
          add({ arg: this.name(c.childForFieldName('name')!), annotation: ann() }, this.expr(c.childForFieldName('value')!), c);
          break;
        case 'typed_parameter': {
          const head = named(c)[0]!;
          if (head.type === 'identifier') add({ arg: nfkc(head.text), annotation: ann() }, null, c);
          else if (head.type === 'list_splat_pattern') {
            if (star) this.fail(c, '* argument may appear only once');
            star = true;
            a.vararg = { arg: this.name(named(head)[0]!), annotation: ann() };
          } else if (head.type === 'dictionary_splat_pattern') {
            if (a.kwarg) this.fail(c, '** argument may appear only once');
            a.kwarg = { arg: this.name(named(head)[0]!), annotation: ann() };
          } else this.fail(head, `unsupported parameter ${head.type}`);
          break;
        }
        case 'list_splat_pattern':
          if (star) this.fail(c, '* argument may appear only once');
          star = true;
          a.vararg = { arg: this.name(named(c)[0]!), annotation: null };
          break;
        case 'keyword_separator':
          if (star) this.fail(c, '* argument may appear only once');
          star = true;
          break;
        case 'positional_separator':
          if (star || a.posonlyargs.length > 0 || positional.length === 0) this.fail(c, 'invalid / in parameters');
          a.posonlyargs = positional.splice(0);
          break;
        case 'dictionary_splat_pattern':
          if (a.kwarg) this.fail(c, '** argument may appear only once');
          a.kwarg = { arg: this.name(named(c)[0]!), annotation: null };
          break;
        default:
          this.fail(c, `unsupported parameter ${c.type}`);
      }
    }
    if (star && !a.vararg && a.kwonlyargs.length === 0) this.fail(n, 'named arguments must follow bare *');
    a.args = positional;
    return a;
  }

  // --- strings -------------------------------------------------------------------------

  private strings(parts: Node[]): Expr {
    let anyF = false;
    let anyBytes = false;
    let allBytes = true;
    let kind: 'u' | null = null;
    // The body ends before the closing quote (tree-sitter's string_end node may swallow
    // trailing backslashes of a raw string, so it is not used for that).
    const pieces: { flags: StrFlags; node: Node; start: Node; bodyEnd: number }[] = [];
    parts.forEach((s, i) => {
      const start = all(s)[0]!;
      const quote = /['"]+$/.exec(start.text)?.[0] ?? '';
      const prefix = start.text.slice(0, start.text.length - quote.length).toLowerCase();
      if (!/^(?:|[rubf]|br|rb|fr|rf)$/.test(prefix)) this.fail(s, `invalid string prefix ${JSON.stringify(prefix)}`);
      const flags = { raw: prefix.includes('r'), bytes: prefix.includes('b'), fmt: prefix.includes('f') };
      if (i === 0 && start.text[0] === 'u') kind = 'u'; // CPython checks the first character only
      anyF ||= flags.fmt;
      anyBytes ||= flags.bytes;
      allBytes &&= flags.bytes;
      pieces.push({ flags, node: s, start, bodyEnd: s.endIndex - quote.length });
    });
    if (anyBytes && !allBytes) this.fail(parts[0]!, 'cannot mix bytes and nonbytes literals');
    if (!anyF) {
      const out: number[] = [];
      for (const p of pieces) {
        const raw = this.text.slice(p.start.endIndex, p.bodyEnd);
        pushAll(out, decodeBody(raw, p.flags, (i) => p.start.endIndex + i, this.strictNamedEscapes));
      }
      return constant(allBytes ? { t: 'bytes', b: out } : { t: 'str', s: out }, allBytes ? null : kind);
    }
    const values: (ConstantNode | FormattedValue)[] = [];
    for (const p of pieces) {
      if (!p.flags.fmt) {
        const raw = this.text.slice(p.start.endIndex, p.bodyEnd);
        appendText(values, decodeBody(raw, p.flags, (i) => p.start.endIndex + i, this.strictNamedEscapes));
        continue;
      }
      this.fstringParts(values, p.start.endIndex, p.bodyEnd, named(p.node).filter((c) => c.type === 'interpolation'), p.flags);
    }
    return { k: 'JoinedStr', values };
  }

  private fstringParts(values: (ConstantNode | FormattedValue)[], from: number, to: number, interps: Node[], flags: StrFlags): void {
    let pos = from;
    const literal = (a: number, b: number): void => {
      if (b > a) appendText(values, decodeBody(this.text.slice(a, b), flags, (i) => a + i, this.strictNamedEscapes));
    };
    for (const it of interps) {
      literal(pos, it.startIndex);
      this.interpolation(values, it, flags);
      pos = it.endIndex;
    }
    literal(pos, to);
  }

  private interpolation(values: (ConstantNode | FormattedValue)[], n: Node, flags: StrFlags): void {
    const kids = all(n);
    const open = kids[0]!;
    const exprNode = n.childForFieldName('expression');
    if (!exprNode) this.fail(n, 'f-string: empty expression not allowed');
    const eq = kids.find((c) => c.type === '=' && !c.isNamed);
    const conv = n.childForFieldName('type_conversion');
    const spec = n.childForFieldName('format_specifier');
    let conversion = -1;
    if (conv) {
      const ch = conv.text.slice(1);
      if (ch !== 's' && ch !== 'r' && ch !== 'a') this.fail(conv, `f-string: invalid conversion character ${JSON.stringify(ch)}`);
      conversion = ch.charCodeAt(0);
    }
    if (eq) {
      // The debug text runs from '{' up to the conversion, format spec or '}', spaces included.
      const stop = conv?.startIndex ?? spec?.startIndex ?? kids[kids.length - 1]!.startIndex;
      appendText(values, toCodePoints(this.text.slice(open.endIndex, stop)));
      if (!conv && !spec) conversion = 'r'.charCodeAt(0);
    }
    const value = exprNode.type === 'yield' ? this.yieldExpr(exprNode) : this.expr(exprNode);
    let formatSpec: JoinedStr | null = null;
    if (spec) {
      const specValues: (ConstantNode | FormattedValue)[] = [];
      const colon = all(spec)[0]!;
      this.fstringParts(specValues, colon.endIndex, spec.endIndex, named(spec).filter((c) => c.type === 'format_expression'), flags);
      formatSpec = { k: 'JoinedStr', values: specValues };
    }
    values.push({ k: 'FormattedValue', value, conversion, formatSpec });
  }
}

function constant(value: ConstValue, kind: 'u' | null = null): ConstantNode {
  return { k: 'Constant', value, kind };
}

function appendText(values: (ConstantNode | FormattedValue)[], cps: number[]): void {
  if (cps.length === 0) return;
  const last = values[values.length - 1];
  if (last && last.k === 'Constant' && last.value.t === 'str') pushAll(last.value.s, cps);
  else values.push(constant({ t: 'str', s: [...cps] }));
}

function emptyArguments(): Arguments {
  return { posonlyargs: [], args: [], vararg: null, kwonlyargs: [], kw_defaults: [], kwarg: null, defaults: [] };
}

// ---------------------------------------------------------------------------------------
// Python's repr() for the constant types, and str.isprintable()

// Ranges of code points for which Python 3.11's str.isprintable() is False (Unicode 14.0),
// as hex "gap.length" pairs relative to the end of the previous range. Embedded so the
// result does not depend on the Unicode version of the Node.js running the gate.
const NON_PRINTABLE_TABLE = [
  '0.20,5f.22,c.1,2ca.2,6.4,7.1,1.1,14.1,18d.1,26.2,32.2,3.1,37.8,1b.4,6.11,16.1,c0.1,30.2,3b.2',
  '65.e,3b.2,31.2,f.1,1c.2,1.1,b.5,1f.9,4a.1,a1.1,8.2,2.2,16.1,7.1,1.3,4.2,9.2,2.2,4.8,1.4,2.1,5.2',
  '19.2,3.1,6.4,2.2,16.1,7.1,2.1,2.1,2.2,1.1,5.4,2.2,3.3,1.7,4.1,1.7,11.a,3.1,9.1,3.1,16.1,7.1,2.1',
  '5.2,a.1,3.1,3.2,1.f,4.2,c.7,7.1,3.1,8.2,2.2,16.1,7.1,2.1,5.2,9.2,2.2,3.7,3.4,2.1,5.2,12.a,2.1',
  '6.3,3.1,4.3,2.1,1.1,2.3,2.3,3.3,c.4,5.3,3.1,4.2,1.6,1.e,15.5,d.1,3.1,17.1,10.2,9.1,3.1,4.7,2.1',
  '3.2,1.2,4.2,a.7,16.1,3.1,17.1,a.1,5.2,9.1,3.1,4.7,2.6,2.1,4.2,a.1,2.d,d.1,3.1,33.1,3.1,6.4,10.2',
  '1a.1,3.1,12.3,18.1,9.1,1.2,7.3,1.4,6.1,1.1,8.6,a.2,3.c,3a.4,1d.25,2.1,1.1,5.1,18.1,1.1,17.2,5.1',
  '1.1,6.2,a.2,4.20,48.1,24.4,27.1,24.1,f.1,d.25,c6.1,1.5,1.2,179.1,4.2,7.1,1.1,4.2,29.1,4.2,21.1',
  '4.2,7.1,1.1,4.2,f.1,39.1,4.2,43.2,20.3,1a.6,56.2,6.2,280.1,1c.3,59.7,16.9,18.9,14.c,d.1,3.1,2.c',
  '5e.2,a.6,a.6,e.1,b.6,59.7,2b.5,46.a,1f.1,c.4,c.4,1.3,2a.2,5.b,2c.4,1a.6,b.3,3e.2,41.1,1d.2,b.6',
  'a.6,e.2,1f.31,4d.3,2f.1,74.8,3c.3,f.3,3c.7,2b.2,b.8,2b.5,216.2,6.2,26.2,6.2,8.1,1.1,1.1,1.1,1f.2',
  '35.1,f.1,e.2,6.1,13.2,3.1,9.11,18.8,2f.11,2.2,1b.1,d.3,21.f,21.f,8c.4,297.19,b.15,714.2,20.1',
  '15d.5,2d.1,1.5,1.2,38.7,2.e,18.9,7.1,7.1,7.1,7.1,7.1,7.1,7.1,7.1,7e.22,1a.1,59.c,d6.1a,c.5,3f.1',
  '56.2,67.5,2b.1,5e.1,54.c,2f.1,726d.3,37.9,15c.14,b8.8,cb.5,2.1,1.1,5.18,3b.3,a.6,38.8,46.8,c.6',
  '74.b,1e.3,4e.1,b.4,21.1,37.9,e.2,a.2,67.18,1c.a,6.2,6.2,6.9,7.1,7.1,3c.4,7e.2,a.6,2ba4.c,17.4',
  '31.2104,16e.2,6a.26,7.c,5.5,1a.1,5.1,1.1,2.1,2.1,7d.10,1bd.2,36.7,1.20,2a.6,33.1,13.1,4.4,5.1',
  '87.4,be.3,6.2,6.2,6.2,3.3,7.1,7.d,2.2,c.1,1a.1,13.1,2.1,f.2,e.22,7b.5,3.4,2d.3,58.1,d.3,1.2f',
  '2e.82,1d.3,31.f,1c.4,24.9,1e.5,2b.5,1e.1,25.4,e.2a,9e.2,a.6,24.4,24.4,28.8,34.b,c.1,f.1,7.1,2.1',
  'b.1,f.1,7.1,2.43,137.9,16.a,8.18,6.1,2a.1,9.45,6.2,1.1,2c.1,2.3,1.2,17.1,48.8,9.30,13.1,2.5,21.3',
  '1b.5,1.40,38.4,14.2,32.1,2.5,8.1,3.1,1d.2,3.4,a.7,9.7,40.20,27.4,c.9,36.3,1d.2,1b.5,1a.7,4.c',
  '7.50,49.37,33.d,33.7,2e.8,a.126,1f.1,2a.1,3.2,2.4e,28.8,2a.16,1a.26,1c.14,17.9,4e.4,24.9,3e.1',
  '5.d,19.7,a.6,35.1,12.8,27.9,60.1,14.b,12.1,2c.41,7.1,1.1,4.1,f.1,b.6,3b.5,a.6,4.1,8.2,2.2,16.1',
  '7.1,2.1,5.1,a.2,2.2,3.2,1.6,1.5,7.2,7.3,5.8b,5c.1,5.1e,48.8,a.a6,36.2,26.22,45.b,a.6,d.13,3a.6',
  'a.36,1b.2,f.4,17.b9,3c.64,53.c,8.2,1.2,8.1,2.1,1e.1,2.2,c.9,a.46,8.2,2e.2,b.1b,48.8,53.d,49.107',
  '9.1,2d.1,e.a,1d.3,20.2,16.1,e.49,7.1,2.1,2c.3,1.1,2.1,9.8,a.6,6.1,2.1,25.1,2.1,6.7,a.136,19.b7',
  '1.f,32.d,39b.66,6f.1,5.b,c4.a4c,63.d,42f.fd1,247.21b9,239.7,1f.1,a.4,51.1,a.6,1e.2,6.a,46.a,a.1',
  '7.1,15.5,13.2b0,5b.65,4b.4,39.7,11.40,5.b,2.e,17f8.8,4d6.2a,9.22e7,4.1,7.1,2.1,123.2d,3.11,4.8',
  '18c.904,6b.5,d.3,9.7,a.2,4.1260,2e.2,17.9,74.3c,f6.a,27.2,4a.8,70.15,46.9a,14.c,57.9,19.87,55.1',
  '47.1,2.2,1.2,2.2,4.1,c.1,1.1,7.1,41.1,4.2,8.1,7.1,1c.1,4.1,5.1,1.3,7.1,154.2,124.2,2be.f,5.1',
  'f.450,1f.e1,7.1,11.2,7.1,2.1,5.d5,2d.3,e.2,a.4,2.140,1f.11,3a.5,1.4e0,7.1,4.1,2.1,f.1,c5.2,10.29',
  '4c.4,a.4,2.311,44.4c,3d.c2,4.1,1b.1,2.1,1.2,1.1,a.1,4.1,1.1,1.6,1.4,1.1,1.1,1.1,3.1,2.1,1.2,1.1',
  '1.1,1.1,1.1,1.1,2.1,1.2,4.1,7.1,4.1,4.1,1.1,a.1,11.5,3.1,5.1,11.34,2.10e,2c.4,64.c,f.2,f.1,f.1',
  '25.a,ae.38,1d.d,2c.4,9.7,2.e,6.9a,3d8.5,10.3,d.3,74.c,59.7,c.4,1.f,c.4,38.8,a.6,28.8,1e.2,2.4e',
  '154.c,e.2,5.3,5.3,7.9,1d.3,b.5,6.a,a.6,8.8,7.9,93.1,37.25,a.406,a6e0.20,1039.7,de.2,1682.e',
  '1d31.c1f,21e.5e2,134b.aedb5,f0.2fe10',
].join(',');

let nonPrintable: Uint32Array | null = null; // [start0, end0, start1, end1, ...] inclusive

function isPrintable(cp: number): boolean {
  if (cp >= 0x20 && cp < 0x7f) return true;
  if (!nonPrintable) {
    const pairs = NON_PRINTABLE_TABLE.split(',');
    nonPrintable = new Uint32Array(pairs.length * 2);
    let prev = 0;
    pairs.forEach((p, i) => {
      const [gap, len] = p.split('.').map((x) => parseInt(x, 16)) as [number, number];
      const start = prev + gap;
      nonPrintable![2 * i] = start;
      nonPrintable![2 * i + 1] = start + len - 1;
      prev = start + len;
    });
  }
  const t = nonPrintable;
  let lo = 0;
  let hi = t.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < t[2 * mid]!) hi = mid - 1;
    else if (cp > t[2 * mid + 1]!) lo = mid + 1;
    else return false;
  }
  return true;
}

const hex = (v: number, width: number): string => v.toString(16).padStart(width, '0');

function chr(cp: number): string {
  return String.fromCodePoint(cp);
}

/** Spread-free (long literals would overflow the call stack with `push(...xs)`). */
function pushAll(into: number[], xs: number[]): void {
  for (const x of xs) into.push(x);
}

function fromCodePoints(cps: number[]): string {
  let s = '';
  for (let i = 0; i < cps.length; i += 4096) s += String.fromCodePoint(...cps.slice(i, i + 4096));
  return s;
}

function toCodePoints(s: string): number[] {
  const out: number[] = [];
  for (const ch of s) out.push(ch.codePointAt(0)!);
  return out;
}

/** repr(str) */
function strRepr(s: PyStr): string {
  const quote = s.includes(0x27) && !s.includes(0x22) ? 0x22 : 0x27;
  let out = chr(quote);
  for (const c of s) {
    if (c === quote || c === 0x5c) out += '\\' + chr(c);
    else if (c === 9) out += '\\t';
    else if (c === 10) out += '\\n';
    else if (c === 13) out += '\\r';
    else if (c < 0x20 || c === 0x7f) out += '\\x' + hex(c, 2);
    else if (c < 0x7f) out += chr(c);
    else if (isPrintable(c)) out += chr(c);
    else if (c <= 0xff) out += '\\x' + hex(c, 2);
    else if (c <= 0xffff) out += '\\u' + hex(c, 4);
    else out += '\\U' + hex(c, 8);
  }
  return out + chr(quote);
}

/** repr(bytes) */
function bytesRepr(b: number[]): string {
  const quote = b.includes(0x27) && !b.includes(0x22) ? 0x22 : 0x27;
  let out = 'b' + chr(quote);
  for (const c of b) {
    if (c === quote || c === 0x5c) out += '\\' + chr(c);
    else if (c === 9) out += '\\t';
    else if (c === 10) out += '\\n';
    else if (c === 13) out += '\\r';
    else if (c < 0x20 || c >= 0x7f) out += '\\x' + hex(c, 2);
    else out += chr(c);
  }
  return out + chr(quote);
}

/** One character through Python's `unicode_escape` codec. */
function unicodeEscape(c: number): string {
  if (c === 0x5c) return '\\\\';
  if (c === 9) return '\\t';
  if (c === 10) return '\\n';
  if (c === 13) return '\\r';
  if (c < 0x20 || (c >= 0x7f && c <= 0xff)) return '\\x' + hex(c, 2);
  if (c < 0x7f) return chr(c);
  if (c <= 0xffff) return '\\u' + hex(c, 4);
  return '\\U' + hex(c, 8);
}

/** repr(float) ('r' format, shortest round-trip digits); `dot0` adds '.0' to integral values. */
function floatRepr(x: number, dot0: boolean): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return (Object.is(x, -0) ? '-' : '') + (dot0 ? '0.0' : '0');
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(x.toExponential())!;
  const sign = m[1]!;
  const digits = m[2]! + (m[3] ?? '');
  const decpt = parseInt(m[4]!, 10) + 1;
  if (decpt <= -4 || decpt > 16) {
    const e = decpt - 1;
    const mant = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${mant}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  if (decpt <= 0) return `${sign}0.${'0'.repeat(-decpt)}${digits}`;
  if (decpt >= digits.length) return sign + digits + '0'.repeat(decpt - digits.length) + (dot0 ? '.0' : '');
  return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
}

const INFSTR = '1e309'; // "1e" + repr(sys.float_info.max_10_exp + 1)

function floatLike(s: string): string {
  return s.replace('inf', INFSTR).replace('nan', `(${INFSTR}-${INFSTR})`);
}

function constRepr(v: ConstValue): string {
  switch (v.t) {
    case 'str':
      return strRepr(v.s);
    case 'bytes':
      return bytesRepr(v.b);
    case 'int':
      return v.v.toString();
    case 'float':
      return floatLike(floatRepr(v.v, true));
    case 'complex':
      return floatLike(floatRepr(v.imag, false) + 'j');
    case 'None':
      return 'None';
    case 'bool':
      return v.v ? 'True' : 'False';
    case 'Ellipsis':
      return 'Ellipsis';
  }
}

// ---------------------------------------------------------------------------------------
// A port of the expression half of CPython 3.11's ast._Unparser.

const P = {
  NAMED_EXPR: 1,
  TUPLE: 2,
  YIELD: 3,
  TEST: 4,
  OR: 5,
  AND: 6,
  NOT: 7,
  CMP: 8,
  EXPR: 9,
  BOR: 9,
  BXOR: 10,
  BAND: 11,
  SHIFT: 12,
  ARITH: 13,
  TERM: 14,
  FACTOR: 15,
  POWER: 16,
  AWAIT: 17,
  ATOM: 18,
} as const;
const nextP = (p: number): number => Math.min(p + 1, P.ATOM);

const BINOP_PRECEDENCE: Record<string, number> = {
  '+': P.ARITH,
  '-': P.ARITH,
  '*': P.TERM,
  '@': P.TERM,
  '/': P.TERM,
  '%': P.TERM,
  '<<': P.SHIFT,
  '>>': P.SHIFT,
  '|': P.BOR,
  '^': P.BXOR,
  '&': P.BAND,
  '//': P.TERM,
  '**': P.POWER,
};

const SINGLE_QUOTES = ["'", '"'];
const MULTI_QUOTES = ['"""', "'''"];
const ALL_QUOTES = [...SINGLE_QUOTES, ...MULTI_QUOTES];

class UnparseError extends Error {}

class Unparser {
  private out = '';
  private readonly precedences = new Map<Expr, number>();

  constructor(private readonly avoidBackslashes = false) {}

  unparse(node: Expr): string {
    this.out = '';
    this.traverse(node);
    return this.out;
  }

  arguments(args: Arguments): string {
    this.out = '';
    this.visitArguments(args);
    return this.out;
  }

  private write(s: string): void {
    this.out += s;
  }

  private buffered(f: () => void): string {
    const saved = this.out;
    this.out = '';
    f();
    const got = this.out;
    this.out = saved;
    return got;
  }

  private prec(node: Expr): number {
    return this.precedences.get(node) ?? P.TEST;
  }

  setPrec(p: number, ...nodes: Expr[]): void {
    for (const n of nodes) this.precedences.set(n, p);
  }

  private parens(p: number, node: Expr, body: () => void): void {
    const need = this.prec(node) > p;
    if (need) this.write('(');
    body();
    if (need) this.write(')');
  }

  private interleave<T>(sep: string, items: T[], f: (x: T) => void): void {
    items.forEach((x, i) => {
      if (i > 0) this.write(sep);
      f(x);
    });
  }

  private itemsView(items: Expr[]): void {
    if (items.length === 1) {
      this.traverse(items[0]!);
      this.write(',');
    } else this.interleave(', ', items, (x) => this.traverse(x));
  }

  traverse(node: Expr): void {
    switch (node.k) {
      case 'Name':
        return this.write(node.id);
      case 'Constant':
        if (node.value.t === 'Ellipsis') return this.write('...');
        if (node.kind === 'u') this.write('u');
        return this.writeConstant(node.value);
      case 'JoinedStr':
        return this.joinedStr(node);
      case 'FormattedValue':
        return this.write(fromCodePoints(this.formattedValue(node)));
      case 'NamedExpr':
        return this.parens(P.NAMED_EXPR, node, () => {
          this.setPrec(P.ATOM, node.target, node.value);
          this.traverse(node.target);
          this.write(' := ');
          this.traverse(node.value);
        });
      case 'Await':
        return this.parens(P.AWAIT, node, () => {
          this.write('await ');
          this.setPrec(P.ATOM, node.value);
          this.traverse(node.value);
        });
      case 'Yield':
        return this.parens(P.YIELD, node, () => {
          this.write('yield');
          if (node.value) {
            this.write(' ');
            this.setPrec(P.ATOM, node.value);
            this.traverse(node.value);
          }
        });
      case 'YieldFrom':
        return this.parens(P.YIELD, node, () => {
          this.write('yield from ');
          this.setPrec(P.ATOM, node.value);
          this.traverse(node.value);
        });
      case 'List':
        this.write('[');
        this.interleave(', ', node.elts, (x) => this.traverse(x));
        return this.write(']');
      case 'ListComp':
      case 'SetComp':
      case 'GeneratorExp': {
        const [o, c] = node.k === 'ListComp' ? ['[', ']'] : node.k === 'SetComp' ? ['{', '}'] : ['(', ')'];
        this.write(o!);
        this.traverse(node.elt);
        for (const g of node.generators) this.comprehension(g);
        return this.write(c!);
      }
      case 'DictComp':
        this.write('{');
        this.traverse(node.key);
        this.write(': ');
        this.traverse(node.value);
        for (const g of node.generators) this.comprehension(g);
        return this.write('}');
      case 'IfExp':
        return this.parens(P.TEST, node, () => {
          this.setPrec(nextP(P.TEST), node.body, node.test);
          this.traverse(node.body);
          this.write(' if ');
          this.traverse(node.test);
          this.write(' else ');
          this.setPrec(P.TEST, node.orelse);
          this.traverse(node.orelse);
        });
      case 'Set':
        if (node.elts.length === 0) return this.write('{*()}');
        this.write('{');
        this.interleave(', ', node.elts, (x) => this.traverse(x));
        return this.write('}');
      case 'Dict':
        this.write('{');
        this.interleave(', ', node.keys.map((k, i) => [k, node.values[i]!] as const), ([k, v]) => {
          if (k === null) {
            this.write('**');
            this.setPrec(P.EXPR, v);
            this.traverse(v);
          } else {
            this.traverse(k);
            this.write(': ');
            this.traverse(v);
          }
        });
        return this.write('}');
      case 'Tuple': {
        const need = node.elts.length === 0 || this.prec(node) > P.TUPLE;
        if (need) this.write('(');
        this.itemsView(node.elts);
        if (need) this.write(')');
        return;
      }
      case 'UnaryOp': {
        const op = node.op === 'not' ? 'not' : node.op;
        const p = op === 'not' ? P.NOT : P.FACTOR;
        return this.parens(p, node, () => {
          this.write(op);
          if (p !== P.FACTOR) this.write(' ');
          this.setPrec(p, node.operand);
          this.traverse(node.operand);
        });
      }
      case 'BinOp': {
        const p = BINOP_PRECEDENCE[node.op]!;
        return this.parens(p, node, () => {
          const rassoc = node.op === '**';
          this.setPrec(rassoc ? nextP(p) : p, node.left);
          this.traverse(node.left);
          this.write(` ${node.op} `);
          this.setPrec(rassoc ? p : nextP(p), node.right);
          this.traverse(node.right);
        });
      }
      case 'Compare':
        return this.parens(P.CMP, node, () => {
          this.setPrec(nextP(P.CMP), node.left, ...node.comparators);
          this.traverse(node.left);
          node.ops.forEach((o, i) => {
            this.write(` ${o} `);
            this.traverse(node.comparators[i]!);
          });
        });
      case 'BoolOp': {
        let p: number = node.op === 'and' ? P.AND : P.OR;
        return this.parens(p, node, () => {
          this.interleave(` ${node.op} `, node.values, (v) => {
            p = nextP(p);
            this.setPrec(p, v);
            this.traverse(v);
          });
        });
      }
      case 'Attribute': {
        this.setPrec(P.ATOM, node.value);
        this.traverse(node.value);
        const v = node.value;
        if (v.k === 'Constant' && (v.value.t === 'int' || v.value.t === 'bool')) this.write(' ');
        this.write('.');
        return this.write(node.attr);
      }
      case 'Call':
        this.setPrec(P.ATOM, node.func);
        this.traverse(node.func);
        this.write('(');
        this.callArgs(node.args, node.keywords);
        return this.write(')');
      case 'Subscript': {
        this.setPrec(P.ATOM, node.value);
        this.traverse(node.value);
        this.write('[');
        const s = node.slice;
        if (s.k === 'Tuple' && s.elts.length > 0) this.itemsView(s.elts);
        else this.traverse(s);
        return this.write(']');
      }
      case 'Starred':
        this.write('*');
        this.setPrec(P.EXPR, node.value);
        return this.traverse(node.value);
      case 'Slice':
        if (node.lower) this.traverse(node.lower);
        this.write(':');
        if (node.upper) this.traverse(node.upper);
        if (node.step) {
          this.write(':');
          this.traverse(node.step);
        }
        return;
      case 'Lambda':
        return this.parens(P.TEST, node, () => {
          this.write('lambda');
          const a = this.buffered(() => this.visitArguments(node.args));
          if (a) this.write(' ' + a);
          this.write(': ');
          this.setPrec(P.TEST, node.body);
          this.traverse(node.body);
        });
    }
  }

  callArgs(args: Expr[], keywords: Keyword[]): void {
    let comma = false;
    for (const e of args) {
      if (comma) this.write(', ');
      comma = true;
      this.traverse(e);
    }
    for (const k of keywords) {
      if (comma) this.write(', ');
      comma = true;
      this.write(k.arg === null ? '**' : k.arg + '=');
      this.traverse(k.value);
    }
  }

  private comprehension(g: Comprehension): void {
    this.write(g.isAsync ? ' async for ' : ' for ');
    this.setPrec(P.TUPLE, g.target);
    this.traverse(g.target);
    this.write(' in ');
    this.setPrec(nextP(P.TEST), g.iter, ...g.ifs);
    this.traverse(g.iter);
    for (const c of g.ifs) {
      this.write(' if ');
      this.traverse(c);
    }
  }

  private writeConstant(v: ConstValue): void {
    if (this.avoidBackslashes && v.t === 'str') this.writeStrAvoidingBackslashes(v.s);
    else this.write(constRepr(v));
  }

  private arg(a: Arg): void {
    this.write(a.arg);
    if (a.annotation) {
      this.write(': ');
      this.traverse(a.annotation);
    }
  }

  private visitArguments(node: Arguments): void {
    let first = true;
    const all = [...node.posonlyargs, ...node.args];
    const defaults: (Expr | null)[] = [...new Array<null>(all.length - node.defaults.length).fill(null), ...node.defaults];
    all.forEach((a, i) => {
      if (first) first = false;
      else this.write(', ');
      this.arg(a);
      const d = defaults[i];
      if (d) {
        this.write('=');
        this.traverse(d);
      }
      if (i + 1 === node.posonlyargs.length) this.write(', /');
    });
    if (node.vararg || node.kwonlyargs.length > 0) {
      if (first) first = false;
      else this.write(', ');
      this.write('*');
      if (node.vararg) {
        this.write(node.vararg.arg);
        if (node.vararg.annotation) {
          this.write(': ');
          this.traverse(node.vararg.annotation);
        }
      }
    }
    node.kwonlyargs.forEach((a, i) => {
      this.write(', ');
      this.arg(a);
      const d = node.kw_defaults[i];
      if (d) {
        this.write('=');
        this.traverse(d);
      }
    });
    if (node.kwarg) {
      if (!first) this.write(', ');
      this.write('**' + node.kwarg.arg);
      if (node.kwarg.annotation) {
        this.write(': ');
        this.traverse(node.kwarg.annotation);
      }
    }
  }

  // --- f-strings -----------------------------------------------------------------------

  private strLiteralHelper(s: PyStr, quoteTypes: string[], escapeSpecialWhitespace: boolean): [string, string[]] {
    let escaped = '';
    for (const c of s) {
      if (!escapeSpecialWhitespace && (c === 10 || c === 9)) escaped += chr(c);
      else if (c === 0x5c || !isPrintable(c)) escaped += unicodeEscape(c);
      else escaped += chr(c);
    }
    let possible = quoteTypes;
    if (escaped.includes('\n')) possible = possible.filter((q) => MULTI_QUOTES.includes(q));
    possible = possible.filter((q) => !escaped.includes(q));
    if (possible.length === 0) {
      const r = strRepr(s);
      const quote = quoteTypes.find((q) => q.includes(r[0]!)) ?? r[0]!;
      return [r.slice(1, -1), [quote]];
    }
    if (escaped) {
      const last = escaped[escaped.length - 1]!;
      possible = [...possible.filter((q) => q[0] !== last), ...possible.filter((q) => q[0] === last)];
      if (possible[0]![0] === last) escaped = escaped.slice(0, -1) + '\\' + last;
    }
    return [escaped, possible];
  }

  private writeStrAvoidingBackslashes(s: PyStr, quoteTypes = ALL_QUOTES): void {
    const [str, quotes] = this.strLiteralHelper(s, quoteTypes, false);
    this.write(quotes[0] + str + quotes[0]);
  }

  private joinedStr(node: JoinedStr): void {
    this.write('f');
    if (this.avoidBackslashes) {
      this.writeStrAvoidingBackslashes(this.fstringInner(node));
      return;
    }
    const parts = node.values.map((v) => [this.fstringInner(v), v.k === 'Constant'] as const);
    const newParts: string[] = [];
    let quoteTypes = [...ALL_QUOTES];
    let fallback = false;
    for (const [value, isConstant] of parts) {
      const [v, nq] = this.strLiteralHelper(value, quoteTypes, isConstant);
      newParts.push(v);
      if (!nq.some((q) => quoteTypes.includes(q))) {
        fallback = true;
        break;
      }
      quoteTypes = nq;
    }
    if (fallback) {
      quoteTypes = ["'''"];
      newParts.length = 0;
      for (const [value] of parts) newParts.push(strRepr([0x22, ...value]).slice(2, -1));
    }
    this.write(quoteTypes[0] + newParts.join('') + quoteTypes[0]);
  }

  private fstringInner(node: JoinedStr | ConstantNode | FormattedValue): PyStr {
    if (node.k === 'JoinedStr') return node.values.flatMap((v) => this.fstringInner(v));
    if (node.k === 'Constant') {
      if (node.value.t !== 'str') throw new UnparseError('unexpected node inside JoinedStr');
      return node.value.s.flatMap((c) => (c === 0x7b || c === 0x7d ? [c, c] : [c]));
    }
    return this.formattedValue(node);
  }

  private formattedValue(node: FormattedValue): PyStr {
    const inner = new Unparser(true);
    inner.setPrec(nextP(P.TEST), node.value);
    const expr = inner.unparse(node.value);
    if (expr.includes('\\')) throw new UnparseError('Unable to avoid backslash in f-string expression part');
    let out = '{' + (expr.startsWith('{') ? ' ' : '') + expr;
    if (node.conversion !== -1) out += '!' + String.fromCharCode(node.conversion);
    const cps = toCodePoints(out);
    if (node.formatSpec) cps.push(0x3a, ...this.fstringInner(node.formatSpec));
    cps.push(0x7d);
    return cps;
  }
}

function unparse(e: Expr): string {
  return new Unparser().unparse(e);
}

// ---------------------------------------------------------------------------------------
// Extraction

interface Ctx {
  parsed: Parsed;
  lower: Lowerer;
}

/** Run f for one statement; an unparse failure is reported at that statement. */
function atStatement<T>(stmt: Node, f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof UnparseError) throw new PyError(stmt.startIndex, err.message);
    throw err;
  }
}

function withTree<T>(source: string, path: string, scope: Scope, f: (ctx: Ctx) => T): T {
  const original = normaliseNewlines(source);
  const parsed = parsePython(original, path, scope);
  // The seed must never print a value it cannot reproduce exactly: \N{...} is refused.
  const lower = new Lowerer(parsed.text, scope === 'seed');
  try {
    return f({ parsed, lower });
  } catch (err) {
    if (err instanceof PyError) {
      const pos = positionOf(original, parsed.toOriginal(err.index));
      throw new ContractParseError(path, pos.line, pos.column, err.message, { cause: err });
    }
    throw err;
  } finally {
    parsed.release();
  }
}

function functionOf(stmt: Node): { def: Node; decorators: Node[] } | null {
  if (stmt.type === 'function_definition') return { def: stmt, decorators: [] };
  if (stmt.type === 'decorated_definition') {
    const def = stmt.childForFieldName('definition');
    if (def) return { def, decorators: named(stmt).filter((c) => c.type === 'decorator') };
  }
  return null;
}

function isAsync(def: Node): boolean {
  return def.child(0)?.type === 'async';
}

/**
 * Rows exactly as the seed's public_signatures produces for one file, in source order:
 * each module-level def/async def whose name does not start with '_', as
 * `${rel}::${name}(${regular positional parameters joined by ','})->${ast.unparse(returns)}`.
 * Requires initPython(). `source` must be the file decoded as UTF-8 with a BOM kept (the
 * seed reads it with read_text, and then ast.parse rejects it: so do we). Throws
 * ContractParseError wherever the seed itself would crash.
 */
export function extractPythonSeed(source: string, rel: string): string[] {
  if (source.charCodeAt(0) === 0xfeff) {
    // read_text(encoding='utf-8') keeps the BOM, and ast.parse rejects it.
    throw new ContractParseError(rel, 1, 1, 'invalid non-printable character U+FEFF (byte order mark)');
  }
  return withTree(source, rel, 'seed', ({ parsed, lower }) => {
    const rows: string[] = [];
    for (const stmt of named(parsed.root)) {
      const fn = functionOf(stmt);
      if (!fn || fn.def.type !== 'function_definition') continue;
      const name = lower.name(fn.def.childForFieldName('name')!);
      const args = lower.parameters(fn.def.childForFieldName('parameters')!);
      if (name.startsWith('_')) continue;
      const ret = fn.def.childForFieldName('return_type');
      const returns = ret ? atStatement(stmt, () => unparse(lower.expr(ret))) : '';
      rows.push(`${rel}::${name}(${args.args.map((a) => a.arg).join(',')})->${returns}`);
    }
    return rows;
  });
}

/** The literal strings of `__all__` at module level, or null when it is absent or not literal. */
function moduleAll(root: Node, lower: Lowerer): string[] | null {
  let names: string[] | null = null;
  let opaque = false;
  const literal = (n: Node | null): string[] | null => {
    if (!n) return null;
    let e: Expr;
    try {
      e = lower.expr(n);
    } catch {
      return null;
    }
    if (e.k !== 'List' && e.k !== 'Tuple') return null;
    const out: string[] = [];
    for (const x of e.elts) {
      if (x.k !== 'Constant' || x.value.t !== 'str') return null;
      out.push(fromCodePoints(x.value.s));
    }
    return out;
  };
  for (const stmt of named(root)) {
    if (stmt.type !== 'expression_statement') continue;
    for (const e of named(stmt)) {
      if (e.type === 'assignment' || e.type === 'augmented_assignment') {
        const left = e.childForFieldName('left');
        if (!left || left.type !== 'identifier' || left.text !== '__all__') continue;
        const right = e.childForFieldName('right');
        if (e.type === 'assignment' && !right) continue; // a bare annotation
        const vals = literal(right);
        if (!vals) opaque = true;
        else if (e.type === 'assignment') names = vals;
        else if (e.childForFieldName('operator')?.type === '+=' && names) names = [...names, ...vals];
        else opaque = true;
      } else if (e.type === 'call') {
        const f = e.childForFieldName('function');
        if (f?.type !== 'attribute' || f.childForFieldName('object')?.text !== '__all__') continue;
        const method = f.childForFieldName('attribute')?.text;
        const argv = named(e.childForFieldName('arguments')!);
        if (method === 'extend' && argv.length === 1 && names) {
          const vals = literal(argv[0]!);
          if (vals) names = [...names, ...vals];
          else opaque = true;
        } else if (method === 'append' && argv.length === 1 && names) {
          const x = lower.expr(argv[0]!);
          if (x.k === 'Constant' && x.value.t === 'str') names = [...names, fromCodePoints(x.value.s)];
          else opaque = true;
        } else opaque = true;
      }
    }
  }
  return opaque ? null : names;
}

function codePointCompare(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(j)!;
    if (x !== y) return x < y ? -1 : 1;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  const ra = a.length - i;
  const rb = b.length - j;
  return ra === rb ? 0 : ra < rb ? -1 : 1;
}

/**
 * v1 rows of one .py file, sorted by code point, without duplicates. Requires initPython().
 * Each row is `${path}::` followed by one declaration, every expression printed by the
 * ast.unparse port (so comments, layout, quotes, trailing commas and literal spelling
 * never matter):
 *   def / async def  `[@deco ]...[async ]def Qual.name(<arguments as ast.unparse>)[ -> ret]`
 *   class            `[@deco ]...class Qual.Name[(bases, kw=v)]`
 *   annotated name   module `NAME: ann`; class `Qual.name: ann[ = default]`
 *   __all__ re-export `export name` (listed in __all__, not defined by the above)
 * Public: at module level, names in a literal `__all__` if there is one, otherwise names
 * not starting with '_'; in classes, names not starting with '_' plus `__init__`. Nested
 * classes are followed; function bodies are not. Top-level and class-level if/try blocks
 * are looked into (so `if TYPE_CHECKING:` and fallback definitions count).
 * Throws ContractParseError when the file does not parse as Python 3.
 */
export function extractPythonV1(source: string, path: string): string[] {
  return analysePythonV1(source, path).rows;
}

/**
 * What one .py file tells the tree-level re-export resolution (src/contract/py-reexport.ts).
 * Pure per blob, so it is cached per blob id like the rows. A public module lists `exports`:
 * names it exports (`__all__`, or what an `__init__.py` without `__all__` imports) that come
 * from a `from ... import`, as [exported name, module as written, name there] (`*` for a star
 * import re-exported whole). A private module lists its `defs` (every module-level name's rows
 * without the path, as if it were public), its `imports` and star imports (for chains through
 * several private modules) and its literal `__all__`.
 */
export interface PyLinks {
  exports?: Array<[string, string, string]>;
  defs?: Record<string, string[]>;
  imports?: Record<string, [string, string]>;
  stars?: string[];
  all?: string[] | null;
}

/** Rows and re-export links of one .py file (see extractPythonV1 and PyLinks). */
export function analysePythonV1(source: string, path: string): { rows: string[]; links: PyLinks } {
  const text = source.charCodeAt(0) === 0xfeff ? source.slice(1) : source;
  return withTree(text, path, 'v1', ({ parsed, lower }) => {
    const rows = new Set<string>();
    // A private module (`_parser.py`, or any file under a `_pkg/` folder) is not public API:
    // its names count only where a public module exports them (the `export` rows there, and
    // the rows the re-export resolution adds for them). It is still parsed, so a syntax error
    // refuses the push as anywhere else.
    const isPrivate = isPrivateModule(path);
    const exported = moduleAll(parsed.root, lower);
    const reexportsImports = !exported && /(^|\/)__init__\.pyi?$/.test(path);
    const imported = new Set<string>();
    const exportSet = exported ? new Set(exported) : null;
    const definedAtTop = new Set<string>();
    const importsFrom = new Map<string, [string, string]>();
    const stars: string[] = [];
    const defs = new Map<string, Set<string>>();
    const assignedOnly = new Set<string>();
    let top = '';
    const emit = (body: string): void => {
      if (isPrivate) {
        let d = defs.get(top);
        if (!d) defs.set(top, (d = new Set()));
        d.add(body);
      } else rows.add(`${path}::${body}`);
    };
    const decoText = (decorators: Node[]): string =>
      decorators.map((d) => '@' + unparse(lower.expr(named(d)[0]!)) + ' ').join('');

    const visit = (body: Node, prefix: string, isModule: boolean): void => {
      const isPublic = (name: string): boolean => {
        if (isModule) return isPrivate || (exportSet ? exportSet.has(name) : !name.startsWith('_'));
        return !name.startsWith('_') || name === '__init__';
      };
      const one = (stmt: Node): void => {
        let def: Node | null = null;
        let decorators: Node[] = [];
        if (stmt.type === 'decorated_definition') {
          def = stmt.childForFieldName('definition');
          decorators = named(stmt).filter((c) => c.type === 'decorator');
        } else if (stmt.type === 'function_definition' || stmt.type === 'class_definition') def = stmt;
        if (def?.type === 'function_definition') {
          const name = lower.name(def.childForFieldName('name')!);
          const args = lower.parameters(def.childForFieldName('parameters')!);
          if (isModule) definedAtTop.add((top = name));
          if (!isPublic(name)) return;
          const ret = def.childForFieldName('return_type');
          const a = new Unparser().arguments(args);
          const returns = ret ? ' -> ' + unparse(lower.expr(ret)) : '';
          emit(`${decoText(decorators)}${isAsync(def) ? 'async ' : ''}def ${prefix}${name}(${a})${returns}`);
        } else if (def?.type === 'class_definition') {
          const name = lower.name(def.childForFieldName('name')!);
          if (isModule) definedAtTop.add((top = name));
          if (!isPublic(name)) return;
          const sup = def.childForFieldName('superclasses');
          let bases = '';
          if (sup) {
            const { args, keywords } = lower.callArguments(sup);
            if (args.length || keywords.length) bases = '(' + callArgsText(args, keywords) + ')';
          }
          emit(`${decoText(decorators)}class ${prefix}${name}${bases}`);
          const classBody = def.childForFieldName('body');
          if (classBody) visit(classBody, `${prefix}${name}.`, false);
        } else if (stmt.type === 'expression_statement') {
          for (const e of named(stmt)) {
            if (e.type !== 'assignment') continue;
            const left = e.childForFieldName('left');
            const type = e.childForFieldName('type');
            if (isModule && isPrivate && left?.type === 'identifier' && !type) assignedOnly.add(nfkc(left.text));
            if (!left || !type || left.type !== 'identifier') continue;
            const name = nfkc(left.text);
            if (isModule) definedAtTop.add((top = name));
            if (!isPublic(name) || name === '__all__') continue;
            const right = e.childForFieldName('right');
            const annotation = unparse(lower.expr(type));
            // Class-level values are defaults of dataclass-like constructors; module-level
            // values are data, so only their annotation counts, except a type alias
            // (`X: TypeAlias = ...`), which is API through its value.
            const alias = /^(?:(?:typing|typing_extensions|t)\.)?TypeAlias$/.test(annotation);
            const value = (!isModule || alias) && right ? ' = ' + unparse(lower.expr(right)) : '';
            emit(`${prefix}${name}: ${annotation}${value}`);
          }
        } else if (stmt.type === 'type_alias_statement') {
          // `type X[T] = ...` (PEP 695): API through its value, like `X: TypeAlias = ...`.
          const left = stmt.childForFieldName('left');
          const right = stmt.childForFieldName('right');
          const head = left ? unparse(lower.expr(left)) : '';
          const name = nfkc(head.replace(/\[.*$/s, ''));
          if (isModule) definedAtTop.add((top = name));
          if (!name || !isPublic(name) || !right) return;
          emit(`type ${prefix}${head} = ${unparse(lower.expr(right))}`);
        } else if (isModule && stmt.type === 'import_from_statement') {
          // Where each imported name comes from, for the re-export resolution; and a
          // package's __init__.py without __all__ exports what it imports (griffe reads it so).
          const module = (stmt.childForFieldName('module_name')?.text ?? '').replace(/\s+/g, '');
          if (named(stmt).some((c) => c.type === 'wildcard_import')) stars.push(module);
          for (const n of stmt.childrenForFieldName('name')) {
            if (!n) continue;
            const orig = n.type === 'aliased_import' ? n.childForFieldName('name')?.text : n.text;
            const bound = n.type === 'aliased_import' ? n.childForFieldName('alias')?.text : n.text.split('.').pop();
            if (!bound || !orig) continue;
            importsFrom.set(nfkc(bound), [module, nfkc(orig.replace(/\s+/g, ''))]);
            if (reexportsImports && !bound.startsWith('_')) imported.add(nfkc(bound));
          }
        } else if (stmt.type === 'if_statement' || stmt.type === 'try_statement') {
          for (const block of conditionalBlocks(stmt)) visit(block, prefix, isModule);
        }
      };
      for (const stmt of named(body)) atStatement(stmt, () => one(stmt));
    };
    visit(parsed.root, '', true);
    if (isPrivate) {
      const d: Record<string, string[]> = {};
      // A plain `X = ...` has no declared surface (as in a public module), but it is defined:
      // a re-export of it is not "unresolved", and it shows that it is a bare name.
      for (const name of assignedOnly) if (!defs.has(name)) defs.set(name, new Set([`${name} (assigned without annotation)`]));
      for (const [name, set] of [...defs].sort((a, b) => codePointCompare(a[0], b[0]))) d[name] = [...set].sort(codePointCompare);
      const imports: Record<string, [string, string]> = {};
      for (const [name, from] of importsFrom) if (!definedAtTop.has(name)) imports[name] = from;
      return { rows: [], links: { defs: d, imports, stars, all: exported } };
    }
    const out: Array<[string, string, string]> = [];
    const link = (name: string): void => {
      const from = importsFrom.get(name);
      if (from) out.push([name, from[0], from[1]]);
      else for (const s of stars) out.push([name, s, name]);
    };
    if (exported) {
      for (const name of exported) {
        if (definedAtTop.has(name)) continue;
        rows.add(`${path}::export ${name}`);
        link(name);
      }
    }
    for (const name of imported) {
      if (definedAtTop.has(name)) continue;
      rows.add(`${path}::export ${name}`);
      link(name);
    }
    if (reexportsImports) for (const s of stars) out.push(['*', s, '*']);
    return { rows: [...rows].sort(codePointCompare), links: out.length ? { exports: out } : {} };
  });
}

/**
 * Private by convention (PEP 8): a module or package whose name starts with `_`, other than
 * dunder names such as `__init__.py` and `__main__.py`.
 */
export function isPrivateModule(path: string): boolean {
  const parts = path.replace(/\.pyi?$/, '').split('/');
  return parts.some((p) => p.startsWith('_') && !(p.startsWith('__') && p.endsWith('__')));
}

/** Class bases and keywords as visit_ClassDef prints them. */
function callArgsText(args: Expr[], keywords: Keyword[]): string {
  const parts = [...args.map((a) => unparse(a)), ...keywords.map((k) => (k.arg === null ? '**' : k.arg + '=') + unparse(k.value))];
  return parts.join(', ');
}

/** The statement blocks of an if/elif/else or try/except/else/finally at the same level. */
function conditionalBlocks(stmt: Node): Node[] {
  const out: Node[] = [];
  const collect = (n: Node): void => {
    for (const c of named(n)) {
      if (c.type === 'block') out.push(c);
      else if (['elif_clause', 'else_clause', 'except_clause', 'except_group_clause', 'finally_clause'].includes(c.type)) collect(c);
    }
  };
  collect(stmt);
  return out;
}

// ---------------------------------------------------------------------------------------
// The seed's file order and digest

function pathParts(p: string): string[] {
  return p.split('/').filter((x) => x !== '' && x !== '.');
}

/** Order paths the way Python 3.11 `sorted(Path(...).rglob('*.py'))` orders them. */
export function seedOrder(paths: string[]): string[] {
  const keyed = paths.map((p) => ({ p, parts: pathParts(p) }));
  keyed.sort((a, b) => {
    const n = Math.min(a.parts.length, b.parts.length);
    for (let i = 0; i < n; i++) {
      const c = codePointCompare(a.parts[i]!, b.parts[i]!);
      if (c !== 0) return c;
    }
    return a.parts.length - b.parts.length;
  });
  return keyed.map((k) => k.p);
}

/** sha256 hex of rows.join('\n') encoded UTF-8 (the seed's contract_digest). */
export function seedDigest(rows: string[]): string {
  return createHash('sha256').update(rows.join('\n'), 'utf8').digest('hex');
}

/** A tree-sitter parse of Python source for other static readers (the tamper scan). */
export async function pythonTree(text: string): Promise<Tree> {
  await initPython();
  const tree = requireParser().parse(text);
  if (!tree) throw new Error('tree-sitter returned no tree');
  return tree;
}
