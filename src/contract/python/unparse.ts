// A port of the expression half of CPython 3.11's ast._Unparser: prints an ast model
// expression exactly as `ast.unparse` does.

import type { Arg, Arguments, Comprehension, ConstantNode, ConstValue, Expr, FormattedValue, JoinedStr, Keyword, PyStr } from './ast.js';
import { chr, constRepr, fromCodePoints, isPrintable, strRepr, toCodePoints, unicodeEscape } from './repr.js';

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

export class UnparseError extends Error {}

export class Unparser {
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

export function unparse(e: Expr): string {
  return new Unparser().unparse(e);
}
