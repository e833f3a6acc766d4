// Definitions in private Python modules that a public module re-exports are API under the
// public name (issue 12): every breakage kind of the definition moves the digest even though
// only the private file changed, also through a warm cache and a restarted daemon's cache.db;
// formatting-only and non-exported private edits do not. Ends with an agent push over HTTP.

import t from 'tap';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Git } from '../../src/git/git.js';
import { contractOf, contractRows } from '../../src/contract/digest.js';
import { ContentCache, PersistentCache } from '../../src/cache/content-cache.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';

const IMPL = [
  'from typing import TypeAlias',
  'class Base: ...',
  'def parse(data, strict=False) -> dict:',
  '    return {}',
  'class Parser(Base):',
  '    def feed(self, chunk: bytes) -> None: ...',
  'Alias: TypeAlias = list[str]',
  'def helper(x): ...',
  'def _hidden(y): ...',
  '',
].join('\n');

const BASE: Record<string, string> = {
  'src/pkg/__init__.py': 'from ._impl import parse, Parser, Alias\n',
  'src/pkg/_impl.py': IMPL,
  'src/pkg/api.py': 'from pkg._impl import parse as load\n__all__ = ["load"]\n',
  'src/pkg/util.py': 'from ._impl import helper\n\ndef public_util(): ...\n',
};

/** [name, new src/pkg/_impl.py, digest moves?] */
const TABLE: Array<[string, string, boolean]> = [
  ['parameter default', IMPL.replace('strict=False', 'strict=True'), true],
  ['parameter kind (keyword-only)', IMPL.replace('(data, strict=False)', '(data, *, strict=False)'), true],
  ['parameter order', IMPL.replace('(data, strict=False)', '(strict=False, data=None)'), true],
  ['parameter added without default', IMPL.replace('(data, strict=False)', '(data, mode, strict=False)'), true],
  ['parameter removed', IMPL.replace('(data, strict=False)', '(data)'), true],
  ['return type', IMPL.replace('-> dict:', '-> list:'), true],
  ['base class', IMPL.replace('class Parser(Base):', 'class Parser:'), true],
  ['method signature', IMPL.replace('chunk: bytes', 'chunk: str'), true],
  ['type alias value', IMPL.replace('list[str]', 'tuple[str, ...]'), true],
  ['exported definition removed', IMPL.replace('def parse(data, strict=False) -> dict:\n    return {}\n', ''), true],
  ['formatting and comments only', IMPL.replace('def parse(data, strict=False) -> dict:', '# parse it\ndef parse( data,\n           strict = False ,) -> (dict):'), false],
  ['body only', IMPL.replace('return {}', 'return {"x": 1}'), false],
  ['non-exported def (plain import into an ordinary module)', IMPL.replace('def helper(x)', 'def helper(x, y)'), false],
  ['private-named non-exported def', IMPL.replace('def _hidden(y)', 'def _hidden(y, z)'), false],
  ['new non-exported def', IMPL + 'def extra(a): ...\n', false],
];

t.test('a change of a re-exported private definition moves the digest; other private edits do not', async (t) => {
  const r = TestRepo.init(t);
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const base = r.commit('base', BASE);
  const warm = new Map<string, unknown>();
  const b = await contractOf(git, base, ['src/'], 'v1', warm);
  const baseRows = await contractRows(git, b, base, ['src/'], warm);
  t.ok(baseRows.includes('src/pkg/__init__.py::export parse -> def parse(data, strict=False) -> dict'), 'the definition counts under the package name');
  t.ok(baseRows.includes('src/pkg/api.py::export load -> def parse(data, strict=False) -> dict'), 'an `as` re-export counts under its alias');
  t.ok(baseRows.includes('src/pkg/__init__.py::export Parser -> def Parser.feed(self, chunk: bytes) -> None'), 'with class members');
  t.ok(baseRows.includes('src/pkg/__init__.py::export Alias -> Alias: TypeAlias = list[str]'), 'and type alias values');
  t.notOk(baseRows.some((x) => /helper|_hidden/.test(x)), 'a plain import into an ordinary module is not API');
  for (const [name, impl, moves] of TABLE) {
    r.checkout('main');
    r.checkout(`e-${TABLE.findIndex((x) => x[0] === name)}`, true);
    const rev = r.commit(name, { 'src/pkg/_impl.py': impl });
    // The public files' blobs are unchanged and their rows are in the warm cache.
    const c = await contractOf(git, rev, ['src/'], 'v1', warm);
    const cold = await contractOf(git, rev, ['src/'], 'v1', new Map());
    t.equal(c.digest, cold.digest, `${name}: the warm cache gives the cold digest`);
    t.equal(c.digest !== b.digest, moves, `${name}: digest ${moves ? 'moves' : 'stays'}`);
    const rows = await contractRows(git, c, rev, ['src/'], warm);
    t.equal(JSON.stringify([...new Set(rows)].sort()) !== JSON.stringify([...new Set(baseRows)].sort()), moves, `${name}: row set ${moves ? 'differs' : 'is equal'}`);
  }
  r.checkout('main');
});

