// The TypeScript printer: re-renders signatures, types, expressions and inferred value shapes
// from the ESTree canonically (precedence decides the parentheses, never the source's), so that
// formatting and comments never change a contract row. Split out of src/contract/typescript.ts
// (issue 22); the Extractor (./extractor.ts) extends it and adds the rows.

import ts from 'typescript';
import { AST_NODE_TYPES as N, type TSESTree } from '@typescript-eslint/typescript-estree';
import { isWordChar, rootName, type Node, type Scope, type SigLike } from './locals.js';
import {
  BINARY_PREC, IDENT, INFERRED, KEYWORD_TYPES, Lit, P_AS, P_ASSIGN, P_CALL, P_COND, P_POSTFIX, P_PRIMARY, P_SEQ, P_UNARY,
  T_FN, T_INTER, T_OP, T_POSTFIX, T_PRIMARY, T_UNION, num,
} from './precedence.js';

export abstract class Printer {
  /** The scope being walked: the names printed rows refer to are recorded in it. */
  protected abstract scope: Scope;

  constructor(protected readonly source: string) {}

  protected decorators(ds: readonly TSESTree.Decorator[] | undefined): string {
    if (!ds || ds.length === 0) return '';
    return ds.map(d => `@${this.exprP(d.expression, P_CALL)} `).join('');
  }

  // --- signatures ---------------------------------------------------------------------------

  protected sig(fn: SigLike): string {
    const ret = fn.returnType ? `: ${this.type(fn.returnType.typeAnnotation)}` : '';
    return `${this.typeParams(fn.typeParameters)}(${this.params(fn.params)})${ret}`;
  }

  protected params(ps: readonly TSESTree.Parameter[]): string {
    return ps.map(p => this.param(p)).join(', ');
  }

  protected param(p: Node): string {
    switch (p.type) {
      case N.Identifier:
        return `${this.decorators(p.decorators)}${p.name}${p.optional ? '?' : ''}${this.ann(p.typeAnnotation)}`;
      case N.AssignmentPattern:
        return `${this.decorators(p.decorators)}${this.param(p.left)} = ${this.exprP(p.right, P_ASSIGN)}`;
      case N.RestElement:
        return `${this.decorators(p.decorators)}...${this.param(p.argument)}${p.optional ? '?' : ''}${this.ann(p.typeAnnotation)}`;
      case N.ObjectPattern: {
        const props = p.properties.map(prop => {
          if (prop.type === N.RestElement) return this.param(prop);
          if (prop.shorthand) return this.param(prop.value);
          return `${this.key(prop.key, prop.computed)}: ${this.param(prop.value)}`;
        });
        return `${this.decorators(p.decorators)}${props.length ? `{ ${props.join(', ')} }` : '{}'}${p.optional ? '?' : ''}${this.ann(p.typeAnnotation)}`;
      }
      case N.ArrayPattern: {
        const els = p.elements.map(el => (el ? this.param(el) : ''));
        return `${this.decorators(p.decorators)}[${els.join(', ')}]${p.optional ? '?' : ''}${this.ann(p.typeAnnotation)}`;
      }
      case N.TSParameterProperty: {
        let s = this.decorators(p.decorators);
        if (p.accessibility) s += `${p.accessibility} `;
        if (p.override) s += 'override ';
        if (p.static) s += 'static ';
        if (p.readonly) s += 'readonly ';
        return s + this.param(p.parameter);
      }
      default:
        return this.expr(p);
    }
  }

  protected ann(a: TSESTree.TSTypeAnnotation | undefined): string {
    return a ? `: ${this.type(a.typeAnnotation)}` : '';
  }

  protected typeParams(tp: TSESTree.TSTypeParameterDeclaration | undefined): string {
    if (!tp || tp.params.length === 0) return '';
    return `<${tp.params.map(p => this.typeParam(p)).join(', ')}>`;
  }

