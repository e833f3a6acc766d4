// Issue 48, item 1, through a real server: a policy is checked before it is accepted, for a
// person too (rule `policy`), and a trusted branch whose policy is broken anyway (moved by hand
// in the bare repository) refuses agents while a person's fix lands, judged under the last
// valid policy and audited as such.

import t from 'tap';
import { gitAsync, refIn, seededGate } from '../helpers/gate.js';

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
  // A valid policy of the project's own: the fallback must apply this one, not the defaults.
  'ci/patchgate.json': '{\n  "writable": ["src/**", "docs/**"]\n}\n',
};
const TYPO = '{\n  "writable": ["src/**", "docs/**"],\n  "writeable_typo": ["**"]\n}\n';
const FIXED = '{\n  "writable": ["src/**", "docs/**", "scripts/**"]\n}\n';

type Rules = Array<{ rule: string; status: string; details?: Record<string, unknown>; findings: unknown[] }>;

function lastRow(gate: Awaited<ReturnType<typeof seededGate>>['gate'], actor: string) {
  const rows = gate.srv.audit.query({ kind: 'ref', actor }).sort((x, y) => y.id - x.id);
  return rows[0] as unknown as { decision: string; verdict: string; new: string; rules: Rules };
}

t.test("a person's push of a policy with an unknown key is refused with the file and line; the fix lands", async (t) => {
  const { gate, human, w, bare } = await seededGate(t, BASE);
  const before = await refIn(bare, 'refs/heads/main');
  const url = gate.remote('app', 'alice', human);
  w.commit('policy typo', { 'ci/patchgate.json': TYPO });
  const r = await gitAsync(w.dir, ['push', url, 'main']);
  t.not(r.code, 0, 'refused');
  t.match(r.stderr, /remote: .*\[policy\] commit [0-9a-f]{12}: ci\/patchgate\.json:3: writeable_typo: unknown key/);
  t.match(r.stderr, /"code":"PG-POLICY-INVALID"/);
  t.equal(await refIn(bare, 'refs/heads/main'), before, 'the trusted branch did not move');
  const row = lastRow(gate, 'alice');
  t.equal(row.decision, 'policy-invalid');
  t.equal(row.verdict, 'reject');

  // A fixture lock that does not parse: the policy rule's finding (with its line), not a gate error of the fixtures rule.
  w.commit('fix policy, break lock', { 'ci/patchgate.json': FIXED, 'ci/fixtures.lock': '{\n  "tests/a.json": "nothex"\n}\n' });
  const lock = await gitAsync(w.dir, ['push', url, 'main']);
  t.not(lock.code, 0);
  t.match(lock.stderr, /\[policy\] commit [0-9a-f]{12}: ci\/fixtures\.lock:2: tests\/a\.json: value must be a lowercase hex sha256/);
  t.notMatch(lock.stderr, /gate error/);
  t.equal(lastRow(gate, 'alice').decision, 'policy-invalid');

  // The fix of both lands: nothing is locked.
  const fixed = w.commit('drop the lock', { 'ci/fixtures.lock': null });
  const ok = await gitAsync(w.dir, ['push', url, 'main']);
  t.equal(ok.code, 0, ok.stderr);
  t.equal(await refIn(bare, 'refs/heads/main'), fixed);
  const policy = lastRow(gate, 'alice').rules.find((x) => x.rule === 'policy')!;
  t.equal(policy.status, 'pass');
  t.same(policy.details?.checked, ['ci/patchgate.json'], 'the changed policy was checked');
});

t.test('a trusted branch moved by hand to a broken policy: agents refused, a person\'s fix lands under the fallback', async (t) => {
  const { gate, human, agent, w, bare } = await seededGate(t, BASE);
  const seed = (await refIn(bare, 'refs/heads/main'))!;
  // The broken policy reaches the trusted branch around the gate: a fetch and update-ref in the bare repository.
  const broken = w.commit('policy typo', { 'ci/patchgate.json': TYPO });
  t.equal((await gitAsync(bare, ['fetch', '-q', w.dir, 'main'])).code, 0);
  t.equal((await gitAsync(bare, ['update-ref', 'refs/heads/main', broken])).code, 0);
  t.equal(await refIn(bare, 'refs/heads/main'), broken);

  // An agent's push is refused, naming the file and line of the broken policy.
  w.checkout('agent/a', true).commit('a', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const a = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/a']);
  t.not(a.code, 0, 'the agent is refused');
  t.match(a.stderr, /\[policy\] ci\/patchgate\.json:3 on the trusted branch \([0-9a-f]{12}\) does not validate: .*writeable_typo: unknown key/);
  t.match(a.stderr, /"code":"PG-POLICY-BROKEN"/);
  t.equal(await refIn(bare, 'refs/heads/agent/a'), null);
  const agentRow = lastRow(gate, 'agent-1');
  t.equal(agentRow.decision, 'policy-broken');
  t.match(agentRow.rules.find((x) => x.rule === 'policy')?.details?.fallback, { brokenTip: broken, file: 'ci/patchgate.json', line: 3 });

  // A person's push that does not fix the policy is refused too: it would leave it broken.
  w.checkout('main');
  const notFix = w.commit('unrelated', { 'docs/readme.md': 'hello\n' });
  const nf = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.not(nf.code, 0);
  t.match(nf.stderr, /\[policy\] commit [0-9a-f]{12}: ci\/patchgate\.json:3: writeable_typo: unknown key; the trusted branch's policy is broken/);
  t.equal(await refIn(bare, 'refs/heads/main'), broken);

  // The person's fix lands, judged under the last valid policy (the seed's), and the row says so.
  const fix = w.commit('fix the policy', { 'ci/patchgate.json': FIXED });
  const p = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(p.code, 0, p.stderr);
  t.match(p.stderr, /patchgate: ACCEPT refs\/heads\/main/);
  t.match(p.stderr, new RegExp(`remote: +\\(the trusted branch's policy does not validate: judged under the policy of ${seed.slice(0, 12)}; the pushed policy validates\\)`));
  t.equal(await refIn(bare, 'refs/heads/main'), fix);
  t.not(notFix, fix);
  const row = lastRow(gate, 'alice');
  t.equal(row.verdict, 'accept');
  t.equal(row.new, fix);
  const outcome = row.rules.find((x) => x.rule === 'policy')!;
  t.equal(outcome.status, 'pass');
  t.match(outcome.details?.fallback, { brokenTip: broken, file: 'ci/patchgate.json', line: 3, judgedUnder: seed, error: /writeable_typo: unknown key/ });

  // The policy is whole again: an agent's push is judged as usual (no fallback in its row).
  w.checkout('agent/b', true).commit('b', { 'src/app.py': 'def add(a, b):\n    return a + b + 0\n' });
  const b = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/b']);
  t.equal(b.code, 0, b.stderr);
  const agentOk = lastRow(gate, 'agent-1');
  t.equal(agentOk.verdict, 'accept');
  t.equal(agentOk.rules.find((x) => x.rule === 'policy')?.details?.fallback, undefined);
});
