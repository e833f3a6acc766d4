// The credential at the decision (issue 45, item 4; src/audit/credential.ts): a push whose
// token is revoked (or expires, or is deleted) while the push is held open, after its headers
// were authenticated and before its decision is written, is refused, every ref, and its audit
// rows say so, after the revocation in the chain. A recheck that fails refuses too. Through a
// real server and the real git client, with the revocation made on a separate connection to
// the same store (as `patchgate token revoke`, or another node, would): SQLite here, and
// PostgreSQL (skipped by hand when it is not installed, failed in CI).

import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { AuditStore, type AuditRow } from '../../src/audit/store.js';
import { TokenStore, hashSecret } from '../../src/audit/tokens.js';
import { PgAuditStore } from '../../src/audit/pg-store.js';
import { PgTokenStore } from '../../src/audit/pg-tokens.js';
import type { AuditSink } from '../../src/audit/sink.js';
import { refusedForCredential } from '../../src/audit/credential.js';
import { bareDir, gitAsync, refIn, startGate, type Gate } from '../helpers/gate.js';
import { needPostgres, startPostgres } from '../helpers/postgres.js';
import { TestRepo, tempDir } from '../helpers/repo.js';

const BASE = { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'def test_add():\n    assert True\n' };

/** Runs `during` once, while the next push is held before it is judged (its request open, its token already checked). */
function holder() {
  let during: (() => Promise<void>) | null = null;
  let ran = 0;
  return {
    beforeJudge: async () => {
      const f = during;
      during = null;
      if (f) {
        ran++;
        await f();
      }
    },
    hold(f: () => Promise<void>) {
      during = f;
    },
    get ran() {
      return ran;
    },
  };
}

/** The push row of `actor` written last, its ref rows and the rules of its first ref. */
async function lastPush(sink: AuditSink, actor: string): Promise<{ push: AuditRow; refs: AuditRow[] }> {
  const [push] = await sink.query({ kind: 'push', actor });
  const trace = await sink.getPush(push!.pushId!);
  return { push: push!, refs: trace!.refs };
}

const credentialOutcome = (ref: AuditRow) => (ref.rules as Array<{ rule: string; status: string; details?: { credential?: string; judged?: string } }>).find((r) => r.rule === 'credential');

async function seed(t: Test, gate: Gate, human: string): Promise<TestRepo> {
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(r.code, 0, r.code ? r.stderr : 'a person seeds main');
  return w;
}

/** Everything the refused push must show: the refusal, no move, the rows, the order in the chain, no secret. */
async function assertRefused(t: Test, o: { gate: Gate; sink: AuditSink; actor: string; secret: string; ref: string; before: string | null; run: { code: number; stderr: string }; state: 'revoked' | 'expired' | 'unknown'; judged: string }) {
  const said = { revoked: 'was revoked', expired: 'expired', unknown: 'no longer exists' }[o.state];
  t.not(o.run.code, 0, 'the push is refused');
  t.match(o.run.stderr, new RegExp(`remote: patchgate: push refused: the token of ${o.actor} ${said} after this push began, before its decision was written, so no ref of it is accepted`), 'with one line that names the credential');
  t.equal(await refIn(bareDir(o.gate, 'app'), o.ref), o.before, 'the ref did not move');
  t.notMatch(o.run.stderr, o.secret, 'no secret in what the pusher sees');
  const { push, refs } = await lastPush(o.sink, o.actor);
  t.equal(push.verdict, 'reject', 'the push row says refused');
  t.ok(refs.length > 0);
  for (const r of refs) {
    t.equal(r.verdict, 'reject', `${r.ref}: refused`);
    t.equal(r.decision, 'gate-error');
    const c = credentialOutcome(r);
    t.equal(c?.status, 'fail', `${r.ref}: its rules say the credential failed`);
    t.equal(c?.details?.credential, o.state);
    t.equal(c?.details?.judged, o.judged, 'and what the judgement had been');
  }
  t.notMatch(JSON.stringify(refs), o.secret, 'no secret in the audit rows');
  return push;
}

