// Tests for the Python contract extractor. The seed format must match the seed article's
// Python implementation byte for byte, so most checks here run the real python3 as an
// oracle over hand-made trees and generated expressions, and compare with what our
// Node-only extractor (tree-sitter + a port of ast.unparse) produces.

import t from 'tap';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ContractParseError } from '../../src/errors.js';
import { extractPythonSeed, extractPythonV1, initPython, PY_EXTRACTOR_VERSION, seedDigest, seedOrder } from '../../src/contract/python.js';
import { generateExpressions } from './python/exprgen.js';
import { runPython, SEED_ORACLE, SORT_ORACLE, UNPARSE_ORACLE, V1_ORACLE } from './python/oracle.js';
import { TREES, type PyTree } from './python/trees.js';

await initPython();
await initPython(); // idempotent

function writeTree(tree: PyTree): string {
  const dir = mkdtempSync(join(tmpdir(), 'patchgate-py-'));
  for (const [rel, text] of Object.entries(tree.files)) {
    const abs = join(dir, rel);
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, text, 'utf8');
  }
  return dir;
}

/** Every regular *.py file under dir/src, as 'src/...' posix paths. */
function pyFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(dir, rel))) {
      const r = `${rel}/${name}`;
      const st = statSync(join(dir, r));
      if (st.isDirectory()) walk(r);
      else if (st.isFile() && name.endsWith('.py')) out.push(r);
    }
  };
  walk('src');
  return out;
}

function ours(dir: string): { rows: string[]; digest: string; files: string[] } {
  const files = seedOrder(pyFiles(dir));
  const rows: string[] = [];
  for (const rel of files) rows.push(...extractPythonSeed(readFileSync(join(dir, rel), 'utf8'), rel));
  return { rows, digest: seedDigest(rows), files };
}

t.test('PY_EXTRACTOR_VERSION is a positive integer', async (t) => {
  t.ok(Number.isInteger(PY_EXTRACTOR_VERSION) && PY_EXTRACTOR_VERSION > 0);
});

