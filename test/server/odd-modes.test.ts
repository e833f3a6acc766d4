// The red team's first bypass, replayed over real HTTP against a real gate: trees whose
// entries carry mode digits git stores but never writes (`40755`, `120777`, `160755`, `100664`)
// hid a pytest hook, a test edit, a symlink into tests/ and a submodule, and the gate
// accepted them. Each push is now refused with the path and the mode; the contract and the
// fixture walks read such entries as git's checkout does.

import t from 'tap';
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { classifyMode } from '../../src/git/modes.js';
import { Git } from '../../src/git/git.js';
import { contractOf } from '../../src/contract/digest.js';
import { GIT_ENV, TestRepo } from '../helpers/repo.js';
import { gitAsync, refIn, seededGate } from '../helpers/gate.js';

/** A tree written by hand: a name maps to a file (`content`) or a folder (`children`), each with the mode digits to store. */
type Spec = { [name: string]: { mode: string; content: string } | { mode: string; children: Spec } | { mode: string; id: string } };

function git(cwd: string, args: string[], input?: Buffer | string): string {
  return execFileSync('git', args, { cwd, input, env: { ...process.env, ...GIT_ENV } }).toString().trim();
}

function writeSpec(cwd: string, spec: Spec): string {
  const entries = Object.entries(spec).map(([name, e]) => {
    const id = 'children' in e ? writeSpec(cwd, e.children) : 'content' in e ? git(cwd, ['hash-object', '-w', '--stdin'], e.content) : e.id;
    const key = classifyMode(e.mode).kind === 'tree' ? `${name}/` : name;
    return { name, mode: e.mode, id, key: Buffer.from(key) };
  }).sort((a, b) => Buffer.compare(a.key, b.key));
  const body = Buffer.concat(entries.map((e) => Buffer.concat([Buffer.from(`${e.mode} ${e.name}\0`), Buffer.from(e.id, 'hex')])));
  return git(cwd, ['hash-object', '-t', 'tree', '--literally', '-w', '--stdin'], body);
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const APP = 'def add(a, b):\n    return a + b\n';
const TEST = 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n';
const INVOICE = '{"cents": 100}\n';
const LOCK = JSON.stringify({ 'tests/fixtures/invoice.json': sha(INVOICE) });

/** The base tree as a spec, so an attack can change one entry. */
function base(): Spec {
  return {
    src: { mode: '40000', children: { 'app.py': { mode: '100644', content: APP } } },
    tests: { mode: '40000', children: { 'test_app.py': { mode: '100644', content: TEST }, fixtures: { mode: '40000', children: { 'invoice.json': { mode: '100644', content: INVOICE } } } } },
    ci: { mode: '40000', children: { 'fixtures.lock': { mode: '100644', content: LOCK } } },
  };
}

async function setup(t: Parameters<Parameters<typeof tap.test>[1]>[0]) {
  const s = await seededGate(t, { 'src/app.py': APP, 'tests/test_app.py': TEST, 'tests/fixtures/invoice.json': INVOICE, 'ci/fixtures.lock': LOCK });
  t.equal(s.w.git('rev-parse', 'HEAD^{tree}'), writeSpec(s.w.dir, base()), 'the spec writes the same tree git does');
  return s;
}
const tap = t;

/** Commit a hand-written tree on top of main as `branch` in the work repo. */
function commitSpec(w: TestRepo, branch: string, spec: Spec): string {
  const tree = writeSpec(w.dir, spec);
  const id = w.git('commit-tree', tree, '-p', 'main', '-m', `attack ${branch}`);
  w.git('update-ref', `refs/heads/${branch}`, id);
  return id;
}

const attacks: Array<{ name: string; edit: (s: Spec) => void; path: string; mode: string; also?: RegExp }> = [
  {
    name: 'a pytest hook in a new folder stored as 40755',
    edit: (s) => { (s.src as { children: Spec }).children.hidden = { mode: '40755', children: { 'conftest.py': { mode: '100644', content: 'def pytest_runtest_makereport(item, call):\n    pass\n' } } }; },
    path: 'src/hidden', mode: '40755', also: /protected path src\/hidden\/conftest\.py/,
  },
  {
    name: 'a test edit inside tests/ stored as 40755',
    edit: (s) => { (s.tests as { mode: string }).mode = '40755'; ((s.tests as { children: Spec }).children['test_app.py'] as { content: string }).content = 'def test_add():\n    assert True\n'; },
    path: 'tests', mode: '40755', also: /protected path tests\/test_app\.py/,
  },
  {
    name: 'a new test folder stored as 47777',
    edit: (s) => { (s.src as { children: Spec }).children.tests = { mode: '47777', children: { 'test_x.py': { mode: '100644', content: 'def test_x():\n    pass\n' } } }; },
    path: 'src/tests', mode: '47777', also: /src\/tests\/test_x\.py/,
  },
  {
    name: 'a symlink into tests/ stored as 120777',
    edit: (s) => { (s.src as { children: Spec }).children.link = { mode: '120777', content: '../tests' }; },
    path: 'src/link', mode: '120777', also: /symlink src\/link; symlinks are not allowed/,
  },
  {
    name: 'a submodule under src/ stored as 160755',
    edit: (s) => { (s.src as { children: Spec }).children.vendored = { mode: '160755', id: '1'.repeat(40) }; },
    path: 'src/vendored', mode: '160755', also: /submodule \(gitlink\) src\/vendored/,
  },
  {
    name: 'src itself stored as 40755 with the public API kept',
    edit: (s) => { (s.src as { mode: string }).mode = '40755'; ((s.src as { children: Spec }).children['app.py'] as { content: string }).content = 'def add(a, b):\n    return b + a\n'; },
    path: 'src', mode: '40755',
  },
  {
    name: 'a source file stored as 100664',
    edit: (s) => { (s.src as { children: Spec }).children['util.py'] = { mode: '100664', content: 'X = 1\n' }; },
    path: 'src/util.py', mode: '100664',
  },
];

for (const a of attacks) {
  t.test(`agent push refused: ${a.name}`, async (t) => {
    const { gate, agent, w, bare } = await setup(t);
    const spec = base();
    a.edit(spec);
    const head = commitSpec(w, 'agent/x', spec);
    const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/x']);
    t.not(r.code, 0, 'the push fails');
    t.match(r.stderr, /\(pre-receive hook declined\)/);
    const path = a.path.replace(/[/.]/g, (c) => `\\${c}`);
    t.match(r.stderr, new RegExp(`\\[write-block\\] commit ${head.slice(0, 12)} stores ${path} with tree mode ${a.mode}, which git itself never writes`), 'names commit, path and mode');
    t.match(r.stderr, /next step: /);
    if (a.also) t.match(r.stderr, a.also);
    t.equal(await refIn(bare, 'refs/heads/agent/x'), null, 'the ref was not created');
    const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
    t.equal(rows[0]?.verdict, 'reject', 'audited as refused');
  });
}

t.test('the printed fix for odd modes alone, run as printed, gives an accepted push', async (t) => {
  const { gate, agent, w, bare } = await setup(t);
  const spec = base();
  (spec.src as { mode: string }).mode = '40755';
  (spec.src as { children: Spec }).children['app.py'] = { mode: '100664', content: 'def add(a, b):\n    return b + a\n' };
  commitSpec(w, 'agent/x', spec);
  w.git('checkout', '-q', '-f', 'agent/x');
  // The agent's remote for the gate holds its token; the printed fix finds it by URL.
  w.git('remote', 'add', 'gate', gate.remote('app', 'agent-1', agent));
  const r = await gitAsync(w.dir, ['push', 'gate', 'agent/x']);
  t.not(r.code, 0);
  t.match(r.stderr, /decision: tree entry with mode digits git never writes/);
  t.match(r.stderr, /next step: commit the work again through git's own index/);
  // The commands printed after `$ `, the push to the gate among them, run as printed.
  const cmds = r.stderr.split('\n').map((l) => l.replace(/^remote:\s*/, '').trim()).filter((l) => l.startsWith('$ ')).map((l) => l.slice(2));
  t.ok(cmds.length >= 5, 'a rebuild command is printed, then the remote set-up and the push');
  t.match(cmds[cmds.length - 1], /^git push patchgate-fix HEAD:refs\/heads\/agent\/x$/);
  const next = [null, cmds.join(' && ')];
  // Async: the gate runs in this process, so a synchronous push would block it.
  const fixed = await new Promise<number>((resolve) => {
    execFile('bash', ['-c', next![1]!], { cwd: w.dir, env: { ...process.env, ...GIT_ENV, GIT_ASKPASS: 'true' } }, (err, _o, e) => {
      if (err) t.comment(e);
      resolve(err ? 1 : 0);
    });
  });
  t.equal(fixed, 0, 'the printed command runs');
  const tip = w.head();
  t.equal(await refIn(bare, 'refs/heads/agent/x'), tip, 'the rebuilt commit landed');
  t.match(w.git('ls-tree', 'HEAD'), /^040000 tree [0-9a-f]+\tsrc$/m);
  t.equal(w.git('show', 'HEAD:src/app.py'), 'def add(a, b):\n    return b + a', 'the work survived');
  t.match(w.git('ls-tree', 'HEAD', 'src/app.py'), /^100644 blob /, 'stored as git writes it');
});

t.test('the fixture walk reads entries as checkout does', async (t) => {
  const { gate, human, w, bare } = await setup(t);
  const fixturesOf = (spec: Spec) => (spec.tests as { children: Spec }).children.fixtures as { mode: string; children: Spec };
  // A locked folder stored as 40755, with other bytes in the fixture: drift, for a person too.
  const drift = base();
  fixturesOf(drift).mode = '40755';
  (fixturesOf(drift).children['invoice.json'] as { content: string }).content = '{"cents": 1}\n';
  commitSpec(w, 'people/drift', drift);
  const r1 = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'people/drift']);
  t.not(r1.code, 0, 'refused');
  t.match(r1.stderr, /\[fixtures\].*tests\/fixtures\/invoice\.json/, 'the fixture behind 40755 was read');
  t.equal(await refIn(bare, 'refs/heads/people/drift'), null);
  // The same bytes stored as 100664 are the same regular file to checkout: no drift.
  const same = base();
  (fixturesOf(same).children['invoice.json'] as { mode: string }).mode = '100664';
  commitSpec(w, 'people/same', same);
  const r2 = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'people/same']);
  t.equal(r2.code, 0, r2.stderr);
  t.notMatch(r2.stderr, /\[fixtures\]/, 'no fixture finding');
  // A locked file stored as a symlink (120777) is not a regular file.
  const link = base();
  fixturesOf(link).children['invoice.json'] = { mode: '120777', content: '../test_app.py' };
  commitSpec(w, 'people/link', link);
  const r3 = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'people/link']);
  t.not(r3.code, 0);
  t.match(r3.stderr, /\[fixtures\].*tests\/fixtures\/invoice\.json/);
});

