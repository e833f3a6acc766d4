// A spare cat-file started before a push (src/git/spare-reader.ts) reads that push's
// quarantine once it is taken: git reads an alternate's `info/alternates` at its first lookup.
// Checked on a real quarantine made after the spare started, with every answer compared to a
// reader started with receive-pack's own variables; a spare serves one push, other variables
// are not served, and its slot folder goes when it ends.

import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Git } from '../../src/git/git.js';
import { SpareReaders } from '../../src/git/spare-reader.js';
import { waitFor } from '../helpers/repo.js';
import { gitEnvForTests, gitOut, pushedRepo, quarantineOf, type PushedRepo } from '../helpers/quarantine.js';

const env = gitEnvForTests;
const out = gitOut;
const repo = () => pushedRepo({ 'src/a.ts': 'export const a = 1;\n' }, { 'src/b.ts': 'export const b = 2;\n' });
const quarantine = (r: PushedRepo, name: string) => quarantineOf(r, name);

t.test('a spare started before the quarantine existed reads it as receive-pack\'s view does', async (t) => {
  const r = repo();
  const spares = new SpareReaders();
  t.teardown(() => spares.closeAll());
  spares.prime(r.bare);
  await new Promise((res) => setTimeout(res, 300)); // the spare runs before the push arrives
  const qenv = quarantine(r, 'one');
  const batch = spares.take(r.bare, qenv);
  t.ok(batch, 'the spare is taken');
  t.equal(spares.take(r.bare, qenv), null, 'a spare serves one push');
  const viaSpare = new Git({ dir: r.bare, bare: true, env: qenv, reader: batch });
  const own = new Git({ dir: r.bare, bare: true, env: qenv });
  t.teardown(() => [viaSpare, own].forEach((g) => g.close()));
  const blob = out(r.work, ['rev-parse', 'HEAD:src/b.ts']);
  for (const spec of [blob, `${r.head}:src/b.ts`, `${r.base}:src/a.ts`, r.head, `${r.head}:src/missing.ts`]) {
    t.same(await viaSpare.pathId(spec, null), await own.pathId(spec, null), `header of ${spec}`);
  }
  t.equal((await viaSpare.readBlob(blob))?.toString(), 'export const b = 2;\n', 'a pushed blob, read by the spare');
  t.equal(spawnSync('git', ['cat-file', '-e', blob], { cwd: r.bare, env }).status, 1, 'which is in the quarantine only');
});

t.test('a spare is not used for other variables, and its slot goes with it', async (t) => {
  const r = repo();
  const spares = new SpareReaders();
  t.teardown(() => spares.closeAll());
  spares.prime(r.bare);
  const qenv = quarantine(r, 'two');
  t.equal(spares.take(r.bare, { ...qenv, GIT_ALTERNATE_OBJECT_DIRECTORIES: `${qenv.GIT_ALTERNATE_OBJECT_DIRECTORIES}:/elsewhere` }), null, 'another alternate');
  t.equal(spares.take(r.bare, { ...qenv, GIT_OBJECT_DIRECTORY: join(r.bare, 'objects') }), null, 'objects written elsewhere than the quarantine');
  t.equal(spares.take(r.bare, {}), null, 'no quarantine');
  t.equal(spares.take(join(r.bare, '..'), qenv), null, 'another repository has no spare');
  const batch = spares.take(r.bare, qenv);
  t.ok(batch);
  const slots = (spares as unknown as { dir: string }).dir;
  t.equal(readdirSync(slots).length, 1, 'one slot while the spare runs');
  batch!.close();
  await waitFor('the slot to go', () => readdirSync(slots).length === 0, 10_000);
  spares.prime(r.bare);
  t.equal(readdirSync(slots).length, 1, 'the next spare has its own slot');
  spares.closeAll();
  t.notOk(existsSync(slots), 'closed: the slots folder is gone');
});
