// Contract extractor for TypeScript/JavaScript: turns one source file into sorted rows, one per
// public signature element, re-rendered from the AST so formatting, comments and bodies never
// change them while any change to a public signature does. Never executes or imports the source.

import ts from 'typescript';
import { AST_NODE_TYPES as N, TSError, parseAndGenerateServices, type TSESTree } from '@typescript-eslint/typescript-estree';
import { ContractParseError } from '../errors.js';

export const TS_EXTENSIONS: readonly string[] = Object.freeze(['.ts', '.tsx', '.mts', '.cts', '.js', '.mjs', '.cjs']);

/** Bump whenever the row format changes: it keys cached contract digests. */
export const TS_EXTRACTOR_VERSION = 3;

/** True when the path has a TS/JS extension this extractor handles ('.d.ts' counts as '.ts'). */
export function isTypeScriptPath(path: string): boolean {
  return TS_EXTENSIONS.some(ext => path.endsWith(ext));
}

/** TypeScript's script kind for a path, as typescript-estree chooses it (jsx only for unknown extensions). */
function scriptKind(path: string, jsx: boolean): ts.ScriptKind {
  const ext = /\.[^./]*$/.exec(path.toLowerCase())?.[0] ?? '';
  if (ext === '.js' || ext === '.mjs' || ext === '.cjs') return ts.ScriptKind.JS;
  if (ext === '.ts' || ext === '.mts' || ext === '.cts') return ts.ScriptKind.TS;
  if (ext === '.jsx') return ts.ScriptKind.JSX;
  if (ext === '.tsx') return ts.ScriptKind.TSX;
  if (ext === '.json') return ts.ScriptKind.JSON;
  return jsx ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
}

function sourceFile(path: string, text: string, kind: ts.ScriptKind, parents: boolean): ts.SourceFile {
  return ts.createSourceFile(path, text, { languageVersion: ts.ScriptTarget.Latest, jsDocParsingMode: ts.JSDocParsingMode.ParseNone }, parents, kind);
}

/**
 * The `{ ... }` bodies of functions, methods, accessors, constructors and static blocks that
 * no other such body contains. A body can declare nothing public, so its inside never reaches
 * a row; only its braces are kept.
 */
function outerBodies(sf: ts.SourceFile): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const visit = (n: ts.Node): void => {
    const body = ts.isFunctionLike(n) && 'body' in n ? (n as { body?: ts.Node }).body : ts.isClassStaticBlockDeclaration(n) ? n.body : undefined;
    if (body && ts.isBlock(body)) {
      out.push([body.getStart(sf) + 1, body.end - 1]);
      // Parameters and types may hold further functions (default values); their bodies count too.
      n.forEachChild((c) => (c === body ? undefined : visit(c)));
      return;
    }
    n.forEachChild(visit);
  };
  visit(sf);
  return out;
}

/** `text` with every character inside the ranges made a space, line breaks kept (so lines and columns stay). */
function blank(text: string, ranges: Array<[number, number]>): string {
  let out = '';
  let at = 0;
  for (const [from, to] of ranges.sort((a, b) => a[0] - b[0])) {
    out += text.slice(at, from) + text.slice(from, to).replace(/[^\r\n\u2028\u2029]/g, ' ');
    at = to;
  }
  return out + text.slice(at);
}

/**
 * Public-API rows of one TS/JS file. Rows are stable strings, one per public signature element, in a deterministic order (sort them). Each row starts with `${path}::`.
 *
 * Speed: converting a whole file to ESTree costs several times TypeScript's own parse, and
 * most of a file is function bodies, which carry no public signature. So TypeScript parses the
 * file once (any syntax error anywhere refuses, through typescript-estree's own error), the
 * bodies are blanked, and typescript-estree converts only what is left.
 */
export function extractTypeScript(source: string, path: string): string[] {
  const jsx = /\.(tsx|jsx|js|mjs|cjs)$/.test(path);
  const kind = scriptKind(path, jsx);
  let ast: TSESTree.Program;
  let text = source;
  try {
    let sf = sourceFile(path, source, kind, false);
    // A syntax error: typescript-estree turns TypeScript's first diagnostic into its error.
    const hasErrors = ((sf as unknown as { parseDiagnostics?: unknown[] }).parseDiagnostics?.length ?? 0) > 0;
    if (!hasErrors) {
      text = blank(source, outerBodies(sf));
      sf = sourceFile(path, text, kind, true); // the converter needs parent links
    }
    // parseAndGenerateServices takes a ts.SourceFile; with no project it only converts it.
    ast = parseAndGenerateServices(sf, {
      filePath: path,
      preserveNodeMaps: false,
      jsx,
      loc: true,
      range: true,
      comment: false,
      tokens: false,
      jsDocParsingMode: 'none',
      suppressDeprecatedPropertyWarnings: true,
      loggerFn: false,
    }).ast;
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    if (err instanceof TSError) {
      throw new ContractParseError(path, err.lineNumber, err.column + 1, detail, { cause: err });
    }
    throw new ContractParseError(path, 0, 0, detail, { cause: err });
  }
  return new Extractor(text, path).run(ast);
}

