// Issue 24, nothing silent for long: the progress form (src/progress.ts) with a terminal (one
// line updated in place with \r) and without (one line per phase), `repo warm` under a real
// pseudo-terminal (util-linux `script`) and through a pipe, `repo create --upstream … --wait`
// returning once the warm-up is done, and /healthz saying `warming` with a count meanwhile.

import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Progress, formatDuration, formatProgress, slowPhase } from '../../src/progress.js';
import { CLI, cliRun } from '../helpers/serve.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';

function recorder(isTTY: boolean) {
  let now = 0;
  const out: string[] = [];
  const p = new Progress({ write: (s) => out.push(s), isTTY, now: () => now, everyMs: 250 });
  return { p, out, advance: (ms: number) => (now += ms) };
}

t.test('the figures: files done of the total, rate, time left', async (t) => {
  t.equal(formatProgress({ label: 'patchgate: warming app', done: 100, total: 400, elapsedMs: 10_000 }), 'patchgate: warming app: 100/400 files parsed, 10 files/s, about 30 s left');
  t.equal(formatProgress({ label: 'x', done: 5, total: 10, elapsedMs: 2_000 }), 'x: 5/10 files parsed, 2.5 files/s, about 2 s left');
  t.equal(formatProgress({ label: 'x', done: 0, total: 10, elapsedMs: 0 }), 'x: 0/10 files parsed', 'no rate before there is one');
  t.equal(formatProgress({ label: 'x', done: 7, total: null, elapsedMs: 1000 }), 'x: 7 files parsed, 7.0 files/s');
  t.equal(formatDuration(125_000), '2 min 05 s');
  t.equal(formatDuration(3_720_000), '1 h 02 min');
});

t.test('on a terminal: one line rewritten in place, at most every 250 ms, ended by a newline', async (t) => {
  const { p, out, advance } = recorder(true);
  p.phase('patchgate: warming app', 1000);
  for (let i = 0; i < 10; i++) {
    advance(100);
    p.tick(50);
  }
  p.end();
  t.ok(out.every((s) => s.startsWith('\r')), 'every write returns to the start of the line');
  t.ok(out.slice(0, -1).every((s) => !s.includes('\n') && s.endsWith('\x1b[K')), 'updates never start a new line and clear what was longer');
  t.equal(out.length, 1 + 3 + 1, 'the first draw, updates at 300, 600 and 900 ms (250 ms apart at least), the end');
  t.match(out[2]!, /^\rpatchgate: warming app: \d+\/1000 files parsed, \d+ files\/s, about .* left\x1b\[K$/);
  t.match(out.at(-1)!, /^\rpatchgate: warming app: done, 500 files parsed in 1 s \(500 files\/s\)\x1b\[K\n$/);
});

t.test('elsewhere: one line when a phase starts and one when it ends, no control characters', async (t) => {
  const { p, out, advance } = recorder(false);
  p.phase('patchgate: warming app', 3);
  for (let i = 0; i < 3; i++) {
    advance(1000);
    p.tick();
  }
  p.phase('patchgate: warming lib', 2); // a new phase ends the one before
  p.tick(2);
  p.end('note');
  t.same(out, [
    'patchgate: warming app: 3 files to read\n',
    'patchgate: warming app: done, 3 files parsed in 3 s (1 files/s)\n',
    'patchgate: warming lib: 2 files to read\n',
    'patchgate: warming lib: done, 2 files parsed in 0 s; note\n',
  ]);
  t.ok(out.every((s) => !/[\r\x1b]/.test(s)));
});

t.test('with a delay (patchgate contract): nothing for a short phase, the usual form for a long one', async (t) => {
  let now = 0;
  const out: string[] = [];
  const p = new Progress({ write: (s) => out.push(s), isTTY: false, now: () => now, delayMs: 2000 });
  p.phase('patchgate: contract', 10);
  now = 1500;
  p.tick(5);
  p.end();
  t.same(out, [], 'done within 2 s: silent');
  p.phase('patchgate: contract', 10);
  now += 1000;
  p.tick(4);
  t.same(out, []);
  now += 1500;
  p.tick(4);
  now += 500;
  p.tick(2);
  p.end();
  t.same(out, ['patchgate: contract: 10 files to read\n', 'patchgate: contract: done, 10 files parsed in 3 s (3 files/s)\n']);
});

/** A data folder with repository `app` whose main has `n` Python files, pushed by a person. */
async function seeded(t: Parameters<Parameters<typeof t.test>[1]>[0], n: number) {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const w = TestRepo.init(t);
  w.commit('base', Object.fromEntries(Array.from({ length: n }, (_, i) => [`src/m${i}.py`, `def f${i}(a: int) -> int:\n    return a\n`])));
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  if (r.code) throw new Error(r.stderr);
  return { gate, w };
}

function run(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => execFile(cmd, args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr })));
}

