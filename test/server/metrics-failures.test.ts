// The failure counters of /metrics on a real in-process server: a push held past the hook
// time limit counts once in patchgate_hook_timeouts_total and as a refused push decided by
// `error`; a push whose decision the audit log cannot write counts in
// patchgate_audit_write_failures_total, is refused, and is not counted as a push.

import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { TestRepo } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';

async function value(gate: Awaited<ReturnType<typeof startGate>>, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await gate.srv.metrics.registry.getSingleMetric(name)!.get()).values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return m?.value ?? 0;
}

t.test('a push past the hook time limit', async (t) => {
  let hold = false;
  // The judge waits until the time limit cancels it: a certain timeout, not a timed one.
  // 3 s: the first push (tree-sitter's start included) must fit in it on a loaded 2-core machine.
  const gate = await startGate(t, { hookTimeoutMs: 3000, beforeJudge: () => (hold ? new Promise(() => {}) : Promise.resolve()) });
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'x = 1\n' });
  const first = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']); t.equal(first.code, 0, first.stderr);
  hold = true;
  w.checkout('agent/x', true).commit('c', { 'src/app.py': 'x = 2\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/x']);
  t.not(r.code, 0, 'refused');
  t.equal(await value(gate, 'patchgate_hook_timeouts_total'), 1);
  t.equal(await value(gate, 'patchgate_pushes_total', { verdict: 'reject', rule: 'error' }), 1);
  t.equal(await value(gate, 'patchgate_pushes_total', { verdict: 'accept', rule: 'none' }), 1);
  t.equal(gate.srv.audit.query({ kind: 'push', verdict: 'reject' }).length, 1, 'the audit log agrees');
});

t.test('a push whose decision cannot be written', async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'x = 1\n', 'tests/t.py': 'x = 1\n' });
  const first = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']); t.equal(first.code, 0, first.stderr);
  // Another writer makes every new audit row fail: a trigger that refuses inserts.
  const db = new Database(join(gate.data, 'patchgate.db'));
  db.exec("CREATE TRIGGER no_more BEFORE INSERT ON events WHEN NEW.kind IN ('push', 'ref') BEGIN SELECT RAISE(ABORT, 'disk says no'); END");
  db.close();
  w.checkout('agent/x', true).commit('c', { 'tests/t.py': 'x = 2\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/x']);
  t.not(r.code, 0, 'refused');
  t.equal(await value(gate, 'patchgate_audit_write_failures_total'), 1);
  t.equal(await value(gate, 'patchgate_pushes_total', { verdict: 'reject' }), 0, 'not counted as an audited push');
  t.equal(await value(gate, 'patchgate_pushes_total', { verdict: 'accept', rule: 'none' }), 1);
});
