// The fsck a push's receive-pack gets (src/git/push-fsck.ts): the ids relaxed for a person are
// real git fsck ids that receive-pack takes, none of those that change how an object is read;
// the environment adds them after an operator's own GIT_CONFIG_COUNT entries; git's warnings
// are read across packets; and a spare receive-pack is only taken by a push of its own fsck.

import t from 'tap';
import { execFile, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fsckEnv, fsckFor, FsckWarnings, fsckOf, RELAXED_FSCK_IDS } from '../../src/git/push-fsck.js';
import { GitSpawner } from '../../src/git/spawner.js';
import { GIT_ENV, removeTree, tempDir } from '../helpers/repo.js';

const env = { ...process.env, ...GIT_ENV };
const git = (cwd: string, args: string[]): string => execFileSync('git', args, { cwd, env, encoding: 'utf8' }).trim();

function bare(t: { teardown(fn: () => unknown): void }): string {
  const root = tempDir('pg-fsck-');
  t.teardown(() => removeTree(root));
  const dir = join(root, 'r.git');
  git(root, ['init', '-q', '--bare', '--initial-branch=main', dir]);
  return dir;
}

t.test('the relaxed ids: only format slips, each one git takes', async (t) => {
  const strict = ['treeNotSorted', 'duplicateEntries', 'hasDot', 'hasDotdot', 'hasDotgit', 'badTree', 'badTreeSha1', 'badParentSha1', 'missingTree', 'nulInCommit',
    'badObjectSha1', 'nullSha1', 'emptyName', 'fullPathname', 'multipleAuthors', 'missingAuthor', 'missingCommitter', 'badType', 'unknownType', 'missingObject', 'missingTypeEntry'];
  for (const id of strict) t.notOk(RELAXED_FSCK_IDS.some((r) => r.toLowerCase() === id.toLowerCase()), `${id} stays strict`);
  t.notOk(RELAXED_FSCK_IDS.some((r) => /^git(modules|attributes)/i.test(r)), 'no gitmodules*/gitattributes* id is relaxed');
  t.ok(RELAXED_FSCK_IDS.includes('badTimezone') && RELAXED_FSCK_IDS.includes('zeroPaddedFilemode'), 'the slips requests and old trees carry are');
  // receive-pack says `skipping unknown msg id` for an id it does not know: every one is known to this git.
  const dir = bare(t);
  const out = await new Promise<{ code: number; stderr: string }>((resolve) => {
    const c = execFile('git-receive-pack', ['--stateless-rpc', dir], { env: fsckEnv('relaxed', env) }, (err, _o, stderr) => resolve({ code: err ? 1 : 0, stderr }));
    c.stdin!.end('0000');
  });
  t.equal(out.code, 0, 'receive-pack starts with them');
  t.notMatch(out.stderr, /unknown msg id|invalid/i, out.stderr || 'and knows every one');
});

t.test('the environment: strict is the daemon\'s own; relaxed adds after what is there', async (t) => {
  t.equal(fsckFor('agent'), 'strict');
  t.equal(fsckFor('human'), 'relaxed');
  t.equal(fsckFor('admin'), 'relaxed');
  const base = { PATH: '/bin', GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'core.x', GIT_CONFIG_VALUE_0: 'y' };
  t.equal(fsckEnv('strict', base), base, 'strict: the environment unchanged');
  const e = fsckEnv('relaxed', base);
  t.equal(e.GIT_CONFIG_COUNT, String(1 + RELAXED_FSCK_IDS.length));
  t.equal(e.GIT_CONFIG_KEY_0, 'core.x', 'an operator\'s entry is kept');
  t.equal(e.GIT_CONFIG_KEY_1, `receive.fsck.${RELAXED_FSCK_IDS[0]}`);
  t.equal(e.GIT_CONFIG_VALUE_1, 'warn');
  t.equal(base.GIT_CONFIG_COUNT, '1', 'the base is not changed');
  const dir = bare(t);
  const seen = execFileSync('git', ['config', '--get-regexp', '^receive\\.fsck\\.'], { cwd: dir, env: fsckEnv('relaxed', env), encoding: 'utf8' });
  t.equal(seen.trim().split('\n').length, RELAXED_FSCK_IDS.length, 'git reads one setting per id');
  t.match(seen, /receive\.fsck\.badtimezone warn/);
});

t.test('git\'s warnings, read across packets; other text and repeats left out', async (t) => {
  const w = new FsckWarnings(2);
  const id = '5e6ecdad9f69b1ff789a17733b8edc6fd7091bd8';
  w.push(Buffer.from(`Resolving deltas: 100%\rwarning: object ${id}: badTim`));
  w.push(Buffer.from(`ezone: invalid author/committer line - bad time zone        \nwarning: object ${id}: badTimezone: again\n`));
  w.push(Buffer.from(`warning: object ${id}: hasDotgit: contains '.git'\n`));
  t.same(w.found, [{ object: id, messageId: 'badTimezone', message: 'invalid author/committer line - bad time zone' }], 'one finding, whole, once; an id not relaxed is not one of them');
  w.push(Buffer.from(`warning: object ${'a'.repeat(40)}: zeroPaddedFilemode: x\nwarning: object ${'b'.repeat(40)}: zeroPaddedFilemode: x\n`));
  t.equal(w.found.length, 2, 'at most max kept');
  t.equal(w.more, 1, 'the rest counted');
});

t.test('a spare is taken only by a push of the fsck it was started with', async (t) => {
  const sp = new GitSpawner(() => {});
  t.teardown(() => sp.stop());
  sp.start();
  // Once the helper serves (one child run through it).
  for (let i = 0; i < 100; i++) {
    const c = sp.spawn('true', []);
    if (c) {
      c.stdout.resume();
      c.stderr.resume();
      await new Promise((r) => c.once('exit', r));
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const dir = bare(t);
  sp.spares.prime(dir, 'relaxed');
  const [pid] = await sp.spares.pids(dir);
  t.ok(pid, 'a spare for a person runs');
  t.equal(sp.spares.take(dir, 'strict'), null, 'an agent\'s POST does not take a person\'s spare');
  t.equal(sp.spares.size, 1, 'which is left for a person\'s push');
  const c = sp.spares.take(dir, 'relaxed');
  t.equal(c?.pid, pid, 'a person\'s POST takes it');
  t.equal(fsckOf(c!), 'relaxed', 'marked relaxed');
  c!.stdout.resume();
  c!.stderr.resume();
  c!.stdin.end('0000');
  await new Promise((r) => c!.once('exit', r));

  sp.spares.prime(dir, 'strict');
  await sp.spares.pids(dir);
  t.equal(sp.spares.take(dir, 'relaxed'), null, 'a person\'s POST does not take an agent\'s spare');
  const s = sp.spares.take(dir, 'strict');
  t.ok(s, 'an agent\'s does');
  t.equal(fsckOf(s!), 'strict');
  s!.stdout.resume();
  s!.stderr.resume();
  s!.stdin.end('0000');
  await new Promise((r) => s!.once('exit', r));
});
