// The TypeScript extractor's walk: which declarations of a file are public (exports, ambient
// bodies, CommonJS, re-exports) and the rows each one gives, printed by ./printer.ts. Split out
// of src/contract/typescript.ts (issue 22).

import { AST_NODE_TYPES as N, type TSESTree } from '@typescript-eslint/typescript-estree';
import { Printer } from './printer.js';
import {
  Scope, defaultLocal, hasExportDeclarations, isModuleExports, isModuleSyntax, localsOf, moduleExportName, rootName,
  type Local, type Node,
} from './locals.js';
import { Lit, P_CALL } from './precedence.js';

export class Extractor extends Printer {
  private readonly rows: string[] = [];
  protected scope: Scope = new Scope(null, '', false);
  private prefix = '';
  /** Declarations being emitted right now, so self-referencing re-exports cannot recurse forever. */
  private readonly active = new Set<Local>();

  constructor(
    source: string,
    private readonly path: string,
  ) {
    super(source);
  }

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
}
