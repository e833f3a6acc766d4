// The in-process reader of a push's loose quarantine (src/git/loose-reader.ts) must answer
// exactly as `git cat-file --batch-command` over quarantine + repository does: same ids,
// types, sizes and bytes, `missing` for the same names; a damaged loose file is an error,
// never another object's content.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { Git } from '../../src/git/git.js';
import { looseQuarantineIds } from '../../src/git/loose-reader.js';

function sh(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}, input?: string): string {
  return execFileSync('git', args, { cwd, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: cwd, ...env }, input, encoding: 'utf8' }).trim();
}

/** A bare repository with one commit, and a quarantine folder holding a second commit's new objects. */
function setup(t: Tap.Test) {
  const root = t.testdir({});
  const repo = join(root, 'repo.git');
  sh(root, ['init', '-q', '--bare', repo]);
  const ident = { GIT_AUTHOR_NAME: 'a', GIT_AUTHOR_EMAIL: 'a@x', GIT_COMMITTER_NAME: 'a', GIT_COMMITTER_EMAIL: 'a@x', GIT_AUTHOR_DATE: '1700000000 +0000', GIT_COMMITTER_DATE: '1700000000 +0000' };
  const blob = (dir: string, text: string, env: NodeJS.ProcessEnv = {}) => sh(dir, ['hash-object', '-w', '--stdin'], env, text);
  const tree = (dir: string, lines: string, env: NodeJS.ProcessEnv = {}) => sh(dir, ['mktree'], env, lines);
  // base commit in the repository: src/a.ts, README, a submodule entry
  const a = blob(repo, 'export const a = 1;\n');
  const readme = blob(repo, 'hello\n');
  const src = tree(repo, `100644 blob ${a}\ta.ts\n`);
  const sub = '1234567890123456789012345678901234567890';
  const top = tree(repo, `040000 tree ${src}\tsrc\n100644 blob ${readme}\tREADME\n160000 commit ${sub}\tvendor\n`);
  const base = sh(repo, ['commit-tree', top, '-m', 'base'], ident);
  sh(repo, ['update-ref', 'refs/heads/main', base]);
  // the push: a new src/b.ts in the quarantine, README unchanged (in the repository only)
  const q = join(repo, 'objects', 'tmp_objdir-incoming-test');
  mkdirSync(q, { recursive: true });
  const qenv = { GIT_OBJECT_DIRECTORY: q, GIT_ALTERNATE_OBJECT_DIRECTORIES: join(repo, 'objects'), GIT_QUARANTINE_PATH: q };
  const b = blob(repo, 'export function b(x: number): string { return String(x); }\n', qenv);
  const src2 = tree(repo, `100644 blob ${a}\ta.ts\n100644 blob ${b}\tb.ts\n`, qenv);
  const top2 = tree(repo, `040000 tree ${src2}\tsrc\n100644 blob ${readme}\tREADME\n160000 commit ${sub}\tvendor\n`, qenv);
  const head = sh(repo, ['commit-tree', top2, '-p', base, '-m', 'push'], { ...ident, ...qenv });
  const tag = sh(repo, ['mktag'], qenv, `object ${head}\ntype commit\ntag v1\ntagger a <a@x> 1700000000 +0000\n\nv1\n`);
  return { repo, q, qenv, ids: { a, b, readme, src, src2, top, top2, base, head, tag, sub } };
}

