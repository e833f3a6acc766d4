// Caller-stack inspection in TypeScript/JavaScript (tamper:4): V8 hands code its callers through
// Error stacks (`new Error().stack`, `Error.captureStackTrace(o)` then `o.stack`), CallSite
// objects (`Error.prepareStackTrace = (e, sites) => sites`, `site.getFileName()`) and the
// inspector / v8 modules. Code under test can use them to find the calling test file and read
// its expected values. This module judges those constructs for scan-typescript.ts; reading an
// own Error's stack passes when it is only logged, or when nothing in the file reaches a file
// or tells a test from a user (zustand's devtools names an action by its caller's function).

import type { TSESTree } from '@typescript-eslint/typescript-estree';
import type { TamperHit } from './checks.js';

type N = TSESTree.Node;
type Hit = (n: N, check: TamperHit['check'], construct: string) => void;

/** Modules that walk the running program: the inspector protocol (scopes of every frame), v8 internals. */
export const JS_WALK_MODULES = /^(node:)?(inspector|inspector\/promises|v8)$/;
/** Modules that read files or run commands: with a stack read, the caller's source is in reach. */
const FILE_MODULES = /^(node:)?(fs|fs\/promises|module|child_process)$/;
/** CallSite methods (what Error.prepareStackTrace hands out) that name or reach a caller. */
const CALLSITE = new Set(['getFileName', 'getLineNumber', 'getColumnNumber', 'getThis', 'getFunction', 'getScriptNameOrSourceURL', 'getEvalOrigin', 'getEnclosingLineNumber']);
/**
 * File-reaching names: with one of these in the file, a stack read can lead to the caller's source.
 * `import.meta` is not one: `import.meta.env` is how Vite-built libraries read their mode (zustand).
 */
const FILE_NAMES = /^(readFileSync|readFile|createReadStream|openSync|readSync|fileURLToPath|__filename|__dirname|createRequire|execSync|execFileSync|spawnSync)$/;
/** Literals that tell a test from a user, or pick a file location out of a stack line. */
const TEST_LIKE = /(^|[^a-z])(tests?|specs?|__tests__|node:test|testcontext)([^a-z]|$)|\.(test|spec)\b/i;
const LOCATION_RE = /file:|\\d\+?\)?:\\?\(?\\d|\.[cm]?[jt]sx?\b|\\\.[cm]?\[?[jt]/;

const ERRORLIKE = /^([A-Z]\w*)?Error$/;
/** The expression under TS casts and non-null marks: `(process as any).x` is `process.x`. */
export function unwrapTs(n: N): N {
  while (n.type === 'TSAsExpression' || n.type === 'TSNonNullExpression' || n.type === 'TSTypeAssertion' || n.type === 'TSSatisfiesExpression' || n.type === 'ChainExpression') n = n.expression;
  return n;
}
const name = (m: N | null | undefined): string => {
  if (!m) return '';
  const n = unwrapTs(m);
  return n.type === 'Identifier' ? n.name
    : n.type === 'MemberExpression' && !n.computed && n.property.type === 'Identifier' ? `${name(n.object)}.${n.property.name}` : '';
};
const propName = (n: TSESTree.MemberExpression): string | null =>
  !n.computed && n.property.type === 'Identifier' ? n.property.name
    : n.property.type === 'Literal' && typeof n.property.value === 'string' ? n.property.value : null;
const isOwnError = (n: N): boolean =>
  (n.type === 'NewExpression' || n.type === 'CallExpression') && ERRORLIKE.test(name(n.callee).split('.').pop() ?? '');
const lit = (n: N | undefined): string | null => (n?.type === 'Literal' && typeof n.value === 'string' ? n.value : null);

/**
 * A node's child nodes, in source order (every AST-valued own property, in Object.keys order).
 * Index loops over Object.keys, not Object.entries: the scan walks every node two or three
 * times, and the entry arrays were most of the walk (1.0 against 0.17 ms a walk of a 4 KB file).
 */
export function children(n: N): N[] {
  const out: N[] = [];
  const node = n as unknown as Record<string, unknown>;
  const keys = Object.keys(node);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (k === 'parent' || k === 'loc' || k === 'range') continue;
    const v = node[k];
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (let j = 0; j < v.length; j++) {
        const c: unknown = v[j];
        if (c && typeof c === 'object' && typeof (c as N).type === 'string') out.push(c as N);
      }
    } else if (typeof (v as N).type === 'string') out.push(v as N);
  }
  return out;
}

/** What in the file could take a stack read to the caller's source or tell a test by name (the first found). */
function fileSignal(ast: N): string | null {
  let found: string | null = null;
  const visit = (n: N) => {
    if (found) return;
    const modSpec = (s: string | null) => { if (s && FILE_MODULES.test(s)) found = `uses ${s}`; };
    switch (n.type) {
      case 'ImportDeclaration': modSpec(lit(n.source)); break;
      case 'ImportExpression': modSpec(lit(n.source)); break;
      case 'CallExpression': {
        const fn = name(n.callee);
        if (fn === 'require' || fn === 'process.getBuiltinModule') modSpec(lit(n.arguments[0]));
        break;
      }
      case 'Identifier': if (FILE_NAMES.test(n.name)) found = `uses ${n.name}`; break;
      case 'Literal':
        if (typeof n.value === 'string' && TEST_LIKE.test(n.value)) found = `names ${JSON.stringify(n.value.slice(0, 30))}`;
        else if ('regex' in n && n.regex && (TEST_LIKE.test(n.regex.pattern) || LOCATION_RE.test(n.regex.pattern))) found = `has the pattern /${n.regex.pattern.slice(0, 30)}/`;
        break;
      case 'TemplateElement': if (TEST_LIKE.test(n.value.cooked ?? '')) found = 'names tests in a template'; break;
    }
    for (const c of children(n)) visit(c);
  };
  visit(ast);
  return found;
}

