// End-to-end: the gate in front of a real upstream (git http-backend behind Basic auth, on
// port 0). An agent's accepted push lands on both, a refused one on neither; a person's merge
// upstream is what the next push is judged against; every way upstream can fail refuses the
// agent's push with upstream's reason and without the credential in any byte anyone sees.

import t from 'tap';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate, type Gate } from '../helpers/gate.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { runRepoCreateUpstream, runRepoMode, runRepoUpstream, runRepoSync } from '../../src/commands/upstream.js';
import { runContract } from '../../src/commands/contract.js';
import { readSettings, writeSettings } from '../../src/upstream/settings.js';
import { IntentJournal } from '../../src/server/intent-journal.js';

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
};

type TT = Parameters<Parameters<typeof t.test>[1]>[0];

async function setup(t: TT, opts: { freshMs?: number; mode?: 'evaluate' } = {}) {
  const up = await startUpstream(t);
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  await up.create('app', w.dir);
  const logs: string[] = [];
  const gate = await startGate(t, { log: (l) => logs.push(l), upstreamFreshMs: opts.freshMs ?? 0 });
  const credDir = tempDir('pg-cred-');
  t.teardown(() => rmSync(credDir, { recursive: true, force: true }));
  const cred = join(credDir, 'token');
  writeFileSync(cred, `${up.secret}\n`);
  const out = await runRepoCreateUpstream({ data: gate.data, name: 'app', trusted: 'main', upstream: up.url('app'), credentialFile: cred, mode: opts.mode });
  const agent = gate.token('agent-1', 'agent');
  const human = gate.token('alice', 'human');
  return { up, w, gate, agent, human, logs, out, bare: bareDir(gate, 'app'), upDir: up.dir('app') };
}

/** Every byte the agent, the audit log and the server log saw must be free of the secret. */
function noSecret(t: TT, secret: string, gate: Gate, logs: string[], ...agentSaw: string[]) {
  const b64 = Buffer.from(`x-access-token:${secret}`).toString('base64');
  for (const text of [...agentSaw, logs.join('\n')]) {
    t.notOk(text.includes(secret), 'the secret is not in what the agent or the server log saw');
    t.notOk(text.includes(b64), 'nor its Basic header');
  }
  for (const f of ['patchgate.db', 'patchgate.db-wal']) {
    const p = join(gate.data, f);
    if (existsSync(p)) t.notOk(readFileSync(p).includes(secret), `the secret is not in ${f}`);
  }
}

async function refsOf(dir: string): Promise<string> {
  return (await gitAsync(dir, ['for-each-ref', '--format=%(refname) %(objectname)'])).stdout;
}

t.test('repo create --upstream: the credential is stored 0600 and never printed; main is mirrored', async (t) => {
  const { up, gate, out, bare, w } = await setup(t);
  t.notOk(out.join('\n').includes(up.secret), 'create output has no secret');
  t.match(out.join('\n'), /credential stored/);
  const p = join(gate.data, 'repo-settings', 'app.json');
  t.equal(statSync(p).mode & 0o777, 0o600, 'settings file is 0600');
  t.equal(statSync(join(gate.data, 'repo-settings')).mode & 0o777, 0o700);
  t.equal(await refIn(bare, 'refs/heads/main'), w.head(), 'the gate has upstream\'s main');
  const rows = gate.srv.audit.query({ kind: 'admin' });
  t.ok(rows.some((r) => r.action === 'repo.create'));
  t.notOk(JSON.stringify(rows).includes(up.secret));
});

t.test('a credential in the URL is split off and stored; none removes the upstream', async (t) => {
  const { up, gate } = await setup(t);
  const r = await runRepoUpstream({ data: gate.data, name: 'app', url: up.urlWithCredential('app') });
  t.notOk(r.join('\n').includes(up.secret));
  const saved = JSON.parse(readFileSync(join(gate.data, 'repo-settings', 'app.json'), 'utf8'));
  t.equal(saved.upstream.url, up.url('app'), 'the stored URL carries no credential');
  t.equal(saved.upstream.secret, up.secret);
  const none = await runRepoUpstream({ data: gate.data, name: 'app', url: 'none' });
  t.match(none.join('\n'), /no upstream/);
  t.equal(JSON.parse(readFileSync(join(gate.data, 'repo-settings', 'app.json'), 'utf8')).upstream, null);
});