  protected typeParam(p: TSESTree.TSTypeParameter): string {
    let s = '';
    if (p.const) s += 'const ';
    if (p.in) s += 'in ';
    if (p.out) s += 'out ';
    s += p.name.name;
    if (p.constraint) s += ` extends ${this.type(p.constraint)}`;
    if (p.default) s += ` = ${this.type(p.default)}`;
    return s;
  }

  protected typeArgs(ta: TSESTree.TSTypeParameterInstantiation | undefined | null): string {
    if (!ta) return '';
    return `<${ta.params.map(t => this.type(t)).join(', ')}>`;
  }

  /** A property name: identifier-like string keys are printed bare, so quoting style never matters. */
  protected key(k: Node, computed = false): string {
    if (computed) return `[${this.exprP(k, P_ASSIGN)}]`;
    switch (k.type) {
      case N.Identifier: return k.name;
      case N.PrivateIdentifier: return `#${k.name}`;
      case N.Literal:
        if (typeof k.value === 'string') return IDENT.test(k.value) ? k.value : JSON.stringify(k.value);
        if (typeof k.value === 'number') return num(k.value);
        return this.expr(k);
      default:
        return `[${this.exprP(k, P_ASSIGN)}]`;
    }
  }

  protected typeElement(m: TSESTree.TypeElement): string {
    switch (m.type) {
      case N.TSPropertySignature:
        return `${m.readonly ? 'readonly ' : ''}${this.key(m.key, m.computed)}${m.optional ? '?' : ''}${this.ann(m.typeAnnotation)}`;
      case N.TSMethodSignature: {
        const key = this.key(m.key, m.computed);
        if (m.kind === 'get' || m.kind === 'set') return `${m.kind} ${key}${this.sig(m)}`;
        return `${key}${m.optional ? '?' : ''}${this.sig(m)}`;
      }
      case N.TSIndexSignature:
        return this.indexSignature(m);
      case N.TSCallSignatureDeclaration:
        return this.sig(m);
      case N.TSConstructSignatureDeclaration:
        return `new ${this.sig(m)}`;
      default:
        return this.fallback(m);
    }
  }

  protected indexSignature(m: TSESTree.TSIndexSignature): string {
    return `${m.readonly ? 'readonly ' : ''}[${this.params(m.parameters)}]${this.ann(m.typeAnnotation)}`;
  }

  protected addRef(name: string | null): void {
    if (name !== null && name !== 'this') this.scope.ref(name);
  }

  protected entity(n: TSESTree.EntityName): string {
    switch (n.type) {
      case N.Identifier: return n.name;
      case N.ThisExpression: return 'this';
      case N.TSQualifiedName: return `${this.entity(n.left)}.${n.right.name}`;
    }
  }

  // --- types --------------------------------------------------------------------------------

  protected type(t: TSESTree.TypeNode): string {
    return this.typeP(t, T_FN);
  }

  protected typeP(t: TSESTree.TypeNode, min: number): string {
    const [text, prec] = this.typeInner(t);
    return prec < min ? `(${text})` : text;
  }

  protected flatten(t: TSESTree.TypeNode, kind: N.TSUnionType | N.TSIntersectionType, out: TSESTree.TypeNode[]): TSESTree.TypeNode[] {
    if (t.type === kind) for (const m of t.types) this.flatten(m, kind, out);
    else out.push(t);
    return out;
  }

