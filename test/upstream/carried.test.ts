// Issue 20, items 2 and 3, end to end over real HTTP pushes to a real gate (and a real
// upstream, git http-backend): every commit an agent's ref carries off the trusted branch is
// judged, whether or not the repository had it; only an accept for an agent in enforce mode
// is reused (counted in the audit row's write-block trace); evaluate mode reports content
// findings as would-reject with no fix, but never relaxes the refs rule or the policy files;
// every mode switch is an admin row.

import t from 'tap';
import { dirname, join } from 'node:path';
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { GIT_ENV, TestRepo, tempDir } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate, type Gate } from '../helpers/gate.js';
import { startUpstream } from '../helpers/upstream.js';
import { runRepoCreateUpstream, runRepoMode } from '../../src/commands/upstream.js';
import { writeSettings } from '../../src/upstream/settings.js';

type TT = Parameters<Parameters<typeof t.test>[1]>[0];

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
};
const WEAK_TEST = { 'tests/test_app.py': 'def test_add():\n    assert True\n' };

/** A gate in front of a real upstream holding `main` = BASE, repository `app` in `mode`. */
async function withUpstream(t: TT, mode: 'enforce' | 'evaluate') {
  const up = await startUpstream(t);
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  await up.create('app', w.dir);
  const gate = await startGate(t, { upstreamFreshMs: 0 });
  const credDir = tempDir('pg-cred-');
  t.teardown(() => rmSync(credDir, { recursive: true, force: true }));
  const cred = join(credDir, 'token');
  writeFileSync(cred, `${up.secret}\n`);
  await runRepoCreateUpstream({ data: gate.data, name: 'app', trusted: 'main', upstream: up.url('app'), credentialFile: cred, mode });
  return { up, w, gate, agent: gate.token('agent-1', 'agent'), human: gate.token('alice', 'human'), bare: bareDir(gate, 'app'), upDir: up.dir('app') };
}

/** A gate (no upstream) whose `main` a person seeded with BASE. */
async function ownServer(t: TT) {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  if (r.code !== 0) throw new Error(r.stderr);
  return { gate, human, agent, w, bare: bareDir(gate, 'app') };
}

const push = (w: TestRepo, gate: Gate, user: string, secret: string, ...spec: string[]) => gitAsync(w.dir, ['push', gate.remote('app', user, secret), ...spec]);

/** The write-block trace of the newest ref row for `ref`: commits judged, and reused from the accept cache. */
function writeBlockTrace(gate: Gate, ref: string): { commits: number; reused: number } {
  const row = gate.srv.audit.query({ kind: 'ref' }).find((r) => r.ref === ref);
  if (!row) throw new Error(`no ref row for ${ref}`);
  const wb = (row.rules as Array<{ rule: string; details?: { commits: number; reused: number; paths?: number } }>).find((o) => o.rule === 'write-block');
  // Only the counts: the details also carry the push's agent class.
  const { commits, reused, paths } = wb!.details!;
  return paths === undefined ? { commits, reused } : { commits, reused, paths };
}

