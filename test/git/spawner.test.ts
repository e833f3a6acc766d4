// The spawn helper (src/git/spawner.ts): programs it starts are children of the helper, not of
// this process; their stdin and stdout carry every byte both ways (megabytes, nothing cut off
// before 'exit'); kill reaches them; a helper that dies fails its children and comes back;
// and the routing of node-git-server's spawns takes its two service commands only.

import t from 'tap';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { GitSpawner, HelperChild, routeServiceSpawns } from '../../src/git/spawner.js';

const ppidOf = (pid: number): number => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);

/** Started, and one child through it has run to its end. */
async function started(sp: GitSpawner): Promise<void> {
  sp.start();
  for (let i = 0; i < 100; i++) {
    const c = sp.spawn('true', []);
    if (c) return void (await collect(c));
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the spawn helper did not start');
}

function collect(c: HelperChild): Promise<{ out: Buffer; code: number | null; signal: string | null; outAtExit: number }> {
  const chunks: Buffer[] = [];
  c.stdout.on('data', (b: Buffer) => chunks.push(b));
  c.stderr.resume();
  return new Promise((resolve, reject) => {
    c.once('error', reject);
    c.once('exit', (code: number | null, signal: string | null) => {
      const n = chunks.reduce((a, b) => a + b.length, 0);
      resolve({ out: Buffer.concat(chunks), code, signal, outAtExit: n });
    });
  });
}

t.test('a child of the helper, with all of its output before exit', async (t) => {
  const sp = new GitSpawner();
  t.teardown(() => sp.stop());
  sp.start();
  t.equal(sp.spawn('true', []), null, 'before the helper says it listens, nothing is sent to it: the caller spawns');
  await started(sp);
  const c = sp.spawn('cat', [])!;
  t.ok(c instanceof HelperChild, 'the helper took it');
  const pid = await c.pidReady;
  t.ok(pid && pid > 0, 'a pid');
  t.not(ppidOf(pid!), process.pid, 'its parent is the helper, not this process');
  const data = randomBytes(6 * 1024 * 1024);
  const done = collect(c);
  c.stdin.end(data);
  const r = await done;
  t.equal(r.code, 0);
  t.equal(r.out.length, data.length, 'every byte came back');
  t.equal(r.outAtExit, data.length, "all of it before 'exit'");
  t.equal(createHash('sha256').update(r.out).digest('hex'), createHash('sha256').update(data).digest('hex'));
});

t.test('exit codes, signals and kill', async (t) => {
  const sp = new GitSpawner();
  t.teardown(() => sp.stop());
  await started(sp);
  const bad = await collect(sp.spawn('sh', ['-c', 'echo out; echo err >&2; exit 3'])!);
  t.equal(bad.code, 3);
  t.equal(bad.out.toString(), 'out\n');
  // git closing its stdin early (receive.maxInputSize): the writer is not stuck, its output is all read
  const early = sp.spawn('sh', ['-c', 'echo early; exit 0'])!;
  const e = collect(early);
  early.stdin.on('error', () => {});
  await early.pidReady;
  for (let i = 0; i < 40; i++) early.stdin.write(randomBytes(256 * 1024));
  early.stdin.end();
  const er = await e;
  t.equal(er.code, 0, 'an early exit, while 10 MB were still being written to it');
  t.equal(er.out.toString(), 'early\n', 'its output read to the end');
  const sleeper = sp.spawn('sleep', ['30'])!;
  await sleeper.pidReady;
  const r = collect(sleeper);
  t.ok(sleeper.kill('SIGTERM'));
  const k = await r;
  t.equal(k.signal, 'SIGTERM');
  const missing = sp.spawn('/nonexistent/program', [])!;
  await t.rejects(collect(missing), /ENOENT/, 'a program that does not exist is an error event');
});

t.test('a helper that dies fails its children and is started again', async (t) => {
  const logs: string[] = [];
  const sp = new GitSpawner((l) => logs.push(l));
  t.teardown(() => sp.stop());
  await started(sp);
  const c = sp.spawn('sleep', ['30'])!;
  const pid = (await c.pidReady)!;
  const helper = ppidOf(pid);
  const failed = collect(c);
  process.kill(helper, 'SIGKILL');
  await t.rejects(failed, /spawn helper exited/);
  t.match(logs.join('\n'), /spawn helper: the spawn helper exited/);
  try {
    process.kill(pid, 'SIGKILL'); // its orphan, if the helper could not end it
  } catch {
    // gone already
  }
  let again: HelperChild | null = null;
  for (let i = 0; i < 60 && !again; i++) {
    await new Promise((r) => setTimeout(r, 100));
    again = sp.spawn('echo', ['back']);
  }
  t.ok(again, 'a new helper serves');
  t.equal((await collect(again!)).out.toString(), 'back\n');
  t.not(ppidOf((await sp.spawn('sleep', ['1'])!.pidReady)!), helper, 'from a new helper process');
});

t.test("node-git-server's service spawns only are routed", async (t) => {
  const repo = t.testdir({});
  execFileSync('git', ['init', '-q', '--bare', repo]);
  const sp = new GitSpawner();
  await started(sp);
  const undo = routeServiceSpawns(sp);
  t.teardown(() => {
    undo();
    sp.stop();
  });
  const cp = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  const routed = cp.spawn('git-receive-pack', ['--stateless-rpc', '--advertise-refs', repo]);
  t.ok(routed instanceof HelperChild, 'git-receive-pack with no options: through the helper');
  const direct = execFileSync('git-receive-pack', ['--stateless-rpc', '--advertise-refs', repo], { env: { ...process.env, PATH: `${execFileSync('git', ['--exec-path'], { encoding: 'utf8' }).trim()}:${process.env.PATH}` } });
  t.same((await collect(routed as unknown as HelperChild)).out, direct, 'the same advertisement as git run directly');
  const own = cp.spawn('git', ['--version']);
  t.notOk(own instanceof HelperChild, 'any other command: the real spawn');
  await new Promise((r) => (own as ChildProcess).once('exit', r));
  const withOpts = cp.spawn('git-upload-pack', ['--advertise-refs', repo], { cwd: join(repo) });
  t.notOk(withOpts instanceof HelperChild, 'with options: the real spawn');
  await new Promise((r) => (withOpts as ChildProcess).once('exit', r));
  undo();
  const after = cp.spawn('git-receive-pack', ['--stateless-rpc', '--advertise-refs', repo]);
  t.notOk(after instanceof HelperChild, 'undone: the real spawn again');
  await new Promise((r) => (after as ChildProcess).once('exit', r));
});
