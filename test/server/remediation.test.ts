// Every refusal's printed remediation, run literally in a fresh clone the way an agent would,
// and then the agent's own push again: it must be accepted. Covers a URL remote (no `origin`)
// and a remote name, every rule with an agent-side fix, a push that touched only protected
// paths (drop, not strip), and a gate whose trusted branch does not exist yet. The printed
// lines are also checked for their decision-table label and for the absence of the token.

import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { TestRepo, GIT_ENV, tempDir } from '../helpers/repo.js';
import { gitAsync, startGate, type Gate } from '../helpers/gate.js';

type T = Parameters<Parameters<typeof t.test>[1]>[0];

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'src/fixtures/data.json': '{"n": 1}\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
  'README.md': '# demo\n',
};

/** Run one shell line in `cwd` (async: the gate runs in this process). */
function sh(cwd: string, line: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', line], { cwd, env: { ...process.env, ...GIT_ENV, GIT_ASKPASS: 'true' } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr });
    });
  });
}

/** The `remote:` lines of a push's stderr, without the prefix. */
function remoteLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.startsWith('remote: ')).map((l) => l.slice('remote: '.length).replace(/\s+$/, ''));
}

/** The commands the refusal says to run as printed (`$ ` lines). */
function commands(stderr: string): string[] {
  return remoteLines(stderr).map((l) => l.trim()).filter((l) => l.startsWith('$ ')).map((l) => l.slice(2));
}

interface Agent {
  dir: string;
  /** The agent's push command (its remote name or URL, then the refspec). */
  push(force?: boolean): Promise<{ code: number; stderr: string }>;
  commit(message: string, files: Record<string, string | null>): Promise<void>;
  /** The remote as the agent knows it, to fill `<the same remote or URL>` in a fetch line. */
  remote: string;
}

async function agentClone(t: T, gate: Gate, secret: string, how: 'url' | 'name', branch = 'agent/fix', repo = 'app'): Promise<Agent> {
  const dir = tempDir('pg-agent-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const url = gate.remote(repo, 'agent-1', secret);
  if (how === 'name') {
    const c = await gitAsync(dirname(dir), ['clone', '-q', url, dir]);
    t.equal(c.code, 0, `clone: ${c.stderr}`);
    await gitAsync(dir, ['checkout', '-q', '-b', branch]);
  } else {
    await gitAsync(dir, ['init', '-q']);
    const f = await gitAsync(dir, ['fetch', '-q', url, 'refs/heads/main']);
    if (f.code === 0) await gitAsync(dir, ['checkout', '-q', '-b', branch, 'FETCH_HEAD']);
    else await gitAsync(dir, ['checkout', '-q', '-b', branch]);
  }
  const remote = how === 'name' ? 'origin' : url;
  return {
    dir,
    remote,
    push: (force) => gitAsync(dir, ['push', ...(force ? ['--force'] : []), remote, `HEAD:refs/heads/${branch}`]),
    commit: async (message, files) => {
      for (const [p, c] of Object.entries(files)) {
        const abs = join(dir, p);
        rmSync(abs, { recursive: true, force: true });
        if (c === null) continue;
        mkdirSync(dirname(abs), { recursive: true });
        if (c.startsWith('symlink:')) symlinkSync(c.slice(8), abs);
        else writeFileSync(abs, c);
      }
      await gitAsync(dir, ['add', '-A']);
      const r = await gitAsync(dir, ['commit', '-q', '-m', message]);
      t.equal(r.code, 0, `agent commit: ${r.stderr}`);
    },
  };
}

async function setup(t: T, extra: Record<string, string> = {}) {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { ...BASE, ...extra });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(r.code, 0, 'human seeds main', { stderr: r.stderr });
  return { gate, human, agent, w };
}