t.test('SQLite: a push held open across a revocation, an expiry and a deletion is refused; a failing recheck refuses', async (t) => {
  const h = holder();
  const gate = await startGate(t, { beforeJudge: h.beforeJudge });
  await gate.repo('app');
  const sink = gate.srv.sink;
  // The revocations come over a connection of their own, as from `patchgate token revoke`.
  const other = AuditStore.open(gate.srv.audit.path);
  t.teardown(() => other.close());
  const otherTokens = new TokenStore(other);
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = await seed(t, gate, human);

  // Control: the same kind of push, nothing revoked, is accepted.
  w.checkout('agent/one', true);
  const one = w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const ok = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/one']);
  t.equal(ok.code, 0, ok.code ? ok.stderr : 'control: the push is accepted');
  t.equal(await refIn(bareDir(gate, 'app'), 'refs/heads/agent/one'), one);

  // Revoked while held: refused, every ref (two refs, so the update hook is in play too).
  w.checkout('agent/two', true);
  w.commit('fix 2', { 'src/app.py': 'def add(a, b):\n    return (b + a)\n' });
  w.checkout('agent/three', true);
  w.commit('fix 3', { 'src/app.py': 'def add(a, b):\n    return ((b + a))\n' });
  h.hold(async () => otherTokens.revoke('agent-1', { actor: 'test' }));
  const revoked = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/two', 'agent/three']);
  t.equal(h.ran, 1, 'the revocation ran while the push was held');
  const push = await assertRefused(t, { gate, sink, actor: 'agent-1', secret: agent, ref: 'refs/heads/agent/two', before: null, run: revoked, state: 'revoked', judged: 'accept' });
  t.equal(await refIn(bareDir(gate, 'app'), 'refs/heads/agent/three'), null, 'the other ref did not move either');
  const revokeRow = (await sink.query({ kind: 'admin' })).find((r) => r.action === 'token.revoke' && r.subject === 'agent-1');
  t.ok(revokeRow && revokeRow.id < push.id, 'the revocation is before the refused decision in the chain');
  const after = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/two']);
  t.match(after.stderr, /bad credentials|Authentication failed/, 'and the token is refused at the door from then on');

  // A person's token expires while held: refused the same way.
  const alice2 = gate.token('alice-2', 'human');
  w.checkout('main');
  const mainBefore = await refIn(bareDir(gate, 'app'), 'refs/heads/main');
  w.commit('more tests', { 'tests/test_more.py': 'def test_more():\n    assert 1\n' });
  h.hold(async () => {
    // Time passing, as the store sees it: the token's expiry is now behind it.
    const db = new Database(gate.srv.audit.path);
    try {
      db.prepare("UPDATE tokens SET expires = '2000-01-01T00:00:00.000Z' WHERE name = 'alice-2' AND revoked IS NULL").run();
    } finally {
      db.close();
    }
  });
  const expired = await gitAsync(w.dir, ['push', gate.remote('app', 'alice-2', alice2), 'main']);
  t.equal(h.ran, 2);
  await assertRefused(t, { gate, sink, actor: 'alice-2', secret: alice2, ref: 'refs/heads/main', before: mainBefore, run: expired, state: 'expired', judged: 'accept' });

  // An admin's token deleted outright while held: refused ("no longer exists").
  const admin = gate.token('root-2', 'admin');
  h.hold(async () => {
    const db = new Database(gate.srv.audit.path);
    try {
      db.prepare("DELETE FROM tokens WHERE name = 'root-2'").run();
    } finally {
      db.close();
    }
  });
  const deleted = await gitAsync(w.dir, ['push', gate.remote('app', 'root-2', admin), 'main']);
  t.equal(h.ran, 3);
  await assertRefused(t, { gate, sink, actor: 'root-2', secret: admin, ref: 'refs/heads/main', before: mainBefore, run: deleted, state: 'unknown', judged: 'accept' });

  // Fail closed: the token table cannot be read at the decision (renamed away while held).
  const alice3 = gate.token('alice-3', 'human');
  h.hold(async () => {
    const db = new Database(gate.srv.audit.path);
    try {
      db.exec('ALTER TABLE tokens RENAME TO tokens_away');
    } finally {
      db.close();
    }
  });
  const broken = await gitAsync(w.dir, ['push', gate.remote('app', 'alice-3', alice3), 'main']);
  t.equal(h.ran, 4);
  {
    const db = new Database(gate.srv.audit.path);
    db.exec('ALTER TABLE tokens_away RENAME TO tokens');
    db.close();
  }
  t.not(broken.code, 0, 'a recheck that fails refuses the push');
  t.match(broken.stderr, /remote: patchgate: push refused: the audit log could not record push \S+, so nothing is accepted/);
  t.equal(await refIn(bareDir(gate, 'app'), 'refs/heads/main'), mainBefore, 'main did not move');
  t.equal((await sink.query({ kind: 'push', actor: 'alice-3' })).length, 0, 'and no decision row was written');

  // The table back: the same person's push is accepted (the recheck passes), and the chain is whole.
  const ok3 = await gitAsync(w.dir, ['push', gate.remote('app', 'alice-3', alice3), 'main']);
  t.equal(ok3.code, 0, ok3.code ? ok3.stderr : 'accepted once the table is back');
  t.not(await refIn(bareDir(gate, 'app'), 'refs/heads/main'), mainBefore, 'main moved');
  t.equal((await lastPush(sink, 'alice-3')).push.verdict, 'accept');
  t.equal((await sink.verify()).ok, true, 'the chain verifies');
});

