// A push's commits, trees, object headers and `rev:path` lookups are read in process from the
// loose files of its quarantine (src/git/loose.ts, Git.objectById/headerById/pathInPush), and
// what the push did not bring from the repository's own store: checked against git's own
// cat-file on a real quarantine made by unpack-objects, with the push's cat-file never started
// (pushed blobs are read from their loose files too, up to LOOSE_MAX_FILE on disk). A quarantine that holds a pack, a loose file under the wrong
// name and a tree git would search differently fall back to git or answer as git does.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Git } from '../../src/git/git.js';
import { QuarantineObjects } from '../../src/git/loose.js';
import { findTreeEntry } from '../../src/git/trees.js';
import { gitEnvForTests, gitOut, pushedRepo, quarantineOf, type PushedRepo } from '../helpers/quarantine.js';

const env = gitEnvForTests;
const out = gitOut;

/** A served repository with main, and a clone with one more commit that adds and changes files. */
const setup = () => pushedRepo(
  { 'src/a.ts': 'export const a = 1;\n', 'src/deep/b.ts': 'export const b = 2;\n', 'ci/fixtures.lock': '{}\n' },
  { 'src/deep/b.ts': 'export const b = 3;\n', 'src/new.ts': 'export const n = 4;\n' },
);
const quarantine = (s: PushedRepo, name: string, keep: boolean) => quarantineOf(s, name, keep);

/** Everything a judge asks of a push's view, as one comparable list. */
async function answers(g: Git, s: PushedRepo): Promise<unknown[]> {
  const head = await g.commitHeader(s.head);
  const root = await g.readTree(head!.tree);
  const paths = ['src/deep/b.ts', 'src/new.ts', 'src/a.ts', 'src/deep', 'ci/fixtures.lock', 'src/missing.ts', 'src/a.ts/x', 'src/dee', 'src'];
  const byPath = [];
  for (const rev of [s.head, s.base, head!.tree]) for (const p of paths) byPath.push([rev.slice(0, 7), p, await g.pathId(rev, p)]);
  const ids = root.map((e) => e.id);
  return [
    head, await g.commitHeader(s.base), root.map((e) => [e.name, e.kind, e.id]),
    byPath,
    await Promise.all(ids.map((id) => g.pathId(id, null))),
    await Promise.all(ids.map((id) => g.objectSize(id))),
  ];
}

t.test('a small push is read in process, as cat-file reads it, without starting its own cat-file', async (t) => {
  const s = setup();
  const qenv = quarantine(s, 'small', false);
  const store = new Git({ dir: s.bare, bare: true });
  const push = new Git({ dir: s.bare, bare: true, env: qenv, store });
  const plain = new Git({ dir: s.bare, bare: true, env: qenv }); // no store: every read by cat-file, as before
  t.teardown(() => [store, push, plain].forEach((g) => g.close()));
  t.same(await answers(push, s), await answers(plain, s), 'the same answers as cat-file in the push\'s view');
  t.equal((push as unknown as { batch: unknown }).batch, null, 'the push\'s own cat-file was not started for commits, trees, headers or paths');
  const objs = (await push.quarantineObjects())!.map((o) => `${o.id} ${o.type} ${o.size}`).sort();
  t.same(objs, (await plain.quarantineObjects())!.map((o) => `${o.id} ${o.type} ${o.size}`).sort(), 'the quarantine\'s objects, kinds and sizes');
  t.equal(objs.length, 6, 'commit, three trees, two blobs');
  const oldBlob = (await push.pathId(s.base, 'src/a.ts'))!.id;
  t.equal((await push.readBlob(oldBlob))?.toString(), 'export const a = 1;\n', 'a blob the push did not bring comes from the store');
  t.equal((push as unknown as { batch: unknown }).batch, null);
  const newBlob = (await push.pathId(s.head, 'src/new.ts'))!.id;
  t.equal((await push.readBlob(newBlob))?.toString(), 'export const n = 4;\n', 'a pushed blob is read from its loose file');
  t.equal((push as unknown as { batch: unknown }).batch, null, 'still without the push\'s cat-file');
  const tree = (await push.commitHeader(s.head))!.tree;
  await t.rejects(push.readBlob(tree), /is a tree, not a blob/, 'a tree asked for as a blob is refused, as before');
});