/** Push, expect a refusal with `row`, run every printed command, push again: accepted. */
async function refuseThenFix(t: T, a: Agent, secret: string, row: RegExp, opts: { fetch?: boolean; force?: boolean; fix?: () => Promise<void> } = {}): Promise<string[]> {
  const first = await a.push(opts.force);
  t.not(first.code, 0, 'the first push is refused');
  const lines = remoteLines(first.stderr);
  t.match(lines.join('\n'), row, 'the decision names the right row');
  t.notOk(first.stderr.split('\n').filter((l) => l.startsWith('remote:')).some((l) => l.includes(secret)), 'the token is never printed');
  t.notMatch(lines.join('\n'), /git push origin/, 'no remote name is assumed');
  const cmds = commands(first.stderr);
  if (opts.fetch) {
    // The one step that must name the remote: fetch the gate's copy from where the agent pushed.
    const fetch = lines.find((l) => /git fetch <the same remote or URL> /.test(l));
    t.ok(fetch, 'a fetch step is printed');
    const spec = /git fetch <the same remote or URL> (\S+)/.exec(fetch ?? '')?.[1] ?? '';
    const f = await gitAsync(a.dir, ['fetch', a.remote, spec]);
    t.equal(f.code, 0, `fetch as printed: ${f.stderr}`);
  }
  t.ok(cmds.length > 0, 'commands are printed');
  for (const c of cmds) {
    const r = await sh(a.dir, c);
    t.equal(r.code, 0, `as printed: ${c}${r.code ? `\n${r.out}` : ''}`);
  }
  // What no command can do for the agent (restore a signature, fix a syntax error): it edits.
  if (opts.fix) await opts.fix();
  t.match(lines.join('\n'), /push again exactly as you did/, 'says how to push again');
  const again = await a.push();
  t.equal(again.code, 0, 'the push after the fix is accepted', { lines: remoteLines(again.stderr) });
  return lines;
}

for (const how of ['url', 'name'] as const) {
  t.test(`${how} remote: a test edit is stripped and the rest lands`, async (t) => {
    const { gate, agent } = await setup(t);
    const a = await agentClone(t, gate, agent, how);
    await a.commit('work', { 'src/app.py': 'def add(a, b):\n    return b + a\n', 'tests/test_app.py': '# weakened\n' });
    const lines = await refuseThenFix(t, a, agent, /decision: tests\/ in the agent diff/);
    t.match(lines.join('\n'), /\$ git restore --source=[0-9a-f]+ --staged --worktree -- ':\(literal\)tests\/test_app.py'/);
    const show = await gitAsync(a.dir, ['show', 'HEAD:src/app.py']);
    t.match(show.stdout, /return b \+ a/, 'the src work survived');
  });
}

t.test('the policy file in the agent diff is a protected path, not a test write', async (t) => {
  const { gate, agent } = await setup(t);
  const a = await agentClone(t, gate, agent, 'url');
  await a.commit('work', { 'src/app.py': 'def add(a, b):\n    return b + a\n', 'ci/patchgate.json': '{"writable":["**"]}' });
  const lines = await refuseThenFix(t, a, agent, /decision: policy, CI, lock or runner file in the agent diff/);
  t.notMatch(lines.join('\n'), /tests\/ in the agent diff/);
});

t.test('a path outside writable has its own row', async (t) => {
  const { gate, agent } = await setup(t);
  const a = await agentClone(t, gate, agent, 'name');
  await a.commit('work', { 'src/app.py': 'def add(a, b):\n    return b + a\n', 'README.md': '# changed\n' });
  await refuseThenFix(t, a, agent, /decision: path outside `writable` in the agent diff/);
});

t.test('a symlink has its own row', async (t) => {
  const { gate, agent } = await setup(t);
  const a = await agentClone(t, gate, agent, 'url');
  await a.commit('work', { 'src/app.py': 'def add(a, b):\n    return b + a\n', 'src/link.py': 'symlink:../tests/test_app.py' });
  await refuseThenFix(t, a, agent, /decision: symlink or submodule in the agent diff/);
});

for (const how of ['url', 'name'] as const) {
  t.test(`${how} remote: a push that touches only protected paths is dropped, not stripped`, async (t) => {
    const { gate, agent } = await setup(t);
    const a = await agentClone(t, gate, agent, how);
    await a.commit('weaken', { 'tests/test_app.py': '# weakened\n' });
    await a.commit('more', { 'tests/test_new.py': 'x = 1\n' });
    const lines = await refuseThenFix(t, a, agent, /decision: tests\/ in the agent diff/);
    t.match(lines.join('\n'), /nothing to keep: drop those commits/);
    t.match(lines.join('\n'), /\$ git reset --hard [0-9a-f]{40}/);
    t.notMatch(lines.join('\n'), /git commit/, 'no commit step that would stop at "nothing to commit"');
  });
}

t.test('a large file is taken out of every new commit (limits)', async (t) => {
  const { gate, agent } = await setup(t, { 'ci/patchgate.json': JSON.stringify({ limits: { maxBlobBytes: 1000 } }) });
  const a = await agentClone(t, gate, agent, 'url');
  await a.commit('work', { 'src/app.py': 'def add(a, b):\n    return b + a\n', 'src/blob.bin': 'x'.repeat(5000) });
  await refuseThenFix(t, a, agent, /decision: a new file over limits.maxBlobBytes/);
});