t.test('repo warm: in place under a terminal, lines through a pipe', async (t) => {
  const { gate } = await seeded(t, 12);
  await gate.srv.close(); // one process per data folder
  const piped = await cliRun(['repo', 'warm', 'app', '--data', gate.data]);
  t.equal(piped.code, 0, piped.stderr);
  t.match(piped.stdout, /app: contract of [0-9a-f]{40} cached in \d+ ms/);
  t.match(piped.stderr, /^patchgate: warming app: 12 files to read\npatchgate: warming app: done, 12 files parsed in \d+ s/);
  t.notOk(piped.stderr.includes('\r'), 'no carriage return off a terminal');
  const script = ['/usr/bin/script', '/bin/script'].find((p) => existsSync(p));
  if (!script) return void t.skip('util-linux script is not installed: the terminal form is covered by the unit test above');
  const tty = await run(script, ['-qec', `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} repo warm app --data ${JSON.stringify(gate.data)}`, '/dev/null']);
  t.equal(tty.code, 0, tty.stdout);
  t.match(tty.stdout, /\rpatchgate: warming app: 0\/12 files parsed/, 'the first draw, in place');
  t.match(tty.stdout, /\rpatchgate: warming app: done, 12 files parsed in \d+ s/, 'the end replaces the line');
});

t.test('/healthz says warming with a count while a warm-up is queued or running', async (t) => {
  const { gate } = await seeded(t, 3);
  await gate.srv.hooks.warmed;
  const body = async () => (await fetch(`http://127.0.0.1:${gate.srv.port}/healthz`)).text();
  t.equal(await body(), 'ok\n');
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  gate.srv.hooks.warmRepo(join(gate.data, 'repos', 'app.git'), () => held);
  const during = await (await fetch(`http://127.0.0.1:${gate.srv.port}/healthz`)).text();
  t.match(during, /^ok, warming: 0 files, 1 repository queued\n$/, 'healthy (pushes are judged), and warming');
  t.same(gate.srv.hooks.warmingStatus(), { repositories: 1, done: 0, total: null });
  release();
  await gate.srv.hooks.warmed;
  t.equal(await body(), 'ok\n', 'ok again once the warm-up is done');
  t.equal(gate.srv.hooks.warmingStatus(), null);
});

t.test('repo create --upstream … --wait returns when the warm-up is done', async (t) => {
  const upstream = tempDir('pg-up-');
  t.teardown(() => rmSync(upstream, { recursive: true, force: true }));
  const w = TestRepo.init(t);
  w.commit('base', Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`src/m${i}.py`, `def f${i}() -> None:\n    pass\n`])));
  await gitAsync(upstream, ['init', '-q', '--bare', '.']);
  t.equal((await gitAsync(w.dir, ['push', upstream, 'main'])).code, 0);
  const data = tempDir('pg-data-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const r = await cliRun(['repo', 'create', 'app', '--upstream', `file://${upstream}`, '--wait', '--data', data]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /refs\/heads\/main is [0-9a-f]{40} from upstream .*; app: contract of [0-9a-f]{40} cached in \d+ ms/);
  t.notMatch(r.stdout, /warming in the background/);
  t.match(r.stderr, /patchgate: warming app: done, 5 files parsed/, 'its progress was reported, and it ended before the command did');
});

t.test('slowPhase (a push\'s first contract parse, audit verify on PostgreSQL): silent when short, announced by a timer when long', async (t) => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  for (const isTTY of [false, true]) {
    const out: string[] = [];
    let asked = 0;
    const r = await slowPhase({ write: (s) => out.push(s), isTTY, delayMs: 0, verb: 'checked', unit: 'rows' }, 'patchgate: audit verify', async () => (asked++, 5), async (tick) => {
      tick(2);
      await sleep(30); // the 0 ms timer announces the phase meanwhile
      tick(3);
      return 'result';
    });
    t.equal(r, 'result', 'the work\'s value');
    t.equal(asked, 1, 'the total is asked once, when the phase is announced');
    if (isTTY) {
      t.ok(out.every((s) => s.startsWith('\r')), 'a terminal: in place');
      t.match(out[0]!, /^\rpatchgate: audit verify: 2\/5 rows checked.*\x1b\[K$/, 'the units done before the announcement count');
      t.match(out.at(-1)!, /^\rpatchgate: audit verify: done, 5 rows checked in \d+ s.*\x1b\[K\n$/);
    } else {
      t.equal(out.length, 2, 'off a terminal: two lines');
      t.equal(out[0], 'patchgate: audit verify: 5 rows to read\n');
      t.match(out[1]!, /^patchgate: audit verify: done, 5 rows checked in \d+ s/);
      t.notOk(out.some((s) => /[\r\x1b]/.test(s)), 'no control characters');
    }
  }
  const out: string[] = [];
  let asked = 0;
  await slowPhase({ write: (s) => out.push(s), isTTY: false, delayMs: 60_000 }, 'x', async () => (asked++, 1), async (tick) => tick());
  t.same(out, [], 'ended before the delay: nothing written');
  t.equal(asked, 0, 'and the total never asked');
  const failed: string[] = [];
  await t.rejects(slowPhase({ write: (s) => failed.push(s), isTTY: false, delayMs: 0 }, 'y', async () => null, async () => {
    await sleep(30);
    throw new Error('boom');
  }), /boom/);
  t.equal(failed.length, 2);
  t.equal(failed[0], 'y: started\n', 'no total known: started');
  t.match(failed[1]!, /^y: done, 0 files parsed in \d+ s.*; stopped\n$/, 'a failure ends the phase, says it stopped, and is thrown on');
});