t.test('a quarantine that holds a pack is read by cat-file', async (t) => {
  const s = setup();
  const qenv = quarantine(s, 'pack', true);
  t.ok(readdirSync(join(qenv.GIT_QUARANTINE_PATH!, 'pack')).some((f) => f.endsWith('.pack')), 'index-pack kept a pack');
  const store = new Git({ dir: s.bare, bare: true });
  const push = new Git({ dir: s.bare, bare: true, env: qenv, store });
  const plain = new Git({ dir: s.bare, bare: true, env: qenv });
  t.teardown(() => [store, push, plain].forEach((g) => g.close()));
  t.same(await answers(push, s), await answers(plain, s));
  t.not((push as unknown as { batch: unknown }).batch, null, 'the push\'s cat-file answered');
});

t.test('a loose file is answered only when it is what its name says', async (t) => {
  const s = setup();
  const qenv = quarantine(s, 'odd', false);
  const q = new QuarantineObjects(qenv.GIT_QUARANTINE_PATH!);
  const head = q.read(s.head, ['commit']);
  t.equal(head?.type, 'commit');
  t.equal(q.header(s.head)?.size, head?.size);
  t.equal(q.read(s.base, ['commit']), null, 'not in the quarantine');
  t.equal(q.read(s.head, ['tree']), undefined, 'another kind than asked for is not read');
  // The commit's file under another (made-up) id: its hash does not match, so cat-file decides.
  const fake = `${s.head.slice(0, 2)}${'0'.repeat(38)}`;
  copyFileSync(join(q.dir, s.head.slice(0, 2), s.head.slice(2)), join(q.dir, fake.slice(0, 2), fake.slice(2)));
  t.equal(q.read(fake, ['commit']), undefined, 'a file whose content hashes to another id is not answered');
  writeFileSync(join(q.dir, s.head.slice(0, 2), '1'.repeat(38)), 'not zlib');
  t.equal(q.read(`${s.head.slice(0, 2)}${'1'.repeat(38)}`, ['commit']), undefined, 'a damaged file is not answered');
  t.equal(q.header(`${s.head.slice(0, 2)}${'1'.repeat(38)}`), undefined);
  t.ok(q.loosesOnly());
});

t.test('a path is looked up as git looks it up, in a tree whose names are out of order too', async (t) => {
  const s = setup();
  const blob = out(s.bare, ['hash-object', '-w', '--stdin']);
  // Entries `b` then `a`: git's lookup stops at `b` when it seeks `a` (names are sorted in a
  // tree git writes), so `tree:a` is missing to git though an entry of that name is there.
  const entry = (name: string) => Buffer.concat([Buffer.from(`100644 ${name}\0`), Buffer.from(blob, 'hex')]);
  const odd = execFileSync('git', ['hash-object', '-w', '-t', 'tree', '--literally', '--stdin'], { cwd: s.bare, env, input: Buffer.concat([entry('b'), entry('a'), entry('c')]) }).toString().trim();
  const store = new Git({ dir: s.bare, bare: true });
  t.teardown(() => store.close());
  for (const p of ['a', 'b', 'c']) {
    const gitSays = execFileSync('git', ['cat-file', '--batch-check'], { cwd: s.bare, env, input: `${odd}:${p}\n` }).toString().trim();
    const found = await findTreeEntry(store, odd, p);
    t.equal(found ? `${found.id} blob` : 'missing', gitSays.endsWith('missing') ? 'missing' : gitSays.split(' ').slice(0, 2).join(' '), `${p}: ${gitSays}`);
  }
  t.equal(await findTreeEntry(store, odd, 'a'), null, 'a is not found, as git does not find it');
});

t.test('a pushed blob asked for as a commit or tree is read by cat-file, never inflated here', async (t) => {
  const s = setup();
  const qenv = quarantine(s, 'blob', false);
  const store = new Git({ dir: s.bare, bare: true });
  const push = new Git({ dir: s.bare, bare: true, env: qenv, store });
  t.teardown(() => [store, push].forEach((g) => g.close()));
  const blob = out(s.work, ['rev-parse', `${s.head}:src/new.ts`]);
  t.equal((await push.pathId(blob, null))?.type, 'blob', 'its header is read in process');
  t.equal((push as unknown as { batch: unknown }).batch, null);
  t.equal(await push.commitHeader(blob), null, 'not a commit');
  t.not((push as unknown as { batch: unknown }).batch, null, 'answered by the push\'s cat-file');
  await t.rejects(push.readTree(blob), /is not a tree/);
});

