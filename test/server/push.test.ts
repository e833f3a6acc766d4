// End-to-end: the real git client pushes over HTTP to a real gate server on port 0. Agent
// pushes that touch only src/ land; test-tree writes are refused by git itself with the
// reasons relayed as `remote:` lines; a person's push is accepted; everything is audited.

import t from 'tap';
import http from 'node:http';
import { readFileSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { TestRepo } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate, type Gate } from '../helpers/gate.js';

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
};

async function setup(t: Parameters<Parameters<typeof tap.test>[1]>[0], opts = {}) {
  const gate = await startGate(t, opts);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(r.code, 0, `human seeds main${r.code ? `: ${r.stderr}` : ""}`);
  return { gate, human, agent, w, bare: bareDir(gate, 'app') };
}
const tap = t;

t.test('agent push touching only src/ is accepted and audited', async (t) => {
  const { gate, agent, w, bare } = await setup(t);
  w.checkout('agent/fix', true);
  const head = w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.equal(r.code, 0, r.code ? r.stderr : "push exit 0");
  t.match(r.stderr, /remote: patchgate: ACCEPT refs\/heads\/agent\/fix/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), head, 'the ref moved');
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(rows.length, 1);
  t.equal(rows[0]!.verdict, 'accept');
  t.equal(rows[0]!.moved, 1, 'post-receive confirmed the move');
  t.equal(rows[0]!.new, head);
});

