// The differential suite of issue 45, at the object level: hostile commits, trees and tags,
// generated (fast-check) from the classes the red team used, written into a real repository
// with `git hash-object --literally`, and read both by patchgate (src/git/object-format.ts,
// tree-parse.ts) and by git itself (`rev-list --parents --timestamp`, `rev-parse X^{tree}`,
// `ls-tree -z`, `rev-parse T^{}`). The property: wherever git reads the object, patchgate
// reads exactly the same thing; and an object patchgate calls canonical passes git's own
// `fsck --strict` (so whatever it lets an agent push is what stock git writes). The push-level
// half, through a real server on both paths, is test/server/object-form.test.ts.

import t from 'tap';
import fc from 'fast-check';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { badEntryName, parseCommit, parseTag, treeProblems } from '../../src/git/object-format.js';
import { parseTree, parsedFrom, forgetWideTrees } from '../../src/git/tree-parse.js';
import { classifyMode } from '../../src/git/modes.js';
import { GIT_ENV, TestRepo, tempDir } from '../helpers/repo.js';

function git(cwd: string, args: string[], input?: Buffer | string): { ok: boolean; out: Buffer } {
  const r = spawnSync('git', args, { cwd, input, env: { ...process.env, ...GIT_ENV } });
  return { ok: r.status === 0, out: r.stdout ?? Buffer.alloc(0) };
}

/** A property's failure, with the reason in the counterexample's report. */
function fail(why: string): never {
  throw new Error(why);
}

function write(cwd: string, type: string, body: Buffer): string {
  const r = git(cwd, ['hash-object', '-t', type, '--literally', '-w', '--stdin'], body);
  if (!r.ok) throw new Error(`hash-object ${type} failed`);
  return r.out.toString().trim();
}

/** A bare repository that borrows `base`'s objects (which stay clean: fsck reads borrowed objects too). */
function borrowing(base: string): string {
  const dir = tempDir('pg-objects-');
  execFileSync('git', ['init', '-q', '--bare', dir], { env: { ...process.env, ...GIT_ENV } });
  mkdirSync(join(dir, 'objects', 'info'), { recursive: true });
  writeFileSync(join(dir, 'objects', 'info', 'alternates'), `${join(base, '.git', 'objects')}\n`);
  return dir;
}

/** `git fsck --strict` of one object in a fresh repository that borrows the base's objects: true when clean. */
function fsckClean(base: string, type: string, body: Buffer): boolean {
  const dir = borrowing(base);
  const id = write(dir, type, body);
  if (!git(dir, ['update-ref', 'refs/pg/x', id]).ok) throw new Error('update-ref failed');
  return git(dir, ['fsck', '--strict', '--no-dangling', '--no-progress']).ok;
}