t.test('the contract walk opens a folder stored as 40755', async (t) => {
  const w = TestRepo.init(t);
  const api = 'def add(a: int, b: int) -> int:\n    return a + b\n';
  const plain = writeSpec(w.dir, { src: { mode: '40000', children: { api: { mode: '40000', children: { 'm.py': { mode: '100644', content: api } } } } } });
  const odd = writeSpec(w.dir, { src: { mode: '40000', children: { api: { mode: '40755', children: { 'm.py': { mode: '100664', content: api } } } } } });
  const empty = writeSpec(w.dir, { src: { mode: '40000', children: { 'x.txt': { mode: '100644', content: 'x' } } } });
  const g = new Git({ dir: w.dir });
  t.teardown(() => g.close());
  const a = await contractOf(g, plain, ['src/'], 'v1');
  const b = await contractOf(g, odd, ['src/'], 'v1');
  const c = await contractOf(g, empty, ['src/'], 'v1');
  t.equal(a.files, 1);
  t.equal(b.files, 1, 'the file behind 40755/100664 is read');
  t.equal(b.digest, a.digest, 'same digest as the canonical tree');
  t.not(c.digest, a.digest, 'and a tree without it differs');
  const seedA = await contractOf(g, plain, ['src/'], 'seed');
  const seedB = await contractOf(g, odd, ['src/'], 'seed');
  t.equal(seedB.digest, seedA.digest, 'the seed format (ls-tree walk) agrees');
});
