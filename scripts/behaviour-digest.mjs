// Proof tool for structural refactors (issue 22): one sha256 over what the product says, so a
// split that moves code but changes nothing can show the same digest before and after.
//
//   node scripts/behaviour-digest.mjs [--quick] [--dist DIR] [--dump FILE]
//
// Sections, each hashed line by line into the one digest (and printed as its own digest):
//   contract  `node dist/cli.js contract --json` (v1 and seed) on every corpus bundle in
//             /work/shared/corpus (or $PATCHGATE_CORPUS) cloned into a temp folder, and on a
//             generated TypeScript + Python tree (deterministic, a few thousand files)
//   ts-lib    extractTypeScript over the .ts files of node_modules (typescript's lib, @types)
//   audit     a fixed sequence of store writes with fixed times: every row hash, the verify
//             result, queries and the SQLite schema; then CLI operations on a fresh data dir
//             (repo create, token create, audit --json, audit verify): their rows carry the
//             wall clock and random token secrets, so only the deterministic fields are hashed
//             (kind, action, subject, actor, role, verdict and detail without secrets)
//   refusals  `patchgate check --json` on agent commits: a test-tree write, a contract move,
//             fixture drift, an accepted change
// --quick: the generated tree is smaller (200 files), one bundle (zustand) is cloned and
// ts-lib is cut to 100 files: what test/contract/behaviour-digest.test.ts recomputes (< 60 s).
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
let dist = join(ROOT, 'dist');
let dump = null;
let quick = false;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--dist') dist = resolve(args[++i]);
  else if (args[i] === '--dump') dump = args[++i];
  else if (args[i] === '--quick') quick = true;
  else throw new Error(`unknown argument ${args[i]}`);
}
const CLI = join(dist, 'cli.js');
const CORPUS = process.env.PATCHGATE_CORPUS ?? '/work/shared/corpus';
const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Digest', GIT_AUTHOR_EMAIL: 'digest@example.test',
  GIT_COMMITTER_NAME: 'Digest', GIT_COMMITTER_EMAIL: 'digest@example.test',
  GIT_AUTHOR_DATE: '@1767000000 +0000', GIT_COMMITTER_DATE: '@1767000000 +0000',
  GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0',
};

const total = createHash('sha256');
const lines = dump ? [] : null;
let section = null;
const sections = [];
function begin(name) {
  section = { name, hash: createHash('sha256'), n: 0 };
  sections.push(section);
}
function emit(s) {
  const line = `${section.name} ${s}\n`;
  total.update(line);
  section.hash.update(line);
  section.n++;
  if (lines) lines.push(line);
}

