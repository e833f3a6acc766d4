// Frame reads of the tamper scan's interpreter-walk check (issue 11): the caller's frame is where
// a test's expected value lives (its globals, locals) and the road to the test's source (its code
// object, line, file). Real projects read a caller's module *name* (click's version_option, attrs'
// make_class), so a frame's globals pass when only dunder module keys are looked up in them; every
// other read of a frame's globals, code or line, and source lookups of a frame, count as a walk.

import type { Node } from 'web-tree-sitter';

/** Keys of a module's globals that name it and lead neither to a test's values nor to its file. */
const MODULE_NAME_KEYS = new Set(['__name__', '__package__', '__module__']);
/** Frame attributes that lead to the frame's source or trace it (not its module name). */
export const FRAME_CODE_ATTRS = new Set(['f_code', 'f_lineno', 'f_lasti', 'f_trace']);
/** Attribute names of frames, tracebacks and generators: as a string they are a getattr in disguise. */
export const FRAME_ATTR_NAMES = new Set(['f_back', 'f_globals', 'f_locals', 'f_code', 'f_lineno', 'f_lasti', 'f_trace', 'f_builtins', 'tb_frame', 'gi_frame', 'cr_frame', 'ag_frame']);
/** Calls that turn a frame into its module, file or source lines. */
export const FRAME_SOURCE_CALLS = new Set(['inspect.getsource', 'inspect.getsourcefile', 'inspect.getsourcelines', 'inspect.getfile', 'inspect.getmodule', 'inspect.findsource', 'inspect.getlineno', 'inspect.getcomments', 'inspect.getabsfile', 'inspect.getmembers', 'linecache.getline', 'linecache.getlines']);

/** A string node's literal parts (an f-string's interpolations left out). */
export function stringContent(n: Node): string {
  return n.children.filter((c) => c?.type === 'string_content').map((c) => c!.text).join('');
}

/** The value of a plain string literal; null for anything else, an f-string with interpolations included. */
export function stringValue(n: Node): string | null {
  if (n.type !== 'string' || n.children.some((c) => c?.type === 'interpolation')) return null;
  return stringContent(n);
}

const isModuleKey = (n: Node | null | undefined) => !!n && MODULE_NAME_KEYS.has(stringValue(n) ?? '');

/** The function body (or module) whose names a binding in n's scope shares. */
function scopeOf(n: Node): Node {
  for (let p = n.parent; p; p = p.parent) if (p.type === 'function_definition' || p.type === 'lambda') return p;
  let r = n;
  while (r.parent) r = r.parent;
  return r;
}

/** True when e is looked up only by a module-name key: `e["__name__"]` or `e.get("__name__", d)`. */
function moduleKeyLookup(e: Node): boolean {
  const p = e.parent;
  if (p?.type === 'subscript' && p.childForFieldName('value')?.equals(e)) return p.namedChildren.length === 2 && isModuleKey(p.childForFieldName('subscript'));
  if (p?.type === 'attribute' && p.childForFieldName('object')?.equals(e) && p.childForFieldName('attribute')?.text === 'get') {
    const c = p.parent;
    return c?.type === 'call' && !!c.childForFieldName('function')?.equals(p) && isModuleKey(c.childForFieldName('arguments')?.namedChildren[0]);
  }
  return false;
}

/** True when the identifier is tested against None (`x is None`, `x is not None`) or for truth. */
function noneTest(id: Node): boolean {
  const p = id.parent;
  if (p?.type === 'comparison_operator') return /^\w+\s+is(\s+not)?\s+None$/.test(p.text) && p.namedChildren[0]!.equals(id);
  if (p?.type === 'not_operator') return true;
  return (p?.type === 'if_statement' || p?.type === 'elif_clause' || p?.type === 'while_statement') && !!p.childForFieldName('condition')?.equals(id);
}

function identifiers(n: Node, name: string, out: Node[]): Node[] {
  if (n.type === 'identifier' && n.text === name) {
    const p = n.parent;
    // `obj.name` is an attribute named name, and `f(name=v)` a keyword: neither is the variable.
    if (!(p?.type === 'attribute' && p.childForFieldName('attribute')?.equals(n)) && !(p?.type === 'keyword_argument' && p.childForFieldName('name')?.equals(n))) out.push(n);
  }
  for (const c of n.children) if (c) identifiers(c, name, out);
  return out;
}

/**
 * A scope that resolves the module it read a name of (sys.modules, import_module, __import__) can
 * reach that module's values; one that compares it with a test-like literal tells a test from a user.
 */