t.test('an agent\'s good push lands on the gate and upstream, same commit, audited with upstream\'s answer', async (t) => {
  const { gate, agent, w, bare, upDir, up, logs } = await setup(t);
  w.checkout('agent/fix', true);
  const head = w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /remote: patchgate: ACCEPT refs\/heads\/agent\/fix/);
  t.match(r.stderr, /forwarded to upstream http:\/\/127\.0\.0\.1:\d+\/app\.git/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), head, 'on the gate');
  t.equal(await refIn(upDir, 'refs/heads/agent/fix'), head, 'on upstream, the same commit');
  const [row] = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(row!.verdict, 'accept');
  t.equal(row!.moved, 1);
  // The decision row was written before the forward; the forward's outcome is its own row.
  const trace = gate.srv.audit.getPush(row!.pushId!)!;
  const upOutcome = trace.outcomes!.find((o) => o.action === 'upstream.forwarded');
  t.ok(upOutcome, 'the forward is in the audit trace, as its own row');
  t.ok(upOutcome!.id > row!.id, 'after the decision row');
  const detail = upOutcome!.detail as { refs: Array<{ ref: string; answer: string }>; at: string };
  t.match(detail.refs[0]!.answer, /new branch/);
  t.equal(detail.refs[0]!.ref, 'refs/heads/agent/fix');
  t.ok(detail.at);
  t.notOk(new IntentJournal(join(gate.data, 'intents')).has(row!.pushId!), 'the push is settled: no intent entry left');
  t.ok(up.authSeen.some((a) => a.startsWith('Basic ')), 'upstream was asked with credentials');
  noSecret(t, up.secret, gate, logs, r.stderr, r.stdout);
});

