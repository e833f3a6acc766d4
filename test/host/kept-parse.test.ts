// Work that a limit stopped is kept (issue 47, item 4). Inside GitHub Enterprise (5 s for all
// hooks) a repository the daemon never parsed cannot have its whole contract parsed within one
// push. Each file parsed goes to the cache as it is parsed, so a push stopped by the limit
// leaves its files to the next try, and its refusal says how many are kept and how many are
// left, and names `patchgate warm`, which seeds the cache from the host's own copy first.
// A real daemon (in this process), the real GHES shim in a real bare repository, real pushes.
// The counts are read from the audit rows and the remote: lines, never a time.

import t from 'tap';
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { installHostHooks } from '../../src/host/install.js';
import { loadDaemonConfig } from '../../src/host/config.js';
import { startDaemon, type RunningDaemon } from '../../src/host/daemon.js';
import { runWarm } from '../../src/commands/warm.js';
import { keptRemedy } from '../../src/server/hook/judge.js';
import { gitAsync, refIn } from '../helpers/gate.js';
import { gitWithEnv } from '../helpers/host.js';
import { TestRepo, removeTree, tempDir } from '../helpers/repo.js';

interface T { teardown(fn: () => unknown): void }
type RuleRow = { rule: string; status: string; details?: Record<string, unknown> };

const ENV = { GITHUB_USER_LOGIN: 'agent-1', GITHUB_USER_ID: '42', GITHUB_REPO_NAME: 'team/app', GITHUB_VIA: 'git push', GITHUB_REPO_PUBLIC: 'false' };

/** Contract files of the tree: many TypeScript files (a real project's first parse) and one Python package. */
function tree(n: number): Record<string, string> {
  const files: Record<string, string> = { 'src/pkg/__init__.py': 'def top(a):\n    return a\n', 'tests/test_app.py': 'def test_x():\n    assert True\n' };
  for (let i = 0; i < n; i++) {
    files[`src/ts/m${i}.ts`] = Array.from({ length: 12 }, (_, j) => `export function f${i}_${j}(a: number, b: string = 'x', ...rest: Array<Map<string, number>>): Promise<Record<string, number>> {\n  return Promise.resolve({ [b]: a + rest.length });\n}\n`).join('')
      + `export interface I${i}<T extends object = {}> { x: number; y?: T; z(a: string): void }\nexport class C${i} { constructor(public a: number) {}\n  protected m(b: I${i}): string { return String(b.x); } }\n`;
  }
  return files;
}

/** A daemon with its config in a file (a refusal prints `--config FILE`), and a GHES budget of `budgetMs` less `reserveMs`. */
async function ghesDaemon(t: T, budgetMs: number, reserveMs: number): Promise<{ d: RunningDaemon; configFile: string; data: string }> {
  const dir = tempDir('pg-kept-');
  const data = join(dir, 'data');
  const configFile = join(dir, 'daemon.json');
  writeFileSync(configFile, JSON.stringify({ data, humans: ['alice'], agents: ['agent-*'], monitor: '127.0.0.1:0', ghesBudgetMs: budgetMs, ghesReserveMs: reserveMs }));
  const cfg = loadDaemonConfig(configFile);
  const d = await startDaemon(cfg, { log: () => {} });
  t.teardown(async () => {
    await d.close();
    removeTree(dir);
  });
  return { d, configFile, data };
}

/**
 * A bare repository that already holds `files` on main (pushed before the gate was installed:
 * the host's own copy, never parsed by the daemon), with the GHES shim as its pre-receive hook,
 * and an agent's branch that adds a private Python module: its contract is that of main, and
 * only the full digest (every file) can tell, so the push parses the whole tree.
 */
async function hostRepo(t: T, configFile: string, files: Record<string, string>): Promise<{ bare: string; w: TestRepo }> {
  const root = tempDir('pg-kept-host-');
  t.teardown(() => removeTree(root));
  const bare = join(root, 'app.git');
  const init = await gitAsync(root, ['init', '-q', '--bare', '-b', 'main', bare]);
  if (init.code) throw new Error(init.stderr);
  const w = TestRepo.init(t);
  w.commit('base', files);
  const seeded = await gitAsync(w.dir, ['push', bare, 'main']);
  if (seeded.code) throw new Error(seeded.stderr);
  const hookRepo = tempDir('pg-ghes-hooks-');
  t.teardown(() => removeTree(hookRepo));
  await installHostHooks('ghes', loadDaemonConfig(configFile), [hookRepo]);
  mkdirSync(join(bare, 'hooks'), { recursive: true });
  copyFileSync(join(hookRepo, 'patchgate-pre-receive.sh'), join(bare, 'hooks', 'pre-receive'));
  chmodSync(join(bare, 'hooks', 'pre-receive'), 0o755);
  w.checkout('agent/helper', true);
  w.commit('a private helper module', { 'src/pkg/_helper.py': 'def helper():\n    return 1\n' });
  return { bare, w };
}

function contractRow(t: Tap.Test, d: RunningDaemon, pushes: number): RuleRow | undefined {
  const rows = d.audit.query({ kind: 'ref', actor: 'agent-1', limit: 1 });
  t.equal(d.audit.query({ kind: 'ref', actor: 'agent-1' }).length, pushes, `${pushes} push(es) audited`);
  return (rows[0]?.rules as RuleRow[] | undefined)?.find((o) => o.rule === 'contract');
}

