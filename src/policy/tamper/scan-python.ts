// The tamper scan of Python source: a tree-sitter walk (never an import or a run) that
// reports, on the given lines only, the constructs by which code under test can fool its
// tests (runner internals, interpreter walks, runner environment, exits, report files,
// constant equality). Its narrowings (failingExitStatus, setsModuleFromFrame, readsTracebackFrame,
// globalsNameOnly and the traceback-frame exemptions in frames.ts) came
// from real projects' histories (docs/ci.md, "The tamper scan's false-refusal bar"); each has a lookalike test.

import type { Node } from 'web-tree-sitter';
import { pythonTree } from '../../contract/python.js';
import { FRAME_ATTR_NAMES, FRAME_CODE_ATTRS, FRAME_SOURCE_CALLS, frameLike, globalsNameOnly, hasattrName, importAliases, resolveImported, stringContent, stringValue, tracebackFrameAttr } from './frames.js';
import { mayHitPython } from './prefilter.js';
import { PY_FRAME_ATTRS, PY_PATCH_TARGET, PY_RUNNER_MODULES, PY_WALK, REPORT_NAME, RUNNER_ENV, skipPatternOnly, type TamperHit } from './checks.js';

function inFunction(n: Node): boolean {
  for (let p = n.parent; p; p = p.parent) if (p.type === 'function_definition' || p.type === 'lambda') return true;
  return false;
}

