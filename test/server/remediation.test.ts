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
import { DECISION_TABLE, ROW_CODES, rowCode } from '../../src/policy/decision-table.js';

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
}

/**
 * How the agent reaches the gate:
 * - `url`: it pushes to the gate's URL, no remote at all, its token kept by a credential helper;
 * - `name`: it cloned with the token in the URL, so `origin` holds it;
 * - `other`: a remote `gate` holds the token and `origin` points somewhere else.
 */
type How = 'url' | 'name' | 'other';

/** Plain URL of a gate repository (no user, no token). */
function plainUrl(gate: Gate, repo: string): string {
  return gate.remote(repo, 'x', 'x').replace(/\/\/[^@/]*@/, '//');
}

/** A clone-local credential helper that answers with `user`/`secret` for the gate's host. */
async function storeCredential(t: T, dir: string, gate: Gate, user: string, secret: string): Promise<void> {
  const file = join(tempDir('pg-cred-'), 'store');
  t.teardown(() => rmSync(dirname(file), { recursive: true, force: true }));
  writeFileSync(file, `${gate.remote('app', user, secret).replace(/\/[^/]*\.git$/, '')}\n`, { mode: 0o600 });
  await gitAsync(dir, ['config', 'credential.helper', `store --file=${file}`]);
}

