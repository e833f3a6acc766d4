// The spawn helper (src/git/spawner.ts): programs it starts are children of the helper, not of
// this process; their stdin and stdout carry every byte both ways (megabytes, nothing cut off
// before 'exit'); kill reaches them; a helper that dies fails its children and comes back;
// and the routing of node-git-server's spawns takes its two service commands only.

import t from 'tap';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
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

/** The first child a helper of `sp` starts within 6 s, trying every 50 ms (after a helper was lost or a socket replaced), or null. */
async function servedBy(sp: GitSpawner, cmd: string, args: string[]): Promise<HelperChild | null> {
  for (let i = 0; i < 120; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const c = sp.spawn(cmd, args);
    if (c) return c;
  }
  return null;
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
  const again = await servedBy(sp, 'echo', ['back']);
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

t.test('no stdio socket: the daemon starts the program itself, every byte there; the next spawn uses the helper on a new socket', async (t) => {
  const logs: string[] = [];
  const sp = new GitSpawner((l) => logs.push(l));
  t.teardown(() => sp.stop());
  await started(sp);
  const before = sp.socketPath!;
  rmSync(before); // a connect now fails at once (ENOENT), as a stalled accept fails after 5 s
  const c = sp.spawn('cat', [])!;
  t.ok(c instanceof HelperChild, 'the caller still gets the helper-shaped child');
  const head = randomBytes(64 * 1024);
  c.stdin.write(head); // written before the fallback started it: held, then delivered
  const done = collect(c);
  const pid = (await c.pidReady)!;
  t.ok(pid > 0, 'a pid');
  t.equal(ppidOf(pid), process.pid, 'started by this process: the helper could not be given its stdio');
  const rest = randomBytes(3 * 1024 * 1024);
  c.stdin.end(rest);
  const r = await done;
  t.equal(r.code, 0);
  const sent = Buffer.concat([head, rest]);
  t.equal(createHash('sha256').update(r.out).digest('hex'), createHash('sha256').update(sent).digest('hex'), 'every byte came back, in order');
  t.equal(r.outAtExit, sent.length, "all of it before 'exit'");
  t.match(logs.join('\n'), /spawn helper: .*ENOENT.*; cat started from the daemon/, 'the fallback is logged');
  t.not(sp.socketPath, before, 'a new socket in a new folder');
  const again = await servedBy(sp, 'sleep', ['0.3']);
  t.ok(again, 'the helper serves again');
  const p2 = (await again!.pidReady)!;
  t.not(ppidOf(p2), process.pid, 'started by the helper, not by this process');
  t.equal((await collect(again!)).code, 0);
  rmSync(sp.socketPath!);
  const code = sp.spawn('sh', ['-c', 'echo out; exit 4'])!;
  const cr = await collect(code);
  t.equal(cr.code, 4, 'a fallback child: its exit code comes through');
  t.equal(cr.out.toString(), 'out\n');
  rmSync(sp.socketPath!);
  await t.rejects(collect(sp.spawn('/nonexistent/program', [])!), /ENOENT/, 'a fallback program that does not exist is an error event');
});

t.test('a helper that does not answer is stopped: its child fails, a new helper serves', async (t) => {
  const logs: string[] = [];
  const sp = new GitSpawner((l) => logs.push(l), { answerMs: 1000 });
  t.teardown(() => sp.stop());
  await started(sp);
  const probe = sp.spawn('sleep', ['5'])!;
  const helper = ppidOf((await probe.pidReady)!);
  probe.kill();
  await collect(probe).catch(() => undefined);
  process.kill(helper, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(helper, 'SIGKILL');
    } catch {
      // gone
    }
  });
  const stuck = sp.spawn('echo', ['never'])!;
  await t.rejects(collect(stuck), /did not start echo within 1 s/, 'no answer in time: an error, not a wait');
  let gone = false;
  for (let i = 0; i < 100 && !gone; i++) {
    try {
      process.kill(helper, 0);
      await new Promise((res) => setTimeout(res, 20));
    } catch {
      gone = true;
    }
  }
  t.ok(gone, 'the helper that did not answer was killed');
  const again = await servedBy(sp, 'echo', ['back']);
  t.ok(again, 'a new helper serves');
  t.equal((await collect(again!)).out.toString(), 'back\n');
  t.match(logs.join('\n'), /did not start echo within 1 s/);
});