  protected typeInner(t: TSESTree.TypeNode): [string, number] {
    const kw = KEYWORD_TYPES[t.type];
    if (kw !== undefined) return [kw, T_PRIMARY];
    switch (t.type) {
      case N.TSArrayType:
        return [`${this.typeP(t.elementType, T_POSTFIX)}[]`, T_POSTFIX];
      case N.TSIndexedAccessType:
        return [`${this.typeP(t.objectType, T_POSTFIX)}[${this.type(t.indexType)}]`, T_POSTFIX];
      case N.TSOptionalType:
        return [`${this.typeP(t.typeAnnotation, T_POSTFIX)}?`, T_POSTFIX];
      case N.TSRestType:
        return [`...${this.typeP(t.typeAnnotation, T_OP)}`, T_PRIMARY];
      case N.TSConditionalType:
        return [`${this.typeP(t.checkType, T_UNION)} extends ${this.typeP(t.extendsType, T_UNION)} ? ${this.type(t.trueType)} : ${this.type(t.falseType)}`, T_FN];
      case N.TSFunctionType:
        return [`${this.typeParams(t.typeParameters)}(${this.params(t.params)}) => ${t.returnType ? this.type(t.returnType.typeAnnotation) : 'any'}`, T_FN];
      case N.TSConstructorType:
        return [`${t.abstract ? 'abstract ' : ''}new ${this.typeParams(t.typeParameters)}(${this.params(t.params)}) => ${t.returnType ? this.type(t.returnType.typeAnnotation) : 'any'}`, T_FN];
      case N.TSUnionType:
        return [this.flatten(t, N.TSUnionType, []).map(m => this.typeP(m, T_INTER)).join(' | '), T_UNION];
      case N.TSIntersectionType:
        return [this.flatten(t, N.TSIntersectionType, []).map(m => this.typeP(m, T_OP)).join(' & '), T_INTER];
      case N.TSTypeOperator:
        return [`${t.operator} ${t.typeAnnotation ? this.typeP(t.typeAnnotation, T_OP) : ''}`, T_OP];
      case N.TSInferType:
        return [`infer ${this.typeParam(t.typeParameter)}`, t.typeParameter.constraint ? T_FN : T_OP];
      case N.TSLiteralType:
        return [this.expr(t.literal), T_PRIMARY];
      case N.TSTemplateLiteralType: {
        let s = '`';
        t.quasis.forEach((q, i) => {
          s += q.value.raw;
          const inner = t.types[i];
          if (inner) s += `\${${this.type(inner)}}`;
        });
        return [`${s}\``, T_PRIMARY];
      }
      case N.TSTupleType:
        return [`[${t.elementTypes.map(e => this.type(e)).join(', ')}]`, T_PRIMARY];
      case N.TSNamedTupleMember:
        return [`${t.label.name}${t.optional ? '?' : ''}: ${this.type(t.elementType)}`, T_PRIMARY];
      case N.TSTypeLiteral:
        return [t.members.length ? `{ ${t.members.map(m => this.typeElement(m)).join('; ')} }` : '{}', T_PRIMARY];
      case N.TSMappedType: {
        const ro = t.readonly === true ? 'readonly ' : t.readonly ? `${t.readonly}readonly ` : '';
        const opt = t.optional === true ? '?' : t.optional ? `${t.optional}?` : '';
        const as = t.nameType ? ` as ${this.type(t.nameType)}` : '';
        const value = t.typeAnnotation ? `: ${this.type(t.typeAnnotation)}` : '';
        return [`{ ${ro}[${t.key.name} in ${this.type(t.constraint)}${as}]${opt}${value} }`, T_PRIMARY];
      }
      case N.TSTypePredicate: {
        const subject = t.parameterName.type === N.Identifier ? t.parameterName.name : 'this';
        const is = t.typeAnnotation ? ` is ${this.type(t.typeAnnotation.typeAnnotation)}` : '';
        return [`${t.asserts ? 'asserts ' : ''}${subject}${is}`, T_FN];
      }
      case N.TSTypeQuery: {
        if (t.exprName.type === N.TSImportType) return [`typeof ${this.type(t.exprName)}${this.typeArgs(t.typeArguments)}`, T_PRIMARY];
        this.addRef(rootName(t.exprName));
        return [`typeof ${this.entity(t.exprName)}${this.typeArgs(t.typeArguments)}`, T_PRIMARY];
      }
      case N.TSTypeReference:
        this.addRef(rootName(t.typeName));
        return [`${this.entity(t.typeName)}${this.typeArgs(t.typeArguments)}`, T_PRIMARY];
      case N.TSQualifiedName:
        return [this.entity(t), T_PRIMARY];
      case N.TSImportType: {
        const options = t.options ? `, ${this.expr(t.options)}` : '';
        const qual = t.qualifier ? `.${this.entity(t.qualifier)}` : '';
        return [`import(${JSON.stringify(t.source.value)}${options})${qual}${this.typeArgs(t.typeArguments)}`, T_PRIMARY];
      }
      default:
        return [this.fallback(t), T_PRIMARY];
    }
  }