t.test('a person\'s WIP branch that edits tests/, pushed again by an agent token as agent/x, is refused naming commit and path', async (t) => {
  const { gate, human, agent, w, bare } = await ownServer(t);
  w.checkout('wip', true);
  const wip = w.commit('wip: test edit', WEAK_TEST);
  w.commit('wip: code', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const p = await push(w, gate, 'alice', human, 'wip');
  t.equal(p.code, 0, `a person may push a test edit: ${p.stderr}`);
  // The agent's push brings no new object: the repository has every commit already.
  const r = await push(w, gate, 'agent-1', agent, 'wip:refs/heads/agent/x');
  t.not(r.code, 0, 'refused');
  t.match(r.stderr, new RegExp(`\\[write-block\\] commit ${wip.slice(0, 12)} modifies protected path tests/test_app.py`), 'names the carried commit and the path');
  t.equal(await refIn(bare, 'refs/heads/agent/x'), null, 'agent/x was not created');
  t.equal(writeBlockTrace(gate, 'refs/heads/agent/x').commits, 2, 'both carried commits were judged as the agent\'s');
  // The printed fix rebuilds the work on where it left main, without the test edit.
  t.match(r.stderr, /git restore --source=[0-9a-f]{40} --staged --worktree -- ':\(literal\)tests\/test_app.py'/);
});

t.test('an evaluate-mode commit pushed again under enforce, under a new branch name, is refused and not forwarded', async (t) => {
  const { gate, agent, w, bare, upDir } = await withUpstream(t, 'evaluate');
  w.checkout('agent/a', true);
  const bad = w.commit('weaken', WEAK_TEST);
  const r = await push(w, gate, 'agent-1', agent, 'agent/a');
  t.equal(r.code, 0, `evaluate mode accepts a content finding: ${r.stderr}`);
  t.match(r.stderr, /remote: patchgate: ACCEPT \(evaluate mode, would be refused\) refs\/heads\/agent\/a/);
  t.match(r.stderr, /remote: patchgate: evaluate mode: this push would be refused in enforce mode because \[write-block\] commit [0-9a-f]{12} modifies protected path tests\/test_app.py.*; nothing to do now/);
  t.notMatch(r.stderr, /git reset/, 'no fix commands for a push that was accepted');
  t.notMatch(r.stderr, /next step/, 'no next step either');
  t.equal(await refIn(upDir, 'refs/heads/agent/a'), bad, 'forwarded');
  const out = await runRepoMode({ data: gate.data, name: 'app', mode: 'enforce' });
  t.match(out.join('\n'), /repo\.mode evaluate -> enforce/);
  const modeRows = gate.srv.audit.query({ kind: 'admin' }).filter((x) => x.action === 'repo.mode');
  t.same(modeRows.map((x) => [(x.detail as { from: string | null }).from, (x.detail as { to: string }).to]), [['evaluate', 'enforce'], [null, 'evaluate']], 'repo create --mode and the switch are admin rows (newest first) with old and new mode');
  t.equal(modeRows[0]!.actor, 'cli');
  const again = await push(w, gate, 'agent-1', agent, 'agent/a:refs/heads/agent/b');
  t.not(again.code, 0, 'the same commit under a new name is refused in enforce mode');
  t.match(again.stderr, new RegExp(`commit ${bad.slice(0, 12)} modifies protected path tests/test_app.py`));
  t.equal(await refIn(bare, 'refs/heads/agent/b'), null, 'not on the gate');
  t.equal(await refIn(upDir, 'refs/heads/agent/b'), null, 'not forwarded upstream');
});

t.test('evaluate mode keeps the refs rule and the policy files: main, a relaxed policy, a delete and a force-push are refused', async (t) => {
  const { gate, agent, w, bare, upDir } = await withUpstream(t, 'evaluate');
  const main0 = w.head();
  // To main, with the tests weakened: the refs rule still refuses it.
  w.commit('weaken on main', WEAK_TEST);
  const toMain = await push(w, gate, 'agent-1', agent, 'main');
  t.not(toMain.code, 0, 'an agent\'s push to main is refused in evaluate mode');
  t.match(toMain.stderr, /\[refs\] ref refs\/heads\/main is the trusted branch/);
  t.match(toMain.stderr, /evaluate mode, which never relaxes the refs rule/);
  t.equal(await refIn(bare, 'refs/heads/main'), main0);
  t.equal(await refIn(upDir, 'refs/heads/main'), main0, 'upstream main did not move');
  // Relaxing the policy on main, and on an agent branch (the policy file is enforced either way).
  w.git('reset', '-q', '--hard', main0);
  w.commit('relax', { 'ci/patchgate.json': '{"writable":["**"],"protected":[]}\n' });
  const relaxMain = await push(w, gate, 'agent-1', agent, 'main');
  t.not(relaxMain.code, 0, 'relaxing ci/patchgate.json on main is refused');
  const relaxBranch = await push(w, gate, 'agent-1', agent, 'HEAD:refs/heads/agent/relax');
  t.not(relaxBranch.code, 0, 'relaxing ci/patchgate.json on an agent branch is refused too');
  t.match(relaxBranch.stderr, /\[write-block\] commit [0-9a-f]{12} adds protected path ci\/patchgate.json/);
  t.equal(await refIn(upDir, 'refs/heads/agent/relax'), null);
  const rows = gate.srv.audit.query({ kind: 'ref' }).filter((x) => x.ref === 'refs/heads/agent/relax');
  t.equal(rows[0]?.verdict, 'reject', 'audited as reject, not would-reject');
  // A clean agent branch, then a delete and a force-push of it.
  w.git('reset', '-q', '--hard', main0);
  w.checkout('agent/d', true);
  const d1 = w.commit('work', { 'src/app.py': 'def add(a, b):\n    return a + b  # ok\n' });
  const ok = await push(w, gate, 'agent-1', agent, 'agent/d');
  t.equal(ok.code, 0, ok.stderr);
  t.equal(await refIn(upDir, 'refs/heads/agent/d'), d1);
  const del = await push(w, gate, 'agent-1', agent, ':refs/heads/agent/d');
  t.not(del.code, 0, 'a delete is refused in evaluate mode');
  t.match(del.stderr, /\[refs\] ref refs\/heads\/agent\/d would be deleted/);
  w.git('reset', '-q', '--hard', main0);
  w.commit('rewrite', { 'src/app.py': 'def add(a, b):\n    return sum((a, b))\n' });
  const forced = await push(w, gate, 'agent-1', agent, '--force', 'agent/d');
  t.not(forced.code, 0, 'a force-push is refused in evaluate mode');
  t.match(forced.stderr, /is not a fast-forward/);
  t.equal(await refIn(bare, 'refs/heads/agent/d'), d1);
  t.equal(await refIn(upDir, 'refs/heads/agent/d'), d1, 'upstream kept the branch as it was');
});

t.test('evaluate mode without an upstream: the same mapping (content would-reject with no fix, main refused)', async (t) => {
  const { gate, agent, w, bare } = await ownServer(t);
  writeSettings(gate.data, 'app', { mode: 'evaluate', upstream: null });
  w.checkout('agent/e', true);
  w.commit('weaken', WEAK_TEST);
  const r = await push(w, gate, 'agent-1', agent, 'agent/e');
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /nothing to do now/);
  t.notMatch(r.stderr, /git reset|git restore/);
  t.equal(gate.srv.audit.query({ verdict: 'would-reject', kind: 'ref' }).length, 1);
  const main = await push(w, gate, 'agent-1', agent, 'HEAD:refs/heads/main');
  t.not(main.code, 0, 'refused');
  t.not(await refIn(bare, 'refs/heads/main'), w.head());
});

