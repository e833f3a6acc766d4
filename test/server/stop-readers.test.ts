// A daemon stopped while its start-up warm-up walks a tree leaves no git reader running: the
// warm-up's files still on their way when it is stopped read nothing more (Git.dispose), so
// no `cat-file` is started after its owner closed it, and the process can exit. (Found by the
// bench: a `patchgate serve` sent SIGTERM during a warm-up never exited.) Also Git.dispose
// itself: a read that needs cat-file fails, and none is started.

import t from 'tap';
import { mkdirSync, readdirSync, readlinkSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRepo } from '../../src/server/repos.js';
import { Git } from '../../src/git/git.js';
import { gitAsync } from '../helpers/gate.js';
import { cli, serve } from '../helpers/serve.js';
import { removeTree, tempDir, TestRepo, waitFor } from '../helpers/repo.js';

/** One generated module; `body` is its function's return expression. */
const source = (i: number, j: number, body: string): string =>
  `export interface R${i}x${j} { id: string; n: number }\nexport function f${i}x${j}(a: R${i}x${j}, b = ${j}): number {\n  return ${body};\n}\nexport class C${i}x${j} { constructor(public v: number) {} get(): number { return this.v; } }\n`;

/** `git cat-file` processes whose working folder is `dir`. */
function readersIn(dir: string): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const argv = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
      if (argv.includes('cat-file') && readlinkSync(`/proc/${e}/cwd`) === dir) out.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

t.test('stopped during its warm-up, `patchgate serve` exits and leaves no reader running', async (t) => {
  const data = tempDir('pg-stop-');
  t.teardown(() => removeTree(data));
  const bare = await createRepo(data, 'app');
  // Enough TypeScript files for the warm-up to be under way when the pushes and the stop come.
  const w = TestRepo.init(t);
  for (let i = 0; i < 100; i++) {
    mkdirSync(join(w.dir, 'src', `m${i}`), { recursive: true });
    for (let j = 0; j < 20; j++) {
      writeFileSync(join(w.dir, 'src', `m${i}`, `f${j}.ts`), source(i, j, 'a.n + b'));
    }
  }
  w.commit('tree', {});
  // Seeded without the gate (a fetch runs no receive hook).
  const f = await gitAsync(bare, ['fetch', '-q', w.dir, 'main:main']);
  t.equal(f.code, 0, f.stderr);
  const secret = cli('token', 'create', 'agent-1', '--role', 'agent', '--data', data);

  const srv = await serve(data);
  t.teardown(() => void srv.child.kill('SIGKILL'));
  const remote = `http://agent-1:${secret}@127.0.0.1:${srv.port}/app.git`;
  // Pushes while the warm-up runs go first (its files wait for them), as in the bench that found this.
  for (let i = 0; i < 4; i++) {
    w.checkout(`agent/p${i}`, true);
    w.commit(`p${i}`, { [`src/m${i}/f0.ts`]: source(i, 0, `a.n + b + ${i + 1}`) }); // a body edit: accepted
    const r = await gitAsync(w.dir, ['push', '-q', remote, `agent/p${i}`]);
    t.equal(r.code, 0, r.stderr);
  }
  srv.child.kill('SIGTERM');
  const code = await Promise.race([srv.exited, new Promise<string>((r) => setTimeout(() => r('still running 30 s after SIGTERM'), 30_000).unref())]);
  t.equal(code, 0, 'serve exited after SIGTERM');
  let left: number[] = [];
  const gone = await waitFor('its readers to end', () => (left = readersIn(bare)).length === 0, 10_000).then(() => true, () => false);
  t.ok(gone, `no cat-file left in the repository${left.length ? ` (pids ${left.join(', ')})` : ''}`);
});

t.test('a disposed Git starts no reader: a read that needs one fails', async (t) => {
  const w = TestRepo.init(t);
  const head = w.commit('one', { 'a.txt': 'a\n' });
  const git = new Git({ dir: w.dir });
  t.equal((await git.readBlob(`${head}:a.txt`))?.toString(), 'a\n', 'read before');
  git.dispose();
  await t.rejects(git.readBlob(`${head}:a.txt`), /closed for good/, 'refused after');
  t.equal((git as unknown as { batch: unknown }).batch, null, 'and no reader was started');
});