function underMainGuard(n: Node): boolean {
  for (let p = n.parent; p; p = p.parent) {
    if (p.type === 'if_statement' && /__name__\s*==\s*["']__main__["']/.test(p.childForFieldName('condition')?.text ?? '')) return true;
  }
  return false;
}

/**
 * True when a `sys.exit(arg)` surely ends the process with a failing status: a string (printed,
 * status 1) or an integer literal whose status byte is not 0 (256 and -256 exit 0 on POSIX).
 * An exit that can only fail cannot turn a red run green (black's blackd exits -1 at import
 * when its optional aiohttp is missing); `sys.exit()`, `sys.exit(0)` or a computed status can.
 */
export function failingExitStatus(args: Array<Node | null>): boolean {
  if (args.length !== 1 || !args[0]) return false;
  const a = args[0];
  if (a.type === 'string' || a.type === 'concatenated_string') return true;
  let neg = false;
  let v: Node | null = a;
  if (a.type === 'unary_operator' && /^[-+]/.test(a.text)) {
    neg = a.text.startsWith('-');
    v = a.childForFieldName('argument');
  }
  if (v?.type !== 'integer' || !/^(0[xob])?[0-9a-f_]+$/i.test(v.text)) return false;
  let n: bigint;
  try {
    n = BigInt(v.text.replace(/_/g, ''));
  } catch {
    return false;
  }
  if (neg) n = -n;
  // Past a C int CPython's handling of the status is not one this check vouches for.
  if (n >= 2n ** 31n || n < -(2n ** 31n)) return false;
  return ((n % 256n) + 256n) % 256n !== 0n;
}

const isNameKey = (s: Node | null | undefined) => !!s && stringValue(s) === '__name__';

/**
 * True when a `sys._getframe(...)` call only sets a made class's `__module__` from its frame's
 * module name: `X.__module__ = sys._getframe(k).f_globals["__name__"]` (or `.get("__name__", d)`),
 * the pickling idiom of namedtuple and attrs' make_class. Only that assignment passes: the same
 * read tested in an `if` tells a test's caller from any other, and locals, other globals or code
 * of a frame are where a test's expected values live.
 */
export function setsModuleFromFrame(call: Node): boolean {
  const a = call.parent;
  if (a?.type !== 'attribute' || !a.childForFieldName('object')?.equals(call) || a.childForFieldName('attribute')?.text !== 'f_globals') return false;
  const p = a.parent;
  let read: Node | null = null;
  if (p?.type === 'subscript' && p.childForFieldName('value')?.equals(a) && p.namedChildren.length === 2 && isNameKey(p.childForFieldName('subscript'))) read = p;
  else if (p?.type === 'attribute' && p.childForFieldName('object')?.equals(a) && p.childForFieldName('attribute')?.text === 'get') {
    const c = p.parent;
    if (c?.type === 'call' && c.childForFieldName('function')?.equals(p) && isNameKey(c.childForFieldName('arguments')?.namedChildren[0])) read = c;
  }
  const asg = read?.parent;
  return !!read && asg?.type === 'assignment' && !!asg.childForFieldName('right')?.equals(read) && /^[\w.]+\.__module__$/.test(asg.childForFieldName('left')?.text ?? '');
}

const BINDERS = new Set(['assignment', 'augmented_assignment', 'named_expression', 'for_statement', 'for_in_clause', 'as_pattern', 'with_item', 'global_statement', 'nonlocal_statement', 'del_statement']);

/**
 * True when `X.f_locals` reads a frame of a caught exception's traceback: X is bound by an
 * enclosing `for X, ... in walk_tb(tb)` (or `traceback.walk_tb`) and never rebound in that loop,
 * as a traceback renderer shows locals (rich's traceback.py). walk_tb walks from the frame that
 * caught down to the one that raised, never to callers; `X.f_back.f_locals`, a frame from the
 * stack (walk_stack, currentframe) or a rebound X still count as an interpreter walk.
 */
export function readsTracebackFrame(attr: Node): boolean {
  const obj = attr.childForFieldName('object');
  if (obj?.type !== 'identifier') return false;
  const name = obj.text;
  const bound = new RegExp(`(^|[^\\w.])${name}($|[^\\w])`);
  for (let p = attr.parent; p && p.type !== 'function_definition' && p.type !== 'lambda'; p = p.parent) {
    if (p.type !== 'for_statement') continue;
    const left = p.childForFieldName('left');
    const first = left?.type === 'identifier' ? left : left?.namedChildren[0];
    const right = p.childForFieldName('right');
    const fn = right?.type === 'call' ? right.childForFieldName('function')?.text : '';
    if (first?.type !== 'identifier' || first.text !== name || (fn !== 'walk_tb' && fn !== 'traceback.walk_tb')) continue;
    const rebinds = (n: Node): boolean => n.namedChildren.some((c) => !!c && ((BINDERS.has(c.type) && bound.test((c.childForFieldName('left') ?? c.childForFieldName('name') ?? c.childForFieldName('alias') ?? c).text)) || rebinds(c)));
    return !rebinds(p.childForFieldName('body')!);
  }
  return false;
}

const CONSTANT = new Set(['true', 'false', 'none', 'integer', 'float']);

function constantReturn(fn: Node): boolean {
  const body = fn.childForFieldName('body');
  if (!body) return false;
  const stmts = body.namedChildren.filter((c): c is Node => !!c && c.type !== 'comment').filter((c) => !(c.type === 'expression_statement' && c.namedChildren[0]?.type === 'string'));
  if (stmts.length !== 1 || stmts[0]!.type !== 'return_statement') return false;
  const v = stmts[0]!.namedChildren[0];
  return !!v && (CONSTANT.has(v.type) || (v.type === 'not_operator' && CONSTANT.has(v.namedChildren[0]?.type ?? '')));
}

/** The scan: a file that names nothing checked here is not parsed (./prefilter.ts). */
export async function scanPython(text: string, path: string, lines: Set<number>): Promise<TamperHit[]> {
  return mayHitPython(text) ? scanPythonParsed(text, path, lines) : [];
}

/** The scan on the parsed file, whatever its text names (the pre-check's tests compare the two). */
export async function scanPythonParsed(text: string, path: string, lines: Set<number>): Promise<TamperHit[]> {
  const tree = await pythonTree(text);
  const hits: TamperHit[] = [];
  const isMain = /(^|\/)__main__\.py$/.test(path);
  const hit = (n: Node, check: TamperHit['check'], construct: string, covered = false) => {
    const line = n.startPosition.row + 1;
    if (lines.has(line)) hits.push({ check, line, construct, ...(covered ? { covered } : {}) });
  };
  const aliases = importAliases(tree.rootNode);
  const walk = (n: Node) => {
    switch (n.type) {
      case 'import_statement':
      case 'import_from_statement': {
        const mods = n.type === 'import_from_statement' ? [n.childForFieldName('module_name')?.text ?? ''] : n.namedChildren.map((c) => (c?.type === 'aliased_import' ? c.childForFieldName('name')?.text : c?.text) ?? '');
        for (const m of mods) if (PY_RUNNER_MODULES.test(m)) hit(n, 'runner-internals', `import of ${m}`);
        break;
      }
      case 'function_definition': {
        const name = n.childForFieldName('name')?.text ?? '';
        if (/^pytest_/.test(name)) hit(n, 'runner-internals', `pytest hook ${name}()`);
        if ((name === '__eq__' || name === '__ne__' || name === '__hash__') && constantReturn(n)) hit(n, 'constant-eq', `${name} that returns a constant`);
        break;
      }
      case 'assignment': {
        const left = n.childForFieldName('left')?.text ?? '';
        const right = n.childForFieldName('right');
        if (PY_PATCH_TARGET.test(left)) hit(n, 'runner-internals', `assignment to ${left}`);
        if (left === 'pytest_plugins') hit(n, 'runner-internals', 'pytest_plugins');
        if (/(^|\.)__(eq|ne|hash)__$/.test(left) && right?.type === 'lambda' && CONSTANT.has(right.childForFieldName('body')?.type ?? '')) hit(n, 'constant-eq', `${left} = a lambda that returns a constant`);
        break;
      }
      case 'call': {
        const fn = n.childForFieldName('function')?.text ?? '';
        const args = n.childForFieldName('arguments')?.namedChildren ?? [];
        // `from sys import _getframe as g` or `import inspect as i` does not hide the walk.
        const full = resolveImported(fn, aliases);
        if (PY_WALK.has(full) && !(full === 'sys._getframe' && setsModuleFromFrame(n))) hit(n, 'interpreter-walk', `${full}()${full === fn ? '' : ` (called as ${fn})`}`);
        if (FRAME_SOURCE_CALLS.has(full) && args[0] && frameLike(args[0])) hit(n, 'interpreter-walk', `${full}() of a frame`);
        if (fn === 'setattr' && PY_PATCH_TARGET.test(args[0]?.text ?? '')) hit(n, 'runner-internals', `setattr(${args[0]!.text}, ...)`);
        // An exit handler that cleans up is covered by the strict run (the stream's end record and
        // the exit status are cross-checked); one handed an exit function stays refused.
        if (fn === 'atexit.register') hit(n, 'exit', `${fn}()`, !args.some((x) => /\b(_exit|abort|kill|exit)\b/.test(x?.text ?? "")));
        else if (fn === 'os._exit' || fn === 'os.abort') hit(n, 'exit', `${fn}()`);
        else if (/^(sys\.exit|exit|quit|os\.kill)$/.test(fn) && !inFunction(n) && !underMainGuard(n) && !isMain && !(fn !== 'os.kill' && failingExitStatus(args))) hit(n, 'exit', `${fn}() at import time`);
        break;
      }
      case 'raise_statement': {
        // `raise SystemExit(0)` is `sys.exit(0)` by another name.
        const ex = n.namedChildren[0];
        const callee = ex?.type === 'call' ? ex.childForFieldName('function')?.text : ex?.text;
        const args = ex?.type === 'call' ? (ex.childForFieldName('arguments')?.namedChildren ?? []) : [];
        if ((callee === 'SystemExit' || callee === 'builtins.SystemExit') && !inFunction(n) && !underMainGuard(n) && !isMain && !failingExitStatus(args)) hit(n, 'exit', 'raise SystemExit at import time');
        break;
      }
      case 'decorator':
        if (/^@\s*atexit\.register/.test(n.text)) hit(n, 'exit', '@atexit.register', true);
        break;
      case 'attribute': {
        const attr = n.childForFieldName('attribute')?.text ?? '';
        if (PY_FRAME_ATTRS.has(attr) && !readsTracebackFrame(n)) hit(n, 'interpreter-walk', `frame attribute .${attr}`);
        else if (attr === 'f_globals' && !globalsNameOnly(n) && !readsTracebackFrame(n) && !tracebackFrameAttr(n)) hit(n, 'interpreter-walk', 'frame attribute .f_globals (beyond its module name)');
        // Only a frame's code *name* (an honest fix that logs its caller) is covered by the run's
        // tripwire; its file and line lead to the test's source, and stay refused.
        else if (FRAME_CODE_ATTRS.has(attr) && !readsTracebackFrame(n) && !tracebackFrameAttr(n)) hit(n, 'interpreter-walk', `frame attribute .${attr}`, attr === 'f_code' && n.parent?.type === 'attribute' && n.parent.childForFieldName('attribute')?.text === 'co_name');
        break;
      }
      case 'string': {
        const v = stringContent(n);
        if (FRAME_ATTR_NAMES.has(v) && !hasattrName(n)) hit(n, 'interpreter-walk', `frame attribute name ${JSON.stringify(v)} as a string`);
        else if (RUNNER_ENV.test(v)) hit(n, 'env-read', `runner or gate variable ${JSON.stringify(v.slice(0, 40))}`);
        else if (REPORT_NAME.test(v) && !skipPatternOnly(v)) hit(n, 'report-write', `report file name ${JSON.stringify(v.slice(0, 60))}`);
        break;
      }
    }
    for (const c of n.children) if (c) walk(c);
  };
  try {
    walk(tree.rootNode);
  } finally {
    tree.delete();
  }
  return hits;
}