t.test('an agent\'s bad push lands on neither; upstream refs and objects are unchanged', async (t) => {
  const { gate, agent, w, bare, upDir } = await setup(t);
  const before = await refsOf(upDir);
  const objects = (await gitAsync(upDir, ['count-objects', '-v'])).stdout;
  w.checkout('agent/fix', true);
  const bad = w.commit('weaken', { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.not(r.code, 0);
  t.match(r.stderr, /\[write-block\]/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null);
  t.equal(await refsOf(upDir), before, 'upstream refs unchanged');
  t.equal((await gitAsync(upDir, ['count-objects', '-v'])).stdout, objects, 'upstream objects unchanged');
  t.not((await gitAsync(upDir, ['cat-file', '-e', bad])).code, 0, 'the bad commit never reached upstream');
});

t.test('a person merges a contract.allow entry upstream; the next agent push with that digest is accepted, no manual sync', async (t) => {
  const { gate, agent, w, bare, upDir, up } = await setup(t);
  w.checkout('agent/api', true);
  const head = w.commit('widen api', { 'src/app.py': 'def add(a, b, c=0):\n    return a + b + c\n' });
  const first = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/api']);
  t.not(first.code, 0);
  t.match(first.stderr, /\[contract\]/);
  const digest = (await runContract({ repo: w.dir, rev: head, json: false })).pop()!;
  // A person, working upstream as before: commit the allow entry to main and push there.
  const person = TestRepo.init(t);
  await gitAsync(person.dir, ['pull', '-q', up.urlWithCredential('app'), 'main']);
  const merged = person.commit('allow the new add()', { 'ci/contract.allow': `${digest}\n` });
  const p = await gitAsync(person.dir, ['push', up.urlWithCredential('app'), 'HEAD:main']);
  t.equal(p.code, 0, p.stderr);
  t.equal(await refIn(upDir, 'refs/heads/main'), merged);
  const again = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/api']);
  t.equal(again.code, 0, again.stderr);
  t.equal(await refIn(bare, 'refs/heads/main'), merged, 'the gate fetched upstream\'s main before judging');
  t.equal(await refIn(upDir, 'refs/heads/agent/api'), head);
  // Agents see upstream's trusted branch when they fetch from the gate.
  const person2 = person.commit('more', { 'README.md': 'hi\n' });
  t.equal((await gitAsync(person.dir, ['push', up.urlWithCredential('app'), 'HEAD:main'])).code, 0);
  const f = await gitAsync(w.dir, ['fetch', gate.remote('app', 'agent-1', agent), 'main']);
  t.equal(f.code, 0, f.stderr);
  t.equal((await gitAsync(w.dir, ['rev-parse', 'FETCH_HEAD'])).stdout.trim(), person2, 'a fetch from the gate shows upstream\'s main');
});

t.test('a person\'s push of the trusted branch to the gate is forwarded upstream', async (t) => {
  const { gate, human, w, upDir, bare } = await setup(t);
  const head = w.commit('person edits tests', { 'tests/test_more.py': 'def test_more():\n    assert 1\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(r.code, 0, r.stderr);
  t.equal(await refIn(upDir, 'refs/heads/main'), head);
  t.equal(await refIn(bare, 'refs/heads/main'), head);
});

async function agentPush(w: TestRepo, gate: Gate, agent: string, branch = 'agent/fix') {
  w.checkout(branch, true);
  const head = w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  return { head, r: await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), branch]) };
}

t.test('upstream down: the push is refused naming upstream; nothing moves', async (t) => {
  const { gate, agent, w, bare, up, logs } = await setup(t);
  await up.stop();
  const { r } = await agentPush(w, gate, agent);
  t.not(r.code, 0);
  t.match(r.stderr, /remote: .*\[upstream\] upstream http:\/\/127\.0\.0\.1:\d+\/app\.git could not be fetched/);
  t.match(r.stderr, /not judged against a trusted branch that could not be refreshed/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null);
  const [row] = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(row!.verdict, 'reject');
  t.equal(row!.decision, 'upstream-refused');
  noSecret(t, up.secret, gate, logs, r.stderr, r.stdout);
});

t.test('wrong upstream credential: refused with upstream\'s reason, the wrong secret nowhere', async (t) => {
  const { gate, agent, w, bare, up, logs, upDir } = await setup(t);
  const wrong = 'wrongsecret-Kx71-abcdef';
  // The CLI refuses to store a credential upstream refuses (and says so without it)...
  await t.rejects(runRepoUpstream({ data: gate.data, name: 'app', url: up.urlWithCredential('app', wrong) }), /upstream .* could not be fetched/);
  t.equal(readSettings(gate.data, 'app').upstream?.secret, up.secret, 'the working credential was kept');
  await runRepoUpstream({ data: gate.data, name: 'app', url: up.urlWithCredential('app', wrong) }).catch((e: Error) => t.notOk(e.message.includes(wrong), 'the CLI error has no secret'));
  // ...so the token goes bad upstream (revoked, expired): the stored one is now wrong.
  const s = readSettings(gate.data, 'app');
  writeSettings(gate.data, 'app', { ...s, upstream: { ...s.upstream!, secret: wrong } });
  const before = await refsOf(upDir);
  const { r } = await agentPush(w, gate, agent);
  t.not(r.code, 0);
  t.match(r.stderr, /remote: .*upstream .*(Authentication failed|401)/i);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null);
  t.equal(await refsOf(upDir), before);
  noSecret(t, wrong, gate, logs, r.stderr, r.stdout);
  noSecret(t, up.secret, gate, logs, r.stderr, r.stdout);
});

