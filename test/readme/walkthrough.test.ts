// The README's walk-through, run as written so the README cannot drift: the shell block
// between `<!-- walkthrough:start -->` and `<!-- walkthrough:end -->` is taken from README.md
// itself and run by bash (-e, -u, pipefail) in an empty temp folder. The only rewrites, as the
// README says: the port 7005 becomes a free port, and `patchgate` on PATH is a two-line shim
// running this checkout's dist/cli.js (what `npm install -g .` installs). A test git identity
// is set in the environment (the README asks the reader for one).

import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { CLI } from '../helpers/serve.js';
import { GIT_ENV, tempDir } from '../helpers/repo.js';

const README = join(import.meta.dirname, '..', '..', 'README.md');

export function walkthrough(markdown: string): string {
  const m = /<!-- walkthrough:start -->\s*```sh\n([\s\S]*?)```\s*<!-- walkthrough:end -->/.exec(markdown);
  if (!m) throw new Error('README.md has no walk-through block between <!-- walkthrough:start --> and <!-- walkthrough:end -->');
  return m[1]!;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function hasCurl(): Promise<boolean> {
  return new Promise((resolve) => execFile('curl', ['--version'], (err) => resolve(!err)));
}

t.test('the README walk-through runs as written and ends in a refused agent push', async (t) => {
  if (!(await hasCurl())) {
    // .ci/run installs curl; in CI its absence is a failure, by hand a skip that says why.
    if (process.env.CI) return void t.fail('curl is missing (the walk-through uses it); .ci/run installs it');
    return void t.skip('curl is not installed: the README walk-through uses it (apt-get install curl)');
  }
  const block = walkthrough(readFileSync(README, 'utf8'));
  t.match(block, /patchgate serve/, 'the block starts the server');
  t.notMatch(block, /node dist\/cli\.js/, 'the walk-through uses the installed `patchgate`');
  const port = await freePort();
  const script = block.replaceAll('7005', String(port));
  const dir = tempDir('pg-readme-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, '.bin');
  mkdirSync(bin);
  // The shim notes the pid of each `serve` it starts (exec keeps it), so teardown can end that
  // process by its id if the walk-through failed before its own `kill $SERVER`.
  const pids = join(dir, 'serve.pids');
  writeFileSync(join(bin, 'patchgate'), `#!/bin/sh\n[ "$1" = serve ] && echo $$ >> "${pids}"\nexec "${process.execPath}" "${CLI}" "$@"\n`);
  chmodSync(join(bin, 'patchgate'), 0o755);
  const work = join(dir, 'work');
  mkdirSync(work);
  writeFileSync(join(dir, 'walkthrough.sh'), script);
  const env = { ...process.env, ...GIT_ENV, PATH: `${bin}:${process.env.PATH}`, PATCHGATE_DATA: '', PATCHGATE_PORT: '' };
  const run = await new Promise<{ code: number | string; out: string }>((resolve) => {
    const child = spawn('bash', ['-euo', 'pipefail', join(dir, 'walkthrough.sh')], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    // A deadline only so a broken README cannot hang the suite; nothing is asserted on time.
    const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
    child.once('exit', (code, sig) => {
      clearTimeout(timer);
      resolve({ code: code ?? sig ?? -1, out });
    });
  });
  // The server is the walk-through's own child; make sure it is gone whatever happened.
  t.teardown(() => {
    let list = '';
    try {
      list = readFileSync(pids, 'utf8');
    } catch {
      return;
    }
    for (const pid of list.split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already stopped by the walk-through's own kill
      }
    }
  });
  t.equal(run.code, 0, `the walk-through exits 0:\n${run.out}`);
  t.match(run.out, new RegExp(`REJECT refs/heads/agent/fix \\(new\\)\\.\\.[0-9a-f]{12} for agent-1`), 'the agent push is refused');
  t.match(run.out, /\[write-block\] commit [0-9a-f]{12} modifies protected path tests\/test_app\.py/);
  t.match(run.out, /next step: .*drop those commits/, 'a protected-only push is told to drop its commits');
  t.match(run.out, /\$ git reset --hard [0-9a-f]{40}/, 'with the command');
  t.ok(run.out.includes(`$ git config remote.patchgate-fix.url "$(git remote -v | awk -v u='http://127.0.0.1:${port}/app.git' `), 'a remote for the fix, from the gate\'s URL without the token');
  t.match(run.out, /\$ git push patchgate-fix HEAD:refs\/heads\/agent\/fix/, 'and the push again, as a command');
  t.match(run.out, /pre-receive hook declined/);
  t.match(run.out, /refused, as it should be/);
  const pushId = /push (\S+) audited/.exec(run.out)?.[1];
  t.ok(pushId, 'the refusal names the push id');
  t.match(run.out, new RegExp(`push=${pushId}`), 'audit lists the same push id');
  t.match(run.out, /write-block\s+fail/, 'audit show prints the rule trace');
  t.notMatch(run.out, /undefined/, 'no undefined in any output');
  t.match(run.out, /ok: \d+ row\(s\), hash chain intact/);
  t.match(run.out, /patchgate_pushes_total\{verdict="accept",rule="none"\} 1/, 'metrics count the human push');
  t.match(run.out, /patchgate_pushes_total\{verdict="reject",rule="write-block"\} 1/, 'and the refused agent push');
  const log = readFileSync(join(work, 'gate.log'), 'utf8').split('\n').filter((l) => l.startsWith('{'));
  t.ok(log.length > 0, 'gate.log holds JSON lines');
});