t.test('seed format agrees with the seed algorithm run by python3', async (t) => {
  t.ok(TREES.length >= 15, 'at least 15 trees');
  const dirs = TREES.map(writeTree);
  t.teardown(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  // One python3 process walks every tree, with each tree's root as working directory.
  const refs = runPython(SEED_ORACLE, dirs) as { rows?: string[]; digest?: string; error?: string; files: string[] }[];
  TREES.forEach((tree, i) => {
    const dir = dirs[i]!;
    const ref = refs[i]!;
    t.same(seedOrder(pyFiles(dir)), ref.files, `${tree.name}: file order`);
    if (tree.seedFails) {
      t.ok(ref.error, `${tree.name}: the seed crashes (${ref.error})`);
      t.throws(() => ours(dir), ContractParseError, `${tree.name}: we refuse too`);
      return;
    }
    t.notOk(ref.error, `${tree.name}: python3 accepts the tree`);
    const got = ours(dir);
    t.same(got.rows, ref.rows, `${tree.name}: rows`);
    t.equal(got.digest, ref.digest, `${tree.name}: digest`);
  });
});

t.test('seedOrder sorts like sorted(PurePosixPath)', async (t) => {
  const paths = [
    'src/a/b.py',
    'src/a-b.py',
    'src/a.py',
    'src/A.py',
    'src/a/b/c.py',
    'src/ab.py',
    'src/a_b.py',
    'src/\uff21.py',
    'src/😀.py',
    'src/\ue000.py',
    'src/é.py',
    'src/e\u0301.py',
    'src//double.py',
    'src/./dot.py',
    'src/Z.py',
    'src/a/a.py',
    'src/a.b/x.py',
    'src/a\u{10000}.py',
    'src/a\uffff.py',
    'src/ā.py',
  ];
  const ref = runPython(SORT_ORACLE, paths) as string[];
  const norm = (p: string): string => p.split('/').filter((x) => x && x !== '.').join('/');
  t.same(seedOrder(paths).map(norm), ref);
  // Whole-part comparison, not whole-string comparison: 'a' < 'a-b.py'.
  t.same(seedOrder(['src/a-b.py', 'src/a/b.py']), ['src/a/b.py', 'src/a-b.py']);
  // Code points, not UTF-16 units: U+FF21 sorts before U+1F600.
  t.same(seedOrder(['src/😀.py', 'src/\uff21.py']), ['src/\uff21.py', 'src/😀.py']);
  t.same(seedOrder([]), []);
});

t.test('seedDigest is sha256 of the rows joined by newlines', async (t) => {
  t.equal(seedDigest([]), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  const rows = ['src/a.py::f(x)->int', 'src/é.py::g()->'];
  const ref = runPython(
    'import hashlib, json, sys\nprint(json.dumps(hashlib.sha256("\\n".join(json.load(sys.stdin)).encode()).hexdigest()))',
    rows,
  );
  t.equal(seedDigest(rows), ref);
});

const HAND_EXPRESSIONS = [
  'int',
  'a.b.c',
  'dict[str, int]',
  'tuple[int, ...]',
  'Callable[[int], str]',
  'x[1:2]',
  'x[:2]',
  'x[1:]',
  'x[::2]',
  'x[1:2:3]',
  'x[a, b:c]',
  'x[1,]',
  'x[()]',
  'x[(a, b)]',
  'x[(a, b), c]',
  'list[int].x',
  'a[b][c]',
  'x[y][1:2]',
  'X[int] | None',
  '(int | None)',
  'int | None',
  'a | b if c else d',
  'a | b.c',
  '(a, b)',
  'x[a:=1]',
  'x[*a, b]',
  'x[*a]',
  'tuple[*Ts]',
  '"Foo"',
  "'it\\'s'",
  '\'say "hi"\'',
  '\'both \\\' and "\'',
  "'a' 'b'",
  "u'x' 'y'",
  "'x' u'y'",
  "r'\\d'",
  "'\\n\\t\\x00\\x7f\\xff\\u1234\\U0001F600'",
  "b'abc'",
  "b'\\x00\\xff\\'\"'",
  "f'{x}'",
  "f'a{x!r:>{w}}b'",
  "f'{x=}'",
  "f'{ x = }'",
  "f'{x = !s:>3}'",
  'f"{\'a\'}"',
  "f'{x}\\n'",
  "f'{x:}'",
  "f'{x:%H:%M}'",
  "f'{a, b}'",
  "f'{{'",
  '0x10',
  '1_000',
  '1e3',
  '1e16',
  '1e15',
  '0.0001',
  '1e-5',
  '1j',
  '2.5j',
  '1e999',
  '1e999j',
  '10**100',
  'None',
  'True',
  '...',
  '-1',
  'not x',
  '-x ** 2',
  '(-x) ** 2',
  '2 ** -1',
  'a - (b - c)',
  'a ** b ** c',
  '(a ** b) ** c',
  'a and b or c',
  'a or b and c',
  '(a and b) and c',
  'a and (b and c)',
  'not a and b',
  'not (a and b)',
  'a < b < c',
  '(a < b) < c',
  'a is not b',
  'a not in b',
  'f(x, *y, z=1, **k)',
  'f(x for x in y)',
  'f(x:=1)',
  '[]',
  '()',
  '(1,)',
  '{1, 2}',
  '{1: 2, **a}',
  '{}',
  'lambda: 1',
  'lambda x, /, y=1, *a, k, **kw: x',
  '(lambda: 1)()',
  'x if y else z',
  '(x if y else z) if w else v',
  'x if (y if z else w) else v',
  '[x for x in y if z]',
  '[x for x, y in z for w in x if w if y]',
  '{x for x in y}',
  '{k: v for k, v in d.items()}',
  '(x for x in y)',
  '[x async for x in y]',
  'await x',
  'await x ** 2',
  '(await x).y',
  '(yield)',
  '(yield x)',
  '(yield from x)',
  'True.real',
  '(1).real',
  '1.5.real',
  '1j.imag',
  'a.b(c).d[e]',
  'Literal["a", \'b\', 1, -2, None]',
  'Annotated[int, Field(gt=0)]',
  'np.ndarray[Any, np.dtype[np.float64]]',
  'type[int]',
  'print',
  'match',
  '*a',
  '(*a, b)',
  '[*a, *b]',
];

t.test('annotation spelling agrees with python3 ast.unparse', async (t) => {
  const generated = generateExpressions(20240501, 2500);
  const exprs = [...HAND_EXPRESSIONS, ...generated];
  const ref = runPython(UNPARSE_ORACLE, exprs) as (string | null)[];
  let compared = 0;
  const failures: string[] = [];
  exprs.forEach((e, i) => {
    const expected = ref[i];
    if (expected === null || expected === undefined) return; // python3 rejects it too
    let got: string;
    try {
      const rows = extractPythonSeed(`def f() -> ${e}: pass\n`, 'm.py');
      got = rows[0]!.slice('m.py::f()->'.length);
    } catch (err) {
      // \N{...} needs a Unicode name table we do not have (documented gap).
      got = `threw ${(err as Error).message}`;
    }
    compared++;
    if (got !== expected) failures.push(`${JSON.stringify(e)}\n  python: ${JSON.stringify(expected)}\n  ours:   ${JSON.stringify(got)}`);
  });
  t.ok(compared > 1500, `compared ${compared} expressions that python3 accepts`);
  t.same(failures.slice(0, 20), [], `${failures.length} mismatches`);
});

t.test('expressions in every annotation and default position (v1 vs python3 ast)', async (t) => {
  const generated = generateExpressions(777, 600);
  const exprs = [...HAND_EXPRESSIONS, ...generated];
  // Keep those python3 accepts as an annotation.
  const ok = runPython(UNPARSE_ORACLE, exprs) as (string | null)[];
  const usable = exprs.filter((_, i) => ok[i] !== null && !/\\N\{/.test(exprs[i]!));
  const sources = usable.map((e) => [
    `m${usable.indexOf(e)}.py`,
    `def f(a: ${e} = ${e}, /, b: ${e} = ${e}, *c: ${e}, d: ${e} = ${e}, **k: ${e}) -> ${e}: pass\n` +
      `@(${e})\nclass C(${e.startsWith('*') ? e : `(${e})`}, k=${e}):\n    x: ${e} = ${e}\n    @(${e})\n    def m(self, q: ${e}) -> ${e}: ...\n`,
  ]);
  const ref = runPython(V1_ORACLE, sources) as (string[] | { error: string })[];
  const failures: string[] = [];
  let compared = 0;
  sources.forEach(([path, src], i) => {
    const expected = ref[i]!;
    if (!Array.isArray(expected)) return; // e.g. yield/await/starred where python3 refuses
    compared++;
    let got: string[] | string;
    try {
      got = extractPythonV1(src!, path!);
    } catch (err) {
      got = `threw ${(err as Error).message}`;
    }
    if (JSON.stringify(got) !== JSON.stringify(expected)) failures.push(`${src}\n  python: ${JSON.stringify(expected)}\n  ours:   ${JSON.stringify(got)}`);
  });
  t.ok(compared > 300, `compared ${compared} modules`);
  t.same(failures.slice(0, 10), [], `${failures.length} mismatches`);
});

t.test('v1 rows agree with a python3 ast implementation of the format', async (t) => {
  const extra: [string, string][] = [
    [
      'src/all_list.py',
      "__all__ = ['visible', '_chosen', 'reexported', 'CONST']\nfrom x import reexported\nCONST = 1\ndef visible(): ...\ndef hidden(): ...\ndef _chosen(a) -> int: ...\nclass NotListed: ...\n",
    ],
    ['src/all_tuple.py', "__all__ = ('A',)\n__all__ += ['b']\n__all__.append('c')\n__all__.extend(('d',))\nclass A: ...\ndef b(): ...\n"],
    ['src/all_ann.py', "__all__: list[str] = ['f']\ndef f(): ...\ndef g(): ...\n"],
    ['src/all_dynamic.py', "__all__ = [name for name in dir()]\ndef f(): ...\ndef _g(): ...\n"],
    ['src/all_concat.py', "__all__ = ['f' 'g', u'h']\ndef fg(): ...\ndef h(): ...\ndef f(): ...\n"],
    [
      'src/classes.py',
      'class A(B, C[int], metaclass=M, **kw):\n    """doc"""\n    x: int\n    y: str = "s"\n    _z: int = 0\n    def __init__(self, a: int = 1) -> None: ...\n    def __repr__(self): ...\n    def _prot(self): ...\n    @property\n    def p(self) -> int: ...\n    @p.setter\n    def p(self, v: int) -> None: ...\n    async def am(self) -> None: ...\n    class N(Base):\n        def n(self): ...\n    class _Hidden:\n        def h(self): ...\n    if True:\n        def cond(self): ...\nclass Empty(): pass\nclass _Priv:\n    def m(self): ...\n',
    ],
  ];
  const sources: [string, string][] = [];
  for (const tree of TREES) {
    if (tree.seedFails) continue;
    for (const [p, s] of Object.entries(tree.files)) sources.push([p, s]);
  }
  sources.push(...extra);
  const ref = runPython(V1_ORACLE, sources) as (string[] | { error: string })[];
  sources.forEach(([path, src], i) => {
    const expected = ref[i]!;
    t.ok(Array.isArray(expected), `${path}: python3 parses it`);
    t.same(extractPythonV1(src, path), expected, `${path}: v1 rows`);
  });
});

t.test('v1: rows change with the signature, not with formatting', async (t) => {
  const base = [
    '"""Module doc."""',
    'import typing',
    '',
    '@decorate(1)',
    'def f(a: int, b: "str" = "x", *args, c: typing.Optional[int] = None, **kw) -> dict[str, int]:',
    '    return {}',
    '',
    'class K(Base):',
    '    def m(self, x: int = 0x10) -> None:',
    '        pass',
    '',
    'LIMIT: int = 10',
  ].join('\n');
  const rows = extractPythonV1(base, 'src/m.py');
  t.same(rows, [
    'src/m.py::@decorate(1) def f(a: int, b: \'str\'=\'x\', *args, c: typing.Optional[int]=None, **kw) -> dict[str, int]',
    'src/m.py::LIMIT: int',
    'src/m.py::class K(Base)',
    'src/m.py::def K.m(self, x: int=16) -> None',
  ]);

  const reformatted = [
    '# a comment that was not there',
    "'''Module doc, different quotes.'''",
    'import typing',
    '@decorate( 1, )',
    'def f(',
    '    a: int,  # the first',
    "    b: 'str' = 'x',",
    '    *args,',
    '    c: typing . Optional[ int ] = None,',
    '    **kw,',
    ') -> dict[',
    '    str, int',
    ']:',
    '    x = 1  # the body changed',
    '    return {"x": x}',
    'class K(Base,):',
    '    def m(self, x: int = 16,) -> (None):',
    '        return None',
    'LIMIT: (int) = 11',
  ].join('\r\n');
  t.same(extractPythonV1(reformatted, 'src/m.py'), rows, 'comments, whitespace, quotes, trailing commas, literal spelling and bodies do not count');

  const changes: [string, string, string][] = [
    ['renamed parameter', 'def f(a: int,', 'def f(z: int,'],
    ['new annotation', '*args,', '*args: int,'],
    ['changed default', '= None, **kw', '= 0, **kw'],
    ['return type', '-> dict[str, int]:', '-> dict[str, str]:'],
    ['decorator', '@decorate(1)', '@decorate(2)'],
    ['dropped *args', '*args,', '*,'],
    ['async', 'def f(', 'async def f('],
    ['method', 'def m(self, x: int = 0x10)', 'def m(self, x: int = 0x11)'],
    ['base class', 'class K(Base)', 'class K(Other)'],
    ['constant type', 'LIMIT: int', 'LIMIT: float'],
    ['positional-only', 'def f(a: int, b', 'def f(a: int, /, b'],
  ];
  for (const [what, from, to] of changes) {
    t.ok(base.includes(from), `fixture has ${JSON.stringify(from)}`);
    t.not(JSON.stringify(extractPythonV1(base.replace(from, to), 'src/m.py')), JSON.stringify(rows), `${what} changes the rows`);
  }
  t.same(extractPythonV1(base + '\ndef _helper(): ...\n', 'src/m.py'), rows, 'a private function does not count');
});

t.test('v1: __all__ selects the public names', async (t) => {
  const src = "__all__ = ['b', '_c', 'imported']\nfrom m import imported\ndef a(): ...\ndef b(): ...\ndef _c(): ...\n";
  t.same(extractPythonV1(src, 'p.py'), ['p.py::def _c()', 'p.py::def b()', 'p.py::export imported']);
  const dynamic = "__all__ = list(x)\ndef a(): ...\ndef _c(): ...\n";
  t.same(extractPythonV1(dynamic, 'p.py'), ['p.py::def a()'], 'a non-literal __all__ falls back to the underscore rule');
});

t.test('parse errors become ContractParseError with the position', async (t) => {
  const cases: [string, number, number][] = [
    ['def ok(): pass\n\ndef broken(:\n    pass\n', 3, 12],
    ['x = 1\ny = (\n', 2, 1],
    ['def f():\n    return 1 +\n', 2, 5],
    ['class A\n    pass\n', 1, 1],
    ['def f() -> x[1:2:3:4]: pass\n', 1, 14],
    ['x = 1\nprint "py2"\n', 2, 1],
    ['x = 0777\n', 1, 5],
    ['def f(a=1, b): pass\n', 1, 12],
    ['x = 1\n\u200bdef f(): pass\n', 2, 1],
  ];
  for (const [src, line, column] of cases) {
    for (const extract of [extractPythonV1, extractPythonSeed]) {
      try {
        extract(src, 'src/bad.py');
        t.fail(`${JSON.stringify(src)} should not parse`);
      } catch (err) {
        t.type(err, ContractParseError, JSON.stringify(src));
        const e = err as ContractParseError;
        t.equal(e.path, 'src/bad.py');
        t.equal(e.line, line, `${JSON.stringify(src)}: line (${e.message})`);
        t.equal(e.column, column, `${JSON.stringify(src)}: column (${e.message})`);
        t.equal(e.code, 'CONTRACT_PARSE');
      }
    }
  }
  // A leading BOM: fine for v1 (Python's own import accepts it), fatal for the seed.
  t.same(extractPythonV1('\ufeffdef f(): pass\n', 'b.py'), ['b.py::def f()']);
  t.throws(() => extractPythonSeed('\ufeffdef f(): pass\n', 'b.py'), ContractParseError);
});

t.test('string repr matches python3 at every str.isprintable() boundary', async (t) => {
  // The extractor embeds Python 3.11's table of non-printable code points (Unicode 14),
  // so its output does not depend on the Unicode version of Node.js.
  const bounds = runPython(
    'import json, sys\nout, prev = [], None\nfor c in range(0x110000):\n    p = chr(c).isprintable()\n    if prev is not None and p != prev: out += [c - 1, c]\n    prev = p\nprint(json.dumps(out))',
    null,
  ) as number[];
  t.ok(bounds.length > 1000, `${bounds.length} boundary code points`);
  const esc = (c: number): string => '\\U' + c.toString(16).padStart(8, '0');
  const exprs: string[] = [];
  for (let i = 0; i < bounds.length; i += 64) exprs.push("'" + bounds.slice(i, i + 64).map(esc).join('') + "'");
  for (let i = 0; i < bounds.length; i += 64) exprs.push("f'{x}" + bounds.slice(i, i + 64).map(esc).join('') + "'");
  const ref = runPython(UNPARSE_ORACLE, exprs) as (string | null)[];
  const bad = exprs.filter((e, i) => extractPythonSeed(`def f() -> ${e}: ...\n`, 'm.py')[0] !== `m.py::f()->${ref[i]}`);
  t.same(bad, []);
});

t.test('\\N{...} escapes: refused by the seed format, kept verbatim by v1', async (t) => {
  const src = "def f(sep='\\N{BULLET}') -> '\\N{BULLET}': ...\n";
  t.throws(() => extractPythonSeed(src, 'src/n.py'), ContractParseError);
  t.same(extractPythonV1(src, 'src/n.py'), ["src/n.py::def f(sep='\\\\N{BULLET}') -> '\\\\N{BULLET}'"]);
  // Only strings that are read matter: elsewhere the escape is harmless.
  t.same(extractPythonSeed("def f() -> int:\n    return '\\N{BULLET}'\n", 'src/n.py'), ['src/n.py::f()->int']);
});

t.test('initPython can be awaited concurrently', async (t) => {
  await Promise.all([initPython(), initPython(), initPython()]);
  t.same(extractPythonSeed('def f(): ...\n', 'a.py'), ['a.py::f()->']);
});

t.test('seed rows for one file', async (t) => {
  const src = 'def a(x, /, y, *z, w, **k) -> int: ...\n@d\nasync def b(p=1): ...\ndef _c(): ...\nclass D:\n    def e(self): ...\nif 1:\n    def g(): ...\n';
  t.same(extractPythonSeed(src, 'src/m.py'), ['src/m.py::a(y)->int', 'src/m.py::b(p)->']);
  t.same(extractPythonSeed('', 'src/e.py'), []);
});