t.test('upstream\'s own hook refuses: the agent sees upstream\'s reason; nothing moves on the gate', async (t) => {
  const { gate, agent, w, bare, up, logs, upDir } = await setup(t);
  up.hook('app', 'echo "protected: agent branches need a ticket id (upstream rule 7)" >&2; exit 1');
  const { r } = await agentPush(w, gate, agent);
  t.not(r.code, 0);
  t.match(r.stderr, /remote: .*upstream .*refused refs\/heads\/agent\/fix: \[remote rejected\]/);
  t.match(r.stderr, /remote: .*upstream says: protected: agent branches need a ticket id \(upstream rule 7\)/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null, 'the gate did not move either');
  t.equal(await refIn(upDir, 'refs/heads/agent/fix'), null);
  // The gate's decision (accept) was written before the forward; upstream's refusal is the outcome row.
  const [row] = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(row!.verdict, 'accept');
  t.equal(row!.moved, 0, 'confirmed as not moved');
  t.equal(row!.outcome, 'reject', 'its outcome: refused (issue 48)');
  const failed = gate.srv.audit.getPush(row!.pushId!)!.upstreamRefusals!.find((o) => o.ref === 'refs/heads/agent/fix');
  t.ok(failed, 'an upstream-refusal row');
  t.equal(failed!.decision, 'upstream-refused');
  t.match(failed!.reason, /pre-receive hook declined|remote rejected/);
  t.match(JSON.stringify(failed!.detail), /upstream rule 7/);
  t.ok(gate.srv.audit.query({ verdict: 'reject', kind: 'push' }).some((p) => p.pushId === row!.pushId), 'audit --verdict reject lists the push');
  t.notOk(gate.srv.audit.query({ verdict: 'accept', kind: 'push' }).some((p) => p.pushId === row!.pushId), 'and --verdict accept does not');
  noSecret(t, up.secret, gate, logs, r.stderr, r.stdout);
});