const KEPT = /contract of the pushed commit [0-9a-f]{12}: (\d+) of (\d+) files parsed and kept; (\d+) left: push again \(each try keeps its work\), or seed the cache first/;

t.test('a push stopped by the GHES budget keeps what it parsed; the retries parse the rest and it lands', async (t) => {
  const N = 600;
  // 500 ms for the policy (the shim itself waits the whole 3 s budget for the answer).
  const { d, configFile } = await ghesDaemon(t, 3000, 2500);
  const { bare, w } = await hostRepo(t, configFile, tree(N));
  const total = N + 2; // the TypeScript files, __init__.py and the pushed _helper.py
  const tries: Array<{ kept: number; left: number; parsedNow: number }> = [];
  let landed = false;
  for (let i = 0; i < 40 && !landed; i++) {
    const r = await gitWithEnv(w.dir, ['push', bare, 'agent/helper'], ENV);
    const row = contractRow(t, d, i + 1);
    if (r.code === 0) {
      landed = true;
      t.match(r.stderr, /remote: patchgate: ACCEPT refs\/heads\/agent\/helper/);
      t.equal(row?.status, 'pass', 'the contract of main, unchanged by a private module');
      t.ok(typeof row?.details?.parsedNow === 'number' && (row.details.parsedNow as number) < total, `the landing try parsed only what was left (${String(row?.details?.parsedNow)} of ${total})`);
      break;
    }
    // Refused for time: the remote: lines say how much is kept and left, and name the seeding command.
    t.match(r.stderr, /gate did not finish in time/, `try ${i + 1} refused for time`);
    const m = KEPT.exec(r.stderr);
    if (!m) {
      // Stopped before the contract walk began (the rules before it, on a busy machine): nothing to count.
      t.notOk(row?.details?.kept, 'no contract walk, no count');
      continue;
    }
    const [kept, of, left] = [Number(m[1]), Number(m[2]), Number(m[3])];
    t.equal(of, total, 'of every contract file of the pushed tree');
    t.equal(kept + left, total, 'kept and left add up');
    t.match(r.stderr, new RegExp(`remote: .*\\$ patchgate warm --config ${configFile.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\S+app\\.git`), 'the seeding command, as it runs');
    t.equal(row?.status, 'fail');
    t.equal(row?.details?.kept, kept, 'the audit row has the same counts');
    t.equal(row?.details?.left, left);
    tries.push({ kept, left, parsedNow: Number(row?.details?.parsedNow) });
  }
  t.ok(landed, `the push landed after ${tries.length} refusal(s)`);
  t.ok(tries.length >= 1, 'the first try could not parse the whole tree within the budget');
  // Each file parsed once over all the tries: what a stopped try parsed was kept, not parsed again.
  const parsed = tries.reduce((n, x) => n + x.parsedNow, 0);
  t.ok(parsed <= total, `files parsed by the refused tries: ${parsed}, at most the ${total} of the tree`);
  for (let i = 1; i < tries.length; i++) {
    t.ok(tries[i]!.kept >= tries[i - 1]!.kept - 32, `try ${i + 1} started from what the tries before it kept (${tries[i - 1]!.kept} -> ${tries[i]!.kept})`);
  }
  t.ok(await refIn(bare, 'refs/heads/agent/helper'), 'the branch is on the host');
});

t.test('patchgate warm seeds the daemon\'s cache from the host\'s copy: the next push parses nothing of main', async (t) => {
  const { d, configFile, data } = await ghesDaemon(t, 3000, 2500);
  const { bare, w } = await hostRepo(t, configFile, tree(300));
  const lines: string[] = [];
  const out = await runWarm({ config: configFile, repos: [bare], progress: { write: (l) => void lines.push(l), isTTY: false } });
  t.match(out.join('\n'), new RegExp(`app\\.git: contract of main [0-9a-f]{12} cached in ${join(data, 'cache.db').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(301 files`));
  t.match(lines.join(''), /patchgate: warming \S+app\.git \(main [0-9a-f]{12}\): 301 files to read/, 'progress: the total first');
  t.match(lines.join(''), /: done, 301 files parsed in /, 'and the end');

  const r = await gitWithEnv(w.dir, ['push', bare, 'agent/helper'], ENV);
  t.equal(r.code, 0, r.code ? r.stderr : 'the first push after the warm-up lands within the budget');
  const row = contractRow(t, d, 1);
  t.equal(row?.status, 'pass');
  t.ok(Number(row?.details?.parsedNow) <= 1, `it parsed only the file it brings (${String(row?.details?.parsedNow)})`);
});

t.test('the refusal\'s next step: counts, push again, and the seeding command on its own line', async (t) => {
  const text = keptRemedy({ rule: 'contract', what: 'the pushed commit 1a2b3c4d5e6f', kept: 340, total: 501, parsedNow: 120 }, "patchgate warm --config /etc/patchgate/daemon.json '/data/repos/team/my app.git'");
  t.equal(text, "contract of the pushed commit 1a2b3c4d5e6f: 340 of 501 files parsed and kept; 161 left: push again (each try keeps its work), or seed the cache first (a person runs it on the gate's machine; it parses the repository outside any push's time limit, with progress):\n$ patchgate warm --config /etc/patchgate/daemon.json '/data/repos/team/my app.git'");
  t.equal(keptRemedy({ rule: 'contract', what: null, kept: 12, total: null, parsedNow: 12 }, null), 'contract: 12 files parsed and kept: push again (each try keeps its work)', 'no total known, no command: still the count');
});