const isKey = (n: N, anc: N[]) => { const p = anc[anc.length - 1]; return p?.type === 'Property' && p.key === n; };

/**
 * True when the read is an argument of a console call: the nearest call that holds the read in
 * its arguments (method chains on it, as `.split('\n')`, are walked through) is console.*.
 */
function loggedAsIs(n: N, ancestors: N[]): boolean {
  let child = n;
  for (let i = ancestors.length - 1; i >= 0; i--) {
    const a = ancestors[i];
    if ((a.type === 'CallExpression' || a.type === 'NewExpression') && a.callee !== child) return /^console\.\w+$/.test(name(a.callee));
    if (FUNCS.has(a.type)) return false;
    child = a;
  }
  return false;
}

const FUNCS = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression', 'Program']);

/** Reports caller-stack inspection on the hit's lines (hit filters by line). */
export function scanStackJs(ast: N, hit: Hit): void {
  let signal: string | null | undefined;
  const signalOf = () => (signal === undefined ? (signal = fileSignal(ast)) : signal);
  // Names bound to an Error the code constructs, or handed to captureStackTrace, per function scope.
  const scopes: Array<Set<string>> = [];
  const tracked = (id: string) => scopes.some((s) => s.has(id));
  const walk = (n: N, ancestors: N[], inErrorClass: boolean) => {
    switch (n.type) {
      case 'VariableDeclarator':
        if (n.id.type === 'Identifier' && n.init && isOwnError(unwrapTs(n.init))) scopes[scopes.length - 1].add(n.id.name);
        break;
      case 'AssignmentExpression':
        if (n.left.type === 'Identifier' && isOwnError(unwrapTs(n.right))) scopes[scopes.length - 1].add(n.left.name);
        break;
      case 'ImportDeclaration':
      case 'ImportExpression': {
        const s = lit(n.source);
        if (s && JS_WALK_MODULES.test(s)) hit(n, 'interpreter-walk', `import of ${s}`);
        break;
      }
      case 'CallExpression': {
        const fn = name(n.callee);
        const a0 = n.arguments[0];
        if (fn === 'require' && lit(a0) && JS_WALK_MODULES.test(lit(a0)!)) hit(n, 'interpreter-walk', `import of ${lit(a0)}`);
        if (fn === 'process.getBuiltinModule') {
          const s = lit(a0);
          if (s === null) hit(n, 'interpreter-walk', 'process.getBuiltinModule() of a computed name');
          else if (JS_WALK_MODULES.test(s)) hit(n, 'interpreter-walk', `process.getBuiltinModule('${s}')`);
        }
        if (/^process\.(binding|_linkedBinding)$/.test(fn)) hit(n, 'interpreter-walk', `${fn}()`);
        if (n.callee.type === 'MemberExpression' && n.arguments.length === 0) {
          const p = propName(n.callee);
          if (p && CALLSITE.has(p)) hit(n, 'interpreter-walk', `CallSite .${p}()`);
        }
        if (/(^|\.)captureStackTrace$/.test(fn) && a0) {
          if (a0.type === 'Identifier') scopes[scopes.length - 1].add(a0.name);
          else if (a0.type === 'ThisExpression' && !inErrorClass) hit(n, 'interpreter-walk', `${fn}(this) outside an Error subclass`);
          else if (a0.type === 'ObjectExpression' || a0.type === 'AssignmentExpression') hit(n, 'interpreter-walk', `${fn}() into an object made for it`);
        }
        break;
      }
      case 'MemberExpression': {
        const p = propName(n);
        if (p === 'prepareStackTrace') hit(n, 'interpreter-walk', `${name(n.object) || '?'}.prepareStackTrace`);
        const obj = unwrapTs(n.object);
        const own = isOwnError(obj) || (obj.type === 'Identifier' && tracked(obj.name));
        const parent = ancestors[ancestors.length - 1];
        const written = parent?.type === 'AssignmentExpression' && parent.operator === '=' && parent.left === n;
        if (own && !written && (p === 'stack' || (n.computed && p === null))) {
          // Logged as it is (a dev-only warning): console.*(…, err.stack, …) reads nothing back.
          const logged = loggedAsIs(n, ancestors);
          const why = logged ? null : signalOf();
          if (why) hit(n, 'interpreter-walk', `.stack of its own Error, in a file that ${why}`);
        }
        break;
      }
      case 'Property':
        if ((n.key.type === 'Identifier' && n.key.name === 'prepareStackTrace') || lit(n.key) === 'prepareStackTrace') hit(n, 'interpreter-walk', 'prepareStackTrace property');
        break;
      case 'Literal':
        if (n.value === 'prepareStackTrace' && !isKey(n, ancestors)) hit(n, 'interpreter-walk', '"prepareStackTrace" by name');
        break;
    }
    const fn = FUNCS.has(n.type);
    if (fn) scopes.push(new Set());
    const errClass = n.type === 'ClassDeclaration' || n.type === 'ClassExpression' ? !!n.superClass : inErrorClass;
    ancestors.push(n);
    for (const c of children(n)) walk(c, ancestors, errClass);
    ancestors.pop();
    if (fn) scopes.pop();
  };
  walk(ast, [], false);
}
