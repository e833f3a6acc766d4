// Hand-made Python source trees for the seed-compatibility and v1 tests. Each one aims at
// a part of the seed's behaviour that is easy to get subtly wrong in a reimplementation:
// file order, which defs count, argument lists, and the exact spelling of annotations.

export interface PyTree {
  name: string;
  files: Record<string, string>;
  /** The seed itself crashes on this tree (python3 raises), so we must refuse it too. */
  seedFails?: boolean;
}

const lines = (...xs: string[]): string => xs.join('\n') + '\n';

export const TREES: PyTree[] = [
  {
    name: 'basic package',
    files: {
      'src/pkg/__init__.py': '',
      'src/pkg/core.py': lines(
        '"""Core helpers."""',
        'import typing',
        'from typing import Optional',
        '',
        'def add(a: int, b: int = 2) -> int:',
        '    return a + b',
        '',
        'def _hidden(x):',
        '    pass',
        '',
        'def no_annotations(x, y, z=None):',
        '    return x',
        '',
        'def maybe(name: str) -> Optional[str]:',
        '    return None',
        '',
        'def mapping() -> dict[str, list[int]]: ...',
        'def dotted() -> typing.Dict[str, typing.Any]: ...',
        'def nothing() -> None: pass',
        'CONSTANT: int = 3',
      ),
    },
  },
  {
    name: 'path order: a/b.py vs a-b.py vs A.py',
    files: {
      'src/a/b.py': 'def in_a_b(): pass\n',
      'src/a-b.py': 'def dash(): pass\n',
      'src/a.py': 'def plain_a(): pass\n',
      'src/A.py': 'def upper_a(): pass\n',
      'src/a_b.py': 'def underscore(): pass\n',
      'src/a/__init__.py': 'def init_a(): pass\n',
      'src/aa.py': 'def aa(): pass\n',
      'src/a0.py': 'def a0(): pass\n',
      'src/a.b/c.py': 'def dotted_dir(): pass\n',
      'src/a b.py': 'def spaced(): pass\n',
      'src/B/a.py': 'def b_a(): pass\n',
      'src/_private.py': 'def from_private_module(): pass\n',
      'src/.hidden/x.py': 'def hidden_dir(): pass\n',
    },
  },
  {
    name: 'non-ASCII file and directory names',
    files: {
      'src/é.py': 'def composed(): pass\n',
      'src/e\u0301.py': 'def decomposed(): pass\n',
      'src/中文/模块.py': 'def chinese() -> "中文": pass\n',
      'src/😀.py': 'def emoji() -> "😀": pass\n',
      'src/\uff46.py': 'def fullwidth(): pass\n',
      'src/\ufb01.py': 'def ligature(): pass\n',
      'src/z.py': 'def zed(): pass\n',
      'src/Ω/ω.py': 'def omega(): pass\n',
    },
  },
  {
    name: 'decorators, nested functions and classes',
    files: {
      'src/deco.py': lines(
        'import functools',
        '',
        '@functools.lru_cache(maxsize=None)',
        'def cached(n: int) -> int:',
        '    def inner(q) -> str:',
        '        return q',
        '    return n',
        '',
        '@staticmethod',
        '@other . thing ( 1 , key = "v" )',
        'def stacked(a, b) -> "Stacked":',
        '    pass',
        '',
        'class Service:',
        '    def method(self, x: int) -> int:',
        '        return x',
        '    class Inner:',
        '        def deep(self) -> None: ...',
        '',
        '@dataclass',
        'class Point:',
        '    x: int',
        '    y: int = 0',
        '',
        'def outer():',
        '    class Local:',
        '        pass',
        '    def local_fn(): pass',
      ),
    },
  },
  {
    name: 'async, positional-only, keyword-only, varargs',
    files: {
      'src/args.py': lines(
        'async def fetch(url: str, *, timeout: float = 1.0) -> bytes:',
        '    return b""',
        '',
        'def posonly(a, b, /, c, d=1, *args, e, f=2, **kw) -> None: pass',
        'def only_pos(a, /): pass',
        'def only_kw(*, a, b=3): pass',
        'def only_var(*args: int, **kwargs: str) -> tuple[int, ...]: pass',
        'def mixed(self, a: "A" = None, *rest, flag: bool = False, **extra) -> "list[A]": pass',
        'def typed_pos(a: int = 1, /, b: str = "x") -> int | None: pass',
        'async def agen() -> AsyncIterator[int]:',
        '    yield 1',
      ),
    },
  },
  {
    name: 'if TYPE_CHECKING and try blocks at top level',
    files: {
      'src/cond.py': lines(
        'from __future__ import annotations',
        'from typing import TYPE_CHECKING',
        '',
        'if TYPE_CHECKING:',
        '    from collections.abc import Sequence',
        '    def only_for_types(x: Sequence[int]) -> int: ...',
        'else:',
        '    def runtime_version(x): ...',
        '',
        'try:',
        '    from fast import speedy',
        'except ImportError:',
        '    def speedy(data: bytes) -> bytes:',
        '        return data',
        '',
        'def visible(x: "Sequence[int]") -> "int": ...',
      ),
    },
  },
  {
    name: 'string annotations and string quoting',
    files: {
      'src/strings.py': lines(
        'def s1() -> "Foo": ...',
        "def s2() -> 'Foo': ...",
        'def s3() -> "it\'s": ...',
        "def s4() -> 'say \"hi\"': ...",
        'def s5() -> \'both \\\' and "\': ...',
        'def s6() -> "a" \'b\' "c": ...',
        "def s7() -> u'legacy': ...",
        "def s8() -> r'\\d+\\n': ...",
        "def s9() -> '\\n\\t\\x00\\x7f\\xff\\u1234\\U0001F600\\u200b\\xa0': ...",
        "def s10() -> b'\\x00bytes\\'\"': ...",
        "def s11() -> f'{x!r:>{width}}': ...",
        'def s12() -> f"{x=}" \'tail\': ...',
        'def s13() -> """triple',
        'quoted""": ...',
        "def s14() -> '\\\\': ...",
        "def s15() -> 'é中😀\u0301\u202e\ue000': ...",
        "def s16() -> f'{a}' f'{{b}}' 'c{d}': ...",
        "def s17() -> Literal['x', \"y\", '']: ...",
      ),
    },
  },
  {
    name: 'numbers in annotations',
    files: {
      'src/nums.py': lines(
        'def n1() -> Literal[0x10, 1_000, 1e3, 1j, -1, 0o7, 0b1, 00]: ...',
        'def n2() -> Literal[1e16, 1e15, 0.0001, 1e-5, 1e400, 1e400j, .5, 5.]: ...',
        'def n3() -> Literal[123456789012345678901234567890, 0XFF, 3.141592653589793238]: ...',
        'def n4() -> Literal[2 ** -1, -(-1), (-1) ** 2, ~0, +1]: ...',
        'def n5() -> Literal[True, False, None, ...]: ...',
      ),
    },
  },
  {
    name: 'operators and every expression kind',
    files: {
      'src/ops.py': lines(
        'def o1() -> int | None: ...',
        'def o2() -> (a or b) and c: ...',
        'def o3() -> not x: ...',
        'def o4() -> a if b else c: ...',
        'def o5() -> lambda x, *y, z=1, **k: x: ...',
        'def o6() -> [x for x in y if x]: ...',
        'def o7() -> {a: b, **c}: ...',
        'def o8() -> {*a, b}: ...',
        'async def o9() -> await x: ...',
        'def o10() -> (x := 1): ...',
        'def o11() -> (yield): ...',
        'def o12() -> a < b <= c is not d not in e: ...',
        'def o13() -> f(x, *y, z=1, **k): ...',
        'def o14() -> f(x for x in y): ...',
        'def o15() -> (a, b): ...',
        'def o16() -> (): ...',
        'def o17() -> a.b[c](d).e: ...',
        'def o18() -> Callable[[int, str], Awaitable[None]]: ...',
        'def o19() -> x[1:2, ::3, ...]: ...',
        'def o20() -> a ** -b ** c: ...',
        'def o21() -> (1).real: ...',
        'def o22() -> {k: v for k, v in d.items()}: ...',
        'def o23() -> (x for x in y): ...',
        'def o24() -> {}: ...',
        'def o25() -> -x ** 2 + (y @ z) // w % v << 1 >> 2 & 3 ^ 4: ...',
        'def o26() -> tuple[*Ts]: ...',
      ),
    },
  },
  {
    name: 'formatting: comments, newlines, continuations, CRLF',
    files: {
      'src/fmt.py':
        'def spread(\r\n    a,  # first\r\n    b: int = 1,\r\n    *,\r\n    c: str = "x",\r\n) -> dict[\r\n    str,  # key\r\n    int,\r\n]:\r\n    pass\r\n' +
        'def cont(a, \\\r\n         b) -> \\\r\n    int: pass\r\n' +
        'def tabs(\ta,\tb\t) ->\tint: pass\r\n' +
        'def crlf_string() -> """a\r\nb""": pass\r\n',
      'src/cr.py': 'def old_mac(a, b) -> int: pass\rdef other() -> """x\ry""": pass\r',
      'src/ff.py': '\fdef form_feed(a) -> int: pass\n',
    },
  },
  {
    name: 'subscripts the tree-sitter type rule rejects',
    files: {
      'src/slices.py': lines(
        'def t1() -> x[1:]: ...',
        'def t2() -> x[:2]: ...',
        'def t3() -> x[::2]: ...',
        'def t4() -> a[b][c]: ...',
        'def t5(a: x[:1], b: y[1:] = 3) -> Foo[int][str]: ...',
        'v: x[y][1:2] = 3',
        'def t6() -> a[b][c] | None: ...',
        'def t7() -> x[y: int]: ...',
      ),
    },
  },
  {
    name: 'keywords as identifiers, unicode identifiers',
    files: {
      'src/kw.py': lines(
        'def match(type, print, exec=None) -> match: ...',
        'def type() -> type[int]: ...',
        'def ﬁnd(ﬂag: ℌ) -> ℌ: ...',
        'def données(é: int) -> dict[str, ñ]: ...',
        'def _ﬁ(): ...',
        'def a＿b(x＿y) -> a＿b: ...',
      ),
    },
  },
  {
    name: 'redefinitions, overloads, private and dunder names',
    files: {
      'src/over.py': lines(
        'from typing import overload',
        '@overload',
        'def f(x: int) -> int: ...',
        '@overload',
        'def f(x: str) -> str: ...',
        'def f(x): return x',
        'def __dunder__(): ...',
        'def _private(): ...',
        'def f(y) -> "redefined": ...',
        'class f: pass',
      ),
      'src/other.py': 'def f(x: int) -> int: ...\n',
    },
  },
  {
    name: 'empty and docstring-only modules, deep nesting',
    files: {
      'src/empty.py': '',
      'src/doc.py': '"""Only a docstring."""\n',
      'src/comments.py': '# just a comment\n\n\n',
      'src/a/b/c/d/e/f.py': 'def deep(x) -> "deep": ...\n',
      'src/a/b/c/d/e.py': 'def shallow(x) -> "shallow": ...\n',
      'src/a/b/c/d/e/__init__.py': '',
    },
  },
  {
    name: 'f-strings and quote selection',
    files: {
      'src/fs.py': lines(
        "def q1() -> f'{x}\\'\"': ...",
        "def q2() -> f'{x}\\n': ...",
        "def q3() -> f'''{x}\n''': ...",
        'def q4() -> f"{\'a\'}": ...',
        "def q5() -> f'{x:>10}' f\"{y!s}\": ...",
        "def q6() -> f'{ x = }': ...",
        "def q7() -> f'{x=:>10}': ...",
        "def q8() -> f'{(a, b)}': ...",
        "def q9() -> f'{a if b else c}': ...",
        "def q10() -> f'{x:{w}.{p}}': ...",
        "def q11() -> f'': ...",
        "def q12() -> F'{x!a}' R'raw\\d': ...",
      ),
    },
  },
  {
    name: 'large generated module',
    files: {
      'src/big.py': Array.from({ length: 300 }, (_, i) =>
        [
          `def fn_${i}(a${i}: int, b: list[str] = [], *c, d: 'D${i}' = None, **e) -> dict[str, tuple[int, ...]] | None:`,
          `    """doc ${i}"""`,
          `    return {"k": (${i},)}`,
          i % 7 === 0 ? `class C${i}(Base, metaclass=Meta):\n    def m(self) -> int: ...` : '',
        ].join('\n'),
      ).join('\n') + '\n',
    },
  },
  {
    name: 'syntax error: seed crashes, we refuse',
    seedFails: true,
    files: {
      'src/ok.py': 'def fine() -> int: ...\n',
      'src/broken.py': 'def fine() -> int:\n    return (1,\n\ndef next_one(): pass\n',
    },
  },
  {
    name: 'byte order mark: read_text keeps it, ast.parse rejects it',
    seedFails: true,
    files: {
      'src/bom.py': '\ufeffdef with_bom() -> int: ...\n',
    },
  },
  {
    name: 'python 2 print statement',
    seedFails: true,
    files: {
      'src/py2.py': 'def f(): pass\nprint "hello"\n',
    },
  },
];