function reachesModuleOrTests(scope: Node): boolean {
  if (/\bsys\s*\.\s*modules\b|\bimport_module\s*\(|\b__import__\s*\(|\bimportlib\s*\.\s*reload\b/.test(scope.text)) return true;
  const testish = (n: Node): boolean => {
    if (n.type === 'string') {
      const v = stringValue(n) ?? '';
      if (/(^|[._])(tests?|conftest)([._]|$)|^test/i.test(v)) return true;
    }
    return n.children.some((c) => !!c && testish(c));
  };
  return testish(scope);
}

/**
 * True when `X.f_globals` (attr) only looks up module-name keys: directly, or through a plain local
 * bound to it (or to `X.f_globals if ... else None`) whose every use in its scope is such a lookup,
 * a None or truth test, or a del; and the scope neither resolves modules nor names tests.
 */
export function globalsNameOnly(attr: Node): boolean {
  let ok = moduleKeyLookup(attr);
  if (!ok) {
    let v: Node = attr;
    const c = attr.parent;
    if (c?.type === 'conditional_expression') {
      const [a, , b] = c.namedChildren;
      if (a?.equals(attr) && b?.type === 'none') v = c;
    }
    const asg = v.parent;
    const left = asg?.type === 'assignment' && asg.childForFieldName('right')?.equals(v) ? asg.childForFieldName('left') : null;
    if (left?.type !== 'identifier') return false;
    const scope = scopeOf(asg!);
    const uses = identifiers(scope, left.text, []);
    ok = uses.every((u) => u.equals(left) || moduleKeyLookup(u) || noneTest(u) || u.parent?.type === 'del_statement' || u.parent?.parent?.type === 'del_statement');
    // A closure or a global sharing the name is another scope's variable: not vouched for.
    if (ok && new RegExp(`\\b(global|nonlocal)\\s+([\\w\\s]*,\\s*)?${left.text}\\b`).test(scope.text)) ok = false;
  }
  return ok && !reachesModuleOrTests(scopeOf(attr));
}

/** True when e names a frame: it mentions f_back, a frame getter or tb_frame, or is a local bound to one. */
export function frameLike(e: Node): boolean {
  const direct = (t: string) => /\bf_back\b|\bcurrentframe\s*\(|\b_getframe\s*\(|\btb_frame\b|\b(gi|cr|ag)_frame\b/.test(t);
  if (direct(e.text)) return true;
  if (e.type !== 'identifier') return false;
  const scope = scopeOf(e);
  const seen = new Set<string>([e.text]);
  const names = [e.text];
  while (names.length) {
    const name = names.pop()!;
    for (const u of identifiers(scope, name, [])) {
      const asg = u.parent;
      if (asg?.type !== 'assignment' || !asg.childForFieldName('left')?.equals(u)) continue;
      const r = asg.childForFieldName('right');
      if (!r) continue;
      if (direct(r.text)) return true;
      if (r.type === 'identifier' && !seen.has(r.text)) {
        seen.add(r.text);
        names.push(r.text);
      }
    }
  }
  return false;
}

/**
 * True when the string is the name `hasattr(X, "f_lasti")` tests: a presence test reads nothing
 * (rich's traceback renderer asks whether its frames have f_lasti before it reads them).
 */
export function hasattrName(s: Node): boolean {
  const args = s.parent;
  const call = args?.parent;
  return args?.type === 'argument_list' && call?.type === 'call' && call.childForFieldName('function')?.text === 'hasattr' && args.namedChildren.length === 2 && !!args.namedChildren[1]?.equals(s);
}

/** True when `X.attr` reads a frame a traceback holds: `tb.tb_frame.attr` (not through f_back). */
export function tracebackFrameAttr(attr: Node): boolean {
  const obj = attr.childForFieldName('object');
  return obj?.type === 'attribute' && obj.childForFieldName('attribute')?.text === 'tb_frame';
}

/**
 * The names a file's imports bind to dotted module paths: `import inspect as i` (i -> inspect),
 * `from sys import _getframe as g` (g -> sys._getframe), anywhere in the file (imports in a
 * function count too: a name bound once is treated as bound everywhere, which only adds findings).
 */
export function importAliases(root: Node): Map<string, string> {
  const map = new Map<string, string>();
  const visit = (n: Node) => {
    if (n.type === 'import_statement') {
      for (const c of n.namedChildren) if (c?.type === 'aliased_import') map.set(c.childForFieldName('alias')!.text, c.childForFieldName('name')!.text);
    } else if (n.type === 'import_from_statement') {
      const mod = n.childForFieldName('module_name')?.text ?? '';
      for (const c of n.childrenForFieldName('name')) {
        if (!c) continue;
        if (c.type === 'aliased_import') map.set(c.childForFieldName('alias')!.text, `${mod}.${c.childForFieldName('name')!.text}`);
        else map.set(c.text, `${mod}.${c.text}`);
      }
    }
    for (const c of n.children) if (c) visit(c);
  };
  visit(root);
  return map;
}

/** A called name with its first segment replaced by what an import bound it to. */
export function resolveImported(fn: string, aliases: Map<string, string>): string {
  const [head, ...rest] = fn.split('.');
  const to = aliases.get(head!);
  return to ? [to, ...rest].join('.') : fn;
}
