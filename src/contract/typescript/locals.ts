// What the TypeScript extractor knows about a declaration body: the Local kinds a name can stand
// for, the Scope of a file or namespace, and the small AST questions (which names a statement
// declares, is this module syntax). Split out of src/contract/typescript.ts (issue 22) so that
// the extractor and the printer share them without reaching into each other.

import { AST_NODE_TYPES as N, type TSESTree } from '@typescript-eslint/typescript-estree';

export type Node = TSESTree.Node;

export type Local =
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
export interface SigLike {
  params: TSESTree.Parameter[];
  returnType?: TSESTree.TSTypeAnnotation | undefined;
  typeParameters?: TSESTree.TSTypeParameterDeclaration | undefined;
}

/** A declaration body (file, namespace, ambient module): its local names and the names its public rows refer to. */
export class Scope {
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

export function rootName(n: Node | null | undefined): string | null {
  if (!n) return null;
  switch (n.type) {
    case N.Identifier: return n.name;
    case N.MemberExpression: return rootName(n.object);
    case N.TSQualifiedName: return rootName(n.left);
    default: return null;
  }
}

export function moduleExportName(n: TSESTree.Identifier | TSESTree.StringLiteral): string {
  return n.type === N.Identifier ? n.name : JSON.stringify(n.value);
}

/** The bound names of a destructuring pattern, in source order. */
export function patternNames(p: Node, out: string[]): string[] {
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
export function localsOf(s: Node): Array<[string, Local]> {
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
export function defaultLocal(d: Node): Local | null {
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

export function isModuleSyntax(s: Node): boolean {
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
export function hasExportDeclarations(body: readonly Node[]): boolean {
  return body.some(s =>
    (s.type === N.ExportNamedDeclaration && !s.declaration) ||
    s.type === N.ExportAllDeclaration ||
    s.type === N.TSExportAssignment ||
    (s.type === N.ExportDefaultDeclaration && defaultLocal(s.declaration) === null));
}

export function isModuleExports(n: Node): boolean {
  return n.type === N.MemberExpression && !n.computed &&
    n.object.type === N.Identifier && n.object.name === 'module' &&
    n.property.type === N.Identifier && n.property.name === 'exports';
}

export function isWordChar(c: string | undefined): boolean {
  return c !== undefined && /[\w$#\u0080-\uffff]/.test(c);
}