// ---------------------------------------------------------------------------------------------

type Node = TSESTree.Node;

type Local =
  | { k: 'fn'; node: TSESTree.FunctionDeclaration | TSESTree.TSDeclareFunction }
  | { k: 'class'; node: TSESTree.ClassDeclaration }
  | { k: 'iface'; node: TSESTree.TSInterfaceDeclaration }
  | { k: 'type'; node: TSESTree.TSTypeAliasDeclaration }
  | { k: 'enum'; node: TSESTree.TSEnumDeclaration }
  | { k: 'ns'; node: TSESTree.TSModuleDeclaration }
  | { k: 'var'; decl: TSESTree.VariableDeclaration; d: TSESTree.VariableDeclarator }
  | { k: 'destr'; decl: TSESTree.VariableDeclaration; d: TSESTree.VariableDeclarator }
  | { k: 'importEq'; node: TSESTree.TSImportEqualsDeclaration }
  | { k: 'import'; source: string; imported: string; typeOnly: boolean };

/** Anything with a call signature: functions, methods, signatures, function types. */
interface SigLike {
  params: TSESTree.Parameter[];
  returnType?: TSESTree.TSTypeAnnotation | undefined;
  typeParameters?: TSESTree.TSTypeParameterDeclaration | undefined;
}

/** A declaration body (file, namespace, ambient module): its local names and the names its public rows refer to. */
class Scope {
  readonly locals = new Map<string, Local[]>();
  readonly emitted = new Set<string>();
  readonly refs: string[] = [];
  private readonly seen = new Set<string>();
  constructor(
    readonly parent: Scope | null,
    readonly q: string,
    readonly ambient: boolean,
  ) {}
  add(name: string, local: Local): void {
    const list = this.locals.get(name);
    if (list) list.push(local);
    else this.locals.set(name, [local]);
  }
  ref(name: string): void {
    if (this.seen.has(name)) return;
    this.seen.add(name);
    this.refs.push(name);
  }
}

const INFERRED = '<inferred>';

/** Literal context of an unannotated value: widened, literal at the top only (`const x = 1`), or deep (`as const`). */
const Lit = { Widen: 0, Top: 1, Deep: 2 } as const;
type Lit = (typeof Lit)[keyof typeof Lit];
const IDENT = /^[A-Za-z_$][\w$]*$/;

// Expression precedence (higher binds tighter).
const P_SEQ = 1;
const P_ASSIGN = 2;
const P_COND = 3;
const P_UNARY = 16;
const P_POSTFIX = 17;
const P_CALL = 18;
const P_PRIMARY = 19;
const BINARY_PREC: Record<string, number> = {
  '??': 4, '||': 5, '&&': 6, '|': 7, '^': 8, '&': 9,
  '==': 10, '!=': 10, '===': 10, '!==': 10,
  '<': 11, '>': 11, '<=': 11, '>=': 11, instanceof: 11, in: 11,
  '<<': 12, '>>': 12, '>>>': 12, '+': 13, '-': 13, '*': 14, '/': 14, '%': 14, '**': 15,
};
const P_AS = 11;

// Type precedence.
const T_FN = 0;
const T_UNION = 1;
const T_INTER = 2;
const T_OP = 3;
const T_POSTFIX = 4;
const T_PRIMARY = 5;

const KEYWORD_TYPES: Partial<Record<N, string>> = {
  [N.TSAnyKeyword]: 'any', [N.TSBigIntKeyword]: 'bigint', [N.TSBooleanKeyword]: 'boolean',
  [N.TSIntrinsicKeyword]: 'intrinsic', [N.TSNeverKeyword]: 'never', [N.TSNullKeyword]: 'null',
  [N.TSNumberKeyword]: 'number', [N.TSObjectKeyword]: 'object', [N.TSStringKeyword]: 'string',
  [N.TSSymbolKeyword]: 'symbol', [N.TSUndefinedKeyword]: 'undefined', [N.TSUnknownKeyword]: 'unknown',
  [N.TSVoidKeyword]: 'void', [N.TSThisType]: 'this',
};

function num(value: number): string {
  return Object.is(value, -0) ? '0' : String(value);
}

function rootName(n: Node | null | undefined): string | null {
  if (!n) return null;
  switch (n.type) {
    case N.Identifier: return n.name;
    case N.MemberExpression: return rootName(n.object);
    case N.TSQualifiedName: return rootName(n.left);
    default: return null;
  }
}