t.test('answers as cat-file does over quarantine and repository', async (t) => {
  const { repo, q, qenv, ids } = setup(t);
  t.same(looseQuarantineIds(q), new Set([ids.b, ids.src2, ids.top2, ids.head, ids.tag]), 'the quarantine holds loose objects only: these');
  const store = new Git({ dir: repo, bare: true });
  const mine = new Git({ dir: repo, env: qenv, bare: true, store });
  const plain = new Git({ dir: repo, env: qenv, bare: true });
  t.teardown(() => { mine.close(); plain.close(); store.close(); });
  const specs = [
    ids.b, ids.a, ids.readme, ids.head, ids.base, ids.top2, ids.tag,
    `${ids.head}:src/b.ts`, `${ids.head}:src/a.ts`, `${ids.head}:README`, `${ids.head}:src`, `${ids.head}:`,
    `${ids.tag}:src/b.ts`, `${ids.top2}:src/b.ts`, `${ids.base}:src/b.ts`, `${ids.head}:nope`, `${ids.head}:src/a.ts/x`,
    `${ids.head}:vendor`, `${ids.head}:vendor/x`, `${ids.head}:./README`, `${ids.head}:src//a.ts`, 'refs/heads/main:README',
    'f'.repeat(40), `${'e'.repeat(40)}:README`,
  ];
  for (const spec of specs) {
    const want = await plain.pathId(spec, null).catch((e: Error) => `error ${e.name}`);
    const got = await mine.pathId(spec, null).catch((e: Error) => `error ${e.name}`);
    t.same(got, want, `header of ${spec.slice(0, 60)}`);
    if (want && typeof want === 'object' && want.type === 'blob') {
      t.same(await mine.readBlob(spec), await plain.readBlob(spec), `bytes of ${spec.slice(0, 60)}`);
    }
  }
  t.same(await mine.readTree(ids.src2), await plain.readTree(ids.src2), 'a quarantine tree lists the same entries');
  t.same(await mine.storedBeforePush([ids.a, ids.b, ids.readme]), new Set([ids.a, ids.readme]), 'what the repository had before the push');
  t.same([...(await mine.storedBeforePush([ids.a, ids.b]))], [...(await plain.storedBeforePush([ids.a, ids.b]))], 'storedBeforePush as the process-based answer');
});

t.test('no git process for a loose-only quarantine; one for a quarantine with a pack', async (t) => {
  const { repo, q, qenv, ids } = setup(t);
  const store = new Git({ dir: repo, bare: true });
  t.teardown(() => store.close());
  await store.pathId(ids.base, null); // the store's reader is running already, as in the daemon
  const mine = new Git({ dir: repo, env: qenv, bare: true, store });
  t.equal((await mine.pathId(`${ids.head}:src/b.ts`, null))?.id, ids.b);
  t.equal(quarantineChildren(q), 0, 'no process was started for the push');
  mine.close();
  // a pack in the quarantine: read by git
  const packDir = join(q, 'pack');
  mkdirSync(packDir);
  execFileSync('git', ['pack-objects', '-q', join(packDir, 'pack')], { cwd: repo, input: `${ids.readme}\n`, env: { ...process.env, ...qenv } });
  t.equal(looseQuarantineIds(q), null, 'a pack makes it a case for git');
  const packed = new Git({ dir: repo, env: qenv, bare: true, store });
  t.equal((await packed.pathId(`${ids.head}:README`, null))?.id, ids.readme);
  t.equal(quarantineChildren(q), 1, 'a cat-file was started for the quarantine with a pack');
  packed.close();
});

t.test('a damaged loose object is an error, not an object', async (t) => {
  const { repo, q, qenv, ids } = setup(t);
  const store = new Git({ dir: repo, bare: true });
  t.teardown(() => store.close());
  const file = join(q, ids.b.slice(0, 2), ids.b.slice(2));
  const other = deflateSync(Buffer.from('blob 3\0abc'));
  chmodSync(file, 0o644);
  writeFileSync(file, other);
  const mine = new Git({ dir: repo, env: qenv, bare: true, store });
  await t.rejects(mine.readBlob(ids.b), { name: 'GitError', message: /hashes to/ }, 'content that is not the named object');
  writeFileSync(file, Buffer.from('not zlib at all'));
  await t.rejects(mine.readBlob(ids.b), { name: 'GitError', message: /does not inflate/ });
  await t.rejects(mine.pathId(ids.b, null), { name: 'GitError' }, 'a header read fails too');
  writeFileSync(file, deflateSync(Buffer.from('blob 99\0abc')));
  await t.rejects(mine.readBlob(ids.b), { name: 'GitError', message: /header says 99/ });
  mine.close();
  t.ok(readdirSync(q).length > 0);
});

/** Live child processes of this test process that run with this quarantine (a push's own reader). */
function quarantineChildren(q: string): number {
  const me = String(process.pid);
  let n = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.split(') ')[1]?.split(' ')[1] !== me) continue;
      if (readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`GIT_QUARANTINE_PATH=${q}`)) n++;
    } catch {
      // gone
    }
  }
  return n;
}
