// Lowering of string literals, implicit concatenation and f-strings (with their nested
// expressions and format specs) into Constant / JoinedStr nodes of the ast model.

import type { Node } from 'web-tree-sitter';
import type { ConstantNode, ConstValue, Expr, FormattedValue, JoinedStr } from './ast.js';
import { all, named } from './cst.js';
import { decodeBody, type StrFlags } from './literals.js';
import { pushAll, toCodePoints } from './repr.js';

/** What string lowering needs from the expression lowering (src/contract/python/lower.ts). */
export interface ExprLowering {
  readonly text: string;
  readonly strictNamedEscapes: boolean;
  fail(n: Node, detail: string): never;
  expr(n: Node): Expr;
  yieldExpr(n: Node): Expr;
}

export function lowerStrings(lw: ExprLowering, parts: Node[]): Expr {
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
    if (!/^(?:|[rubf]|br|rb|fr|rf)$/.test(prefix)) lw.fail(s, `invalid string prefix ${JSON.stringify(prefix)}`);
    const flags = { raw: prefix.includes('r'), bytes: prefix.includes('b'), fmt: prefix.includes('f') };
    if (i === 0 && start.text[0] === 'u') kind = 'u'; // CPython checks the first character only
    anyF ||= flags.fmt;
    anyBytes ||= flags.bytes;
    allBytes &&= flags.bytes;
    pieces.push({ flags, node: s, start, bodyEnd: s.endIndex - quote.length });
  });
  if (anyBytes && !allBytes) lw.fail(parts[0]!, 'cannot mix bytes and nonbytes literals');
  if (!anyF) {
    const out: number[] = [];
    for (const p of pieces) {
      const raw = lw.text.slice(p.start.endIndex, p.bodyEnd);
      pushAll(out, decodeBody(raw, p.flags, (i) => p.start.endIndex + i, lw.strictNamedEscapes));
    }
    return constant(allBytes ? { t: 'bytes', b: out } : { t: 'str', s: out }, allBytes ? null : kind);
  }
  const values: (ConstantNode | FormattedValue)[] = [];
  for (const p of pieces) {
    if (!p.flags.fmt) {
      const raw = lw.text.slice(p.start.endIndex, p.bodyEnd);
      appendText(values, decodeBody(raw, p.flags, (i) => p.start.endIndex + i, lw.strictNamedEscapes));
      continue;
    }
    fstringParts(lw, values, p.start.endIndex, p.bodyEnd, named(p.node).filter((c) => c.type === 'interpolation'), p.flags);
  }
  return { k: 'JoinedStr', values };
}

function fstringParts(lw: ExprLowering, values: (ConstantNode | FormattedValue)[], from: number, to: number, interps: Node[], flags: StrFlags): void {
  let pos = from;
  const literal = (a: number, b: number): void => {
    if (b > a) appendText(values, decodeBody(lw.text.slice(a, b), flags, (i) => a + i, lw.strictNamedEscapes));
  };
  for (const it of interps) {
    literal(pos, it.startIndex);
    interpolation(lw, values, it, flags);
    pos = it.endIndex;
  }
  literal(pos, to);
}

function interpolation(lw: ExprLowering, values: (ConstantNode | FormattedValue)[], n: Node, flags: StrFlags): void {
  const kids = all(n);
  const open = kids[0]!;
  const exprNode = n.childForFieldName('expression');
  if (!exprNode) lw.fail(n, 'f-string: empty expression not allowed');
  const eq = kids.find((c) => c.type === '=' && !c.isNamed);
  const conv = n.childForFieldName('type_conversion');
  const spec = n.childForFieldName('format_specifier');
  let conversion = -1;
  if (conv) {
    const ch = conv.text.slice(1);
    if (ch !== 's' && ch !== 'r' && ch !== 'a') lw.fail(conv, `f-string: invalid conversion character ${JSON.stringify(ch)}`);
    conversion = ch.charCodeAt(0);
  }
  if (eq) {
    // The debug text runs from '{' up to the conversion, format spec or '}', spaces included.
    const stop = conv?.startIndex ?? spec?.startIndex ?? kids[kids.length - 1]!.startIndex;
    appendText(values, toCodePoints(lw.text.slice(open.endIndex, stop)));
    if (!conv && !spec) conversion = 'r'.charCodeAt(0);
  }
  const value = exprNode.type === 'yield' ? lw.yieldExpr(exprNode) : lw.expr(exprNode);
  let formatSpec: JoinedStr | null = null;
  if (spec) {
    const specValues: (ConstantNode | FormattedValue)[] = [];
    const colon = all(spec)[0]!;
    fstringParts(lw, specValues, colon.endIndex, spec.endIndex, named(spec).filter((c) => c.type === 'format_expression'), flags);
    formatSpec = { k: 'JoinedStr', values: specValues };
  }
  values.push({ k: 'FormattedValue', value, conversion, formatSpec });
}

export function constant(value: ConstValue, kind: 'u' | null = null): ConstantNode {
  return { k: 'Constant', value, kind };
}

function appendText(values: (ConstantNode | FormattedValue)[], cps: number[]): void {
  if (cps.length === 0) return;
  const last = values[values.length - 1];
  if (last && last.k === 'Constant' && last.value.t === 'str') pushAll(last.value.s, cps);
  else values.push(constant({ t: 'str', s: [...cps] }));
}