function moduleExportName(n: TSESTree.Identifier | TSESTree.StringLiteral): string {
  return n.type === N.Identifier ? n.name : JSON.stringify(n.value);
}

/** The bound names of a destructuring pattern, in source order. */
function patternNames(p: Node, out: string[]): string[] {
  switch (p.type) {
    case N.Identifier: out.push(p.name); break;
    case N.ObjectPattern:
      for (const prop of p.properties) patternNames(prop.type === N.Property ? prop.value : prop, out);
      break;
    case N.ArrayPattern:
      for (const el of p.elements) if (el) patternNames(el, out);
      break;
    case N.RestElement: patternNames(p.argument, out); break;
    case N.AssignmentPattern: patternNames(p.left, out); break;
    default: break;
  }
  return out;
}

/** The local names a statement declares, with what each one is. */
function localsOf(s: Node): Array<[string, Local]> {
  switch (s.type) {
    case N.FunctionDeclaration:
    case N.TSDeclareFunction:
      return s.id ? [[s.id.name, { k: 'fn', node: s }]] : [];
    case N.ClassDeclaration:
      return s.id ? [[s.id.name, { k: 'class', node: s }]] : [];
    case N.TSInterfaceDeclaration: return [[s.id.name, { k: 'iface', node: s }]];
    case N.TSTypeAliasDeclaration: return [[s.id.name, { k: 'type', node: s }]];
    case N.TSEnumDeclaration: return [[s.id.name, { k: 'enum', node: s }]];
    case N.TSModuleDeclaration: {
      if (s.kind === 'global' || s.id.type === N.Literal) return [];
      const first = rootName(s.id);
      return first ? [[first, { k: 'ns', node: s }]] : [];
    }
    case N.VariableDeclaration: {
      const out: Array<[string, Local]> = [];
      for (const d of s.declarations) {
        if (d.id.type === N.Identifier) out.push([d.id.name, { k: 'var', decl: s, d }]);
        else for (const name of patternNames(d.id, [])) out.push([name, { k: 'destr', decl: s, d }]);
      }
      return out;
    }
    case N.TSImportEqualsDeclaration: return [[s.id.name, { k: 'importEq', node: s }]];
    case N.ImportDeclaration: {
      const out: Array<[string, Local]> = [];
      for (const sp of s.specifiers) {
        const typeOnly = s.importKind === 'type' || (sp.type === N.ImportSpecifier && sp.importKind === 'type');
        const imported = sp.type === N.ImportSpecifier ? moduleExportName(sp.imported)
          : sp.type === N.ImportDefaultSpecifier ? 'default' : '*';
        out.push([sp.local.name, { k: 'import', source: s.source.value, imported, typeOnly }]);
      }
      return out;
    }
    case N.ExportNamedDeclaration:
      return s.declaration ? localsOf(s.declaration) : [];
    case N.ExportDefaultDeclaration:
      return s.declaration.type === N.Identifier ? [] : localsOf(s.declaration);
    default:
      return [];
  }
}

/** The single Local a default-exported declaration stands for (its own name is irrelevant). */
function defaultLocal(d: Node): Local | null {
  switch (d.type) {
    case N.FunctionDeclaration:
    case N.TSDeclareFunction: return { k: 'fn', node: d };
    case N.ClassDeclaration: return { k: 'class', node: d };
    case N.TSInterfaceDeclaration: return { k: 'iface', node: d };
    case N.TSTypeAliasDeclaration: return { k: 'type', node: d };
    case N.TSEnumDeclaration: return { k: 'enum', node: d };
    case N.TSModuleDeclaration: return { k: 'ns', node: d };
    default: return null;
  }
}

function isModuleSyntax(s: Node): boolean {
  switch (s.type) {
    case N.ImportDeclaration:
    case N.ExportNamedDeclaration:
    case N.ExportDefaultDeclaration:
    case N.ExportAllDeclaration:
    case N.TSExportAssignment:
    case N.TSNamespaceExportDeclaration:
      return true;
    case N.TSImportEqualsDeclaration:
      return s.moduleReference.type === N.TSExternalModuleReference;
    default:
      return false;
  }
}

/** TypeScript's rule: an ambient body without export declarations/assignments exports every declaration. */
function hasExportDeclarations(body: readonly Node[]): boolean {
  return body.some(s =>
    (s.type === N.ExportNamedDeclaration && !s.declaration) ||
    s.type === N.ExportAllDeclaration ||
    s.type === N.TSExportAssignment ||
    (s.type === N.ExportDefaultDeclaration && defaultLocal(s.declaration) === null));
}

function isModuleExports(n: Node): boolean {
  return n.type === N.MemberExpression && !n.computed &&
    n.object.type === N.Identifier && n.object.name === 'module' &&
    n.property.type === N.Identifier && n.property.name === 'exports';
}