t.test('agent push touching tests/ is refused by git with the reason in remote: lines', async (t) => {
  const { gate, agent, w, bare } = await setup(t);
  const before = await refIn(bare, 'refs/heads/main');
  w.checkout('agent/fix', true);
  const bad = w.commit('weaken', { 'src/app.py': 'def add(a, b):\n    return 0\n', 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.not(r.code, 0);
  t.match(r.stderr, /! \[remote rejected\] agent\/fix -> agent\/fix \(pre-receive hook declined\)/);
  t.match(r.stderr, /remote: .*\[write-block\] commit [0-9a-f]{12} modifies protected path tests\/test_app.py/);
  t.match(r.stderr, /remote: .*next step: /);
  t.match(r.stderr, /remote: +\$ git restore --source=/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null, 'the ref was not created');
  t.equal(await refIn(bare, 'refs/heads/main'), before);
  const obj = await gitAsync(bare, ['cat-file', '-e', bad]);
  t.not(obj.code, 0, 'the quarantined objects were discarded');
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(rows[0]!.verdict, 'reject');
  t.equal(rows[0]!.decision, 'test-tree-write');
  t.equal(rows[0]!.moved, 0, 'recorded as not moved');
});

t.test('a person\'s push touching tests/ is accepted', async (t) => {
  const { gate, human, w, bare } = await setup(t);
  const head = w.commit('more tests', { 'tests/test_more.py': 'def test_more():\n    assert 1\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(r.code, 0, r.code ? r.stderr : "push exit 0");
  t.equal(await refIn(bare, 'refs/heads/main'), head);
});

t.test('agent may not push the trusted branch or force-push to an ancestor', async (t) => {
  const { gate, agent, w, bare } = await setup(t);
  w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const main = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'main']);
  t.not(main.code, 0);
  t.match(main.stderr, /\[refs\] ref refs\/heads\/main is the trusted branch main/);
  w.checkout('agent/x', true);
  const tip = w.commit('more', { 'src/app.py': 'def add(a, b):\n    return a + b + 0\n' });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/x'])).code, 0);
  const force = await gitAsync(w.dir, ['push', '--force', gate.remote('app', 'agent-1', agent), 'main:agent/x']);
  t.not(force.code, 0);
  t.match(force.stderr, /not a fast-forward/);
  t.equal(await refIn(bare, 'refs/heads/agent/x'), tip);
});

t.test('a multi-ref push is judged ref by ref; --atomic is all or none', async (t) => {
  const { gate, agent, w, bare } = await setup(t);
  w.checkout('agent/good', true);
  const good = w.commit('good', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  w.checkout('main').checkout('agent/bad', true);
  w.commit('bad', { 'tests/test_app.py': '# gone\n' });
  const atomic = await gitAsync(w.dir, ['push', '--atomic', gate.remote('app', 'agent-1', agent), 'agent/good', 'agent/bad']);
  t.not(atomic.code, 0);
  t.equal(await refIn(bare, 'refs/heads/agent/good'), null, 'atomic: the good ref did not move either');
  const plain = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/good', 'agent/bad']);
  t.not(plain.code, 0);
  t.equal(await refIn(bare, 'refs/heads/agent/good'), good, 'the good ref moved');
  t.equal(await refIn(bare, 'refs/heads/agent/bad'), null, 'the bad ref did not');
  t.match(plain.stderr, /! \[remote rejected\] agent\/bad -> agent\/bad/);
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1', limit: 10 });
  const last = rows.filter((r) => r.pushId === rows[0]!.pushId);
  t.same(last.map((r) => `${r.ref}:${r.verdict}:${r.moved}`).sort(), ['refs/heads/agent/bad:reject:0', 'refs/heads/agent/good:accept:1']);
});

t.test('two agents pushing to one repo at once: both judged, both audited', async (t) => {
  const { gate, w, bare } = await setup(t);
  const a1 = gate.token('agent-a', 'agent');
  const a2 = gate.token('agent-b', 'agent');
  const w2 = TestRepo.init(t);
  await gitAsync(w2.dir, ['pull', '-q', gate.remote('app', 'agent-a', a1), 'main']);
  w.checkout('agent/a', true);
  const ha = w.commit('a', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  w2.checkout('agent/b', true);
  w2.commit('b', { 'tests/test_app.py': '# b weakens\n' });
  const [ra, rb] = await Promise.all([
    gitAsync(w.dir, ['push', gate.remote('app', 'agent-a', a1), 'agent/a']),
    gitAsync(w2.dir, ['push', gate.remote('app', 'agent-b', a2), 'agent/b']),
  ]);
  t.equal(ra.code, 0, ra.code ? ra.stderr : "push exit 0");
  t.not(rb.code, 0);
  t.equal(await refIn(bare, 'refs/heads/agent/a'), ha);
  t.equal(await refIn(bare, 'refs/heads/agent/b'), null);
  t.equal(gate.srv.audit.query({ kind: 'ref', actor: 'agent-a' })[0]?.verdict, 'accept');
  t.equal(gate.srv.audit.query({ kind: 'ref', actor: 'agent-b' })[0]?.verdict, 'reject');
  t.same(gate.srv.audit.verify(), { ok: true, rows: gate.srv.audit.lastRow().id });
});

t.test('hook endpoint file gone: the push is refused', async (t) => {
  const { gate, agent, w, bare } = await setup(t);
  unlinkSync(join(gate.data, 'hook.endpoint'));
  w.checkout('agent/fix', true);
  w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.not(r.code, 0);
  t.match(r.stderr, /gate daemon is not running/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null);
});

t.test('daemon stopped mid-push: the push is refused', async (t) => {
  let gate: Gate | null = null;
  const ctx = await setup(t, {
    beforeJudge: async () => {
      if (gate) {
        void gate.srv.hooks.stop();
        await new Promise((r) => setTimeout(r, 300));
      }
    },
  });
  gate = ctx.gate;
  ctx.w.checkout('agent/fix', true);
  ctx.w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(ctx.w.dir, ['push', ctx.gate.remote('app', 'agent-1', ctx.agent), 'agent/fix']);
  t.not(r.code, 0);
  t.match(r.stderr, /pre-receive hook declined/);
  t.equal(await refIn(ctx.bare, 'refs/heads/agent/fix'), null);
});

t.test('a hook timeout refuses the push and is audited', async (t) => {
  const gate = await startGate(t, { hookTimeoutMs: 300, beforeJudge: () => new Promise((r) => setTimeout(r, 1500)) });
  await gate.repo('app');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  const bare = bareDir(gate, 'app');
  // Seed the trusted branch without the gate (a fetch into the bare repo runs no receive hooks).
  t.equal((await gitAsync(bare, ['fetch', '-q', w.dir, 'main:main'])).code, 0);
  w.checkout('agent/fix', true);
  w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.not(r.code, 0);
  t.match(r.stderr, /did not finish within 300 ms/);
  t.notMatch(r.stderr, /ACCEPT/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null);
  t.equal(gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' })[0]?.decision, 'gate-error');
});

t.test('a push that bypasses the server (local path) is refused by the hook', async (t) => {
  const { w, bare } = await setup(t);
  w.checkout('agent/local', true);
  w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(w.dir, ['push', bare, 'agent/local']);
  t.not(r.code, 0);
  t.match(r.stderr, /did not come through the authenticated gate/);
  t.equal(await refIn(bare, 'refs/heads/agent/local'), null);
});

t.test('a path cannot forge a verdict line', async (t) => {
  const { gate, agent, w, bare } = await setup(t);
  w.checkout('agent/forge', true);
  w.commit('forge', { 'tests/x\npatchgate-verdict: accept\n': 'x', 'src/app.py': 'def add(a, b):\n    return 0\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/forge']);
  t.not(r.code, 0);
  t.match(r.stderr, /tests\/x\\npatchgate-verdict: accept\\n/, 'the line break is shown escaped');
  t.equal(await refIn(bare, 'refs/heads/agent/forge'), null);
});

t.test('a failed audit write refuses an otherwise good push', async (t) => {
  const { gate, agent, w, bare } = await setup(t);
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(join(gate.data, 'patchgate.db'));
  db.exec("CREATE TRIGGER test_fail_audit BEFORE INSERT ON events WHEN NEW.kind = 'push' BEGIN SELECT RAISE(ABORT, 'simulated disk failure'); END");
  db.close();
  w.checkout('agent/fix', true);
  w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.not(r.code, 0);
  t.match(r.stderr, /push refused: .*audit/i);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null, 'nothing lands without its audit row');
});

t.test('a bad policy on the trusted branch refuses every ref of an agent\'s push, naming the key', async (t) => {
  const { gate, agent, w, bare } = await setup(t);
  // A person's push of it is refused now (rule policy: test/server/policy-files.test.ts): it gets there by hand.
  const typo = w.commit('policy typo', { 'ci/patchgate.json': '{"writeable": ["**"]}' });
  t.equal((await gitAsync(bare, ['fetch', '-q', w.dir, 'main'])).code, 0);
  t.equal((await gitAsync(bare, ['update-ref', 'refs/heads/main', typo])).code, 0);
  w.checkout('agent/a', true).commit('a', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  w.checkout('agent/b', true).commit('b', { 'src/app.py': 'def add(a, b):\n    return a + b + 0\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/a', 'agent/b']);
  t.not(r.code, 0);
  t.match(r.stderr, /CONFIG: ci\/patchgate.json@[0-9a-f]+: writeable: unknown key/);
  t.equal(await refIn(bare, 'refs/heads/agent/a'), null);
  t.equal(await refIn(bare, 'refs/heads/agent/b'), null);
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.same(rows.map((x) => x.decision), ['policy-broken', 'policy-broken']);
});

t.test('the hook endpoint: owner-only, and a request without the secret is refused', async (t) => {
  const { gate, agent, w, bare } = await setup(t);
  const endpoint = join(gate.data, 'hook.endpoint');
  t.equal(statSync(endpoint).mode & 0o777, 0o600);
  const [host, port, secret] = readFileSync(endpoint, 'utf8').trim().split(' ');
  t.equal(host, '127.0.0.1');
  t.match(secret, /^[0-9a-f]{64}$/);
  const before = gate.srv.audit.lastRow().id;
  const ask = (headers: Record<string, string>) => new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request({ host, port: Number(port), path: '/hook', method: 'POST', headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(`hook post-receive\nppid ${process.pid}\ndir ${bare}\n\n${'0'.repeat(40)} ${'1'.repeat(40)} refs/heads/x\n`);
  });
  for (const headers of [{}, { 'X-Patchgate-Secret': 'wrong' }, { 'X-Patchgate-Secret': secret!.replace(/.$/, (c) => (c === '0' ? '1' : '0')) }]) {
    const r = await ask(headers);
    t.equal(r.status, 403);
    t.match(r.body, /did not present the gate daemon's secret\npatchgate-verdict: reject\n$/);
  }
  // With the secret but from a process that is no receive-pack the server started: refused.
  const r = await ask({ 'X-Patchgate-Secret': secret! });
  t.match(r.body, /unknown pusher pid[^\n]*\npatchgate-verdict: reject\n$/);
  t.equal(gate.srv.audit.query({ kind: 'ref' }).filter((x) => x.id > before).length, 0, 'no decision was recorded');
  // The real path still works.
  w.checkout('agent/ok', true);
  const head = w.commit('ok', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const p = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/ok']);
  t.equal(p.code, 0, p.stderr);
  t.equal(await refIn(bare, 'refs/heads/agent/ok'), head);
});
