// The hook path under failure: a shim that gives up or a receive-pack that dies before the
// verdict arrives leaves an audit that says refused; a flood of bad hook requests writes a
// bounded number of `auth` rows; a damaged patchgate.db stops the start with a clear error; a
// damaged or deleted cache.db costs nothing but time; agent and human pushes at once keep
// their own identities. Real git, real HTTP, real SQLite.

import t from 'tap';
import http from 'node:http';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, seededGate, startGate } from '../helpers/gate.js';
import { startServer } from '../../src/server/app.js';
import { AuditStore } from '../../src/audit/store.js';
import { SHIM_MARGIN_S } from '../../src/server/hook-service.js';

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
};

type TT = Parameters<Parameters<typeof t.test>[1]>[0];

async function setup(t: TT, opts: Parameters<typeof startGate>[1] = {}) {
  return seededGate(t, BASE, opts);
}

t.test('the shims wait for the daemon\'s own limit plus a margin (hook.endpoint carries it)', async (t) => {
  const { gate } = await setup(t, { hookTimeoutMs: 45_000 });
  const fields = readFileSync(join(gate.data, 'hook.endpoint'), 'utf8').trim().split(' ');
  t.equal(fields.length, 4);
  t.equal(Number(fields[3]), 45 + SHIM_MARGIN_S);
});

