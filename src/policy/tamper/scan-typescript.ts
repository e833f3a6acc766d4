// The tamper scan of TypeScript/JavaScript source: a typescript-estree walk (never a run)
// that reports, on the given lines only, imports of test-runner or assertion modules, runner
// or gate environment reads, process exits at load time or in exit handlers, caller-stack
// inspection (Error stacks and CallSites: stack-js.ts) and report file names.

import { parse, type TSESTree } from '@typescript-eslint/typescript-estree';
import { children, scanStackJs, unwrapTs } from './stack-js.js';
import { JS_RUNNER_MODULES, REPORT_NAME, RUNNER_ENV, skipPatternOnly, type TamperHit } from './checks.js';
import { mayHitTypeScript } from './prefilter.js';

type N = TSESTree.Node;

function memberText(m: N | null | undefined): string {
  if (!m) return '';
  const n = unwrapTs(m);
  if (n.type === 'Identifier') return n.name;
  if (n.type === 'MemberExpression') {
    const prop = n.computed ? (n.property.type === 'Literal' ? String(n.property.value) : '[]') : (n.property as TSESTree.Identifier).name;
    return `${memberText(n.object)}.${prop}`;
  }
  if (n.type === 'ThisExpression') return 'this';
  return '?';
}

const FUNCS = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression', 'MethodDefinition']);

/** The scan: a file that names nothing checked here is not parsed (./prefilter.ts). */
export function scanTypeScript(text: string, path: string, lines: Set<number>): TamperHit[] {
  return mayHitTypeScript(text) ? scanTypeScriptParsed(text, path, lines) : [];
}

/** The scan on the parsed file, whatever its text names (the pre-check's tests compare the two). */
export function scanTypeScriptParsed(text: string, path: string, lines: Set<number>): TamperHit[] {
  const ast = parse(text, { loc: true, jsx: /\.(tsx|jsx)$/.test(path), range: false, comment: false });
  const hits: TamperHit[] = [];
  const hit = (n: N, check: TamperHit['check'], construct: string) => {
    if (lines.has(n.loc.start.line)) hits.push({ check, line: n.loc.start.line, construct });
  };
  const mod = (n: N, spec: unknown) => {
    if (typeof spec === 'string' && JS_RUNNER_MODULES.test(spec)) hit(n, 'runner-internals', `import of ${spec}`);
  };
  const walk = (n: N, depth: number) => {
    const inFn = depth > 0;
    switch (n.type) {
      case 'ImportDeclaration':
      case 'ExportAllDeclaration':
        mod(n, n.source.value);
        break;
      case 'ExportNamedDeclaration':
        if (n.source) mod(n, n.source.value);
        break;
      case 'ImportExpression':
        if (n.source.type === 'Literal') mod(n, n.source.value);
        break;
      case 'CallExpression': {
        const fn = memberText(n.callee);
        const a0 = n.arguments[0];
        if ((fn === 'require' || fn === 'process.getBuiltinModule') && a0?.type === 'Literal') mod(n, a0.value);
        if (/^process\.(exit|reallyExit|abort|kill)$/.test(fn) && !inFn) hit(n, 'exit', `${fn}() at load time`);
        if (/^process\.(on|once|addListener|prependListener)$/.test(fn) && a0?.type === 'Literal' && /^(exit|beforeExit)$/.test(String(a0.value))) hit(n, 'exit', `${fn}('${a0.value}', ...) exit handler`);
        break;
      }
      case 'AssignmentExpression': {
        const left = memberText(n.left as N);
        if (left === 'process.exitCode') hit(n, 'exit', 'process.exitCode assignment');
        break;
      }
      case 'MemberExpression': {
        const m = memberText(n);
        if (/^process\.env\./.test(m) && RUNNER_ENV.test(m.slice('process.env.'.length))) hit(n, 'env-read', `runner or gate variable ${m}`);
        if (/(^|\.)arguments\.callee$|\.caller$/.test(m)) hit(n, 'interpreter-walk', m);
        break;
      }
      case 'Literal':
        if (typeof n.value === 'string') {
          if (RUNNER_ENV.test(n.value)) hit(n, 'env-read', `runner or gate variable ${JSON.stringify(n.value.slice(0, 40))}`);
          else if (REPORT_NAME.test(n.value) && !skipPatternOnly(n.value)) hit(n, 'report-write', `report file name ${JSON.stringify(n.value.slice(0, 60))}`);
        }
        break;
      case 'TemplateElement':
        if (REPORT_NAME.test(n.value.cooked ?? '')) hit(n, 'report-write', 'report file name in a template');
        break;
    }
    const d = FUNCS.has(n.type) ? depth + 1 : depth;
    for (const c of children(n)) walk(c, d);
  };
  walk(ast as unknown as N, 0);
  scanStackJs(ast as unknown as N, hit);
  // One finding per line and construct (a member read inside an assignment is seen once).
  const seen = new Set<string>();
  return hits.filter((h) => { const k = `${h.line}\0${h.construct}`; return !seen.has(k) && !!seen.add(k); });
}