  // --- expressions --------------------------------------------------------------------------

  protected expr(e: Node): string {
    return this.exprP(e, 0);
  }

  protected exprP(e: Node, min: number): string {
    const [text, prec] = this.exprInner(e);
    return prec < min ? `(${text})` : text;
  }

  protected args(as: readonly TSESTree.CallExpressionArgument[]): string {
    return as.map(a => this.exprP(a, P_ASSIGN)).join(', ');
  }

  protected literal(e: TSESTree.Literal): string {
    if ('regex' in e && e.regex) return `/${e.regex.pattern}/${e.regex.flags}`;
    if ('bigint' in e && typeof e.bigint === 'string') return `${e.bigint}n`;
    const v = e.value;
    if (typeof v === 'string') return JSON.stringify(v);
    if (typeof v === 'number') return num(v);
    return String(v);
  }

  protected template(e: TSESTree.TemplateLiteral): string {
    let s = '`';
    e.quasis.forEach((q, i) => {
      s += q.value.raw;
      const inner = e.expressions[i];
      if (inner) s += `\${${this.expr(inner)}}`;
    });
    return `${s}\``;
  }

  protected functionExpr(e: TSESTree.ArrowFunctionExpression | TSESTree.FunctionExpression): string {
    if (e.type === N.ArrowFunctionExpression) return `${e.async ? 'async ' : ''}${this.sig(e)} => …`;
    return `${e.async ? 'async ' : ''}function${e.generator ? '*' : ''}${e.id ? ` ${e.id.name}` : ''}${this.sig(e)} {…}`;
  }

