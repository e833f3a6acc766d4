// Tests for the TS/JS contract extractor: every public form yields the expected rows, every
// signature change moves the row set, and formatting/comment/body edits never do.

import t from 'tap';
import { ContractParseError } from '../../src/errors.js';
import {
  TS_EXTENSIONS,
  TS_EXTRACTOR_VERSION,
  extractTypeScript,
  isTypeScriptPath,
} from '../../src/contract/typescript.js';

const P = 'src/x.ts';

/** Rows with the `${path}::` prefix checked and removed, so expectations stay readable. */
function rows(source: string, path = P): string[] {
  const out = extractTypeScript(source, path);
  for (const r of out) {
    if (!r.startsWith(`${path}::`)) throw new Error(`row without path prefix: ${r}`);
  }
  return out.map(r => r.slice(path.length + 2));
}

function sorted(xs: string[]): string[] {
  return [...xs].sort();
}

t.test('module constants', async t => {
  t.same(TS_EXTENSIONS, ['.ts', '.tsx', '.mts', '.cts', '.js', '.mjs', '.cjs']);
  t.ok(Number.isInteger(TS_EXTRACTOR_VERSION) && TS_EXTRACTOR_VERSION >= 1);
  for (const p of ['a.ts', 'a/b.tsx', 'x.d.ts', 'm.mts', 'c.cts', 'j.js', 'k.mjs', 'l.cjs', 'types.d.mts']) {
    t.ok(isTypeScriptPath(p), p);
  }
  for (const p of ['a.py', 'a.json', 'README.md', 'ts', 'a.ts.bak', 'a.tsbuildinfo']) {
    t.notOk(isTypeScriptPath(p), p);
  }
});

t.test('rows are prefixed with the path and sorted', async t => {
  const out = extractTypeScript('export const b = 1;\nexport const a = 2;\nexport function c() {}\n', 'lib/m.ts');
  t.same(out, ['lib/m.ts::const a: 2', 'lib/m.ts::const b: 1', 'lib/m.ts::function c()']);
  t.same(out, [...out].sort());
});

interface Case {
  name: string;
  src: string;
  rows: string[];
  path?: string;
}

