// Issue 49, nothing waits in silence: `patchgate check` on a cold contract reports its parse as
// `contract` does (src/progress.ts slowPhase through the contract rule), on a terminal (one line
// redrawn in place) and off one (a line per phase start and end); and `serve`'s warm-up lines are
// logged at info level, not warn (a real `serve` process, its JSON log read line by line).

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { runCheck } from '../../src/commands/check.js';
import { cli, serve } from '../helpers/serve.js';
import { TestRepo, tempDir } from '../helpers/repo.js';

const mod = (name: string) => `def ${name}(x: int) -> int:\n    return x\n`;

/** main with 4 Python files; agent/api adds a fifth (the contract moves, so both digests are computed). */
function project(t: Parameters<typeof TestRepo.init>[0]): TestRepo {
  const r = TestRepo.init(t);
  r.commit('base', { 'src/a.py': mod('a'), 'src/b.py': mod('b'), 'src/pkg/c.py': mod('c'), 'src/pkg/d.py': mod('d') });
  r.checkout('agent/api', true).commit('api', { 'src/e.py': mod('e') });
  return r;
}

/** check with its progress recorded; delay 0 (the CLI waits 2 s first), so a small tree shows too. */
async function checked(r: TestRepo, isTTY: boolean): Promise<{ verdict: string; out: string[] }> {
  const out: string[] = [];
  const d = await runCheck({ repo: r.dir, base: 'main', head: 'agent/api', role: 'agent', progress: { write: (s) => out.push(s), isTTY, delayMs: 0 } });
  return { verdict: d.verdict, out };
}

t.test('check on a cold contract, off a terminal: a line when each parse starts and one when it ends', async (t) => {
  const { verdict, out } = await checked(project(t), false);
  t.equal(verdict, 'reject', 'an added function moves the contract');
  t.ok(out.every((s) => s.endsWith('\n') && !/[\r\x1b]/.test(s)), 'whole lines, no control characters');
  t.match(out[0]!, /^patchgate: contract of the pushed commit [0-9a-f]{12} \(not cached yet: the first push of this repository or of this tree\): 5 files to read\n$/);
  t.match(out[1]!, /^patchgate: contract of the pushed commit [0-9a-f]{12} \(.*\): done, 5 files parsed in \d+ s/);
  t.match(out[2]!, /^patchgate: contract of the merge-base [0-9a-f]{12} \(.*\): 4 files to read\n$/);
  t.match(out[3]!, /^patchgate: contract of the merge-base [0-9a-f]{12} \(.*\): done, 2 files parsed in [^;]*; 2 skipped \(in folders whose contract was known already/, 'its src/pkg is the pushed commit\'s: 2 parsed and 2 skipped make the 4 it said');
  t.equal(out.length, 4);
});

t.test('check on a cold contract, on a terminal: each parse is one line redrawn in place, ended by a newline', async (t) => {
  const { out } = await checked(project(t), true);
  t.ok(out.every((s) => s.startsWith('\r') && s.includes('\x1b[K')), 'every write returns to the start of the line and clears its end');
  const ends = out.filter((s) => s.endsWith('\n'));
  t.equal(ends.length, 2, 'one finished line per parse (the pushed commit, the merge-base)');
  t.match(ends[0]!, /^\rpatchgate: contract of the pushed commit [0-9a-f]{12} \(.*\): done, 5 files parsed in \d+ s.*\x1b\[K\n$/);
  t.match(ends[1]!, /^\rpatchgate: contract of the merge-base [0-9a-f]{12} \(.*\): done, .*\x1b\[K\n$/);
  t.ok(out.filter((s) => !s.endsWith('\n')).every((s) => /^\rpatchgate: contract of the (pushed commit|merge-base) [0-9a-f]{12} \(.*\): \d+\/\d+ files parsed/.test(s)), 'the lines in between count files of the total');
});

t.test('serve: the warm-up lines are logged at info level, none at warn', async (t) => {
  const data = tempDir('pg-serve-warm-');
  t.teardown(() => execFileSync('rm', ['-rf', data]));
  cli('repo', 'create', 'app', '--data', data);
  // main, fetched straight into the bare repository (no push, so no hook is asked): the warm-up has a tip to parse.
  const w = TestRepo.init(t);
  w.commit('base', { 'src/a.py': mod('a'), 'src/b.py': mod('b') });
  execFileSync('git', ['--git-dir', join(data, 'repos', 'app.git'), 'fetch', '-q', w.dir, 'main:main']);
  const s = await serve(data, [], 30_000, { ...process.env, PATCHGATE_LOG_FORMAT: 'json', PATCHGATE_DATA: '' });
  t.teardown(async () => {
    s.child.kill('SIGTERM');
    await s.exited;
  });
  // The warm-up runs after "serving": wait for its done line (the child's output, not a clock).
  await new Promise<void>((resolve) => {
    const seen = (): void => {
      if (/warming [^"]*: done,/.test(s.out())) resolve();
    };
    s.child.stderr!.on('data', seen);
    seen();
  });
  const records = s.out().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg?: string });
  const warming = records.filter((r) => /^patchgate: warming /.test(r.msg ?? ''));
  t.ok(warming.length >= 2, `the warm-up's lines are in the log: ${warming.map((r) => r.msg).join(' | ')}`);
  t.match(warming.map((r) => r.msg).join('\n'), /warming .*app\.git: 2 files to read\n.*warming .*app\.git: done, 2 files parsed/);
  t.same([...new Set(warming.map((r) => r.level))], [30], 'every warm-up line at info (30)');
  t.same(records.filter((r) => r.level >= 40 && /warm/i.test(r.msg ?? '')).map((r) => r.msg), [], 'no warm-up line at warn or above');
});