  protected exprInner(e: Node): [string, number] {
    switch (e.type) {
      case N.Identifier: return [e.name, P_PRIMARY];
      case N.PrivateIdentifier: return [`#${e.name}`, P_PRIMARY];
      case N.ThisExpression: return ['this', P_PRIMARY];
      case N.Super: return ['super', P_PRIMARY];
      case N.Literal: {
        const s = this.literal(e);
        return [s, s.startsWith('-') ? P_UNARY : P_PRIMARY];
      }
      case N.TemplateLiteral: return [this.template(e), P_PRIMARY];
      case N.TaggedTemplateExpression:
        return [`${this.exprP(e.tag, P_CALL)}${this.typeArgs(e.typeArguments)}${this.template(e.quasi)}`, P_CALL];
      case N.ArrayExpression:
        return [`[${e.elements.map(el => (el ? this.exprP(el, P_ASSIGN) : '')).join(', ')}]`, P_PRIMARY];
      case N.ObjectExpression: {
        if (e.properties.length === 0) return ['{}', P_PRIMARY];
        const props = e.properties.map(p => {
          if (p.type === N.SpreadElement) return this.exprInner(p)[0];
          const key = this.key(p.key, p.computed);
          if (p.kind === 'get' || p.kind === 'set' || p.method) {
            const fn = p.value as TSESTree.FunctionExpression;
            const head = p.kind === 'init' ? `${fn.async ? 'async ' : ''}${fn.generator ? '*' : ''}` : `${p.kind} `;
            return `${head}${key}${this.sig(fn)} {…}`;
          }
          if (p.shorthand) return this.param(p.value);
          return `${key}: ${this.exprP(p.value, P_ASSIGN)}`;
        });
        return [`{ ${props.join(', ')} }`, P_PRIMARY];
      }
      case N.SpreadElement: return [`...${this.exprP(e.argument, P_ASSIGN)}`, P_ASSIGN];
      case N.ArrowFunctionExpression: return [this.functionExpr(e), P_ASSIGN];
      case N.FunctionExpression: return [this.functionExpr(e), P_PRIMARY];
      case N.ClassExpression: {
        const ext = e.superClass ? ` extends ${this.exprP(e.superClass, P_CALL)}` : '';
        return [`class${e.id ? ` ${e.id.name}` : ''}${ext} {…}`, P_PRIMARY];
      }
      case N.UnaryExpression: {
        const arg = this.exprP(e.argument, P_UNARY);
        const word = /^[a-z]/.test(e.operator);
        const sep = word || arg.startsWith(e.operator) ? ' ' : '';
        return [`${e.operator}${sep}${arg}`, P_UNARY];
      }
      case N.AwaitExpression: return [`await ${this.exprP(e.argument, P_UNARY)}`, P_UNARY];
      case N.UpdateExpression:
        return e.prefix ? [`${e.operator}${this.exprP(e.argument, P_UNARY)}`, P_UNARY]
          : [`${this.exprP(e.argument, P_CALL)}${e.operator}`, P_POSTFIX];
      case N.BinaryExpression:
      case N.LogicalExpression: {
        const p = BINARY_PREC[e.operator] ?? 10;
        const right = e.operator === '**' ? p : p + 1;
        const left = e.operator === '**' ? P_POSTFIX : p; // `(-a) ** b` needs its parentheses
        const side = (n: Node, min: number): string => {
          const mixes = e.type === N.LogicalExpression && n.type === N.LogicalExpression &&
            (e.operator === '??') !== (n.operator === '??');
          return mixes ? `(${this.expr(n)})` : this.exprP(n, min);
        };
        return [`${side(e.left, left)} ${e.operator} ${side(e.right, right)}`, p];
      }
      case N.ConditionalExpression:
        return [`${this.exprP(e.test, P_COND + 1)} ? ${this.exprP(e.consequent, P_ASSIGN)} : ${this.exprP(e.alternate, P_ASSIGN)}`, P_COND];
      case N.AssignmentExpression:
        return [`${this.exprP(e.left, P_CALL)} ${e.operator} ${this.exprP(e.right, P_ASSIGN)}`, P_ASSIGN];
      case N.SequenceExpression:
        return [e.expressions.map(x => this.exprP(x, P_ASSIGN)).join(', '), P_SEQ];
      case N.YieldExpression:
        return [`yield${e.delegate ? '*' : ''}${e.argument ? ` ${this.exprP(e.argument, P_ASSIGN)}` : ''}`, P_ASSIGN];
      case N.MemberExpression: {
        let obj = this.exprP(e.object, P_CALL);
        if (e.object.type === N.Literal && typeof e.object.value === 'number') obj = `(${obj})`;
        const prop = e.computed ? `${e.optional ? '?.' : ''}[${this.expr(e.property)}]` : `${e.optional ? '?.' : '.'}${this.exprInner(e.property)[0]}`;
        return [obj + prop, P_CALL];
      }
      case N.CallExpression:
        return [`${this.exprP(e.callee, P_CALL)}${e.optional ? '?.' : ''}${this.typeArgs(e.typeArguments)}(${this.args(e.arguments)})`, P_CALL];
      case N.NewExpression: {
        const callee = e.callee.type === N.CallExpression ? `(${this.expr(e.callee)})` : this.exprP(e.callee, P_CALL);
        return [`new ${callee}${this.typeArgs(e.typeArguments)}(${this.args(e.arguments)})`, P_CALL];
      }
      case N.ChainExpression: return this.exprInner(e.expression);
      case N.ImportExpression:
        return [`import(${this.exprP(e.source, P_ASSIGN)}${e.options ? `, ${this.exprP(e.options, P_ASSIGN)}` : ''})`, P_CALL];
      case N.MetaProperty: return [`${e.meta.name}.${e.property.name}`, P_PRIMARY];
      case N.TSNonNullExpression: return [`${this.exprP(e.expression, P_CALL)}!`, P_CALL];
      case N.TSInstantiationExpression: return [`${this.exprP(e.expression, P_CALL)}${this.typeArgs(e.typeArguments)}`, P_CALL];
      case N.TSAsExpression: return [`${this.exprP(e.expression, P_AS)} as ${this.type(e.typeAnnotation)}`, P_AS];
      case N.TSSatisfiesExpression: return [`${this.exprP(e.expression, P_AS)} satisfies ${this.type(e.typeAnnotation)}`, P_AS];
      case N.TSTypeAssertion: return [`<${this.type(e.typeAnnotation)}>${this.exprP(e.expression, P_UNARY)}`, P_UNARY];
      case N.ObjectPattern:
      case N.ArrayPattern:
      case N.AssignmentPattern:
      case N.RestElement:
        return [this.param(e), P_PRIMARY];
      default:
        return [this.fallback(e), P_PRIMARY];
    }
  }

