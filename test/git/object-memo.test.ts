// Git.readTree and Git.commitHeader keep recently read objects (src/git/object-memo.ts ObjectMemo), shared between a push's
// reader and its repository's store: a push reads each folder once, and the next push to the
// repository finds the folders it shares with the last one. These tests check that what the
// memo answers is what git stores, that a failed read is not kept, that a reader which
// fails does not fail another that waited on it, and that the memo stays within its bound.

import t from 'tap';
import { Git, ObjectMemo } from '../../src/git/git.js';
import type { RawTreeEntry } from '../../src/git/trees.js';
import { TestRepo } from '../helpers/repo.js';

function lsTree(repo: TestRepo, id: string): string[] {
  return repo.git('ls-tree', id).split('\n').filter(Boolean).map((l) => l.split('\t')[1]!);
}

t.test('readTree answers what git stores, once per tree, shared with the store', async (t) => {
  const repo = TestRepo.init(t);
  repo.commit('one', { 'src/a.ts': 'export const a = 1;\n', 'src/lib/b.ts': 'export const b = 2;\n', 'README.md': 'x\n' });
  const root = repo.git('rev-parse', 'HEAD^{tree}');
  const src = repo.git('rev-parse', 'HEAD:src');
  const store = new Git({ dir: repo.dir });
  const push = new Git({ dir: repo.dir, store });
  t.teardown(() => (store.close(), push.close()));
  t.equal(push.objects, store.objects, "a push's Git uses its store's memo");

  const names = (es: RawTreeEntry[]) => es.map((e) => e.name);
  t.same(names(await push.readTree(root)), lsTree(repo, root));
  t.same(names(await push.readTree(src)), lsTree(repo, src));
  // Read again, by the store this time: the same parsed entries, no new read.
  const again = await store.readTree(src);
  t.equal(again, await push.readTree(src), 'the second read is the memo');
  t.same(names(again), ['a.ts', 'lib']);

  // A blob is not a tree: refused, and the refusal is not kept (the next read asks git again).
  const blob = repo.git('rev-parse', 'HEAD:README.md');
  await t.rejects(push.readTree(blob), /is not a tree/);
  await t.rejects(push.readTree(blob), /is not a tree/);

  // Commit headers too; a name that is not an object id (a ref moves) is never kept.
  const head = repo.head();
  t.equal(await push.commitHeader(head), await store.commitHeader(head), 'one parsed header for both');
  t.equal((await push.commitHeader(head))!.tree, root);
  t.not(await store.commitHeader('HEAD'), await store.commitHeader('HEAD'), 'a ref name is read each time');
  const next = repo.commit('two', { 'src/a.ts': 'export const a = 3;\n' });
  t.equal((await store.commitHeader('HEAD'))!.parents[0], head, 'and follows the ref');
  t.not(next, head);
  t.equal(await store.commitHeader(blob), null, 'a blob is not a commit (and that is not kept)');
});

t.test("a waiter reads for itself when the read it waited on fails", async (t) => {
  const memo = new ObjectMemo();
  const entry = { mode: '100644', rawMode: '100644', kind: 'regular', name: 'x', raw: Buffer.from('x'), id: 'b'.repeat(40) } as RawTreeEntry;
  let release!: (e: Error) => void;
  const size = (es: RawTreeEntry[]) => es.length + 1;
  const first = memo.get('a'.repeat(40), () => new Promise<RawTreeEntry[]>((_, reject) => (release = reject)), size);
  let ownReads = 0;
  const second = memo.get('a'.repeat(40), async () => (ownReads++, [entry]), size);
  release(new Error('its reader was closed'));
  await t.rejects(first, /its reader was closed/);
  t.same((await second).map((e) => e.name), ['x'], 'the waiter got the tree from its own read');
  t.equal(ownReads, 1);
});

t.test('the memo keeps at most its bound of entries, dropping the least recently read', async (t) => {
  const memo = new ObjectMemo();
  const tree = (n: number) => Array.from({ length: n }, (_, i) => ({ mode: '100644', rawMode: '100644', kind: 'regular', name: `f${i}`, raw: Buffer.from(`f${i}`), id: 'c'.repeat(40) }) as RawTreeEntry);
  let reads = 0;
  const get = (id: string, n: number) => memo.get(id.padEnd(40, '0'), async () => (reads++, tree(n)), (es) => es.length + 1);
  await get('1', 3000);
  await get('2', 3000);
  await get('1', 3000); // read lately: kept ahead of '2'
  t.equal(reads, 2);
  await get('3', 3000); // over 8192 entries: '2', the least recently read, goes
  t.equal(reads, 3);
  await get('1', 3000);
  t.equal(reads, 3, "'1' is still kept");
  await get('2', 3000);
  t.equal(reads, 4, "'2' was dropped and is read again");
});