const cases: Case[] = [
  {
    name: 'function: type params, optional, default, rest, return type',
    src: 'export function f<T extends X = Y, const U>(a: A, b?: B, c = 1, ...rest: R[]): Ret { return g(); }',
    rows: ['function f<T extends X = Y, const U>(a: A, b?: B, c = 1, ...rest: R[]): Ret'],
  },
  {
    name: 'function: async, generator, this param, destructured params',
    src: `export async function* g(this: Ctx, { a, b: [c] = [], d = 'x' }: Opts, [e, , f]: number[]): AsyncGenerator<number> {}
          export async function h() {}`,
    rows: [
      'async function* g(this: Ctx, { a, b: [c] = [], d = "x" }: Opts, [e, , f]: number[]): AsyncGenerator<number>',
      'async function h()',
    ],
  },
  {
    name: 'function overloads are one row each',
    src: `export function o(a: string): string;
          export function o(a: number): number;
          export function o(a: any) { return a; }`,
    rows: ['function o(a: any)', 'function o(a: number): number', 'function o(a: string): string'],
  },
  {
    name: 'class: heritage, public/protected/static/abstract/accessor/index/ctor, private excluded',
    src: `export abstract class C<T> extends Base<T> implements I, J<T> {
            static readonly VERSION = '1';
            x = 1;
            readonly y = 'lit';
            protected p?: string;
            private secret: number;
            #hidden = 1;
            declare d: number;
            accessor acc: string = '';
            [k: string]: unknown;
            constructor(public a: number, protected b?: string, private z: T, readonly w = 3) { super(); }
            m(x: number): void;
            m(x: string): void;
            m(x: any) {}
            protected static async *gen() {}
            abstract ab(): void;
            get v(): number { return 1; }
            set v(val: number) {}
            private pm() {}
            #pm() {}
            [Symbol.iterator]() {}
            'quoted-key'(): void {}
            'plain'?(): void {}
          }`,
    rows: [
      'abstract class C<T> extends Base<T> implements I, J<T>',
      'class C."quoted-key"(): void',
      'class C.[Symbol.iterator]()',
      'class C.[k: string]: unknown',
      'class C.a: number',
      'class C.abstract ab(): void',
      'class C.accessor acc: string',
      'class C.constructor(public a: number, protected b?: string, private z: T, readonly w = 3)',
      'class C.declare d: number',
      'class C.get v(): number',
      'class C.m(x: any)',
      'class C.m(x: number): void',
      'class C.m(x: string): void',
      'class C.plain?(): void',
      'class C.protected b?: string',
      'class C.protected p?: string',
      'class C.protected static async *gen()',
      'class C.readonly w: number',
      'class C.readonly y: "lit"',
      'class C.set v(val: number)',
      'class C.static readonly VERSION: "1"',
      'class C.x: number',
    ],
  },
  {
    name: 'class decorators are part of the signature',
    src: `@Component({ selector: 'x' }) export class D { @Input() name: string; constructor(@Inject(TOKEN) t: string) {} }`,
    rows: [
      '@Component({ selector: "x" }) class D',
      'class D.@Input() name: string',
      'class D.constructor(@Inject(TOKEN) t: string)',
    ],
  },
  {
    name: 'interface: properties, methods, readonly, index, construct and call signatures',
    src: `export interface I<T> extends J, K<T> {
            a: T;
            b?(x: number): void;
            readonly c: string;
            [k: string]: unknown;
            new (x): I<T>;
            (y: number): void;
            get g(): string;
            'quoted': number;
            "needs-quotes": number;
          }`,
    rows: [
      'interface I.(y: number): void',
      'interface I."needs-quotes": number',
      'interface I.[k: string]: unknown',
      'interface I.a: T',
      'interface I.b?(x: number): void',
      'interface I.get g(): string',
      'interface I.new (x): I<T>',
      'interface I.quoted: number',
      'interface I.readonly c: string',
      'interface I<T> extends J, K<T>',
    ],
  },
  {
    name: 'type aliases: every type node kind',
    src: `export type A<T> = T extends (infer U)[] ? U : ((a: string) => void) | keyof T | T[keyof T]
            | \`x\${T & string}\` | { readonly [K in keyof T]?: T[K] } | { -readonly [K in keyof T]-?: T[K] }
            | [a: string, b?: number, ...rest: boolean[]] | typeof import('x').y | import('y').Z<T>
            | (new () => T) | (abstract new (...a: any[]) => object) | unique symbol | readonly string[]
            | { a: 1; m(): void } | -1 | 'lit' | 2n | true | null | undefined | never | unknown | any | bigint | object | this | void;
          export type Guard = (x: unknown) => x is string;
          export type Asserts = (x: unknown) => asserts x is string;
          export type Mapped<T> = { [K in keyof T as \`get\${K & string}\`]: () => T[K] };`,
    rows: [
      'type A<T> = T extends (infer U)[] ? U : ((a: string) => void) | keyof T | T[keyof T] | `x${T & string}` | { readonly [K in keyof T]?: T[K] } | { -readonly [K in keyof T]-?: T[K] } | [a: string, b?: number, ...rest: boolean[]] | typeof import("x").y | import("y").Z<T> | (new () => T) | (abstract new (...a: any[]) => object) | unique symbol | readonly string[] | { a: 1; m(): void } | -1 | "lit" | 2n | true | null | undefined | never | unknown | any | bigint | object | this | void',
      'type Asserts = (x: unknown) => asserts x is string',
      'type Guard = (x: unknown) => x is string',
      'type Mapped<T> = { [K in keyof T as `get${K & string}`]: () => T[K] }',
    ],
  },
  {
    name: 'enums and const enums, implicit values keep their order',
    src: `export enum E { A = 1, B, 'c-d' = "x" }
          export const enum CE { X, Y }
          export declare enum DE { Z }`,
    rows: [
      'const enum CE',
      'declare enum DE',
      'enum CE.X = 0',
      'enum CE.Y = X + 1',
      'enum DE.Z = 0',
      'enum E',
      'enum E."c-d" = "x"',
      'enum E.A = 1',
      'enum E.B = A + 1',
    ],
  },
  {
    name: 'export declare forms',
    src: `export declare function df(a: string): void;
          export declare const dc: number;
          export declare class DC { m(): void; private p; }
          export declare namespace DN { function inner(): void; const hidden: number; }`,
    rows: [
      'class DC.m(): void',
      'declare class DC',
      'declare const dc: number',
      'declare function df(a: string): void',
      'declare namespace DN',
      'const DN.hidden: number',
      'function DN.inner(): void',
    ],
  },
  {
    name: 'variables: annotations, literals, functions, objects, inferred, destructuring',
    src: `export const lit = 1, str = 'a', neg = -2, tpl = \`t\`, big = 3n, nul = null, re = /a/g;
          export const arrow = <T,>(a: T, b = 'x'): string => '', fn = async function (x: number) { return x; };
          export const obj = { a: 1, b: 'x', f(x: number) { return x; }, nested: { c: true } };
          export const frozen = { a: 1, list: [1, 'b'] } as const;
          export const typed: Map<string, number> = new Map();
          export const call = compute(), asT = load() as Config, sat = { a: 1 } satisfies Cfg;
          export const made = new Map<string, number>();
          export const alias = lit, req = require('./r');
          export let l = 1;
          export let definite!: string;
          export var v;
          export const { da, db: [dc] } = obj, [e1]: [number] = [1];`,
    rows: [
      'const alias: typeof lit',
      'const arrow: <T>(a: T, b = "x"): string => …',
      'const asT: Config',
      'const big: 3n',
      'const call: <inferred>',
      'const da: <destructured>',
      'const dc: <destructured>',
      'const e1: <destructured from [number]>',
      'const fn: async function(x: number) {…}',
      'const frozen: { a: 1; list: [1, "b"] } as const',
      'const lit: 1',
      'const made: new Map<string, number>(…)',
      'const neg: -2',
      'const nul: null',
      'const obj: { a: number; b: string; f(x: number); nested: { c: boolean } }',
      'const re: RegExp',
      'const req: typeof import("./r")',
      'const sat: { a: number } satisfies Cfg',
      'const str: "a"',
      'const tpl: `t`',
      'const typed: Map<string, number>',
      'let definite!: string',
      'let l: number',
      'var v',
    ],
  },
  {
    name: 'default exports',
    src: `export default function (a: number): void {}`,
    rows: ['function default(a: number): void'],
  },
  {
    name: 'default export of a class',
    src: `export default class Named extends Base { hi(): void {} private no() {} }`,
    rows: ['class default extends Base', 'class default.hi(): void'],
  },
  {
    name: 'default export of an expression and of a local',
    src: `const config = { port: 80 };\nexport default config;`,
    rows: ['const default: { port: number }'],
  },
  {
    name: 'default export of a literal object',
    src: `export default { port: 80, name: 'x' };`,
    rows: ['export default { port: number; name: string }'],
  },
  {
    name: 'export = x',
    src: `function lib(a: string): number { return 1; }\nnamespace lib { export const v = 1; }\nexport = lib;`,
    rows: ['const export=.v: 1', 'function export=(a: string): number', 'namespace export='],
  },
  {
    name: 're-exports',
    src: `export * from './m';
          export * as ns from "./n";
          export { a as b, c } from './o';
          export type { T } from './p';
          export { type U, default as D } from './q';
          export type * from './r';
          export * from './j.json' with { type: 'json' };`,
    rows: [
      'export * as ns from "./n"',
      'export * from "./j.json" with { type: "json" }',
      'export * from "./m"',
      'export type * from "./r"',
      'export type { T } from "./p"',
      'export type { U } from "./q"',
      'export { a as b } from "./o"',
      'export { c } from "./o"',
      'export { default as D } from "./q"',
    ],
  },
  {
    name: 'export { a as b } of local declarations carries their signatures',
    src: `function a(x: number): string { return ''; }
          class K { m(): void {} }
          interface Shape { w: number }
          const n = 5;
          export { a as b, K, Shape as Form, n };`,
    rows: ['class K', 'class K.m(): void', 'const n: 5', 'function b(x: number): string', 'interface Form', 'interface Form.w: number'],
  },
  {
    name: 'export of imported bindings becomes a re-export',
    src: `import d, { x as y, type Z } from './m';
          import * as all from './all';
          export { d, y as why, Z, all };`,
    rows: [
      'export * as all from "./all"',
      'export type { Z } from "./m"',
      'export { default as d } from "./m"',
      'export { x as why } from "./m"',
    ],
  },
  {
    name: 'export type { T } of local declarations',
    src: `interface T { a: string }\nclass V { b = 1 }\nexport type { T, V };`,
    rows: ['interface T', 'interface T.a: string', 'type-only class V', 'type-only class V.b: number'],
  },
  {
    name: 'export import A = B.C',
    src: `namespace B { export namespace C { export const x = 1; } }\nexport import A = B.C;\nexport import R = require('r');`,
    rows: ['import A = B.C', 'import R = require("r")', 'local const B.C.x: 1', 'local namespace B', 'local namespace B.C'],
  },
  {
    name: 'declare module and declare global',
    src: `export {};
          declare module 'x' { function amb(a: string): void; interface Aug { k: string } }
          declare module 'short';
          declare global { interface Window { w: number } }`,
    rows: [
      'declare global',
      'declare module "short" (shorthand)',
      'declare module "x"',
      'function "x".amb(a: string): void',
      'interface "x".Aug',
      'interface "x".Aug.k: string',
      'interface global.Window',
      'interface global.Window.w: number',
    ],
  },
  {
    name: 'namespaces: nested exports with qualified names, non-exported members hidden',
    src: `export namespace N {
            export function f(): void {}
            function hidden() {}
            export namespace M { export const z = 1; const no = 2; }
            export interface I { a: number }
          }
          export namespace Q.R { export type T = string; }`,
    rows: [
      'const N.M.z: 1',
      'function N.f(): void',
      'interface N.I',
      'interface N.I.a: number',
      'namespace N',
      'namespace N.M',
      'namespace Q.R',
      'type Q.R.T = string',
    ],
  },
  {
    name: 'non-exported local types used by public signatures are part of the contract',
    src: `interface Opts { a: string; nested: Inner }
          interface Inner { z?: number }
          type Unused = number;
          class Base { protected b(): void {} }
          export function use(o: Opts): void {}
          export class Sub extends Base {}
          export const k: typeof helper = helper;
          function helper(x: number): void {}
          const impl = (a: string): number => 1;
          export const api = impl;`,
    rows: [
      'class Sub extends Base',
      'const api: typeof impl',
      'const k: typeof helper',
      'function use(o: Opts): void',
      'local class Base',
      'local class Base.protected b(): void',
      'local function helper(x: number): void',
      'local const impl: (a: string): number => …',
      'local interface Inner',
      'local interface Inner.z?: number',
      'local interface Opts',
      'local interface Opts.a: string',
      'local interface Opts.nested: Inner',
    ],
  },
  {
    name: 'nothing public, nothing listed',
    src: `import { x } from './x';\nfunction f(a: number) { return x(a); }\nconst y = 2;\nclass Z {}\nf(y);`,
    rows: [],
  },
  {
    name: 'ESM JavaScript',
    path: 'lib/m.js',
    src: `export function plain(a, b = {x: 1}, ...c) {}
          export class JsClass extends Base { constructor(a) { super(); } method() {} static stat = 1; #priv() {} }
          export default class { hi() {} }
          const x = 1, y = () => {};
          export { x as default2, y };`,
    rows: [
      'class JsClass extends Base',
      'class JsClass.constructor(a)',
      'class JsClass.method()',
      'class JsClass.static stat: number',
      'class default',
      'class default.hi()',
      'const default2: 1',
      'const y: () => …',
      'function plain(a, b = { x: 1 }, ...c)',
    ],
  },
  {
    name: 'CommonJS JavaScript',
    path: 'lib/c.cjs',
    src: `const helper = require('./h');
          function add(a, b = 2) { return a + b; }
          module.exports = { add, sub: function (a, b) {}, VERSION: '1.0', helper, m(x) {} };
          exports.extra = (z) => z;
          module.exports.more = 42;`,
    rows: [
      'const helper: typeof import("./h")',
      'export = { add, sub, VERSION, helper, m }',
      'exports.VERSION = "1.0"',
      'exports.m(x)',
      'exports.more = 42',
      'function add(a, b = 2)',
      'function extra(z)',
      'function sub(a, b)',
    ],
  },
  {
    name: 'JSX component file',
    path: 'ui/c.tsx',
    src: `export function Comp({ icon = <Icon size={1} />, title }: Props): JSX.Element { return <div>{title}</div>; }`,
    rows: ['function Comp({ icon = <Icon size={1}/>, title }: Props): JSX.Element'],
  },
  {
    name: 'global declaration file',
    path: 'types/g.d.ts',
    src: `declare function gfun(a: string): void;\ninterface Window { x: string }\ndeclare namespace NS { function inner(): void }`,
    rows: [
      'declare function global.gfun(a: string): void',
      'declare namespace global.NS',
      'function global.NS.inner(): void',
      'interface global.Window',
      'interface global.Window.x: string',
    ],
  },
  {
    name: 'module declaration file: implicit exports unless `export {}`',
    path: 'types/m.d.ts',
    src: `import { X } from 'x';\ndeclare function implicit(a: X): void;\nexport declare function explicit(): void;`,
    rows: ['declare function explicit(): void', 'declare function implicit(a: X): void'],
  },
  {
    name: 'module declaration file with `export {}` hides the rest',
    path: 'types/n.d.ts',
    src: `declare function hidden(a: string): void;\nexport declare function explicit(): void;\nexport {};`,
    rows: ['declare function explicit(): void'],
  },
  {
    name: 'expressions in defaults keep their meaning',
    src: `export function d(a = (1 + 2) * 3, b = 1 + 2 * 3, c = (x ?? y) || z, e = -(-x), f = (-a) ** 2,
            g = -(a ** 2), h = !(a && b), i = \`t\${1}x\`, j = a?.b?.[c]?.(d), k = new (foo())(), m = (1).toString(),
            n = typeof x === 'string' ? x : x!, o = async function* () {}, p = 0x10, q = [1, , 2], r = cond ? a : b) {}`,
    rows: [
      'function d(a = (1 + 2) * 3, b = 1 + 2 * 3, c = (x ?? y) || z, e = - -x, f = (-a) ** 2, g = -(a ** 2), h = !(a && b), i = `t${1}x`, j = a?.b?.[c]?.(d), k = new (foo())(), m = (1).toString(), n = typeof x === "string" ? x : x!, o = async function*() {…}, p = 16, q = [1, , 2], r = cond ? a : b)',
    ],
  },
];