  // --- inferred shapes ----------------------------------------------------------------------

  /**
   * What can be said about an unannotated value's type without a checker: literals (widened unless
   * in a literal context), function signatures, object/array structure, `as` types; else `<inferred>`.
   */
  protected shape(e: Node, lit: Lit): string {
    switch (e.type) {
      case N.Literal: {
        if ('regex' in e && e.regex) return 'RegExp';
        if (e.value === null && !('bigint' in e && e.bigint)) return 'null';
        if (lit !== Lit.Widen) return this.literal(e);
        return 'bigint' in e && e.bigint ? 'bigint' : typeof e.value;
      }
      case N.TemplateLiteral:
        return lit !== Lit.Widen && e.expressions.length === 0 ? this.template(e) : 'string';
      case N.UnaryExpression:
        if ((e.operator === '-' || e.operator === '+') && e.argument.type === N.Literal && typeof e.argument.value === 'number') {
          return lit !== Lit.Widen ? this.expr(e) : 'number';
        }
        if (e.operator === '!') return 'boolean';
        if (e.operator === 'typeof') return 'string';
        if (e.operator === 'void') return 'undefined';
        return INFERRED;
      case N.Identifier:
        if (e.name === 'undefined') return 'undefined';
        this.addRef(e.name);
        return `typeof ${e.name}`;
      case N.MemberExpression: {
        if (e.computed || e.optional) return INFERRED;
        const root = rootName(e);
        if (root === null) return INFERRED;
        for (let m: Node = e; m.type === N.MemberExpression; m = m.object) if (m.computed) return INFERRED;
        this.addRef(root);
        return `typeof ${this.expr(e)}`;
      }
      case N.ArrowFunctionExpression:
      case N.FunctionExpression:
        return this.functionExpr(e);
      case N.ObjectExpression: {
        if (e.properties.length === 0) return '{}';
        const inner = lit === Lit.Deep ? Lit.Deep : Lit.Widen;
        const parts = e.properties.map(p => (p.type === N.SpreadElement ? `...${this.shape(p.argument, inner)}` : this.objectMemberShape(p, inner)));
        return `{ ${parts.join('; ')} }`;
      }
      case N.ArrayExpression: {
        const inner = lit === Lit.Deep ? Lit.Deep : Lit.Widen;
        return `[${e.elements.map(el => (el === null ? '' : el.type === N.SpreadElement ? `...${this.shape(el.argument, inner)}` : this.shape(el, inner))).join(', ')}]`;
      }
      case N.TSAsExpression:
      case N.TSTypeAssertion: {
        const t = e.typeAnnotation;
        if (t.type === N.TSTypeReference && t.typeName.type === N.Identifier && t.typeName.name === 'const' && !t.typeArguments) {
          return `${this.shape(e.expression, Lit.Deep)} as const`;
        }
        return this.type(t);
      }
      case N.TSSatisfiesExpression:
        return `${this.shape(e.expression, lit)} satisfies ${this.type(e.typeAnnotation)}`;
      case N.NewExpression:
        this.addRef(rootName(e.callee));
        return `new ${this.exprP(e.callee, P_CALL)}${this.typeArgs(e.typeArguments)}(…)`;
      case N.ClassExpression:
        this.addRef(rootName(e.superClass));
        return `typeof ${this.expr(e)}`;
      case N.CallExpression: {
        const [arg] = e.arguments;
        if (e.callee.type === N.Identifier && e.callee.name === 'require' && e.arguments.length === 1 &&
          arg?.type === N.Literal && typeof arg.value === 'string') {
          return `typeof import(${JSON.stringify(arg.value)})`;
        }
        return INFERRED;
      }
      default:
        return INFERRED;
    }
  }