const tmp = mkdtempSync(join(tmpdir(), 'pg-digest-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));
function git(cwd, ...a) {
  return execFileSync('git', a, { cwd, env: GIT_ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}
/** Runs the CLI; returns exit code and both outputs (temp paths replaced by a fixed name). */
function cli(a, env = {}) {
  let code = 0;
  let stdout = '';
  let stderr = '';
  try {
    stdout = execFileSync('node', [CLI, ...a], { env: { ...GIT_ENV, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 30 });
  } catch (e) {
    code = e.status ?? -1;
    stdout = String(e.stdout ?? '');
    stderr = String(e.stderr ?? '');
  }
  const fix = (s) => s.split(tmp).join('$TMP');
  return { code, stdout: fix(stdout), stderr: fix(stderr) };
}
function contractRows(dir, label) {
  for (const format of ['v1', 'seed']) {
    const r = cli(['contract', '--repo', dir, '--json', '--format', format]);
    emit(`${label} ${format} exit=${r.code} stderr=${JSON.stringify(r.stderr)}`);
    if (r.code !== 0) continue;
    const doc = JSON.parse(r.stdout);
    emit(`${label} ${format} rev=${doc.rev} roots=${JSON.stringify(doc.roots)} files=${JSON.stringify(doc.files)} digest=${doc.digest} rows=${doc.rows.length}`);
    for (const row of doc.rows) emit(`${label} ${format} ${typeof row === 'string' ? row : JSON.stringify(row)}`);
  }
}

// ------------------------------------------------------------------ generated tree

/** mulberry32 (the same numbers as src/ci/node-order.ts's prng, written as one step). */
function rng(seed) {
  let a = seed >>> 0;
  const step = (t) => (t ^ (t + Math.imul(t ^ (t >>> 7), t | 61))) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    const t = step(Math.imul(a ^ (a >>> 15), a | 1));
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function tsGen(r) {
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const id = () => pick(['a', 'b', 'value', 'opts', 'T', 'K', 'x1', '$y', '_z']);
  const type = (d = 0) => {
    if (d > 3) return pick(['string', 'number', 'boolean', 'unknown', 'never', 'void', 'null', 'undefined', 'bigint', 'symbol', 'object', 'any', "'lit'", '42', '-1', 'true', '`t${string}`']);
    switch (Math.floor(r() * 18)) {
      case 0: return `${type(d + 1)} | ${type(d + 1)}`;
      case 1: return `${type(d + 1)} & ${type(d + 1)}`;
      case 2: return `${type(d + 1)}[]`;
      case 3: return `(${type(d + 1)})[]`;
      case 4: return `((${id()}: ${type(d + 1)}) => ${type(d + 1)})`;
      case 5: return `(new (...args: ${type(d + 1)}[]) => ${type(d + 1)})`;
      case 6: return `keyof ${type(d + 1)}`;
      case 7: return `readonly ${type(d + 1)}[]`;
      case 8: return `(${type(d + 1)} extends ${type(d + 1)} ? ${type(d + 1)} : ${type(d + 1)})`;
      case 9: return `{ [P in keyof ${type(d + 1)}]?: ${type(d + 1)} }`;
      case 10: return `{ ${id()}: ${type(d + 1)}; readonly ${id()}?: ${type(d + 1)}; (${id()}: number): void; [k: string]: ${type(d + 1)} }`;
      case 11: return `[${type(d + 1)}, ${type(d + 1)}?, ...${type(d + 1)}[]]`;
      case 12: return `Promise<${type(d + 1)}>`;
      case 13: return `Record<string, ${type(d + 1)}>`;
      case 14: return `typeof ${id()}`;
      case 15: return `${type(d + 1)}[${type(d + 1)}]`;
      case 16: return `(${type(d + 1)} | ${type(d + 1)}) & ${type(d + 1)}`;
      default: return `unique symbol`;
    }
  };
  const expr = (d = 0) => {
    if (d > 3) return pick(['1', '0x10', '1e3', "'s'", '"d"', 'true', 'null', 'undefined', 'x', '`t`', '-2', '1n']);
    switch (Math.floor(r() * 14)) {
      case 0: return `${expr(d + 1)} + ${expr(d + 1)} * ${expr(d + 1)}`;
      case 1: return `(${expr(d + 1)} + ${expr(d + 1)}) * ${expr(d + 1)}`;
      case 2: return `${expr(d + 1)} ? ${expr(d + 1)} : ${expr(d + 1)}`;
      case 3: return `[${expr(d + 1)}, ${expr(d + 1)}]`;
      case 4: return `{ k: ${expr(d + 1)}, 'q': ${expr(d + 1)}, [x]: 1 }`;
      case 5: return `!${expr(d + 1)}`;
      case 6: return `${expr(d + 1)} as ${type(d + 1)}`;
      case 7: return `${expr(d + 1)} ?? ${expr(d + 1)} || ${expr(d + 1)}`;
      case 8: return `f(${expr(d + 1)})`;
      case 9: return `(a, b) => ${expr(d + 1)}`;
      case 10: return `typeof ${expr(d + 1)}`;
      case 11: return `${expr(d + 1)} ** ${expr(d + 1)} - ${expr(d + 1)}`;
      case 12: return `new C(${expr(d + 1)})`;
      default: return `${expr(d + 1)} satisfies ${type(d + 1)}`;
    }
  };
  const decl = (i) => {
    switch (Math.floor(r() * 16)) {
      case 0: return `export function f${i}<T extends ${type(2)} = ${type(2)}>(a: ${type()}, b?: ${type()}, ...rest: ${type(2)}[]): ${type()} { return a as never; }`;
      case 1: return `export const c${i}: ${type()} = ${expr()};`;
      case 2: return `export const v${i} = ${expr()};`;
      case 3: return `export type T${i}<A, B = ${type(2)}> = ${type()};`;
      case 4: return `export interface I${i} extends Base { m(a: ${type()}): ${type()}; p?: ${type()}; readonly q: ${type()}; new (x: number): I${i}; }`;
      case 5: return `export class C${i}<T> extends Base implements J { static s = ${expr()}; #priv = 1; private hidden: ${type()}; protected prot?: ${type()}; constructor(public a: ${type()}, readonly b = ${expr()}) { super(); } get g(): ${type()} { return 1 as never; } set g(v) {} m<U>(u: U): ${type()} { return u as never; } static async *gen(): AsyncGenerator<${type(2)}> {} }`;
      case 6: return `export enum E${i} { A, B = ${Math.floor(r() * 9)}, C = 'c', D = 1 << 3 }`;
      case 7: return `export declare namespace N${i} { const x: ${type()}; function g(a: ${type()}): void; }`;
      case 8: return `export function o${i}(a: string): string;\nexport function o${i}(a: number): number;\nexport function o${i}(a: any): any { return a; }`;
      case 9: return `export abstract class A${i} { abstract m(): ${type()}; protected abstract p: ${type()}; }`;
      case 10: return `export let l${i} = ${expr()}, m${i}: ${type()};`;
      case 11: return `export const { d${i}, e${i} = ${expr()} } = obj;`;
      case 12: return `export async function af${i}(this: Window, { a, b }: ${type()} = {}, [c]: ${type()}[] = []) { return ${expr()}; }`;
      case 13: return `export const arrow${i} = <T,>(x: T): ${type()} => x as never;`;
      case 14: return `export declare function dd${i}(x: ${type()}): asserts x is ${type(2)};`;
      default: return `export const enum CE${i} { X = ${expr(3)} }`;
    }
  };
  return { decl, type };
}

function jsDecl(r, i) {
  switch (Math.floor(r() * 5)) {
    case 0: return `export function jf${i}(a, b = 1, { c, d = [2] } = {}, ...rest) { return a; }`;
    case 1: return `export class JC${i} extends Object { static s = 1; #p = 2; m(a, b = 'x') {} get g() { return 1; } static async *gen() {} }`;
    case 2: return `export const jv${i} = ${Math.floor(r() * 100)}, jw${i} = 'w' + 1;`;
    case 3: return `export async function ja${i}() {}\nexport { ja${i} as jb${i} };`;
    default: return `export const jarrow${i} = (x, y) => x ?? y;`;
  }
}

function pyGen(r) {
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const ann = (d = 0) => {
    if (d > 2) return pick(['int', 'str', 'None', 'bytes', 'float', "'Fwd'", 'T', 'Any']);
    switch (Math.floor(r() * 9)) {
      case 0: return `list[${ann(d + 1)}]`;
      case 1: return `${ann(d + 1)} | ${ann(d + 1)}`;
      case 2: return `dict[${ann(d + 1)}, ${ann(d + 1)}]`;
      case 3: return `Optional[${ann(d + 1)}]`;
      case 4: return `Callable[[${ann(d + 1)}, ${ann(d + 1)}], ${ann(d + 1)}]`;
      case 5: return `tuple[${ann(d + 1)}, ...]`;
      case 6: return `Literal['a', 1, -2, None]`;
      case 7: return `typing.Union[${ann(d + 1)}, ${ann(d + 1)}]`;
      default: return ann(d + 1);
    }
  };
  const val = () => pick(['1', '-1.5', "'s'", 'None', 'True', '()', '[1, 2]', '{"a": 1}', 'x + 1', 'f(1, k=2)', "b'x'", '1 if y else 2', 'lambda a, *b: a', '...']);
  const decl = (i) => {
    switch (Math.floor(r() * 8)) {
      case 0: return `def f${i}(a: ${ann()}, b: ${ann()} = ${val()}, /, c=${val()}, *args: ${ann()}, d: ${ann()}, **kw: ${ann()}) -> ${ann()}:\n    return a\n`;
      case 1: return `async def af${i}(x, y=${val()}) -> ${ann()}:\n    pass\n`;
      case 2: return `class C${i}(Base, metaclass=Meta):\n    attr: ${ann()} = ${val()}\n    _hidden = 1\n    def m(self, q: ${ann()}) -> ${ann()}: ...\n    @property\n    def p(self) -> ${ann()}: return 1\n    @staticmethod\n    def s(*, k: ${ann()} = ${val()}): ...\n    @classmethod\n    def c(cls): ...\n`;
      case 3: return `V${i}: ${ann()} = ${val()}\n`;
      case 4: return `W${i} = ${val()}\n`;
      case 5: return `@decorator(${val()})\ndef dec${i}(a, b=${val()}): ...\n`;
      case 6: return `def _private${i}(a): ...\n`;
      default: return `class D${i}:\n    """doc"""\n    def __init__(self, a: ${ann()}, b: ${ann()} = ${val()}) -> None:\n        self.a = a\n`;
    }
  };
  return { decl };
}

function generatedTree(dir, files, seed) {
  // (committed by the caller, after dropUnparsable)
  const r = rng(seed);
  const ts = tsGen(r);
  const py = pyGen(r);
  const write = (p, text) => {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), text);
  };
  for (let f = 0; f < files; f++) {
    const depth = f % 7;
    const base = `src/pkg${f % 13}/${'d'.repeat(depth) || 'top'}`;
    if (f % 2 === 0) {
      const ext = ['ts', 'ts', 'tsx', 'mts', 'd.ts', 'js', 'mjs', 'cts'][f % 8];
      const body = [];
      body.push(`import { Base, J } from './base${f % 3}';`);
      if (f % 5 === 0) body.push(`export * from './m${f - 1}';`, `export * as ns${f} from './m${f - 2}';`);
      if (f % 6 === 0) body.push(`export { a as b${f}, default as d${f} } from './x';`, `export type { T as TT${f} } from './y';`);
      const n = 2 + Math.floor(r() * 6);
      for (let i = 0; i < n; i++) {
        const d = ts.decl(i);
        body.push(ext === 'js' || ext === 'mjs' ? jsDecl(r, i) : d);
      }
      if (f % 9 === 0) body.push(`const hidden = 1;\nexport { hidden as shown${f} };`, `export default class {}`);
      write(`${base}/m${f}.${ext}`, body.join('\n') + '\n');
    } else {
      const body = ['from typing import Any, Callable, Literal, Optional', 'import typing'];
      if (f % 4 === 1) body.push(`__all__ = ['f0', 'C2', 'V3', 'W4']`);
      const n = 2 + Math.floor(r() * 6);
      for (let i = 0; i < n; i++) body.push(py.decl(i));
      const name = f % 10 === 3 ? '_private_mod' : f % 10 === 5 ? '__init__' : `m${f}`;
      write(`${base}/${name}.py`, body.join('\n') + '\n');
    }
  }
}

/**
 * One file that does not parse refuses the whole tree's contract, so the generated files that
 * an extractor refuses are hashed here (their error) and left out of the tree.
 */
async function dropUnparsable(dir) {
  const tsx = await import(pathToFileURL(join(dist, 'contract/typescript.js')).href);
  const py = await import(pathToFileURL(join(dist, 'contract/python.js')).href);
  await py.initPython();
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(p);
    }
  };
  walk(join(dir, 'src'));
  let dropped = 0;
  for (const p of out) {
    const rel = p.slice(dir.length + 1);
    const text = readFileSync(p, 'utf8');
    const tries = rel.endsWith('.py') ? [() => py.extractPythonV1(text, rel), () => py.extractPythonSeed(text, rel)] : [() => tsx.extractTypeScript(text, rel)];
    for (const f of tries) {
      try {
        f();
      } catch (e) {
        emit(`generated refused ${rel} ${e?.constructor?.name} ${e?.message}`);
        rmSync(p);
        dropped++;
        break;
      }
    }
  }
  emit(`generated files ${out.length} dropped ${dropped}`);
}

// ------------------------------------------------------------------ contract section

begin('contract');
const bundles = existsSync(CORPUS) ? readdirSync(CORPUS).filter((f) => f.endsWith('.bundle')).sort() : [];
for (const b of quick ? bundles.filter((x) => x === 'zustand.bundle') : bundles) {
  const dir = join(tmp, b.replace(/\.bundle$/, ''));
  git(tmp, 'clone', '-q', join(CORPUS, b), dir);
  contractRows(dir, b);
}
{
  const dir = join(tmp, 'generated');
  mkdirSync(dir);
  generatedTree(dir, quick ? 200 : 4000, 20261202, false);
  await dropUnparsable(dir);
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'generated');
  contractRows(dir, 'generated');
}

// ------------------------------------------------------------------ ts-lib section

begin('ts-lib');
{
  const tsx = await import(pathToFileURL(join(dist, 'contract/typescript.js')).href);
  emit(`exports ${Object.keys(tsx).sort().join(',')} version ${tsx.TS_EXTRACTOR_VERSION}`);
  const files = [];
  const walk = (d) => {
    let es;
    try {
      es = readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of es.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && /\.(d\.ts|ts|mts|cts)$/.test(e.name)) files.push(p);
    }
  };
  walk(join(ROOT, 'node_modules/typescript/lib'));
  walk(join(ROOT, 'node_modules/@types'));
  walk(join(ROOT, 'node_modules/@typescript-eslint'));
  walk(join(ROOT, 'node_modules/zod'));
  const use = quick ? files.filter((_, i) => i % Math.ceil(files.length / 100) === 0) : files;
  for (const f of use) {
    if (statSync(f).size > 2_000_000) continue;
    const rel = f.slice(join(ROOT, 'node_modules').length + 1);
    const text = readFileSync(f, 'utf8');
    for (const [label, src] of [[rel, text], [`${rel}#half`, text.slice(0, Math.floor(text.length / 2))]]) {
      try {
        const rows = tsx.extractTypeScript(src, rel);
        emit(`${label} ${rows.length} ${createHash('sha256').update(rows.join('\n')).digest('hex')}`);
      } catch (e) {
        emit(`${label} ERR ${e?.constructor?.name} ${e?.message} cause=${e?.cause?.constructor?.name}`);
      }
    }
  }
  emit(`files ${use.length}`);
}

