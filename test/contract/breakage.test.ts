// griffe's breakage kinds (Python) and API Extractor's surface (TypeScript), as a table: for
// each kind, a change of that kind moves the contract (the row set, which is what the digest
// covers) and a formatting-only edit of the same code does not. Plus private Python modules.

import t from 'tap';
import { extractPythonV1, initPython, isPrivateModule } from '../../src/contract/python.js';
import { extractTypeScript } from '../../src/contract/typescript.js';

const set = (rows: string[]): string => JSON.stringify([...new Set(rows)].sort());

interface Kind { kind: string; before: string; after: string; formatted: string }

const PY: Kind[] = [
  { kind: 'parameter kind', before: 'def f(a, b): ...\n', after: 'def f(a, *, b): ...\n', formatted: 'def f(\n    a,\n    b,\n): ...\n' },
  { kind: 'parameter order', before: 'def f(a, b): ...\n', after: 'def f(b, a): ...\n', formatted: 'def f(a,   b):  # c\n    ...\n' },
  { kind: 'parameter default', before: 'def f(a=1): ...\n', after: 'def f(a=2): ...\n', formatted: 'def f(a = 1): ...\n' },
  { kind: 'parameter added without default', before: 'def f(a): ...\n', after: 'def f(a, b): ...\n', formatted: 'def f(\n  a\n): ...\n' },
  { kind: 'parameter removed', before: 'def f(a, b=0): ...\n', after: 'def f(a): ...\n', formatted: 'def f(a, b = 0x0): ...\n' },
  { kind: 'return type', before: 'def f() -> int: ...\n', after: 'def f() -> str: ...\n', formatted: 'def f()->int:\n    ...\n' },
  { kind: 'attribute type', before: 'class C:\n    x: int\n', after: 'class C:\n    x: str\n', formatted: 'class C:\n\n    x:   int  # c\n' },
  { kind: 'attribute value', before: 'class C:\n    x: int = 1\n', after: 'class C:\n    x: int = 2\n', formatted: 'class C:\n    x: int = (1)\n' },
  { kind: 'base classes', before: 'class C(A): ...\n', after: 'class C(B): ...\n', formatted: 'class C(\n    A,\n): ...\n' },
  { kind: 'object removed', before: 'def f(): ...\ndef g(): ...\n', after: 'def f(): ...\n', formatted: 'def f(): ...\n\n\ndef g(): ...\n' },
  { kind: 'module type alias value (TypeAlias)', before: 'from typing import TypeAlias\nMode: TypeAlias = "bytes"\n', after: 'from typing import TypeAlias\nMode: TypeAlias = "str"\n', formatted: "from typing import TypeAlias\nMode: TypeAlias = 'bytes'\n" },
  { kind: 'module type alias value (type statement)', before: 'type Pair[T] = tuple[T, T]\n', after: 'type Pair[T] = list[T]\n', formatted: 'type Pair[T] = tuple[\n    T, T\n]\n' },
];

const TS: Kind[] = [
  { kind: 'parameter optionality', before: 'export function f(a: number): void {}\n', after: 'export function f(a?: number): void {}\n', formatted: 'export function f(\n  a: number,\n): void {}\n' },
  { kind: 'parameter order', before: 'export function f(a: number, b: string): void {}\n', after: 'export function f(b: string, a: number): void {}\n', formatted: 'export function f(a: number,b: string): void { /* c */ }\n' },
  { kind: 'parameter added', before: 'export function f(a: number): void {}\n', after: 'export function f(a: number, b: number): void {}\n', formatted: 'export function f(a : number) : void {}\n' },
  { kind: 'return type', before: 'export function f(): number { return 1; }\n', after: 'export function f(): string { return ""; }\n', formatted: 'export function f(): number {\n  return 2;\n}\n' },
  { kind: 'property type', before: 'export interface I { x: number }\n', after: 'export interface I { x: string }\n', formatted: 'export interface I {\n  x: number;\n}\n' },
  { kind: 'class base', before: 'export class A extends B {}\n', after: 'export class A extends C {}\n', formatted: 'export class A\n  extends B {}\n' },
  { kind: 'type alias value', before: 'export type M = "a" | "b";\n', after: 'export type M = "a";\n', formatted: "export type M =\n  | 'a'\n  | 'b';\n" },
  { kind: 'enum member', before: 'export enum E { A, B }\n', after: 'export enum E { A }\n', formatted: 'export enum E {\n  A,\n  B,\n}\n' },
  { kind: 'removed export', before: 'export const a: number = 1;\nexport const b: number = 2;\n', after: 'export const a: number = 1;\n', formatted: 'export const a: number = 1;\n\nexport const b: number = 2;\n' },
];

t.test('python: griffe breakage kinds', async (t) => {
  await initPython();
  for (const k of PY) {
    const p = 'src/pkg/mod.py';
    const b = set(extractPythonV1(k.before, p));
    t.not(set(extractPythonV1(k.after, p)), b, `${k.kind}: the change moves the contract`);
    t.equal(set(extractPythonV1(k.formatted, p)), b, `${k.kind}: formatting alone does not`);
  }
});

t.test('typescript: API Extractor surface kinds', async (t) => {
  for (const k of TS) {
    const p = 'src/mod.ts';
    const b = set(extractTypeScript(k.before, p));
    t.not(set(extractTypeScript(k.after, p)), b, `${k.kind}: the change moves the contract`);
    t.equal(set(extractTypeScript(k.formatted, p)), b, `${k.kind}: formatting alone does not`);
  }
});

t.test('python: private modules are not public API', async (t) => {
  await initPython();
  const table: Array<[string, boolean]> = [
    ['src/packaging/_parser.py', true], ['src/_vendor/six.py', true], ['src/pkg/_impl/__init__.py', true],
    ['src/packaging/__init__.py', false], ['src/packaging/__main__.py', false], ['src/packaging/markers.py', false],
  ];
  for (const [p, priv] of table) t.equal(isPrivateModule(p), priv, `${p} private: ${priv}`);
  // The packaging commit: annotating a name in a private module moves nothing.
  const before = 'MarkerList = list[str]\n';
  const after = 'from typing import TypeAlias\nMarkerList: TypeAlias = list[str]\n';
  t.same(extractPythonV1(before, 'src/packaging/_parser.py'), []);
  t.same(extractPythonV1(after, 'src/packaging/_parser.py'), []);
  // A private module still has to parse.
  t.throws(() => extractPythonV1('def (:\n', 'src/packaging/_parser.py'));
  // A plain import into an ordinary module is an implementation detail...
  t.same(extractPythonV1('from ._parser import MarkerList\n__all__ = ["Marker"]\nclass Marker: ...\n', 'src/packaging/markers.py'), ['src/packaging/markers.py::class Marker']);
  t.same(extractPythonV1('from ._parser import MarkerList\nclass Marker: ...\n', 'src/packaging/markers.py'), ['src/packaging/markers.py::class Marker']);
  // ...but listed in __all__, or imported into a package's __init__.py without __all__, it is exported.
  t.same(extractPythonV1('from ._parser import MarkerList\n__all__ = ["MarkerList"]\n', 'src/packaging/markers.py'), ['src/packaging/markers.py::export MarkerList']);
  t.same(extractPythonV1('from ._parser import MarkerList, _private\nfrom .markers import Marker as M\n', 'src/packaging/__init__.py'), ['src/packaging/__init__.py::export M', 'src/packaging/__init__.py::export MarkerList']);
  t.same(extractPythonV1('from ._parser import MarkerList\n__all__ = []\n', 'src/packaging/__init__.py'), [], 'an __init__.py with __all__ exports only what it lists');
});