t.test('the stores: with a credential, an active token writes the decision as given; any other writes it refused', async (t) => {
  const store = AuditStore.open(join(tempDir('pg-cred-'), 'audit.db'));
  t.teardown(() => store.close());
  const tokens = new TokenStore(store);
  const secret = tokens.create('bot', 'agent');
  const input = { pushId: 'p-1', repo: 'app', actor: 'bot', role: 'agent' as const, verdict: 'accept' as const, refs: [{ ref: 'refs/heads/x', old: '0'.repeat(40), new: 'a'.repeat(40), verdict: 'accept' as const, rules: [] }] };
  const active = store.recordPush({ ...input, credential: hashSecret(secret) });
  t.equal(active.credential, undefined);
  t.equal(store.get(active.pushRowId)?.verdict, 'accept');
  tokens.revoke('bot');
  const revoked = store.recordPush({ ...input, pushId: 'p-2', credential: hashSecret(secret) });
  t.equal(revoked.credential, 'revoked');
  t.equal(store.get(revoked.pushRowId)?.verdict, 'reject');
  t.same(store.getPush('p-2')?.refs.map((r) => r.verdict), ['reject']);
  const gone = store.recordPush({ ...input, pushId: 'p-3', credential: 'f'.repeat(64) });
  t.equal(gone.credential, 'unknown', 'a hash no token has');
  t.equal(store.recordPush({ ...input, pushId: 'p-4' }).credential, undefined, 'without a credential nothing is checked');
  t.notOk(JSON.stringify(store.query({ limit: 100 })).includes(hashSecret(secret)), 'the hash is never stored in a row');
  t.same(refusedForCredential(input, 'expired').refs[0]!.verdict, 'reject');
});

const why = needPostgres(t);
if (why) {
  t.comment(`skipping the PostgreSQL credential test: ${why}`);
  t.pass('skipped: ' + why);
} else {
  t.test('PostgreSQL: a push held open while another node revokes its token is refused, and the rows say so', async (t) => {
    const pg = await startPostgres(t);
    const h = holder();
    const gate = await startGate(t, { auditUrl: pg.url, beforeJudge: h.beforeJudge });
    await gate.repo('app');
    const sink = gate.srv.sink;
    t.not(sink, gate.srv.audit, 'decisions and tokens are in PostgreSQL');
    // Another node on the same database.
    const node2 = await PgAuditStore.open(pg.url);
    t.teardown(() => node2.close());
    const node2Tokens = new PgTokenStore(node2);
    const human = await gate.tokenAsync('alice', 'human');
    const agent = await gate.tokenAsync('agent-1', 'agent');
    const w = await seed(t, gate, human);

    w.checkout('agent/one', true);
    const one = w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
    const ok = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/one']);
    t.equal(ok.code, 0, ok.code ? ok.stderr : 'control: the push is accepted');
    t.equal(await refIn(bareDir(gate, 'app'), 'refs/heads/agent/one'), one, 'control: accepted while the token holds');

    w.checkout('agent/two', true);
    w.commit('fix 2', { 'src/app.py': 'def add(a, b):\n    return (b + a)\n' });
    h.hold(() => node2Tokens.revoke('agent-1', { actor: 'node-2' }));
    const revoked = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/two']);
    t.equal(h.ran, 1, 'the revocation ran while the push was held');
    const push = await assertRefused(t, { gate, sink, actor: 'agent-1', secret: agent, ref: 'refs/heads/agent/two', before: null, run: revoked, state: 'revoked', judged: 'accept' });
    const revokeRow = (await sink.query({ kind: 'admin' })).find((r) => r.action === 'token.revoke' && r.subject === 'agent-1');
    t.ok(revokeRow && revokeRow.id < push.id, 'the revocation is before the refused decision in the chain');

    // A person's token revoked while held: refused too.
    w.checkout('main');
    const mainBefore = await refIn(bareDir(gate, 'app'), 'refs/heads/main');
    w.commit('more tests', { 'tests/test_more.py': 'def test_more():\n    assert 1\n' });
    h.hold(() => node2Tokens.revoke('alice', { actor: 'node-2' }));
    const person = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
    t.equal(h.ran, 2);
    await assertRefused(t, { gate, sink, actor: 'alice', secret: human, ref: 'refs/heads/main', before: mainBefore, run: person, state: 'revoked', judged: 'accept' });
    t.notMatch(person.stderr, pg.password, 'no database password in what the pusher sees');
    t.same(await sink.verify(), { ok: true, rows: (await sink.lastRow()).id }, 'the chain is whole');
  });
}