// ------------------------------------------------------------------ audit section

begin('audit');
{
  const st = await import(pathToFileURL(join(dist, 'audit/store.js')).href);
  emit(`exports ${Object.keys(st).sort().join(',')}`);
  const path = join(tmp, 'audit', 'fixed.db');
  const s = st.AuditStore.open(path);
  const T = (n) => `2026-01-0${1 + (n % 9)}T10:${String(n % 60).padStart(2, '0')}:00.000Z`;
  const oid = (c) => c.repeat(40);
  const tryw = (label, f) => {
    try {
      emit(`${label} ${JSON.stringify(f())}`);
    } catch (e) {
      emit(`${label} ERR ${e?.constructor?.name} ${e?.message} cause=${e?.cause?.constructor?.name}:${e?.cause?.message}`);
    }
  };
  for (let i = 0; i < 12; i++) {
    const pushId = `push-${i}`;
    tryw(`recordPush${i}`, () =>
      s.recordPush({
        pushId, time: T(i), repo: `repo${i % 3}`, actor: `agent-${i % 2}`, role: i % 4 === 3 ? 'human' : 'agent',
        remoteAddr: '127.0.0.1', userAgent: 'git/2.4\u0001x', verdict: i % 3 === 0 ? 'reject' : i % 5 === 0 ? 'would-reject' : 'accept',
        timings: { total: i * 1.5, parse: 2 },
        refs: [
          { ref: 'refs/heads/main', old: oid('a'), new: oid(String(i % 10)), verdict: i % 3 === 0 ? 'reject' : 'accept', decision: i % 3 === 0 ? 'contract' : 'ok', rules: [{ rule: 'refs', ok: true }, { rule: 'contract', ok: i % 3 !== 0, message: `m${i}` }], contractBase: 'b'.repeat(64), contractHead: 'c'.repeat(64), timings: { x: 1 } },
          { ref: `refs/heads/topic-${i}`, old: oid('0'), new: oid('e'), verdict: 'accept', rules: [] },
        ],
      }),
    );
    tryw(`confirm${i}`, () => s.confirmRefs(pushId, [{ ref: 'refs/heads/main', new: oid(String(i % 10)), moved: i % 2 === 0 }], { time: T(i + 1), repo: `repo${i % 3}` }));
  }
  tryw('auth', () => s.appendAuthFailure({ time: T(20), remoteAddr: '10.0.0.1', user: 'mallory\u0007', userAgent: 'curl', repo: 'repo0', reason: 'bad token' }));
  tryw('admin', () => s.appendAdmin({ time: T(21), actor: 'admin', action: 'token.create', subject: 'bot', detail: { role: 'agent', repos: ['*'] } }));
  tryw('admin-push', () => s.appendAdmin({ time: T(22), actor: 'gate', action: 'push.outcome', subject: 'x', detail: { n: 1 }, pushId: 'push-1' }));
  tryw('ci', () => s.appendCi({ time: T(23), repo: 'r', base: 'main', head: 'topic', verdict: 'accept', actor: 'ci', detail: { seed: 7 } }));
  tryw('confirm1', () => s.appendConfirm({ time: T(24), pushId: 'push-2', ref: 'refs/heads/main', new: oid('2'), moved: true }));
  tryw('escalate', () => s.appendEscalation({ time: T(25), pushId: 'push-3', repo: 'repo0', actor: 'agent-1', role: 'agent', ref: 'refs/heads/main', old: oid('a'), new: oid('3'), verdict: 'reject', text: 'please look', detail: { codes: ['PG-X'] } }));
  tryw('close-bad', () => s.closeEscalation({ time: T(26), id: 1, actor: 'alice', note: 'no' }));
  const escId = s.query({ kind: 'escalation' })[0]?.id;
  tryw('close', () => s.closeEscalation({ time: T(26), id: escId, actor: 'alice', note: 'done' }));
  tryw('close-again', () => s.closeEscalation({ time: T(27), id: escId, actor: 'alice', note: 'again' }));
  // Refused inputs: each names its field.
  tryw('bad-push', () => s.recordPush({ pushId: 'bad id!', repo: 'r', actor: 'a', role: 'agent', verdict: 'accept', refs: [] }));
  tryw('bad-ref', () => s.recordPush({ pushId: 'p', time: T(1), repo: 'r', actor: 'a', role: 'agent', verdict: 'accept', refs: [{ ref: 'x', old: 'zz', new: oid('1'), verdict: 'accept', rules: [] }] }));
  tryw('bad-admin', () => s.appendAdmin({ actor: 'a', action: 'Bad Action' }));
  tryw('bad-time', () => s.appendCi({ time: 'yesterday', repo: 'r', base: 'a', head: 'b', verdict: 'accept' }));
  tryw('bad-role', () => s.appendEscalation({ pushId: 'p', repo: 'r', actor: 'a', role: 'root', ref: 'x', old: oid('1'), new: oid('2'), verdict: 'accept', text: 't' }));
  tryw('bad-json', () => s.appendAdmin({ actor: 'a', action: 'x', detail: { f: () => 1 } }));
  tryw('hashes', () => s.rowHashes());
  tryw('last', () => s.lastRow());
  tryw('verify', () => s.verify());
  tryw('query-all', () => s.query({ limit: 1000 }));
  tryw('query-confirm', () => s.query({ kind: 'confirm' }));
  tryw('query-repo', () => s.query({ repo: 'repo1', verdict: 'accept', since: '2026-01-02', until: '2026-01-08T00:00:00Z' }));
  tryw('query-actor', () => s.query({ actor: 'agent-0', limit: 3 }));
  tryw('query-repos', () => s.query({ repos: ['repo0', 'repo2'] }));
  tryw('query-bad', () => s.query({ limit: 0 }));
  tryw('query-bad-since', () => s.query({ since: 'x' }));
  tryw('get', () => s.get(3));
  tryw('push', () => s.getPush('push-3'));
  tryw('select', () => s.select('SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind'));
  tryw('select-write', () => s.select('DELETE FROM events'));
  tryw('explain', () => s.explainQuery({ repo: 'repo1' }));
  tryw('schema', () => s.db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").all());
  tryw('user_version', () => s.db.pragma('user_version', { simple: true }));
  tryw('canonical', () => st.canonicalJson({ b: [1, 'x', null, { z: true, a: -0.5 }], a: '\u2028' }));
  tryw('parseIso', () => ['2026-01-01', '2026-01-01T10:00+02:00', '2026-02-30', '2026-01-01 10:00:00.123456'].map((v) => { try { return st.parseIsoDate(v, '--since'); } catch (e) { return e.message; } }));
  s.close();

  // CLI operations on a fresh data dir (wall clock and random secrets: deterministic fields only).
  const data = join(tmp, 'data');
  const steps = [
    ['repo', 'create', 'demo', '--data', data],
    ['repo', 'create', 'demo', '--data', data],
    ['token', 'create', 'bot', '--role', 'agent', '--repos', 'demo', '--data', data],
    ['token', 'create', 'alice', '--role', 'human', '--data', data],
    ['token', 'create', 'x', '--role', 'nobody', '--data', data],
    ['repo', 'mode', 'demo', 'evaluate', '--data', data],
    ['escalation', 'list', '--data', data],
    ['escalation', 'close', '99', '--note', 'n', '--data', data],
    ['audit', 'verify', '--data', data],
  ];
  const secretish = /\b[A-Za-z0-9_-]{32,}\b/g;
  for (const st2 of steps) {
    const r = cli(st2);
    emit(`cli ${st2.slice(0, 3).join(' ')} exit=${r.code} out=${JSON.stringify(r.stdout.replace(secretish, '<secret>').replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z/g, '<time>'))} err=${JSON.stringify(r.stderr.replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z/g, '<time>'))}`);
  }
  const a = cli(['audit', '--json', '--data', data, '--limit', '100']);
  emit(`cli audit exit=${a.code}`);
  for (const line of a.stdout.split('\n').filter(Boolean).reverse()) {
    const row = JSON.parse(line);
    const keep = {};
    for (const k of ['id', 'kind', 'action', 'subject', 'actor', 'role', 'verdict', 'repo', 'detail', 'reason']) if (k in row) keep[k] = row[k];
    emit(`cli row ${JSON.stringify(keep).replace(secretish, '<secret>')}`);
  }
}

// ------------------------------------------------------------------ refusals section

/** check --json without its per-rule timings (`ms`), the one field that is the clock's. */
function noTimes(stdout) {
  try {
    return JSON.stringify(JSON.parse(stdout), (k, v) => (k === 'ms' ? undefined : v));
  } catch {
    return stdout;
  }
}

begin('refusals');
{
  const dir = join(tmp, 'project');
  mkdirSync(dir);
  const w = (p, text) => {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), text);
  };
  git(dir, 'init', '-q', '-b', 'main');
  w('ci/patchgate.json', JSON.stringify({ trustedBranch: 'main', writable: ['src/**'], contract: { roots: ['src/'], allowFile: 'ci/contract.allow' }, fixtures: { lock: 'ci/fixtures.lock' } }, null, 2) + '\n');
  w('src/app.py', 'def add(a, b):\n    return a + b\n');
  w('src/lib.ts', 'export function twice(x: number): number { return x * 2; }\n');
  w('src/fixtures/data.json', '{"n": 1}\n');
  w('tests/test_app.py', 'from app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n');
  w('ci/flake-ledger.jsonl', '');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'base');
  const lock = cli(['fixtures', 'lock', 'src/fixtures', '--repo', dir]);
  emit(`fixtures lock exit=${lock.code} ${JSON.stringify(lock.stdout)}`);
  const digest = cli(['contract', '--repo', dir]).stdout.trim().split('\n').at(-1);
  w('ci/contract.allow', `# approved\n${digest}\n`);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'lock and allow');
  const branch = (name, files) => {
    git(dir, 'checkout', '-q', '-b', name, 'main');
    for (const [p, t] of Object.entries(files)) {
      if (t === null) rmSync(join(dir, p));
      else w(p, t);
    }
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', name);
    git(dir, 'checkout', '-q', 'main');
  };
  branch('test-write', { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  branch('contract-move', { 'src/app.py': 'def add(a, b, c=0):\n    return a + b + c\n' });
  branch('contract-move-ts', { 'src/lib.ts': 'export function twice(x: number, y = 2): number { return x * y; }\n' });
  branch('fixture-drift', { 'src/fixtures/data.json': '{"n": 2}\n' });
  branch('fixture-remove', { 'src/fixtures/data.json': null });
  branch('ok', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  branch('all', { 'tests/test_app.py': 'x = 1\n', 'src/app.py': 'def add(a):\n    return a\n', 'src/fixtures/data.json': '{}\n', 'ci/contract.allow': '' });
  for (const head of ['test-write', 'contract-move', 'contract-move-ts', 'fixture-drift', 'fixture-remove', 'ok', 'all', 'no-such-rev']) {
    for (const role of quick ? ['agent'] : ['agent', 'human']) {
      const r = cli(['check', '--repo', dir, '--base', 'main', '--head', head, '--role', role, '--json']);
      emit(`check ${head} ${role} exit=${r.code} ${JSON.stringify(noTimes(r.stdout))} err=${JSON.stringify(r.stderr)}`);
    }
    const plain = cli(['check', '--repo', dir, '--base', 'main', '--head', head]);
    emit(`check ${head} plain exit=${plain.code} ${JSON.stringify(plain.stdout)} err=${JSON.stringify(plain.stderr)}`);
  }
}

if (dump) writeFileSync(dump, lines.join(''));
for (const s of sections) console.log(`${s.name} ${s.n} ${s.hash.digest('hex')}`);
console.log(total.digest('hex'));