t.test('a pushed blob too large for this thread is read by the push\'s cat-file, with the same bytes', async (t) => {
  const cases = [
    // base64 of random bytes: about 1.5 MiB on disk once deflated, over LOOSE_MAX_FILE.
    { name: 'big', text: randomBytes(1536 * 1024).toString('base64'), general: false, why: 'over LOOSE_MAX_FILE on disk' },
    // Two MiB of one letter: a few KiB on disk, but past LOOSE_MAX_BLOB once inflated.
    { name: 'wide', text: 'a'.repeat(2 * 1024 * 1024), general: true, why: 'inflating past LOOSE_MAX_BLOB' },
  ];
  for (const c of cases) {
    const s = pushedRepo({ 'src/a.ts': 'export const a = 1;\n' }, { [`src/${c.name}.txt`]: c.text });
    const qenv = quarantine(s, c.name, false);
    const store = new Git({ dir: s.bare, bare: true });
    const push = new Git({ dir: s.bare, bare: true, env: qenv, store });
    t.teardown(() => [store, push].forEach((g) => g.close()));
    const id = (await push.pathId(s.head, `src/${c.name}.txt`))!.id;
    const general = new QuarantineObjects(qenv.GIT_QUARANTINE_PATH!).read(id, ['blob']);
    t.equal(!!general, c.general, `${c.why}: ${c.general ? 'the general caps would answer it' : 'not answered in process at all'}`);
    t.equal((await push.readBlob(id))?.toString(), c.text, `${c.why}: the same bytes`);
    t.not((push as unknown as { batch: unknown }).batch, null, `${c.why}: from the push's cat-file`);
  }
});

t.test('a reader given as a function is taken only when a read needs one, or at once for a pack', async (t) => {
  const s = setup();
  const store = new Git({ dir: s.bare, bare: true });
  t.teardown(() => store.close());
  let taken = 0;
  const spare = () => (taken++, null); // no spare: the view starts its own reader if it needs one
  const loose = new Git({ dir: s.bare, bare: true, env: quarantine(s, 'lazy', false), store, reader: spare });
  t.teardown(() => loose.close());
  loose.startUnlessLoose();
  await answers(loose, s);
  await loose.readBlob((await loose.pathId(s.head, 'src/new.ts'))!.id);
  t.equal(taken, 0, 'a loose push answered everything without taking a reader');
  t.equal((loose as unknown as { batch: unknown }).batch, null);
  await loose.readBlob(`${s.head}:src/new.ts`); // a rev:path spec is cat-file's to resolve
  t.equal(taken, 1, 'the first read that needs one takes it');
  const packed = new Git({ dir: s.bare, bare: true, env: quarantine(s, 'lazy-pack', true), store, reader: spare });
  t.teardown(() => packed.close());
  packed.startUnlessLoose();
  t.equal(taken, 2, 'a push that holds a pack takes it at once');
});

t.test('headers of what the store holds are asked of its cat-file once, then kept', async (t) => {
  const s = setup();
  const qenv = quarantine(s, 'headers', false);
  const store = new Git({ dir: s.bare, bare: true });
  const push = new Git({ dir: s.bare, bare: true, env: qenv, store });
  const later = new Git({ dir: s.bare, bare: true, env: qenv, store }); // the next push's view shares the memo
  t.teardown(() => [store, push, later].forEach((g) => g.close()));
  const first = await push.pathId(s.base, 'src/deep/b.ts');
  // Count what the store's reader is asked from here on.
  const reader = (store as unknown as { batchReader(): { header(spec: string): Promise<unknown> } }).batchReader();
  const asked: string[] = [];
  const header = reader.header.bind(reader);
  reader.header = (spec: string) => (asked.push(spec), header(spec));
  t.same(await push.pathId(s.base, 'src/deep/b.ts'), first, 'the same answer');
  t.same(await later.pathId(s.base, 'src/deep/b.ts'), first, 'the same answer in the next push\'s view');
  t.same(asked, [], 'no header asked of the store again');
  const missing = 'f'.repeat(40);
  t.equal(await push.pathId(missing, null), null);
  t.equal(await push.pathId(missing, null), null);
  t.same(asked, [missing, missing], 'an object the store does not have is asked again each time (it may come later)');
});