t.test('every public form yields its rows', async t => {
  for (const c of cases) {
    t.test(c.name, async t => {
      t.same(rows(c.src, c.path), sorted(c.rows));
    });
  }
});

t.test('private and #private members never appear', async t => {
  const out = rows(`export class C { private secret = 1; #hash = 2; private m() {} #n() {} constructor(private p: number) {} shown = 3; }`);
  t.same(out, ['class C', 'class C.constructor(private p: number)', 'class C.shown: number']);
  t.notOk(out.some(r => /secret|#hash|\.m\(|#n|C\.p\b/.test(r)));
});

// Each pair is a real signature change: the row sets must differ.
const changes: Array<[string, string, string]> = [
  ['param renamed', 'export function f(a: number) {}', 'export function f(b: number) {}'],
  ['param made optional', 'export function f(a: number) {}', 'export function f(a?: number) {}'],
  ['param default changed', 'export function f(a = 1) {}', 'export function f(a = 2) {}'],
  ['param default added', 'export function f(a: number) {}', 'export function f(a: number = 1) {}'],
  ['param annotation changed', 'export function f(a: number) {}', 'export function f(a: string) {}'],
  ['param added', 'export function f(a: number) {}', 'export function f(a: number, b: number) {}'],
  ['rest param', 'export function f(a: number[]) {}', 'export function f(...a: number[]) {}'],
  ['return type changed', 'export function f(): number { return 1; }', 'export function f(): string { return ""; }'],
  ['made async', 'export function f() {}', 'export async function f() {}'],
  ['made generator', 'export function f() {}', 'export function* f() {}'],
  ['type param constraint changed', 'export function f<T extends A>(x: T) {}', 'export function f<T extends B>(x: T) {}'],
  ['type param default changed', 'export type B<T = string> = T[];', 'export type B<T = number> = T[];'],
  ['overload added', 'export function f(a: string): void;\nexport function f(a: any) {}',
    'export function f(a: string): void;\nexport function f(a: number): void;\nexport function f(a: any) {}'],
  ['member made private -> public', 'export class C { private m(): void {} }', 'export class C { m(): void {} }'],
  ['member made public -> protected', 'export class C { m(): void {} }', 'export class C { protected m(): void {} }'],
  ['protected member added', 'export class C { a = 1; }', 'export class C { a = 1; protected b = 2; }'],
  ['member made static', 'export class C { m(): void {} }', 'export class C { static m(): void {} }'],
  ['member made readonly', 'export class C { x: number; }', 'export class C { readonly x: number; }'],
  ['property type changed', 'export class C { x: number; }', 'export class C { x: string; }'],
  ['parameter property added', 'export class C { constructor(x: number) {} }', 'export class C { constructor(public x: number) {} }'],
  ['superclass changed', 'export class C extends A {}', 'export class C extends B {}'],
  ['implements added', 'export class C {}', 'export class C implements I {}'],
  ['interface member made optional', 'export interface I { a: string }', 'export interface I { a?: string }'],
  ['interface member made readonly', 'export interface I { a: string }', 'export interface I { readonly a: string }'],
  ['interface extends changed', 'export interface I extends A {}', 'export interface I extends B {}'],
  ['type alias changed', 'export type T = string | number;', 'export type T = string | boolean;'],
  ['union vs parenthesized array', 'export type T = (A | B)[];', 'export type T = A | B[];'],
  ['function type in union', 'export type T = (() => A) | B;', 'export type T = () => A | B;'],
  ['enum value changed', 'export enum E { A = 1 }', 'export enum E { A = 2 }'],
  ['enum members reordered', 'export enum E { A, B }', 'export enum E { B, A }'],
  ['enum made const', 'export enum E { A }', 'export const enum E { A }'],
  ['const annotation changed', 'export const x: number = 1;', 'export const x: string = "1";'],
  ['const literal changed', 'export const x = 1;', 'export const x = 2;'],
  ['const -> let', 'export const x: number = 1;', 'export let x: number = 1;'],
  ['arrow param changed', 'export const f = (a: number) => a;', 'export const f = (a: string) => a;'],
  ['export added', 'export function f() {}\nfunction g() {}', 'export function f() {}\nexport function g() {}'],
  ['export removed', 'export function f() {}\nexport function g() {}', 'export function f() {}\nfunction g() {}'],
  ['re-export renamed', 'export { a as b } from "./m";', 'export { a as c } from "./m";'],
  ['re-export source changed', 'export * from "./m";', 'export * from "./n";'],
  ['re-export made type-only', 'export { a } from "./m";', 'export type { a } from "./m";'],
  ['local export renamed', 'function a() {}\nexport { a as b };', 'function a() {}\nexport { a as c };'],
  ['local export target signature changed', 'function a(x: number) {}\nexport { a as b };', 'function a(x: string) {}\nexport { a as b };'],
  ['default export signature changed', 'export default function (a: number) {}', 'export default function (a: string) {}'],
  ['namespace member changed', 'export namespace N { export function f(a: number) {} }', 'export namespace N { export function f(a: string) {} }'],
  ['namespace member exported', 'export namespace N { function f() {} }', 'export namespace N { export function f() {} }'],
  ['referenced local type changed', 'interface O { a: string }\nexport function f(o: O) {}', 'interface O { a: number }\nexport function f(o: O) {}'],
  ['global augmentation changed', 'export {};\ndeclare global { interface W { a: string } }', 'export {};\ndeclare global { interface W { a: number } }'],
  ['decorator argument changed', 'export class C { @Input("a") x: string; }', 'export class C { @Input("b") x: string; }'],
  ['binary grouping in default', 'export function f(a = (1 + 2) * 3) {}', 'export function f(a = 1 + 2 * 3) {}'],
  ['exponent grouping in default', 'export function f(a = (-x) ** 2) {}', 'export function f(a = -(x ** 2)) {}'],
  ['CommonJS export added', 'exports.a = 1;', 'exports.a = 1;\nexports.b = 2;'],
  ['JS param added', 'export function f(a) {}', 'export function f(a, b) {}'],
];

t.test('signature changes change the rows', async t => {
  for (const [name, before, after] of changes) {
    const path = name.startsWith('CommonJS') || name.startsWith('JS') ? 'src/x.js' : P;
    t.notSame(rows(before, path), rows(after, path), name);
  }
});

// Each pair differs only in formatting, comments, quoting, parentheses or bodies: rows must be identical.
const same: Array<[string, string, string, string?]> = [
  ['reindent and line breaks',
    'export function f<T>(a: number, b?: string): Promise<T> { return x; }',
    `export   function
       f<
         T
       >(
         a:   number,
         b?:
           string,
       ):
       Promise<T>
     {
         return x;
     }`],
  ['comments everywhere',
    'export interface I { a: string; b(x: number): void }',
    `/** doc */ export /* c1 */ interface I { // trailing
       /** a */ a: /* t */ string; // x
       b(/* p */ x: number /* q */): void /* r */
     }`],
  ['trailing commas', 'export function f(a: number, b: string) {}\nexport type T = [a, b];\nexport enum E { A, B }',
    'export function f(a: number, b: string,) {}\nexport type T = [a, b,];\nexport enum E { A, B, }'],
  ['semicolons vs none vs commas in type members',
    'export interface I { a: string; b: number; }\nexport const x = 1;\nexport type O = { a: 1; b: 2 };',
    'export interface I { a: string\n b: number }\nexport const x = 1\nexport type O = { a: 1, b: 2 }'],
  ['quote style', `export function f(a = 'x', b: 'y' | "z" = "y") {}\nexport * from './m';\nexport interface I { 'a': 1; 'b-c': 2 }`,
    `export function f(a = "x", b: "y" | 'z' = 'y') {}\nexport * from "./m";\nexport interface I { a: 1; "b-c": 2 }`],
  ['added parentheses in types', 'export type T = A | B[] | keyof C | (() => void);\nexport let x: string;',
    'export type T = ((A) | ((B)[]) | (keyof (C)) | ((() => (void))));\nexport let x: (string);'],
  ['leading union bar', 'export type T = A | B;', 'export type T =\n  | A\n  | B;'],
  ['parentheses in expressions', 'export function f(a = 1 + 2 * 3, b = x) {}', 'export function f(a = (1 + (2 * 3)), b = (x)) {}'],
  ['arrow parameter parentheses', 'export const f = x => x;', 'export const f = (x) => { return x; };'],
  ['function bodies', 'export function f(a: number): number { return a + 1; }\nexport class C { m() { return 1; } }',
    'export function f(a: number): number { const b = a * 2; if (b) { throw new Error(); } return b; }\nexport class C { m() { console.log(2); return 3; } }'],
  ['numeric literal spelling', 'export function f(a = 16, b = 1000) {}', 'export function f(a = 0x10, b = 1e3) {}'],
  ['explicit public modifier', 'export class C { m(): void {} x: number; }', 'export class C { public m(): void {} public x: number; }'],
  ['declaration order of members does not matter to sorting', 'export const a = 1;\nexport const b = 2;', 'export const b = 2;\nexport const a = 1;'],
  ['non-exported code changes', 'export function f(): void {}\nfunction helper() { return 1; }',
    'export function f(): void {}\nfunction helper2(a: number) { return a; }\nconst z = 3;'],
  ['JSX default value reformatted',
    'export function C({ icon = <Icon size={1} label="x" list={[1, 2]} /> }: P) { return null; }',
    'export function C({\n  icon = <Icon\n    size={ 1 }  // big\n    label=\'x\'\n    list={[1, 2,]}\n  />,\n}: P) { return <div />; }', 'ui/c.tsx'],
  ['object literal key quoting and spacing', 'export const o = { a: 1, "b-c": "x" } as const;', "export const o = {\n  'a': 1,\n  'b-c': 'x',\n} as const;"],
  ['JS formatting', 'export function f(a, b = {x: 1}) {}', 'export function f(\n  a,\n  b = { x: 1, },\n) { /* body */ }', 'src/x.js'],
];

t.test('formatting-only edits leave the rows identical', async t => {
  for (const [name, a, b, path] of same) {
    const ra = rows(a, path);
    t.ok(ra.length > 0, `${name}: has rows`);
    t.same(rows(b, path), ra, name);
  }
});

t.test('a namespace re-exporting its own declaration does not recurse', async t => {
  const out = rows(`declare module 'm' { class M { a(): void } namespace M { export { M }; } export = M; }`, 'types/m.d.ts');
  t.same(out, [
    '"m".export=.export { M as M } (circular)',
    'class "m".export=',
    'class "m".export=.a(): void',
    'declare module "m"',
    'namespace "m".export=',
  ]);
});

t.test('CRLF line endings do not matter', async t => {
  const src = 'export function f(a: number,\n  b = `x`): void {}\nexport interface I {\n  a: string\n}\n';
  const out = rows(src);
  t.ok(out.length > 0);
  t.same(rows(src.replace(/\n/g, '\r\n')), out);
});

t.test('rows never contain line breaks', async t => {
  const out = rows('export function f(a = `line1\nline2`): void {}');
  t.same(out, ['function f(a = `line1\\nline2`): void']);
});

t.test('parse errors throw ContractParseError with the 1-based line', async t => {
  const src = 'export function ok(a: number) {}\n\nexport function broken(a: number {\n}\n';
  const err = t.throws(() => extractTypeScript(src, 'src/bad.ts'));
  t.ok(err instanceof ContractParseError, 'is a ContractParseError');
  if (err instanceof ContractParseError) {
    t.equal(err.path, 'src/bad.ts');
    t.equal(err.line, 3);
    t.equal(err.column, 34);
    t.equal(err.code, 'CONTRACT_PARSE');
    t.match(err.message, /^src\/bad\.ts:3:34: does not parse: /);
    t.ok(err.cause, 'keeps the parser error as cause');
  }
  const js = t.throws(() => extractTypeScript('const a = 1;\nlet = ;\n', 'lib/bad.js'));
  t.ok(js instanceof ContractParseError && js.line === 2, 'JS parse error on line 2');
});

t.test('.ts parses type assertions, .tsx parses JSX', async t => {
  t.same(rows('export const x = <number>y;', 'src/a.ts'), ['const x: number']);
  t.throws(() => extractTypeScript('export const x = <number>y;', 'src/a.tsx'), ContractParseError);
  t.same(rows('export const el = <div />;', 'src/a.tsx'), ['const el: <inferred>']);
  t.same(rows('export const el = <div />;', 'src/a.js'), ['const el: <inferred>']);
  t.same(rows('export const x = <number>y;', 'src/no-extension'), ['const x: number'], 'unknown extensions parse without JSX');
});

t.test('the source is never executed', async t => {
  const g = globalThis as { __contractRan?: boolean };
  rows('globalThis.__contractRan = true;\nexport function f() { globalThis.__contractRan = true; }\nexport default (globalThis.__contractRan = true);');
  t.equal(g.__contractRan, undefined);
});

t.test('function bodies are skipped for speed, but a syntax error in one still refuses', async t => {
  // Bodies never carry public rows: whatever a body holds, the rows stay the same.
  const plain = 'export class A {\n  m(x: number): string {\n    return String(x);\n  }\n}\nexport function f(a = () => { return 1; }): number { return 2; }\n';
  const busy = plain.replace('return String(x);', 'const inner = class { pub(): void {} };\n    function g() { return `${x}`; }\n    return g();');
  t.same(rows(busy), rows(plain));
  t.same(rows(plain), ['class A', 'class A.m(x: number): string', 'function f(a = () => …): number']);
  // A syntax error deep in a nested body: refused at its own line and column.
  const src = 'export function outer(): void {\n  const f = () => {\n    if (x {\n    }\n  };\n}\n';
  const err = t.throws(() => extractTypeScript(src, 'src/deep.ts'));
  t.ok(err instanceof ContractParseError && err.line === 3 && err.column === 11, `line 3 col 11: ${String(err)}`);
  // Line numbers after a blanked body are the file's own (line breaks are kept).
  const late = 'export function a(): void {\n  one();\n  two();\n}\nexport function b(a: number {\n}\n';
  const e2 = t.throws(() => extractTypeScript(late, 'src/late.ts'));
  t.ok(e2 instanceof ContractParseError && e2.line === 5, `line 5: ${String(e2)}`);
  // Kept as documented in docs/contract.md: grammar checks that typescript-estree adds on top
  // of TypeScript's parser (say, an initializer on a catch variable) apply outside bodies only.
  t.throws(() => extractTypeScript('export abstract class A { abstract m(): void {} }\n', 'src/a.ts'), ContractParseError);
  t.same(rows('export function f(): void { try { g(); } catch (e = 1) {} }\n'), ['function f(): void']);
});

t.test('one TypeScript parse: bodies emptied in the tree, blanked in the text the rows are printed from', async t => {
  // A default value printed from the file's text (JSX goes through the token fallback): the
  // body inside it is blanked, so what the body holds never reaches the row.
  const jsx = (body: string) => rows(`export function C(p = <div>{() => { ${body} }}</div>): void {}\n`, 'src/c.tsx');
  t.same(jsx('return <b/>;'), ['function C(p = <div>{()=>{}}</div>): void']);
  t.same(jsx('const s = "}"; return <i>{s}</i>;'), jsx('return <b/>;'));
  // Line breaks inside a body (CRLF, U+2028) are kept: an error typescript-estree finds after
  // it, in the tree whose bodies were emptied, is at the file's own line and column.
  const e = t.throws(() => extractTypeScript('export function a(): void {\r\n  one();\u2028two();\r\n}\nexport abstract class A { abstract m(): void {} }\n', 'src/ls.ts'));
  t.ok(e instanceof ContractParseError && e.line === 5 && e.column === 36, `line 5 col 36: ${String(e)}`);
  // A file that is a module only through an `import.meta` in a body takes the second parse of
  // the blanked text; its rows are those of any other body.
  const meta = (body: string) => rows(`function g() { ${body} }\nmodule.exports = { g, v: 1 };\n`, 'src/cjs.js');
  t.same(meta('return import.meta.url;'), ['export = { g, v }', 'exports.v = 1', 'function g()']);
  t.same(meta('return 1;'), meta('return import.meta.url;'));
  t.same(rows('export const f = function () { return import.meta.url; };\nexport class K { m(a = `${(() => { return 1; })()}`) { return import.meta; } }\n', 'src/m.js'),
    ['class K', 'class K.m(a = `${(() => …)()}`)', 'const f: function() {…}']);
});