t.test('removed definition: an unresolved re-export row remains, naming the public name', async (t) => {
  const r = TestRepo.init(t);
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const rev = r.commit('base', { ...BASE, 'src/pkg/_impl.py': 'def other(): ...\n' });
  const c = await contractOf(git, rev, ['src/'], 'v1');
  t.ok(c.rows.includes('src/pkg/__init__.py::export parse -> unresolved (parse is not defined in src/pkg/_impl.py)'), 'unresolved row');
  const plain = await contractOf(git, r.commit('plain assignment', { 'src/pkg/_impl.py': 'parse = print\n' }), ['src/'], 'v1');
  t.ok(plain.rows.includes('src/pkg/__init__.py::export parse -> parse (assigned without annotation)'), 'a bare assignment is defined, not unresolved');
  const rev2 = r.commit('missing module', { 'src/pkg/_impl.py': null });
  const c2 = await contractOf(git, rev2, ['src/'], 'v1');
  t.ok(c2.rows.includes('src/pkg/__init__.py::export parse -> unresolved (module ._impl is not in the tree)'), 'missing private module row');
  t.not(c2.digest, c.digest);
});

t.test('chains through several private modules, bounded; cycles end', async (t) => {
  const r = TestRepo.init(t);
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const files = {
    'src/pkg/__init__.py': 'from ._a import run\nfrom ._c1 import loop\n',
    'src/pkg/_a.py': 'from ._b import run\n',
    'src/pkg/_b.py': 'from pkg._core.deep import run\n',
    'src/pkg/_core/__init__.py': '',
    'src/pkg/_core/deep.py': 'def run(n: int) -> int: ...\n',
    'src/pkg/_c1.py': 'from ._c2 import loop\n',
    'src/pkg/_c2.py': 'from ._c1 import loop\n',
  };
  const one = r.commit('chain', files);
  const c1 = await contractOf(git, one, ['src/'], 'v1');
  t.ok(c1.rows.includes('src/pkg/__init__.py::export run -> def run(n: int) -> int'), 'followed three modules deep, relative and absolute');
  t.ok(c1.rows.some((x) => x.startsWith('src/pkg/__init__.py::export loop -> unresolved (import cycle')), 'a cycle is a row, not a hang');
  const two = r.commit('deep edit', { 'src/pkg/_core/deep.py': 'def run(n: int, m: int = 0) -> int: ...\n' });
  const c2 = await contractOf(git, two, ['src/'], 'v1');
  t.not(c2.digest, c1.digest, 'an edit at the end of the chain moves the digest');
  // A chain longer than the bound is reported, not followed.
  const long: Record<string, string> = { 'src/q/__init__.py': 'from ._m0 import f\n' };
  for (let i = 0; i < 12; i++) long[`src/q/_m${i}.py`] = `from ._m${i + 1} import f\n`;
  long['src/q/_m12.py'] = 'def f(): ...\n';
  const three = r.commit('long chain', long);
  const c3 = await contractOf(git, three, ['src/'], 'v1');
  t.ok(c3.rows.some((x) => x.startsWith('src/q/__init__.py::export f -> unresolved (more than 8')), 'depth bound');
});

