// The `v1` row format: a module's public surface (defs, classes, annotated names,
// `__all__` re-exports) and the re-export links the tree-level resolution follows.

import type { Node } from 'web-tree-sitter';
import type { Expr, Keyword } from './ast.js';
import { named, nfkc } from './cst.js';
import { Lowerer } from './lower.js';
import { fromCodePoints } from './repr.js';
import { unparse, Unparser } from './unparse.js';
import { atStatement, codePointCompare, isAsync, withTree } from './walk.js';

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