t.test('a non-fast-forward upstream (someone pushed there): refused, and the gate then mirrors upstream\'s branch', async (t) => {
  const { gate, agent, w, bare, up, logs, upDir } = await setup(t);
  const other = TestRepo.init(t);
  await gitAsync(other.dir, ['pull', '-q', up.urlWithCredential('app'), 'main']);
  const theirs = other.commit('someone else', { 'src/other.py': 'X = 1\n' });
  t.equal((await gitAsync(other.dir, ['push', up.urlWithCredential('app'), 'HEAD:refs/heads/agent/fix'])).code, 0);
  const { r } = await agentPush(w, gate, agent);
  t.not(r.code, 0);
  t.match(r.stderr, /remote: .*upstream .*refused refs\/heads\/agent\/fix: \[rejected\] \(fetch first\)/);
  t.match(r.stderr, /git pull --rebase origin agent\/fix/);
  t.equal(await refIn(upDir, 'refs/heads/agent/fix'), theirs, 'upstream keeps the other push');
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null, 'nothing moved on the gate');
  noSecret(t, up.secret, gate, logs, r.stderr, r.stdout);
  // The next fetch from the gate brings upstream's branch, so the agent can rebase on it.
  const f = await gitAsync(w.dir, ['fetch', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.equal(f.code, 0, f.stderr);
  t.equal((await gitAsync(w.dir, ['rev-parse', 'FETCH_HEAD'])).stdout.trim(), theirs);
});

t.test('an --atomic push with one refused ref moves nothing on the gate or upstream', async (t) => {
  const { gate, agent, w, bare, upDir } = await setup(t);
  w.checkout('agent/good', true);
  w.commit('good', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  w.checkout('main');
  w.checkout('agent/bad', true);
  w.commit('bad', { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  const r = await gitAsync(w.dir, ['push', '--atomic', gate.remote('app', 'agent-1', agent), 'agent/good', 'agent/bad']);
  t.not(r.code, 0);
  t.equal(await refIn(bare, 'refs/heads/agent/good'), null);
  t.equal(await refIn(upDir, 'refs/heads/agent/good'), null, 'the good ref of an atomic push did not go upstream');
  // Without --atomic the good ref lands on both.
  const r2 = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/good', 'agent/bad']);
  t.not(r2.code, 0);
  const good = (await gitAsync(w.dir, ['rev-parse', 'agent/good'])).stdout.trim();
  t.equal(await refIn(bare, 'refs/heads/agent/good'), good);
  t.equal(await refIn(upDir, 'refs/heads/agent/good'), good);
  t.equal(await refIn(upDir, 'refs/heads/agent/bad'), null);
});

t.test('a fetch younger than the reuse window is not repeated; repo sync fetches on demand', async (t) => {
  const { gate, agent, w, up } = await setup(t, { freshMs: 600_000 });
  const { r } = await agentPush(w, gate, agent, 'agent/a');
  t.equal(r.code, 0, r.stderr);
  const fetches = () => up.served.filter((s) => s.includes('upload-pack')).length;
  const before = fetches();
  t.ok(before > 0, 'the first push fetched from upstream');
  w.checkout('main');
  const r2 = await agentPush(w, gate, agent, 'agent/b');
  t.equal(r2.r.code, 0, r2.r.stderr);
  t.equal(fetches(), before, 'the second push reused the fresh fetch (only its forward reached upstream)');
  t.ok(up.served.filter((s) => s.includes('receive-pack')).length >= 2, 'both forwards reached upstream');
  const s = await runRepoSync({ data: gate.data, name: 'app' });
  t.match(s.join('\n'), /refs\/heads\/main is [0-9a-f]{40} from upstream/);
  t.ok(gate.srv.audit.query({ kind: 'admin' }).some((row) => row.action === 'repo.sync'));
});

t.test('evaluate mode accepts a bad push, audits would-reject with the reasons; enforce refuses it again', async (t) => {
  const { gate, agent, w, bare, upDir } = await setup(t, { mode: 'evaluate' });
  w.checkout('agent/fix', true);
  const bad = w.commit('weaken', { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /remote: patchgate: evaluate mode: this push would be refused/);
  t.match(r.stderr, /remote: .*\[write-block\] commit [0-9a-f]{12} modifies protected path tests\/test_app.py/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), bad);
  t.equal(await refIn(upDir, 'refs/heads/agent/fix'), bad, 'forwarded like any accepted push');
  const rows = gate.srv.audit.query({ verdict: 'would-reject' });
  const ref = rows.find((x) => x.kind === 'ref');
  t.ok(ref, 'audit --verdict would-reject lists the ref row');
  t.equal(ref!.decision, 'test-tree-write');
  t.ok((ref!.rules as Array<{ rule: string; status: string }>).some((o) => o.rule === 'write-block' && o.status === 'fail'), 'with the full reasons');
  t.ok(rows.some((x) => x.kind === 'push'));
  await runRepoMode({ data: gate.data, name: 'app', mode: 'enforce' });
  t.ok(gate.srv.audit.query({ kind: 'admin' }).some((x) => x.action === 'repo.mode'), 'the switch is audited');
  w.commit('again', { 'tests/test_app.py': 'def test_add():\n    assert 1\n' });
  const r2 = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.not(r2.code, 0, 'enforce refuses the same kind of push');
  t.match(r2.stderr, /\[write-block\]/);
});

t.test('upstream took it but the gate\'s own ref update failed: audited, and the next fetch repairs the gate', async (t) => {
  const { gate, agent, w, bare, upDir } = await setup(t);
  // A stale lock file makes receive-pack's own update of the ref fail after the hooks accepted.
  mkdirSync(join(bare, 'refs', 'heads', 'agent'), { recursive: true });
  writeFileSync(join(bare, 'refs', 'heads', 'agent', 'fix.lock'), '');
  const { head, r } = await agentPush(w, gate, agent);
  t.not(r.code, 0, 'the agent\'s push failed (the gate could not move its ref)');
  t.equal(await refIn(upDir, 'refs/heads/agent/fix'), head, 'upstream moved');
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null, 'the gate did not');
  // receive-pack has exited once git push returned; endSession ran on its exit.
  let diverged = gate.srv.audit.query({ kind: 'admin' }).filter((x) => x.action === 'upstream.diverged');
  for (let i = 0; i < 600 && !diverged.length; i++) { // receive-pack may exit just after the client got its report
    await new Promise((res) => setTimeout(res, 100));
    diverged = gate.srv.audit.query({ kind: 'admin' }).filter((x) => x.action === 'upstream.diverged');
  }
  t.equal(diverged.length, 1, 'audited as upstream.diverged');
  t.match(JSON.stringify(diverged[0]!.detail), /refs\/heads\/agent\/fix/);
  rmSync(join(bare, 'refs', 'heads', 'agent', 'fix.lock'));
  const f = await gitAsync(w.dir, ['fetch', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.equal(f.code, 0, f.stderr);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), head, 'the next fetch set the gate\'s ref to upstream\'s');
});