const w = TestRepo.init(t);
w.commit('trusted', { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'def test_add():\n    assert True\n' });
const P1 = w.git('rev-parse', 'HEAD');
const T1 = w.git('rev-parse', 'HEAD^{tree}');
w.commit('second', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
const P2 = w.git('rev-parse', 'HEAD');
w.commit('rewrites the tests', { 'tests/test_app.py': 'def test_add():\n    pass\n' });
const T2 = w.git('rev-parse', 'HEAD^{tree}');
const BLOB = w.git('rev-parse', 'HEAD:src/app.py');

/** Where the generated objects are written and read by git: the base keeps only what git wrote. */
const S = borrowing(w.dir);

const IDENT_OK = 'A U Thor <a@example.test> 1767000000 +0000';

/** Mostly what git writes, sometimes not: fast-check's weights keep enough canonical cases to check both ways. */
const often = <T>(usual: T, rare: fc.Arbitrary<T>) => fc.oneof({ arbitrary: fc.constant(usual), weight: 4 }, { arbitrary: rare, weight: 1 });

const hexCase = (id: string) => often(id, fc.constantFrom(id.toUpperCase(), id.slice(0, 20).toUpperCase() + id.slice(20)));

/** One header line (or block of lines) an attacker might add. */
const extraLine = fc.oneof(
  fc.constantFrom(T1, T2).chain((id) => hexCase(id)).map((id) => `tree ${id}`),
  fc.constantFrom(P1, P2).chain((id) => hexCase(id)).map((id) => `parent ${id}`),
  fc.constant(`author ${IDENT_OK}`),
  fc.constant(`committer ${IDENT_OK}`),
  fc.constant('encoding UTF-8'),
  fc.constant('encoding ISO-8859-1'),
  fc.constantFrom(T1, T2).map((id) => `gpgsig -----BEGIN PGP SIGNATURE-----\n tree ${id}\n -----END PGP SIGNATURE-----`),
  fc.constant('gpgsig -----BEGIN PGP SIGNATURE-----\n iQEz\n -----END PGP SIGNATURE-----'),
  fc.constantFrom(T1, T2).map((id) => ` tree ${id}`),
  fc.constant('x-agent-note hello'),
  fc.constant('mergetag object 0000000000000000000000000000000000000000\n type commit'),
);

const identVariant = often(IDENT_OK, fc.constantFrom(
  'A U Thor<a@example.test> 1767000000 +0000',
  'A U Thor <a@example.test> 01767000000 +0000',
  'A U Thor <a@example.test> 1767000000 +00000',
  'A U Thor <a@example.test> 1767000000 +0000\r',
  'A U Thor <a@example.test>',
  'A <U> Thor <a@example.test> 1767000000 +0000',
  'A U Thor <a@example.test> 1767000000 +0000\ncommitter B <b> 1 +0000',
));

const commitBody = fc.record({
  treeFirst: often(true, fc.constant(false)),
  tree: fc.constantFrom(T1, T2).chain(hexCase),
  parents: fc.array(fc.constantFrom(P1, P2).chain(hexCase), { maxLength: 3 }),
  author: identVariant,
  committer: identVariant,
  extras: often([] as Array<[number, string]>, fc.array(fc.tuple(fc.nat(8), extraLine), { minLength: 1, maxLength: 3 })),
  message: often('\nmsg\n', fc.constantFrom('\n', '', '\nmsg\0with a nul\n', '\ntree ' + T2 + '\n')),
  nul: often(false, fc.constant(true)),
}).map((c) => {
  const lines = [`tree ${c.tree}`, ...c.parents.map((p) => `parent ${p}`), `author ${c.author}`, `committer ${c.committer}`];
  if (!c.treeFirst) lines.push(lines.shift()!);
  for (const [at, l] of c.extras) lines.splice(Math.min(at, lines.length), 0, l);
  let header = lines.join('\n') + '\n';
  if (c.nul) header = header.replace('author', 'author\0');
  return Buffer.from(header + c.message, 'latin1');
});

t.test('commits: where git reads a commit, patchgate reads the same tree, parents and date; what it calls canonical passes fsck --strict', async (t) => {
  let readByGit = 0;
  let canonical = 0;
  fc.assert(fc.property(commitBody, (body) => {
    const id = write(S, 'commit', body);
    const rl = git(S, ['rev-list', '--parents', '--timestamp', '-n', '1', id]);
    const tree = git(S, ['rev-parse', '--verify', '-q', `${id}^{tree}`]);
    let ours: ReturnType<typeof parseCommit> | null = null;
    try {
      ours = parseCommit(id, body);
    } catch {
      ours = null;
    }
    if (rl.ok && tree.ok) {
      readByGit++;
      if (!ours) return fail('git reads it, patchgate does not');
      const [ts, cid, ...parents] = rl.out.toString().trim().split(' ');
      if (cid !== id || ours.tree !== tree.out.toString().trim()) return fail(`tree: git ${tree.out.toString().trim()}, patchgate ${ours.tree}`);
      if (ours.parents.join(' ') !== parents.join(' ')) return fail(`parents: git ${parents.join(' ')}, patchgate ${ours.parents.join(' ')}`);
      if (String(ours.committerTime) !== ts) return fail(`date: git ${ts}, patchgate ${ours.committerTime}`);
    } else if (ours && ours.problems.length === 0) return fail('git cannot read it, patchgate calls it canonical');
    if (ours && ours.problems.length === 0) {
      canonical++;
      if (!fsckClean(w.dir, 'commit', body)) return fail('patchgate calls it canonical, fsck --strict does not');
    }
    return true;
  }), { numRuns: 150, seed: 45 });
  t.ok(readByGit > 40, `git read ${readByGit} of 150 generated commits`);
  t.ok(canonical > 5, `${canonical} were canonical and passed fsck --strict`);
});

t.test('commits: every hostile class of issue 45 is named', async (t) => {
  const head = (lines: string[]) => Buffer.from(`${lines.join('\n')}\n\nmsg\n`, 'latin1');
  const good = [`tree ${T1}`, `parent ${P1}`, `author ${IDENT_OK}`, `committer ${IDENT_OK}`];
  const cases: Array<[string, Buffer, RegExp]> = [
    ['the red team\'s commit: an upper-case first tree, a trusted tree after committer', head([`tree ${T2.toUpperCase()}`, `parent ${P1}`, `author ${IDENT_OK}`, `committer ${IDENT_OK}`, `tree ${T1}`]), /upper-case hex/],
    ['a second tree after committer', head([...good, `tree ${T2}`]), /second or out-of-order tree/],
    ['a parent after author', head([`tree ${T1}`, `author ${IDENT_OK}`, `parent ${P1}`, `committer ${IDENT_OK}`]), /out-of-order parent|no committer/],
    ['a header hidden in a continuation line', head([...good, 'gpgsig -----BEGIN PGP SIGNATURE-----', ` tree ${T2}`, ' -----END PGP SIGNATURE-----']), /hides a header in a continuation line/],
    ['a continuation under committer', head([...good, ` tree ${T2}`]), /continuation line/],
    ['a CR in a header', head([`tree ${T1}`, `parent ${P1}`, `author ${IDENT_OK}`, `committer ${IDENT_OK}\r`]), /carriage return/],
    ['a NUL in a header', head([`tree ${T1}`, `parent ${P1}`, `author A\0 ${IDENT_OK}`, `committer ${IDENT_OK}`]), /NUL/],
    ['a parent twice', head([`tree ${T1}`, `parent ${P1}`, `parent ${P1}`, `author ${IDENT_OK}`, `committer ${IDENT_OK}`]), /parent .* twice/],
    ['a mixed-case parent', head([`tree ${T1}`, `parent ${P1.toUpperCase()}`, `author ${IDENT_OK}`, `committer ${IDENT_OK}`]), /upper-case hex/],
    ['an encoding header twice', head([...good, 'encoding UTF-8', 'encoding UTF-8']), /encoding header twice/],
  ];
  for (const [name, body, re] of cases) {
    const id = write(S, 'commit', body);
    const ours = parseCommit(id, body);
    t.match(ours.problems.join('; '), re, name);
    const gitTree = git(S, ['rev-parse', `${id}^{tree}`]).out.toString().trim();
    t.equal(ours.tree, gitTree, `${name}: the tree read is git's`);
  }
  const plain = head(good);
  t.same(parseCommit(write(S, 'commit', plain), plain).problems, [], 'a commit as git writes it has no problem');
  const real = execFileSync('git', ['cat-file', 'commit', 'HEAD'], { cwd: w.dir });
  t.same(parseCommit(w.git('rev-parse', 'HEAD'), real).problems, [], 'nor one git wrote');
});

const NAMES = ['a', 'b', 'src', 'tests', 'tests', '.git', '.GIT', '.Git', '.g\u200cit', 'git~1', 'GIT~1', '.git.', '.git ', '.git::$INDEX_ALLOCATION', '.', '..', '', 'a/b', 'a.b', 'a-b', 'é', 'z'];
const MODES = ['100644', '100755', '40000', '120000', '040000', '100664', '0100644'];

const treeBody = fc.record({
  entries: fc.array(fc.record({
    name: fc.constantFrom(...NAMES),
    mode: fc.constantFrom(...MODES, '100644', '100644', '40000'),
  }), { minLength: 1, maxLength: 6 }),
  sort: fc.boolean(),
}).map(({ entries, sort }) => {
  const withIds = entries.map((e) => ({ ...e, id: classifyMode(e.mode).kind === 'tree' ? T1 : BLOB }));
  if (sort) withIds.sort((x, y) => Buffer.compare(Buffer.from(classifyMode(x.mode).kind === 'tree' ? `${x.name}/` : x.name), Buffer.from(classifyMode(y.mode).kind === 'tree' ? `${y.name}/` : y.name)));
  return Buffer.concat(withIds.map((e) => Buffer.concat([Buffer.from(`${e.mode} ${e.name}\0`), Buffer.from(e.id, 'hex')])));
});

t.test('trees: patchgate reads the entries ls-tree reads; what it calls canonical passes fsck --strict', async (t) => {
  forgetWideTrees();
  let canonical = 0;
  fc.assert(fc.property(treeBody, (body) => {
    const id = write(S, 'tree', body);
    const ls = git(S, ['ls-tree', '-z', id]);
    let ours: ReturnType<typeof parseTree> | null;
    try {
      ours = parseTree(id, body);
    } catch {
      ours = null;
    }
    if (!ls.ok) return ours === null || treeProblems(id, ours).length > 0 || fail('ls-tree cannot read it, patchgate calls it canonical');
    if (!ours) return fail('ls-tree reads it, patchgate does not');
    const theirs = ls.out.toString('latin1').split('\0').filter(Boolean).map((rec) => {
      const tab = rec.indexOf('\t');
      const [mode, , oid] = rec.slice(0, tab).split(' ');
      return `${mode} ${oid} ${Buffer.from(rec.slice(tab + 1), 'latin1').toString('hex')}`;
    });
    const mine = ours.map((e) => `${e.mode} ${e.id} ${(e.raw ?? Buffer.from(e.name, 'utf8')).toString('hex')}`);
    if (mine.join('\n') !== theirs.join('\n')) return fail(`entries: git ${theirs.join(',')}, patchgate ${mine.join(',')}`);
    const problems = treeProblems(id, ours);
    const odd = ours.some((e) => !classifyMode(e.rawMode).canonical);
    if (problems.length === 0 && !odd) {
      canonical++;
      if (!fsckClean(w.dir, 'tree', body)) return fail('patchgate calls it canonical, fsck --strict does not');
    }
    return true;
  }), { numRuns: 150, seed: 45 });
  t.ok(canonical > 5, `${canonical} generated trees were canonical and passed fsck --strict`);
});

t.test('trees: every hostile class of issue 45 is named', async (t) => {
  const entry = (mode: string, name: string, id: string) => Buffer.concat([Buffer.from(`${mode} ${name}\0`), Buffer.from(id, 'hex')]);
  const cases: Array<[string, Buffer, RegExp]> = [
    ['entries out of order', Buffer.concat([entry('100644', 'b', BLOB), entry('100644', 'a', BLOB)]), /out of git's order/],
    ['a duplicate name', Buffer.concat([entry('100644', 'a', BLOB), entry('100644', 'a', BLOB)]), /twice/],
    ['a file and a folder of one name', Buffer.concat([entry('100644', 'tests', BLOB), entry('40000', 'tests', T1)]), /twice/],
    ['.git', entry('40000', '.git', T1), /\.git/],
    ['.GIT', entry('40000', '.GIT', T1), /\.git/],
    ['an HFS+ .git', entry('40000', '.g\u200cit', T1), /\.git/],
    ['an NTFS .git', entry('40000', 'git~1', T1), /NTFS/],
    ['..', entry('40000', '..', T1), /named \.\./],
    ['.', entry('40000', '.', T1), /named \./],
    ['a slash', entry('100644', 'a/b', BLOB), /slash/],
    ['the null id', entry('100644', 'a', '0'.repeat(40)), /null object id/],
  ];
  for (const [name, body, re] of cases) {
    const id = write(S, 'tree', body);
    t.match(treeProblems(id, parseTree(id, body)).map((p) => p.problem).join('; '), re, name);
  }
  const real = execFileSync('git', ['cat-file', 'tree', 'HEAD^{tree}'], { cwd: w.dir });
  const rid = w.git('rev-parse', 'HEAD^{tree}');
  t.same(treeProblems(rid, parseTree(rid, real)), [], 'a tree git wrote has none');
  t.equal(badEntryName('.github'), null, '.github is a name like any other');
  t.equal(badEntryName('gitignore'), null);
});

t.test('tags: patchgate reads the object git peels to; canonical tags pass fsck --strict', async (t) => {
  const tagger = `tagger ${IDENT_OK}`;
  const tagBody = fc.record({
    object: fc.constantFrom(P1, P2).chain(hexCase),
    extra: fc.constantFrom('', `object ${P2}\n`, 'x-note y\n', ' cont\n'),
    tagger: fc.constantFrom(tagger, 'tagger A <a@b> 01 +0000', ''),
    name: fc.constantFrom('v1', 'v 1', 'v1..2', ''),
  }).map((x) => Buffer.from(`object ${x.object}\ntype commit\ntag ${x.name}\n${x.tagger ? `${x.tagger}\n` : ''}${x.extra}\nmsg\n`));
  let canonical = 0;
  fc.assert(fc.property(tagBody, (body) => {
    const id = write(S, 'tag', body);
    const peeled = git(S, ['rev-parse', '--verify', '-q', `${id}^{}`]);
    let ours: ReturnType<typeof parseTag> | null;
    try {
      ours = parseTag(id, body);
    } catch {
      ours = null;
    }
    if (peeled.ok && (!ours || ours.object !== peeled.out.toString().trim())) return fail(`object: git ${peeled.out.toString().trim()}, patchgate ${ours?.object}`);
    if (ours && ours.problems.length === 0) {
      canonical++;
      if (!fsckClean(w.dir, 'tag', body)) return fail('patchgate calls it canonical, fsck --strict does not');
    }
    return true;
  }), { numRuns: 80, seed: 45 });
  t.ok(canonical > 0, `${canonical} generated tags were canonical and passed fsck --strict`);
});

t.test('trees parsed by difference are checked where they differ, with the answer of a full check', async (t) => {
  // A wide folder (over tree-parse's 16 KiB) in git's form, then one edit of it: an entry added
  // anywhere (any name, file or folder), changed or removed. The check of the edit, made from
  // the clean parse before it, must find what a check of the whole tree finds.
  const names = Array.from({ length: 900 }, (_, i) => `m${String(i * 10).padStart(5, '0')}.py`);
  const base = names.map((n) => ({ mode: '100644', name: n, id: BLOB }));
  const bytes = (es: Array<{ mode: string; name: string; id: string }>) => Buffer.concat(es.map((e) => Buffer.concat([Buffer.from(`${e.mode} ${e.name}\0`), Buffer.from(e.id, 'hex')])));
  let n = 0;
  let seen = 0;
  let byDifference = 0;
  fc.assert(fc.property(
    fc.nat(899), fc.constantFrom('add', 'change', 'remove'), fc.constantFrom('m00100.py', 'm00105.py', 'm00100.py/x', '.git', 'zzz', 'a', 'm00200'), fc.constantFrom('100644', '40000'),
    (at, op, name, mode) => {
      const edited = base.map((e) => ({ ...e }));
      if (op === 'add') edited.splice(at, 0, { mode, name, id: mode === '40000' ? T1 : BLOB });
      else if (op === 'change') edited[at] = { mode, name, id: mode === '40000' ? T1 : BLOB };
      else edited.splice(at, 1);
      forgetWideTrees();
      const baseId = `b${String(++n).padStart(39, '0')}`;
      t.same(treeProblems(baseId, parseTree(baseId, bytes(base))), [], 'the base is clean');
      const id = `d${String(n).padStart(39, '0')}`;
      const parsed = parseTree(id, bytes(edited));
      if (parsedFrom(parsed)) byDifference++;
      const incremental = treeProblems(id, parsed).map((p) => `${p.name}: ${p.problem}`).sort();
      forgetWideTrees();
      const fullId = `f${String(n).padStart(39, '0')}`;
      const full = treeProblems(fullId, parseTree(fullId, bytes(edited))).map((p) => `${p.name}: ${p.problem}`).sort();
      if (full.length) seen++;
      return incremental.join('\n') === full.join('\n') || fail(`by difference: ${incremental.join(', ')}; in full: ${full.join(', ')}`);
    },
  ), { numRuns: 200, seed: 45 });
  t.ok(seen > 20, `${seen} of the edits made the tree non-canonical`);
  t.ok(byDifference > 150, `${byDifference} of 200 were parsed, and checked, by difference`);
});