function isWordChar(c: string | undefined): boolean {
  return c !== undefined && /[\w$#\u0080-\uffff]/.test(c);
}

class Extractor {
  private readonly rows: string[] = [];
  private scope: Scope = new Scope(null, '', false);
  private prefix = '';
  /** Declarations being emitted right now, so self-referencing re-exports cannot recurse forever. */
  private readonly active = new Set<Local>();

  constructor(
    private readonly source: string,
    private readonly path: string,
  ) {}

  run(ast: TSESTree.Program): string[] {
    const isDts = /\.d\.(?:[cm]ts|(?:[^./\\]+\.)?ts)$/.test(this.path); // x.d.ts, x.d.mts, x.d.css.ts
    const isModule = ast.body.some(isModuleSyntax);
    // A declaration file without module syntax declares globals.
    this.processBody(ast.body, null, isDts && !isModule ? 'global.' : '', isDts);
    return this.rows.sort();
  }

  private row(text: string): void {
    this.rows.push(`${this.path}::${this.prefix}${text}`.replace(/\r\n?|\n|\u2028|\u2029/g, '\\n'));
  }

  // --- bodies -------------------------------------------------------------------------------

  private processBody(body: readonly TSESTree.ProgramStatement[], parent: Scope | null, q: string, ambient: boolean): void {
    const scope = new Scope(parent, q, ambient);
    for (const s of body) for (const [name, local] of localsOf(s)) scope.add(name, local);
    const implicit = ambient && !hasExportDeclarations(body);
    const saved = this.scope;
    this.scope = scope;
    for (const s of body) this.statement(s, scope, implicit);
    this.resolveRefs(scope);
    this.scope = saved;
  }

  /** Declarations that public rows refer to but that are not exported are part of the contract too. */
  private resolveRefs(scope: Scope): void {
    for (let i = 0; i < scope.refs.length; i++) {
      const name = scope.refs[i]!;
      if (scope.emitted.has(name)) continue;
      const locals = scope.locals.get(name);
      if (locals) {
        scope.emitted.add(name);
        for (const l of locals) if (l.k !== 'import') this.emitLocal(l, scope.q, name, 'local ');
      } else if (scope.parent) {
        scope.parent.ref(name);
      }
    }
  }

  private statement(s: TSESTree.ProgramStatement, scope: Scope, implicit: boolean): void {
    const q = scope.q;
    switch (s.type) {
      case N.ExportNamedDeclaration: {
        if (s.declaration) {
          if (s.declaration.type === N.TSModuleDeclaration && (s.declaration.kind === 'global' || s.declaration.id.type === N.Literal)) {
            this.emitNamespace(s.declaration, q, '');
            return;
          }
          for (const [name, l] of localsOf(s.declaration)) {
            scope.emitted.add(name);
            this.emitLocal(l, q, name, '');
          }
        } else if (s.source) {
          for (const sp of s.specifiers) {
            this.reexportRow(q, s.exportKind === 'type' || sp.exportKind === 'type', moduleExportName(sp.local),
              moduleExportName(sp.exported), s.source.value, s.attributes);
          }
        } else {
          for (const sp of s.specifiers) {
            this.exportLocal(scope, moduleExportName(sp.local), moduleExportName(sp.exported),
              s.exportKind === 'type' || sp.exportKind === 'type');
          }
        }
        return;
      }
      case N.ExportDefaultDeclaration: {
        const d = s.declaration;
        const local = defaultLocal(d);
        if (local) {
          const own = localsOf(d)[0];
          if (own) scope.emitted.add(own[0]);
          this.emitLocal(local, q, 'default', '');
        } else {
          this.namedValue(scope, 'default', d as TSESTree.Expression, `${q}export default`);
        }
        return;
      }
      case N.ExportAllDeclaration: {
        const ns = s.exported ? ` as ${moduleExportName(s.exported)}` : '';
        this.row(`${q}export ${s.exportKind === 'type' ? 'type ' : ''}*${ns} from ${JSON.stringify(s.source.value)}${this.attributes(s.attributes)}`);
        return;
      }
      case N.TSExportAssignment:
        this.exportEquals(scope, s.expression);
        return;
      case N.TSNamespaceExportDeclaration:
        this.row(`${q}export as namespace ${s.id.name}`);
        return;
      case N.TSModuleDeclaration:
        if (s.kind === 'global' || s.id.type === N.Literal) this.emitNamespace(s, q, '');
        else if (implicit) this.emitDeclared(s, scope);
        return;
      case N.ExpressionStatement:
        if (scope.parent === null) this.commonJs(scope, s.expression);
        return;
      case N.ImportDeclaration:
        return;
      default:
        if (implicit) this.emitDeclared(s, scope);
        return;
    }
  }

  private emitDeclared(s: Node, scope: Scope): void {
    for (const [name, l] of localsOf(s)) {
      scope.emitted.add(name);
      this.emitLocal(l, scope.q, name, '');
    }
  }

  /** `export { local as exported }`: the local declaration's rows under the exported name. */
  private exportLocal(scope: Scope, local: string, exported: string, typeOnly: boolean): void {
    for (let s: Scope | null = scope; s; s = s.parent) {
      const locals = s.locals.get(local);
      if (!locals) continue;
      s.emitted.add(local);
      if (locals.some(l => this.active.has(l))) {
        // A namespace re-exporting the declaration it belongs to (`namespace M { export { M } }`).
        this.row(`${scope.q}export ${typeOnly ? 'type ' : ''}{ ${local} as ${exported} } (circular)`);
        return;
      }
      for (const l of locals) {
        const typeSide = l.k === 'iface' || l.k === 'type' || (l.k === 'import' && l.typeOnly);
        this.emitLocal(l, scope.q, exported, typeOnly && !typeSide ? 'type-only ' : '', typeOnly);
      }
      return;
    }
    const as = local === exported ? '' : ` as ${exported}`;
    this.row(`${scope.q}export ${typeOnly ? 'type ' : ''}{ ${local}${as} }`);
  }

  private reexportRow(q: string, typeOnly: boolean, imported: string, exported: string, source: string,
    attrs: readonly TSESTree.ImportAttribute[] = []): void {
    const from = ` from ${JSON.stringify(source)}${this.attributes(attrs)}`;
    if (imported === '*') {
      this.row(`${q}export ${typeOnly ? 'type ' : ''}* as ${exported}${from}`);
      return;
    }
    const as = imported === exported ? '' : ` as ${exported}`;
    this.row(`${q}export ${typeOnly ? 'type ' : ''}{ ${imported}${as} }${from}`);
  }

  private attributes(attrs: readonly TSESTree.ImportAttribute[]): string {
    if (attrs.length === 0) return '';
    const parts = attrs.map(a => `${a.key.type === N.Identifier ? a.key.name : this.key(a.key)}: ${JSON.stringify(a.value.value)}`);
    return ` with { ${parts.join(', ')} }`;
  }

  /** `export = x` / `module.exports = x`. */
  private exportEquals(scope: Scope, e: TSESTree.Expression | TSESTree.EntityName): void {
    const q = scope.q;
    if (e.type === N.Identifier) {
      this.exportLocal(scope, e.name, 'export=', false);
    } else if (e.type === N.ObjectExpression) {
      const keys: string[] = [];
      for (const p of e.properties) {
        if (p.type === N.Property) {
          const key = this.key(p.key, p.computed);
          keys.push(key);
          if (p.kind === 'init' && !p.method) this.namedValue(scope, key, p.value as TSESTree.Expression, `${q}exports.${key} =`);
          else this.row(`${q}exports.${this.objectMemberShape(p, Lit.Widen)}`);
        } else {
          keys.push(`...${this.shape(p.argument, Lit.Widen)}`);
        }
      }
      this.row(`${q}export = { ${keys.join(', ')} }`);
    } else if (e.type === N.TSQualifiedName || e.type === N.ThisExpression) {
      this.row(`${q}export = ${this.entity(e)}`);
    } else {
      this.namedValue(scope, 'export=', e, `${q}export =`);
    }
  }

  private commonJs(scope: Scope, e: TSESTree.Expression): void {
    if (e.type !== N.AssignmentExpression || e.operator !== '=' || e.left.type !== N.MemberExpression) return;
    const left = e.left;
    if (isModuleExports(left)) {
      this.exportEquals(scope, e.right);
      return;
    }
    if (!(left.object.type === N.Identifier && left.object.name === 'exports') && !isModuleExports(left.object)) return;
    let name: string | null = null;
    if (!left.computed && left.property.type === N.Identifier) name = left.property.name;
    else if (left.computed && left.property.type === N.Literal && typeof left.property.value === 'string') name = left.property.value;
    if (name !== null) this.namedValue(scope, name, e.right, `exports.${name} =`);
  }

  /** A value exported under a name without a declaration of its own (default export, CommonJS). */
  private namedValue(scope: Scope, name: string, e: TSESTree.Expression, label: string): void {
    const display = scope.q + name;
    switch (e.type) {
      case N.Identifier:
        if (e.name !== 'undefined') {
          this.exportLocal(scope, e.name, name, false);
          return;
        }
        break;
      case N.ClassExpression:
        this.emitClass(e, display);
        return;
      case N.FunctionExpression:
      case N.ArrowFunctionExpression:
        this.row(`${e.async ? 'async ' : ''}function${e.generator ? '*' : ''} ${display}${this.sig(e)}`);
        return;
      default:
        break;
    }
    this.row(`${label} ${this.shape(e, Lit.Top)}`);
  }

  // --- declarations -------------------------------------------------------------------------

  private emitLocal(l: Local, q: string, name: string, prefix: string, typeOnly = false): void {
    if (this.active.has(l)) return;
    this.active.add(l);
    const saved = this.prefix;
    if (prefix && !saved.includes(prefix)) this.prefix = saved + prefix;
    const display = q + name;
    try {
      switch (l.k) {
        case 'fn': {
          const n = l.node;
          this.row(`${n.declare ? 'declare ' : ''}${n.async ? 'async ' : ''}function${n.generator ? '*' : ''} ${display}${this.sig(n)}`);
          break;
        }
        case 'class': this.emitClass(l.node, display); break;
        case 'iface': this.emitInterface(l.node, display); break;
        case 'type': {
          const n = l.node;
          this.row(`${n.declare ? 'declare ' : ''}type ${display}${this.typeParams(n.typeParameters)} = ${this.type(n.typeAnnotation)}`);
          break;
        }
        case 'enum': this.emitEnum(l.node, display); break;
        case 'ns': this.emitNamespace(l.node, q, name); break;
        case 'var': this.emitVar(l.decl, l.d, display); break;
        case 'destr': {
          const kw = `${l.decl.declare ? 'declare ' : ''}${l.decl.kind}`;
          const ann = l.d.id.type !== N.Identifier && 'typeAnnotation' in l.d.id && l.d.id.typeAnnotation
            ? ` from ${this.type(l.d.id.typeAnnotation.typeAnnotation)}` : '';
          this.row(`${kw} ${display}: <destructured${ann}>`);
          break;
        }
        case 'importEq': {
          const n = l.node;
          const ref = n.moduleReference.type === N.TSExternalModuleReference
            ? `require(${JSON.stringify(n.moduleReference.expression.value)})`
            : this.entity(n.moduleReference);
          if (n.moduleReference.type !== N.TSExternalModuleReference) this.addRef(rootName(n.moduleReference));
          this.row(`import ${n.importKind === 'type' ? 'type ' : ''}${display} = ${ref}`);
          break;
        }
        case 'import':
          this.reexportRow(q, typeOnly || l.typeOnly, l.imported, name, l.source);
          break;
      }
    } finally {
      this.prefix = saved;
      this.active.delete(l);
    }
  }

  private emitVar(decl: TSESTree.VariableDeclaration, d: TSESTree.VariableDeclarator, display: string): void {
    const kw = `${decl.declare ? 'declare ' : ''}${decl.kind}`;
    const id = d.id as TSESTree.Identifier;
    if (id.typeAnnotation) {
      this.row(`${kw} ${display}${d.definite ? '!' : ''}: ${this.type(id.typeAnnotation.typeAnnotation)}`);
    } else if (!d.init) {
      this.row(`${kw} ${display}`);
    } else if (d.init.type === N.ClassExpression) {
      this.emitClass(d.init, display, `${kw} ${display} = class`);
    } else {
      this.row(`${kw} ${display}: ${this.shape(d.init, decl.kind === 'const' ? Lit.Top : Lit.Widen)}`);
    }
  }

  private emitClass(n: TSESTree.ClassDeclaration | TSESTree.ClassExpression, display: string, head?: string): void {
    let header = this.decorators(n.decorators);
    header += head ?? `${n.declare ? 'declare ' : ''}${n.abstract ? 'abstract ' : ''}class ${display}`;
    header += this.typeParams(n.typeParameters);
    if (n.superClass) {
      this.addRef(rootName(n.superClass));
      header += ` extends ${this.exprP(n.superClass, P_CALL)}${this.typeArgs(n.superTypeArguments)}`;
    }
    if (n.implements.length) header += ` implements ${n.implements.map(h => this.heritage(h)).join(', ')}`;
    this.row(header);
    const member = `class ${display}.`;
    for (const m of n.body.body) {
      switch (m.type) {
        case N.MethodDefinition:
        case N.TSAbstractMethodDefinition: {
          if (m.accessibility === 'private' || m.key.type === N.PrivateIdentifier) break;
          const fn = m.value;
          const mods = this.decorators(m.decorators) + this.modifiers(m.accessibility, m.static,
            m.type === N.TSAbstractMethodDefinition, m.override);
          if (m.kind === 'constructor') {
            this.row(`${member}${mods}constructor${this.sig(fn)}`);
            for (const p of fn.params) if (p.type === N.TSParameterProperty) this.parameterProperty(member, p);
          } else if (m.kind === 'get' || m.kind === 'set') {
            this.row(`${member}${mods}${m.kind} ${this.key(m.key, m.computed)}${this.sig(fn)}`);
          } else {
            this.row(`${member}${mods}${fn.async ? 'async ' : ''}${fn.generator ? '*' : ''}${this.key(m.key, m.computed)}${m.optional ? '?' : ''}${this.sig(fn)}`);
          }
          break;
        }
        case N.PropertyDefinition:
        case N.TSAbstractPropertyDefinition:
        case N.AccessorProperty:
        case N.TSAbstractAccessorProperty: {
          if (m.accessibility === 'private' || m.key.type === N.PrivateIdentifier) break;
          const abstract = m.type === N.TSAbstractPropertyDefinition || m.type === N.TSAbstractAccessorProperty;
          const accessor = m.type === N.AccessorProperty || m.type === N.TSAbstractAccessorProperty;
          let text = this.decorators(m.decorators) + this.modifiers(m.accessibility, m.static, abstract, m.override);
          if (m.declare) text += 'declare ';
          if (m.readonly) text += 'readonly ';
          if (accessor) text += 'accessor ';
          text += `${this.key(m.key, m.computed)}${m.optional ? '?' : ''}${m.definite ? '!' : ''}`;
          if (m.typeAnnotation) text += `: ${this.type(m.typeAnnotation.typeAnnotation)}`;
          else if (m.value) text += `: ${this.shape(m.value, m.readonly ? Lit.Top : Lit.Widen)}`;
          this.row(member + text);
          break;
        }
        case N.TSIndexSignature:
          if (m.accessibility === 'private') break;
          this.row(member + this.modifiers(m.accessibility, m.static, false, false) + this.indexSignature(m));
          break;
        default:
          break; // static blocks are bodies
      }
    }
  }

  private parameterProperty(member: string, p: TSESTree.TSParameterProperty): void {
    if (p.accessibility === 'private') return;
    const inner = p.parameter;
    const id = inner.type === N.AssignmentPattern ? inner.left : inner;
    let text = this.modifiers(p.accessibility, p.static, false, p.override);
    if (p.readonly) text += 'readonly ';
    text += `${id.name}${id.optional ? '?' : ''}`;
    if (id.typeAnnotation) text += `: ${this.type(id.typeAnnotation.typeAnnotation)}`;
    else if (inner.type === N.AssignmentPattern) text += `: ${this.shape(inner.right, Lit.Widen)}`;
    this.row(member + text);
  }

  private modifiers(access: TSESTree.Accessibility | undefined, isStatic: boolean, abstract: boolean, override: boolean): string {
    let s = access === 'protected' ? 'protected ' : '';
    if (isStatic) s += 'static ';
    if (abstract) s += 'abstract ';
    if (override) s += 'override ';
    return s;
  }

  private decorators(ds: readonly TSESTree.Decorator[] | undefined): string {
    if (!ds || ds.length === 0) return '';
    return ds.map(d => `@${this.exprP(d.expression, P_CALL)} `).join('');
  }

  private emitInterface(n: TSESTree.TSInterfaceDeclaration, display: string): void {
    let header = `${n.declare ? 'declare ' : ''}interface ${display}${this.typeParams(n.typeParameters)}`;
    if (n.extends.length) header += ` extends ${n.extends.map(h => this.heritage(h)).join(', ')}`;
    this.row(header);
    for (const m of n.body.body) this.row(`interface ${display}.${this.typeElement(m)}`);
  }

  private heritage(h: TSESTree.TSInterfaceHeritage | TSESTree.TSClassImplements): string {
    this.addRef(rootName(h.expression));
    return this.exprP(h.expression, P_CALL) + this.typeArgs(h.typeArguments);
  }

  private emitEnum(n: TSESTree.TSEnumDeclaration, display: string): void {
    this.row(`${n.declare ? 'declare ' : ''}${n.const ? 'const ' : ''}enum ${display}`);
    let prev: string | null = null;
    for (const m of n.body.members) {
      const key = this.key(m.id, m.computed);
      const value = m.initializer ? this.expr(m.initializer) : prev === null ? '0' : `${prev} + 1`;
      this.row(`enum ${display}.${key} = ${value}`);
      prev = key;
    }
  }

  private emitNamespace(n: TSESTree.TSModuleDeclaration, q: string, name: string): void {
    const declare = n.declare ? 'declare ' : '';
    if (n.kind === 'global') {
      this.row(`${q}declare global`);
      if (n.body) this.processBody(n.body.body, this.scope, 'global.', true);
      return;
    }
    if (n.id.type === N.Literal) {
      const spec = JSON.stringify(n.id.value);
      this.row(`${declare}module ${spec}${n.body ? '' : ' (shorthand)'}`);
      if (n.body) this.processBody(n.body.body, this.scope, `${spec}.`, true);
      return;
    }
    const segments: string[] = [];
    for (let id: TSESTree.EntityName = n.id; ; id = id.left) {
      if (id.type === N.TSQualifiedName) segments.unshift(id.right.name);
      else { segments.unshift(name); break; }
    }
    const display = q + segments.join('.');
    this.row(`${declare}namespace ${display}`);
    if (n.body) this.processBody(n.body.body, this.scope, `${display}.`, this.scope.ambient || n.declare);
  }

  // --- signatures ---------------------------------------------------------------------------

  private sig(fn: SigLike): string {
    const ret = fn.returnType ? `: ${this.type(fn.returnType.typeAnnotation)}` : '';
    return `${this.typeParams(fn.typeParameters)}(${this.params(fn.params)})${ret}`;
  }

  private params(ps: readonly TSESTree.Parameter[]): string {
    return ps.map(p => this.param(p)).join(', ');
  }

  private param(p: Node): string {
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

  private ann(a: TSESTree.TSTypeAnnotation | undefined): string {
    return a ? `: ${this.type(a.typeAnnotation)}` : '';
  }

  private typeParams(tp: TSESTree.TSTypeParameterDeclaration | undefined): string {
    if (!tp || tp.params.length === 0) return '';
    return `<${tp.params.map(p => this.typeParam(p)).join(', ')}>`;
  }

  private typeParam(p: TSESTree.TSTypeParameter): string {
    let s = '';
    if (p.const) s += 'const ';
    if (p.in) s += 'in ';
    if (p.out) s += 'out ';
    s += p.name.name;
    if (p.constraint) s += ` extends ${this.type(p.constraint)}`;
    if (p.default) s += ` = ${this.type(p.default)}`;
    return s;
  }

  private typeArgs(ta: TSESTree.TSTypeParameterInstantiation | undefined | null): string {
    if (!ta) return '';
    return `<${ta.params.map(t => this.type(t)).join(', ')}>`;
  }

  /** A property name: identifier-like string keys are printed bare, so quoting style never matters. */
  private key(k: Node, computed = false): string {
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

  private typeElement(m: TSESTree.TypeElement): string {
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

  private indexSignature(m: TSESTree.TSIndexSignature): string {
    return `${m.readonly ? 'readonly ' : ''}[${this.params(m.parameters)}]${this.ann(m.typeAnnotation)}`;
  }

  private addRef(name: string | null): void {
    if (name !== null && name !== 'this') this.scope.ref(name);
  }

  private entity(n: TSESTree.EntityName): string {
    switch (n.type) {
      case N.Identifier: return n.name;
      case N.ThisExpression: return 'this';
      case N.TSQualifiedName: return `${this.entity(n.left)}.${n.right.name}`;
    }
  }

  // --- types --------------------------------------------------------------------------------

  private type(t: TSESTree.TypeNode): string {
    return this.typeP(t, T_FN);
  }

  private typeP(t: TSESTree.TypeNode, min: number): string {
    const [text, prec] = this.typeInner(t);
    return prec < min ? `(${text})` : text;
  }

  private flatten(t: TSESTree.TypeNode, kind: N.TSUnionType | N.TSIntersectionType, out: TSESTree.TypeNode[]): TSESTree.TypeNode[] {
    if (t.type === kind) for (const m of t.types) this.flatten(m, kind, out);
    else out.push(t);
    return out;
  }

  private typeInner(t: TSESTree.TypeNode): [string, number] {
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

  private expr(e: Node): string {
    return this.exprP(e, 0);
  }

  private exprP(e: Node, min: number): string {
    const [text, prec] = this.exprInner(e);
    return prec < min ? `(${text})` : text;
  }

  private args(as: readonly TSESTree.CallExpressionArgument[]): string {
    return as.map(a => this.exprP(a, P_ASSIGN)).join(', ');
  }

  private literal(e: TSESTree.Literal): string {
    if ('regex' in e && e.regex) return `/${e.regex.pattern}/${e.regex.flags}`;
    if ('bigint' in e && typeof e.bigint === 'string') return `${e.bigint}n`;
    const v = e.value;
    if (typeof v === 'string') return JSON.stringify(v);
    if (typeof v === 'number') return num(v);
    return String(v);
  }

  private template(e: TSESTree.TemplateLiteral): string {
    let s = '`';
    e.quasis.forEach((q, i) => {
      s += q.value.raw;
      const inner = e.expressions[i];
      if (inner) s += `\${${this.expr(inner)}}`;
    });
    return `${s}\``;
  }

  private functionExpr(e: TSESTree.ArrowFunctionExpression | TSESTree.FunctionExpression): string {
    if (e.type === N.ArrowFunctionExpression) return `${e.async ? 'async ' : ''}${this.sig(e)} => …`;
    return `${e.async ? 'async ' : ''}function${e.generator ? '*' : ''}${e.id ? ` ${e.id.name}` : ''}${this.sig(e)} {…}`;
  }

  private exprInner(e: Node): [string, number] {
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
  private shape(e: Node, lit: Lit): string {
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

  private objectMemberShape(p: TSESTree.Property, lit: Lit): string {
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
  private fallback(node: Node): string {
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
