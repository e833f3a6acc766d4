// Which hooks a served repository has (src/server/repos.ts, src/server/hook/update-hook.ts):
// pre-receive always; update only while a push of several refs is in flight (ours, or the
// repository is not served); no post-receive (an earlier layout is not served until
// `repo hooks` brings it up to date, which keeps an update hook that is there). And
// UpdateHooks: put in place for the first multi-ref push of a repository, removed after the
// last one; one that cannot be put in place is a named error.

import t from 'tap';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkHooks, createRepo, installHooks } from '../../src/server/repos.js';
import { UpdateHookError, UpdateHooks } from '../../src/server/hook/update-hook.js';
import { tempDir } from '../helpers/repo.js';

const PACKAGE = fileURLToPath(new URL('../../hooks/', import.meta.url));

t.test('a new repository: pre-receive only; update is allowed only as ours; post-receive not at all', async (t) => {
  const data = tempDir('pg-layout-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const dir = await createRepo(data, 'app');
  const hook = (h: string) => join(dir, 'hooks', h);
  t.ok(existsSync(hook('pre-receive')), 'pre-receive installed');
  t.notOk(existsSync(hook('update')), 'no update hook');
  t.notOk(existsSync(hook('post-receive')), 'no post-receive hook');
  t.same(checkHooks(dir), { ok: true });

  copyFileSync(join(PACKAGE, 'update'), hook('update'));
  t.same(checkHooks(dir), { ok: true }, 'our update hook (a multi-ref push in flight) is fine');
  writeFileSync(hook('update'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  t.match(checkHooks(dir), { ok: false, reason: /hook update is not patchgate's/ }, 'a foreign update hook is not');

  // The earlier layout: pre-receive, update and post-receive always there.
  copyFileSync(join(PACKAGE, 'update'), hook('update'));
  writeFileSync(hook('post-receive'), '#!/bin/bash\n# patchgate-hook: v3\n', { mode: 0o755 });
  t.match(checkHooks(dir), { ok: false, reason: /hook post-receive is from an earlier patchgate/ }, 'a post-receive hook: not served');
  writeFileSync(hook('update'), '#!/bin/bash\n# patchgate-hook: v2\n', { mode: 0o755 });
  installHooks(dir);
  t.notOk(existsSync(hook('post-receive')), '`repo hooks` removes post-receive');
  t.ok(readFileSync(hook('update')).equals(readFileSync(join(PACKAGE, 'update'))), 'and replaces an update hook that is there with ours (a push may be running it)');
  t.ok(statSync(hook('update')).mode & 0o100, 'executable');
  t.same(checkHooks(dir), { ok: true }, 'served again');
});

t.test('UpdateHooks: in place from the first multi-ref push to the end of the last', async (t) => {
  const data = tempDir('pg-layout-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const a = await createRepo(data, 'a');
  const b = await createRepo(data, 'b');
  const logs: string[] = [];
  const u = new UpdateHooks((l) => logs.push(l));
  const has = (dir: string) => existsSync(join(dir, 'hooks', 'update'));

  u.need(a, 101);
  t.ok(has(a), 'in place for the first push');
  t.ok(readFileSync(join(a, 'hooks', 'update')).equals(readFileSync(join(PACKAGE, 'update'))), 'ours, byte for byte');
  t.ok(statSync(join(a, 'hooks', 'update')).mode & 0o100, 'executable');
  t.same(checkHooks(a), { ok: true });
  t.notOk(has(b), 'only in that repository');
  u.need(a, 102);
  u.release(a, 101);
  t.ok(has(a), 'kept while another push of the repository needs it');
  u.release(a, 999);
  t.ok(has(a), 'a pid that never needed it changes nothing');
  u.release(a, 102);
  t.notOk(has(a), 'removed after the last one');
  t.equal(u.repos, 0);

  // Left by a daemon that was killed mid-push: replaced, then removed like one put there.
  writeFileSync(join(b, 'hooks', 'update'), readFileSync(join(PACKAGE, 'update')), { mode: 0o755 });
  u.need(b, 7);
  u.release(b, 7);
  t.notOk(has(b), 'a leftover hook goes with the next multi-ref push');

  const gone = join(data, 'no-such-repo.git');
  mkdirSync(gone);
  t.throws(() => u.need(gone, 5), UpdateHookError, 'no hooks folder: a named error');
  try {
    u.need(gone, 5);
  } catch (err) {
    t.match((err as Error).message, /could not put its per-ref hook/, 'that says what failed');
    t.match((err as UpdateHookError).next, /push each ref on its own/, 'and what to do');
    t.ok((err as Error).cause, 'and carries its cause');
  }
  t.equal(u.repos, 0, 'nothing is counted for a push whose hook was not put in place');
  t.type(u.tryNeed(gone, 6), UpdateHookError, 'tryNeed returns the same error');
  t.equal(u.tryNeed(a, 8), null, 'and null when the hook is in place');
  t.ok(has(a));
  u.release(a, 8);
  t.same(logs, []);
});
