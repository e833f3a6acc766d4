// The lowering of tree-sitter's concrete syntax tree into the ast model (expressions,
// call arguments, parameter lists), with Python's own checks on what is valid. String
// literals and f-strings are lowered in ./strings.ts.

import type { Node } from 'web-tree-sitter';
import type { Arg, Arguments, Comprehension, Expr, Keyword } from './ast.js';
import { all, isTrivia, named, nfkc } from './cst.js';
import { checkNumber, numberConstant } from './literals.js';
import { PyError } from './position.js';
import { constant, type ExprLowering, lowerStrings } from './strings.js';

const BINOPS = new Set(['+', '-', '*', '@', '/', '%', '//', '**', '|', '&', '^', '<<', '>>']);
const CMPOPS = new Set(['<', '<=', '==', '!=', '>=', '>', 'in', 'not in', 'is', 'is not']);

export class Lowerer implements ExprLowering {
  constructor(
    readonly text: string,
    readonly strictNamedEscapes: boolean,
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
        return lowerStrings(this, [n]);
      case 'concatenated_string':
        return lowerStrings(this, named(n).filter((c) => c.type === 'string'));
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

  yieldExpr(n: Node): Expr {
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
}

function emptyArguments(): Arguments {
  return { posonlyargs: [], args: [], vararg: null, kwonlyargs: [], kw_defaults: [], kwarg: null, defaults: [] };
}