t.test('a long agent branch pushed again and again re-judges only its new commits', async (t) => {
  const { gate, agent, w } = await ownServer(t);
  w.checkout('agent/long', true);
  for (let i = 0; i < 30; i++) w.commit(`step ${i}`, { [`src/m${i}.py`]: `X = ${i}\n` });
  const first = await push(w, gate, 'agent-1', agent, 'agent/long');
  t.equal(first.code, 0, first.stderr);
  t.same(writeBlockTrace(gate, 'refs/heads/agent/long'), { commits: 30, reused: 0, paths: 30 });
  for (let i = 30; i < 32; i++) w.commit(`step ${i}`, { [`src/m${i}.py`]: `X = ${i}\n` });
  const second = await push(w, gate, 'agent-1', agent, 'agent/long');
  t.equal(second.code, 0, second.stderr);
  t.same(writeBlockTrace(gate, 'refs/heads/agent/long'), { commits: 2, reused: 30, paths: 2 }, 'only the two new commits were judged');
  const renamed = await push(w, gate, 'agent-1', agent, 'agent/long:refs/heads/agent/long-2');
  t.equal(renamed.code, 0, renamed.stderr);
  t.same(writeBlockTrace(gate, 'refs/heads/agent/long-2'), { commits: 0, reused: 32, paths: 0 }, 'the same commits under a new name cost no judgement');
  // A refused push leaves nothing in the cache: its commit is judged again next time.
  w.commit('weaken', WEAK_TEST);
  const bad = await push(w, gate, 'agent-1', agent, 'agent/long');
  t.not(bad.code, 0);
  const bad2 = await push(w, gate, 'agent-1', agent, 'agent/long:refs/heads/agent/long-3');
  t.not(bad2.code, 0, 'still refused under another name');
  t.same(writeBlockTrace(gate, 'refs/heads/agent/long-3'), { commits: 1, reused: 32, paths: 1 });
});