t.test('star imports from a private module into an __init__.py without __all__', async (t) => {
  const r = TestRepo.init(t);
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const one = r.commit('star', {
    'src/s/__init__.py': 'from ._impl import *\n',
    'src/s/_impl.py': 'def go(a): ...\ndef _no(): ...\n',
    'src/t/__init__.py': 'from ._impl import *\n',
    'src/t/_impl.py': '__all__ = ["only"]\ndef only(a): ...\ndef other(b): ...\n',
    'src/u/api.py': 'from ._impl import *\n__all__ = ["go"]\n',
    'src/u/_impl.py': 'def go(a): ...\n',
  });
  const c = await contractOf(git, one, ['src/'], 'v1');
  t.ok(c.rows.includes('src/s/__init__.py::export go -> def go(a)'));
  t.notOk(c.rows.some((x) => x.includes('_no')), 'a star import does not bind _ names');
  t.ok(c.rows.includes('src/t/__init__.py::export only -> def only(a)'), 'the private module\'s __all__ limits a star import');
  t.notOk(c.rows.some((x) => x.includes('other')));
  t.ok(c.rows.includes('src/u/api.py::export go -> def go(a)'), 'a name in __all__ found through a star import');
  const two = r.commit('edit', { 'src/s/_impl.py': 'def go(a, b): ...\ndef _no(): ...\n' });
  t.not((await contractOf(git, two, ['src/'], 'v1')).digest, c.digest);
});

t.test('packaging: MarkerList annotated in _parser.py, imported without __all__ into markers.py, stays not API', async (t) => {
  const r = TestRepo.init(t);
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const files = {
    'src/packaging/__init__.py': '__version__ = "1"\n',
    'src/packaging/_parser.py': 'MarkerList = list[str]\n',
    'src/packaging/markers.py': 'from ._parser import MarkerList\n__all__ = ["Marker"]\nclass Marker: ...\n',
  };
  const a = r.commit('before', files);
  const b = r.commit('after', { 'src/packaging/_parser.py': 'from typing import TypeAlias\nMarkerList: TypeAlias = list[str]\n' });
  const ca = await contractOf(git, a, ['src/'], 'v1');
  t.equal((await contractOf(git, b, ['src/'], 'v1')).digest, ca.digest);
  t.notOk(ca.rows.some((x) => x.includes('MarkerList')));
});

t.test('a private-only change moves the digest after a restart (cache.db), with the rows', async (t) => {
  const repo = TestRepo.init(t);
  const before = repo.commit('base', BASE);
  const after = repo.commit('private edit', { 'src/pkg/_impl.py': IMPL.replace('strict=False', 'strict=None') });
  const dir = tempDir('pg-cache-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'cache.db');
  const git = new Git({ dir: repo.dir });
  t.teardown(() => git.close());
  const first = new PersistentCache(db);
  const c1 = await contractOf(git, before, ['src/'], 'v1', new ContentCache(first));
  first.close();
  const second = new PersistentCache(db);
  t.teardown(() => second.close());
  const cache = new ContentCache(second);
  const again = await contractOf(git, before, ['src/'], 'v1', cache);
  t.equal(again.digest, c1.digest, 'same digest after the restart');
  const c2 = await contractOf(git, after, ['src/'], 'v1', cache);
  t.not(c2.digest, c1.digest, 'only the private file changed, and the digest moved');
  t.equal(c2.digest, (await contractOf(git, after, ['src/'], 'v1', new Map())).digest, 'as a cold computation');
  const rows = await contractRows(git, c2, after, ['src/'], cache);
  t.ok(rows.includes('src/pkg/__init__.py::export parse -> def parse(data, strict=None) -> dict'));
});

t.test('agent push over HTTP changing only a private definition is refused, naming the public name', async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { ...BASE, 'tests/test_pkg.py': 'def test_x():\n    assert True\n' });
  const seeded = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(seeded.code, 0, `human seeds main: ${seeded.stderr}`);
  w.checkout('agent/fix', true);
  w.commit('tweak', { 'src/pkg/_impl.py': IMPL.replace('strict=False', 'strict=True') });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.not(r.code, 0, 'refused');
  t.match(r.stderr, /remote: .*contract digest changed/);
  t.match(r.stderr, /remote: .*~ src\/pkg\/__init__.py::export parse -> def parse\(data, strict=False\) -> dict\s+=>\s+src\/pkg\/__init__.py::export parse -> def parse\(data, strict=True\) -> dict/);
  t.notOk(r.stderr.includes(agent), 'the token is never printed');
  // A body-only edit of the same private module lands.
  w.commit('undo', { 'src/pkg/_impl.py': IMPL.replace('return {}', 'return dict()') });
  const ok = await gitAsync(w.dir, ['push', '--force', gate.remote('app', 'agent-1', agent), 'HEAD:refs/heads/agent/ok']);
  t.equal(ok.code, 0, `accepted: ${ok.stderr}`);
});