  protected objectMemberShape(p: TSESTree.Property, lit: Lit): string {
    const key = this.key(p.key, p.computed);
    if (p.kind === 'get' || p.kind === 'set') return `${p.kind} ${key}${this.sig(p.value as TSESTree.FunctionExpression)}`;
    if (p.method) {
      const fn = p.value as TSESTree.FunctionExpression;
      return `${fn.async ? 'async ' : ''}${fn.generator ? '*' : ''}${key}${this.sig(fn)}`;
    }
    return `${key}: ${this.shape(p.value, lit)}`;
  }

  // --- fallback -----------------------------------------------------------------------------

  /**
   * Rare node kinds (JSX, future syntax): the node's tokens, re-scanned without trivia and joined
   * canonically (one space only between word tokens, no trailing commas, strings double-quoted),
   * so whitespace, comments, trailing commas and quote style still never matter.
   */
  protected fallback(node: Node): string {
    const text = this.source.slice(node.range[0], node.range[1]);
    const sc = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard, text);
    const K = ts.SyntaxKind;
    const toks: string[] = [];
    const templates: number[] = [];
    let prev: ts.SyntaxKind = K.Unknown;
    for (let kind = sc.scan(); kind !== K.EndOfFileToken; kind = sc.scan()) {
      const depth = templates.length ? templates[templates.length - 1]! : -1;
      if (kind === K.CloseBraceToken && depth === 0) {
        kind = sc.reScanTemplateToken(false);
        if (kind === K.TemplateTail) templates.pop();
      } else if (kind === K.CloseBraceToken && depth > 0) {
        templates[templates.length - 1] = depth - 1;
      } else if (kind === K.OpenBraceToken && depth >= 0) {
        templates[templates.length - 1] = depth + 1;
      } else if ((kind === K.SlashToken || kind === K.SlashEqualsToken) &&
        !(prev === K.Identifier || prev === K.NumericLiteral || prev === K.StringLiteral ||
          prev === K.CloseParenToken || prev === K.CloseBracketToken || prev === K.CloseBraceToken)) {
        kind = sc.reScanSlashToken();
      }
      if (kind === K.TemplateHead) templates.push(0);
      if (kind === K.StringLiteral) toks.push(JSON.stringify(sc.getTokenValue()));
      else if (kind === K.NumericLiteral) toks.push(sc.getTokenValue());
      else toks.push(sc.getTokenText());
      prev = kind;
    }
    let out = '';
    for (let i = 0; i < toks.length; i++) {
      const tok = toks[i]!;
      const next = toks[i + 1];
      if ((tok === ',' || tok === ';') && next !== undefined && /^[)\]}>]$/.test(next)) continue;
      const last = out[out.length - 1];
      if (last !== undefined && ((isWordChar(last) && isWordChar(tok[0])) || (last === tok[0] && (last === '+' || last === '-')))) out += ' ';
      out += tok;
    }
    return out;
  }
}