t.test('accepts in evaluate mode are not reused after the switch to enforce', async (t) => {
  const { gate, agent, w } = await withUpstream(t, 'evaluate');
  w.checkout('agent/c', true);
  w.commit('clean', { 'src/app.py': 'def add(a, b):\n    return a + b  # evaluate\n' });
  const r = await push(w, gate, 'agent-1', agent, 'agent/c');
  t.equal(r.code, 0, r.stderr);
  await runRepoMode({ data: gate.data, name: 'app', mode: 'enforce' });
  const again = await push(w, gate, 'agent-1', agent, 'agent/c:refs/heads/agent/c2');
  t.equal(again.code, 0, again.stderr);
  t.same(writeBlockTrace(gate, 'refs/heads/agent/c2'), { commits: 1, reused: 0, paths: 1 }, 'judged again in enforce mode');
});

/** The commands a refusal says to run as printed (`$ ` lines of its remote: output). */
function commands(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.startsWith('remote: ')).map((l) => l.slice('remote: '.length).trim()).filter((l) => l.startsWith('$ ')).map((l) => l.slice(2));
}

function sh(cwd: string, line: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', line], { cwd, env: { ...process.env, ...GIT_ENV, GIT_ASKPASS: 'true' } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr });
    });
  });
}

t.test('a person\'s test edit on an agent branch that the agent extends: refused, and the printed fix works as printed', async (t) => {
  const { gate, human, agent, w, bare } = await ownServer(t);
  w.checkout('agent/y', true);
  const personal = w.commit('person: test edit', WEAK_TEST);
  const p = await push(w, gate, 'alice', human, 'agent/y');
  t.equal(p.code, 0, p.stderr);
  // The agent's clone: a remote holding its token, the branch as the gate has it.
  const dir = tempDir('pg-agent-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const c = await gitAsync(dirname(dir), ['clone', '-q', '-o', 'gate', '-b', 'agent/y', gate.remote('app', 'agent-1', agent), dir]);
  t.equal(c.code, 0, c.stderr);
  writeFileSync(join(dir, 'src', 'app.py'), 'def add(a, b):\n    return a + b  # agent\n');
  await gitAsync(dir, ['commit', '-qam', 'agent work']);
  const r = await gitAsync(dir, ['push', 'gate', 'HEAD:refs/heads/agent/y']);
  t.not(r.code, 0, 'the person\'s commit is judged as the agent\'s now');
  t.match(r.stderr, new RegExp(`commit ${personal.slice(0, 12)} modifies protected path tests/test_app.py`));
  const cmds = commands(r.stderr);
  t.ok(cmds.some((l) => /agent\/y-rebuilt/.test(l)), 'the rebuilt work goes to a new branch (the gate\'s agent/y cannot take it as a fast-forward)');
  for (const line of cmds) {
    const run = await sh(dir, line);
    t.equal(run.code, 0, `${line}: ${run.out}`);
  }
  const rebuilt = await refIn(bare, 'refs/heads/agent/y-rebuilt');
  t.ok(rebuilt, 'the fix as printed was accepted');
  const show = await gitAsync(bare, ['show', `${rebuilt}:src/app.py`]);
  t.match(show.stdout, /# agent/, 'with the agent\'s work');
  const tests = await gitAsync(bare, ['show', `${rebuilt}:tests/test_app.py`]);
  t.equal(tests.stdout, BASE['tests/test_app.py'], 'and without the person\'s test edit');
});