t.test('a shim that gives up says why, and the audit says refused', async (t) => {
  let gate!: Awaited<ReturnType<typeof setup>>['gate'];
  let slowNext = false;
  const s = await setup(t, {
    beforeJudge: async () => {
      if (!slowNext) return;
      // Longer than the shim now waits (1 s, below), far shorter than the daemon's limit.
      await new Promise((r) => setTimeout(r, 3000));
    },
  });
  gate = s.gate;
  const endpoint = join(gate.data, 'hook.endpoint');
  const [host, port, secret] = readFileSync(endpoint, 'utf8').trim().split(' ');
  writeFileSync(endpoint, `${host} ${port} ${secret} 1\n`, { mode: 0o600 });
  slowNext = true;
  s.w.checkout('agent/fix', true);
  s.w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(s.w.dir, ['push', gate.remote('app', 'agent-1', s.agent), 'agent/fix']);
  t.not(r.code, 0);
  t.match(r.stderr, /patchgate: push refused: the gate daemon gave no verdict within 1 s \(its hook time limit plus a margin\)/);
  t.equal(await refIn(s.bare, 'refs/heads/agent/fix'), null, 'nothing moved');
  const deadline = Date.now() + 30_000;
  while (gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' }).length === 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(rows.length, 1, 'one decision was recorded');
  t.equal(rows[0]!.verdict, 'reject', 'the audit says refused, not accepted');
  t.equal(gate.srv.audit.query({ kind: 'push', actor: 'agent-1' })[0]?.verdict, 'reject');
  t.equal(gate.srv.audit.query({ verdict: 'accept', actor: 'agent-1' }).length, 0, 'no accept row for this push');
});

t.test('receive-pack dying while the accept is judged: audited as refused with the reason', async (t) => {
  let gate!: Awaited<ReturnType<typeof setup>>['gate'];
  let kill = false;
  const s = await setup(t, {
    beforeJudge: async () => {
      if (!kill) return;
      for (const pid of gate.srv.hooks.sessions.keys()) process.kill(pid, 'SIGKILL');
      // Let the server see the exit before the judgement (which accepts) ends.
      await new Promise((r) => setTimeout(r, 500));
    },
  });
  gate = s.gate;
  kill = true;
  s.w.checkout('agent/fix', true);
  s.w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(s.w.dir, ['push', gate.remote('app', 'agent-1', s.agent), 'agent/fix']);
  t.not(r.code, 0, 'the push failed');
  t.equal(await refIn(s.bare, 'refs/heads/agent/fix'), null);
  const deadline = Date.now() + 30_000;
  while (gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' }).length === 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
  const [row] = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(row?.verdict, 'reject', 'judged accept, but never delivered: audited as refused');
  const trace = gate.srv.audit.getPush(row!.pushId!);
  const rules = JSON.stringify(trace?.refs[0]?.rules);
  t.match(rules, /"rule":"delivery"/);
  t.match(rules, /never reached git/);
});

t.test('a flood of bad hook requests writes a bounded number of auth rows, then one summary', async (t) => {
  const { gate, bare } = await setup(t);
  const [host, port, secret] = readFileSync(join(gate.data, 'hook.endpoint'), 'utf8').trim().split(' ');
  const ask = (headers: Record<string, string>, ppid: number) => new Promise<string>((resolve, reject) => {
    const req = http.request({ host, port: Number(port), path: '/hook', method: 'POST', headers }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end(`hook pre-receive\nppid ${ppid}\ndir ${bare}\n\n`);
  });
  const before = gate.srv.audit.lastRow().id;
  const answers: string[] = [];
  for (let i = 0; i < 60; i++) {
    answers.push(await ask({ 'X-Patchgate-Secret': 'wrong' }, 999_000 + i));
    answers.push(await ask({ 'X-Patchgate-Secret': secret! }, 999_000 + i));
  }
  t.ok(answers.every((a) => a.endsWith('patchgate-verdict: reject\n')), 'every request is refused all the same');
  const during = gate.srv.audit.query({ kind: 'auth', limit: 1000 }).filter((r) => r.id > before).length;
  t.ok(during > 0 && during <= 6, `${during} auth rows for 120 bad requests`);
  const dbPath = gate.srv.audit.path;
  await gate.srv.close();
  const store = AuditStore.open(dbPath);
  t.teardown(() => store.close());
  const rows = store.query({ kind: 'auth', limit: 1000 }).filter((r) => r.id > before);
  t.ok(rows.length <= 8, `${rows.length} rows in all after the summary`);
  const text = rows.map((r) => r.reason ?? '').join('\n');
  t.match(text, /and 57 more hook-secret failure\(s\)/);
  t.match(text, /and 57 more hook-pid failure\(s\)/);
  t.equal(store.verify().ok, true, 'the chain is intact');
});

t.test('a damaged patchgate.db: the server does not start, and says why', async (t) => {
  const data = tempDir('pg-data-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  writeFileSync(join(data, 'patchgate.db'), Buffer.alloc(8192, 0x5a));
  const err = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: () => {} }).then(() => null, (e: unknown) => e as Error);
  t.ok(err, 'start refused');
  t.match(err?.message, /cannot open the audit log .*patchgate\.db: .*damaged or not a patchgate audit log.*restore it from a backup/);
  t.equal(existsSync(join(data, 'hook.endpoint')), false, 'no hook endpoint: every push is refused');
});

t.test('a damaged cache.db is moved aside at start; a cache.db deleted while running changes nothing but speed', async (t) => {
  const first = await setup(t);
  const { gate, agent, w, bare } = first;
  await gate.srv.close();
  writeFileSync(join(gate.data, 'cache.db'), Buffer.alloc(8192, 0x5a));
  for (const f of ['cache.db-wal', 'cache.db-shm']) rmSync(join(gate.data, f), { force: true });
  const logs: string[] = [];
  const srv = await startServer({ dataDir: gate.data, port: 0, host: '127.0.0.1', log: (l) => logs.push(l) });
  const remote = `http://agent-1:${agent}@127.0.0.1:${srv.port}/app.git`;
  try {
    t.ok(readdirSync(gate.data).some((f) => /^cache\.db\.damaged-\d+$/.test(f)), 'the damaged file was kept aside');
    await srv.hooks.warmed;
    for (const f of readdirSync(gate.data).filter((x) => /^cache\.db(-wal|-shm)?$/.test(x))) rmSync(join(gate.data, f));
    w.checkout('agent/ok', true);
    const ok = w.commit('ok', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
    const r1 = await gitAsync(w.dir, ['push', remote, 'agent/ok']);
    t.equal(r1.code, 0, r1.stderr);
    t.equal(await refIn(bare, 'refs/heads/agent/ok'), ok);
    w.checkout('agent/api', true);
    w.commit('api change', { 'src/app.py': 'def add(a, b, c=0):\n    return a + b + c\n' });
    const r2 = await gitAsync(w.dir, ['push', remote, 'agent/api']);
    t.not(r2.code, 0);
    t.match(r2.stderr, /\[contract\] public API of src\/ changed/);
    const rows = srv.audit.query({ kind: 'ref', actor: 'agent-1' });
    t.same(rows.map((x) => x.verdict), ['reject', 'accept'], 'both decisions are in the audit log');
  } finally {
    await srv.close();
  }
});

t.test('agent and human pushes at once keep their own identities (the pid mapping)', async (t) => {
  const { gate, human, agent, w, bare } = await setup(t);
  const pairs = 4;
  const jobs: Array<Promise<{ who: string; code: number; branch: string }>> = [];
  for (let i = 0; i < pairs; i++) {
    for (const who of ['agent', 'human'] as const) {
      const c = TestRepo.init(t);
      c.git('pull', '-q', w.dir, 'main');
      const branch = `${who}/t${i}`;
      c.checkout(branch, true).commit('edit the tests', { 'tests/test_app.py': `def test_${who}_${i}():\n    assert True\n` });
      const url = gate.remote('app', who === 'agent' ? 'agent-1' : 'alice', who === 'agent' ? agent : human);
      jobs.push(gitAsync(c.dir, ['push', url, branch]).then((r) => ({ who, code: r.code, branch })));
    }
  }
  const results = await Promise.all(jobs);
  for (const r of results) {
    if (r.who === 'agent') t.not(r.code, 0, `${r.branch}: the agent's test edit is refused`);
    else t.equal(r.code, 0, `${r.branch}: the person's test edit is accepted`);
    t.equal(!!(await refIn(bare, `refs/heads/${r.branch}`)), r.who === 'human', `${r.branch} moved only for the person`);
  }
  const pushes = gate.srv.audit.query({ kind: 'ref', limit: 100 }).filter((x) => x.ref !== 'refs/heads/main');
  t.equal(pushes.length, pairs * 2);
  for (const p of pushes) {
    const who = p.ref!.startsWith('refs/heads/agent/') ? 'agent-1' : 'alice';
    t.equal(p.actor, who, `${p.ref} audited for ${who}`);
    t.equal(p.verdict, who === 'alice' ? 'accept' : 'reject');
  }
});