async function agentClone(t: T, gate: Gate, secret: string, how: How, branch = 'agent/fix', repo = 'app'): Promise<Agent> {
  const dir = tempDir('pg-agent-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const url = gate.remote(repo, 'agent-1', secret);
  let remote: string;
  if (how === 'name') {
    const c = await gitAsync(dirname(dir), ['clone', '-q', url, dir]);
    t.equal(c.code, 0, `clone: ${c.stderr}`);
    await gitAsync(dir, ['checkout', '-q', '-b', branch]);
    remote = 'origin';
  } else {
    await gitAsync(dir, ['init', '-q']);
    if (how === 'url') {
      await storeCredential(t, dir, gate, 'agent-1', secret);
      remote = plainUrl(gate, repo);
    } else {
      const elsewhere = tempDir('pg-elsewhere-');
      t.teardown(() => rmSync(elsewhere, { recursive: true, force: true }));
      await gitAsync(elsewhere, ['init', '-q', '--bare']);
      await gitAsync(dir, ['remote', 'add', 'origin', elsewhere]);
      await gitAsync(dir, ['remote', 'add', 'gate', url]);
      remote = 'gate';
    }
    const f = await gitAsync(dir, ['fetch', '-q', remote, 'refs/heads/main']);
    if (f.code === 0) await gitAsync(dir, ['checkout', '-q', '-b', branch, 'FETCH_HEAD']);
    else await gitAsync(dir, ['checkout', '-q', '-b', branch]);
  }
  return {
    dir,
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

/**
 * The machine line of a refusal (issue 21): one `remote: patchgate-json` line, valid JSON under
 * 4 KiB, the documented code of the row the human lines name, each reason coded, and the fix
 * commands exactly those printed as `$ ` lines.
 */
function machineChecks(t: T, stderr: string, row: RegExp, cmds: string[]): void {
  const json = stderr.split('\n').filter((l) => l.startsWith('remote: patchgate-json ')).map((l) => l.slice('remote: patchgate-json '.length).replace(/\s+$/, ''));
  t.equal(json.length, 1, 'one machine line for the one refused ref');
  const raw = json[0] ?? '{}';
  t.ok(Buffer.byteLength(`patchgate-json ${raw}`) <= 4096, 'the machine line is at most 4 KiB');
  const o = JSON.parse(raw) as { v: number; ref: string; old: string; new: string; verdict: string; mode: string; pushId: string; code: string; reasons: Array<{ code: string; rule: string; message: string }>; fix: string[] };
  t.equal(o.v, 1);
  t.equal(o.verdict, 'reject');
  t.equal(o.mode, 'enforce');
  t.match(o.ref, /^refs\/heads\//);
  t.match(o.new, /^[0-9a-f]{40}$/);
  t.match(stderr, new RegExp(`push ${o.pushId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} audited`), 'the push id is the one the human line names');
  const decided = DECISION_TABLE.find((r) => row.test(`decision: ${r.observation}`));
  t.ok(decided, `a table row matches ${row}`);
  t.equal(o.code, rowCode(decided?.id ?? ''), 'the decision code is the documented code of the row named');
  const documented = new Set(Object.values(ROW_CODES));
  t.ok(o.reasons.length > 0 && o.reasons.every((r) => documented.has(r.code) && r.message.length > 0), 'every reason has a documented code and a message');
  t.same(o.fix, cmds, 'the fix commands are the printed ones, in order');
}

/** The printed steps that push to the gate (the remote's set-up and the push), run after any edit. */
const isPushStep = (c: string): boolean => /^git (config remote\.patchgate-fix\.url |push patchgate-fix )/.test(c);

/**
 * Push, expect a refusal with `row`, run every printed command as printed (the push to the
 * gate among them, after the agent's own edit when no command can make it): the push lands.
 */
async function refuseThenFix(t: T, a: Agent, secret: string, row: RegExp, opts: { fetch?: boolean; force?: boolean; fix?: () => Promise<void>; branch?: string } = {}): Promise<string[]> {
  const first = await a.push(opts.force);
  t.not(first.code, 0, 'the first push is refused');
  const lines = remoteLines(first.stderr);
  t.match(lines.join('\n'), row, 'the decision names the right row');
  t.notOk(first.stderr.split('\n').filter((l) => l.startsWith('remote:')).some((l) => l.includes(secret)), 'the token is never printed');
  t.notMatch(lines.join('\n'), /git push origin|<the same remote or URL>/, 'no remote name is assumed and no placeholder is left');
  const cmds = commands(first.stderr);
  t.ok(cmds.length > 0, 'commands are printed');
  machineChecks(t, first.stderr, row, cmds);
  if (opts.fetch) t.ok(cmds.some((c) => /^git fetch patchgate-fix refs\/heads\//.test(c)), 'a fetch step is printed as a command');
  const pushes = cmds.filter((c) => /^git push patchgate-fix HEAD:refs\/heads\//.test(c));
  t.equal(pushes.length, 1, 'one push step, as a command');
  t.equal(cmds.filter((c) => c.startsWith('git config remote.patchgate-fix.url ')).length, 1, 'the remote is set up once');
  // A fetch's set-up runs where it is printed; the final set-up and push run after the agent's own edit.
  const lastFetch = cmds.reduce((i, c, k) => (/^git fetch patchgate-fix /.test(c) ? k : i), -1);
  const tail = cmds.findIndex((c, k) => k > lastFetch && isPushStep(c));
  const before = tail < 0 ? cmds : cmds.slice(0, tail);
  const after = tail < 0 ? [] : cmds.slice(tail);
  t.ok(after.some((c) => c.startsWith('git push ')), 'the push is the last step');
  for (const c of before) {
    const r = await sh(a.dir, c);
    t.equal(r.code, 0, `as printed: ${c}${r.code ? `\n${r.out}` : ''}`);
  }
  // What no command can do for the agent (restore a signature, fix a syntax error): it edits.
  if (opts.fix) await opts.fix();
  for (const c of after) {
    const r = await sh(a.dir, c);
    t.equal(r.code, 0, `as printed: ${c}${r.code ? `\n${r.out}` : ''}`);
    if (c.startsWith('git push ')) t.notMatch(r.out, /rejected|declined/, 'the push as printed is accepted');
  }
  const head = await gitAsync(a.dir, ['rev-parse', 'HEAD']);
  const spec = /HEAD:(refs\/heads\/\S+)/.exec(pushes[0] ?? '')?.[1] ?? '';
  const ls = await gitAsync(a.dir, ['ls-remote', 'patchgate-fix', spec]);
  t.equal(ls.stdout.split('\t')[0], head.stdout.trim(), `the gate's ${spec} is the fixed commit`);
  const cfg = await gitAsync(a.dir, ['config', 'remote.patchgate-fix.url']);
  t.notOk(lines.join('\n').includes(cfg.stdout.trim()) && cfg.stdout.includes('@'), 'the URL with the token is only in the clone, never printed');
  return lines;
}

for (const how of ['url', 'name', 'other'] as const) {
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

for (const how of ['url', 'name', 'other'] as const) {
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
  const lines = await refuseThenFix(t, a, agent, /decision: fixture bytes ≠ lock/);
  // The honest exit (issue 21): not a fix step, an alternative a person answers.
  t.match(lines.join('\n'), /or, if the fixtures or their lock are wrong, do not edit them: ask a person instead[^\n]*\n\s+git push -o patchgate\.escalate="<why the fixtures are wrong>" patchgate-fix /);
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
  // The person runs the printed push as printed from their clone: the gate's URL, their token from their credential helper.
  const how = lines.find((l) => /a person .* must push it first/.test(l)) ?? '';
  const cmd = /: (git push \S+ \S+)$/.exec(how)?.[1] ?? '';
  t.equal(cmd, `git push ${plainUrl(gate, 'app')} HEAD:refs/heads/main`, 'the printed push names the gate\'s URL, without a token');
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  await storeCredential(t, w.dir, gate, 'alice', human);
  const p = await sh(w.dir, cmd);
  t.equal(p.code, 0, `the person's push as printed: ${p.out}`);
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
  t.match(lines.join('\n'), /git push -o patchgate\.escalate="<why the contract must change>" patchgate-fix /, 'the escalation command ends the refusal');
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

t.test('an agent push to the trusted branch is sent to an agent branch, as printed (refs)', async (t) => {
  const { gate, agent } = await setup(t);
  const a = await agentClone(t, gate, agent, 'other', 'main');
  await a.commit('work', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const lines = await refuseThenFix(t, a, agent, /decision: agent ref update not allowed/);
  t.match(lines.join('\n'), /\$ git push patchgate-fix HEAD:refs\/heads\/agent\/main/);
});

t.test('a tamper construct is named and the push after removing it lands (tamper-scan)', async (t) => {
  const { gate, agent } = await setup(t);
  const a = await agentClone(t, gate, agent, 'url');
  await a.commit('green', { 'src/app.py': 'import _pytest.runner\n\ndef add(a, b):\n    return a + b\n' });
  const lines = await refuseThenFix(t, a, agent, /decision: src\/ code reaches into the test runner/, {
    fix: () => a.commit('honest', { 'src/app.py': 'def add(a, b):\n    return b + a\n' }),
  });
  t.match(lines.join('\n'), /\$ git reset --soft [0-9a-f]{40}\n.*\n\s*\$ git diff [0-9a-f]{40} -- ':\(literal\)src\/app.py'/, 'fold, then compare');
});