t.test('a drifted fixture is put back (fixtures)', async (t) => {
  const { createHash } = await import('node:crypto');
  const lock = JSON.stringify({ 'src/fixtures/data.json': createHash('sha256').update(BASE['src/fixtures/data.json']).digest('hex') });
  const { gate, agent } = await setup(t, { 'ci/fixtures.lock': lock });
  const a = await agentClone(t, gate, agent, 'name');
  await a.commit('work', { 'src/app.py': 'def add(a, b):\n    return b + a\n', 'src/fixtures/data.json': '{"n": 2}\n' });
  await refuseThenFix(t, a, agent, /decision: fixture bytes ≠ lock/);
});

t.test('a non-fast-forward is rebased on the gate\'s copy (refs)', async (t) => {
  const { gate, agent } = await setup(t);
  const a = await agentClone(t, gate, agent, 'url');
  await a.commit('one', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  t.equal((await a.push()).code, 0, 'the first push lands');
  await gitAsync(a.dir, ['reset', '-q', '--hard', 'HEAD~1']);
  await a.commit('other', { 'src/other.txt': 'notes\n' });
  await refuseThenFix(t, a, agent, /decision: agent ref update not allowed/, { fetch: true, force: true });
  const log = await gitAsync(a.dir, ['log', '--format=%s']);
  t.match(log.stdout, /other\none/, 'the new work sits on top of the gate\'s copy');
});

t.test('the trusted branch does not exist yet: a person pushes it first, then the agent\'s fix works', async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const a = await agentClone(t, gate, agent, 'url');
  await a.commit('everything', { 'src/app.py': BASE['src/app.py'], 'src/notes.txt': 'agent notes\n', 'tests/test_app.py': '# mine\n', 'setup.cfg': '[x]\n' });
  const first = await a.push();
  t.not(first.code, 0, 'refused');
  const lines = remoteLines(first.stderr);
  const text = lines.join('\n');
  t.match(text, /decision: the trusted branch does not exist on the gate yet/);
  t.match(text, /a person \(a human token\) must push it first/);
  t.notMatch(text, /HEAD~1/, 'no reset of a root commit');
  t.notOk(first.stderr.includes(agent), 'the token is never printed');
  // The person runs the printed push from their clone, to the gate's URL.
  const how = lines.find((l) => /git push <the gate's remote or URL> /.test(l)) ?? '';
  const spec = /git push <the gate's remote or URL> (\S+)/.exec(how)?.[1] ?? '';
  t.equal(spec, 'HEAD:refs/heads/main');
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  const p = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), spec]);
  t.equal(p.code, 0, `the person's push as printed: ${p.stderr}`);
  // Now the agent's same push gets an ordinary refusal whose commands work as printed.
  await refuseThenFix(t, a, agent, /decision: tests\/ in the agent diff/, { fetch: true });
  const tree = await gitAsync(a.dir, ['ls-tree', '-r', '--name-only', 'HEAD']);
  t.match(tree.stdout, /src\/notes.txt/, 'the agent\'s work is kept');
  t.match(tree.stdout, /README.md/, 'on top of the trusted branch');
  t.notMatch(tree.stdout, /setup.cfg/, 'without its protected files');
});

t.test('a moved contract shows its rows, and the printed compare command runs (contract)', async (t) => {
  const { gate, agent } = await setup(t);
  const a = await agentClone(t, gate, agent, 'url');
  await a.commit('api', { 'src/app.py': 'def add(a, b, c):\n    return a + b + c\n' });
  const lines = await refuseThenFix(t, a, agent, /decision: contract digest changed, no allow-file row/, {
    fix: () => a.commit('keep the signature', { 'src/app.py': 'def add(a, b):\n    return a + b + 0\n' }),
  });
  t.match(lines.join('\n'), /\[contract\] ~ src\/app.py::def add\(a, b\)\s+=>\s+src\/app.py::def add\(a, b, c\)/, 'the changed row is shown');
  t.match(lines.join('\n'), /\$ git diff [0-9a-f]{40} HEAD -- ':\(literal\)src\/app.py'/);
});

t.test('a syntax error has its own row, not "contract digest changed" (contract)', async (t) => {
  const { gate, agent } = await setup(t);
  const a = await agentClone(t, gate, agent, 'name');
  await a.commit('oops', { 'src/app.py': 'def add(a, b:\n    return a + b\n' });
  const lines = await refuseThenFix(t, a, agent, /decision: contract source does not parse/, {
    fix: () => a.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' }),
  });
  t.notMatch(lines.join('\n'), /contract digest changed/);
});
