// One push's audit rows stay under 64 KiB. A person's push of a real 10,000-file tree (every
// file a new public function: tens of thousands of waived contract findings) writes
// kilobytes: the first findings are kept, the rest counted per path with the digest of the
// full list, and `audit show` says what was cut. The tree is generated with plain fs and git.

import t from 'tap';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { seededGate, gitAsync } from '../helpers/gate.js';
import { runAuditShow } from '../../src/commands/admin.js';
import { MAX_PUSH_RECORD_BYTES, boundRecord } from '../../src/audit/bound.js';

t.test('a person\'s push of 10,000 new files writes kilobytes, and audit show says what was cut', async (t) => {
  const { gate, human, w } = await seededGate(t, { 'src/app.py': 'def add(a, b):\n    return a + b\n' }, { hookTimeoutMs: 600_000 });
  w.checkout('import', true);
  const files = 10_000;
  for (let d = 0; d < 100; d++) {
    const dir = join(w.dir, 'src', `pkg${d}`);
    mkdirSync(dir, { recursive: true });
    for (let i = 0; i < files / 100; i++) {
      writeFileSync(join(dir, `m${i}.py`), `def f${i}(a, b=${i}):\n    return a + b\n\n\ndef g${i}(x: int) -> int:\n    return x\n`);
    }
  }
  t.equal((await gitAsync(w.dir, ['add', '-A'])).code, 0);
  t.equal((await gitAsync(w.dir, ['commit', '-qm', 'import the tree'])).code, 0);
  const walBefore = statSync(join(gate.data, 'patchgate.db-wal')).size;
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'import']);
  t.equal(r.code, 0, `a person's push is accepted (contract findings are waived): ${r.stderr.slice(-2000)}`);
  const [ref] = gate.srv.audit.query({ kind: 'ref', actor: 'alice', limit: 1 });
  t.ok(ref);
  const rows = gate.srv.audit.db.prepare('SELECT coalesce(length(rules), 0) + coalesce(length(timings), 0) + coalesce(length(detail), 0) AS n FROM events WHERE push_id = ?').all(ref!.pushId!) as Array<{ n: number }>;
  const bytes = rows.reduce((a, x) => a + x.n, 0);
  t.ok(bytes < MAX_PUSH_RECORD_BYTES, `the push's rows hold ${bytes} bytes of JSON, under ${MAX_PUSH_RECORD_BYTES}`);
  const wal = statSync(join(gate.data, 'patchgate.db-wal')).size;
  t.ok(wal - walBefore < 2 * 1024 * 1024, `the WAL grew by ${wal - walBefore} bytes, not tens of megabytes`);
  const contract = (ref!.rules as Array<{ rule: string; status: string; findings: unknown[]; cut?: { findings: number; kept: number; digest: string; paths: number; byPath: Array<[string, number]> } }>).find((o) => o.rule === 'contract');
  t.equal(contract?.status, 'waived');
  t.ok(contract?.cut, 'the contract outcome says it was cut');
  t.ok(contract!.cut!.findings >= 2 * files, `every finding is counted (${contract!.cut!.findings})`);
  t.ok(contract!.findings.length <= contract!.cut!.kept && contract!.cut!.kept <= 20, 'the first findings are kept');
  t.ok(contract!.cut!.paths >= files, `counted over every path (${contract!.cut!.paths})`);
  t.match(contract!.cut!.digest, /^[0-9a-f]{64}$/, 'with the digest of the full list');
  t.ok(contract!.cut!.byPath.some(([p, n]) => /^src\/pkg\d+\/m\d+\.py$/.test(p) && n === 2), 'counts per path');
  const shown = (await runAuditShow({ data: gate.data, id: ref!.pushId!, json: false })).join('\n');
  t.match(shown, /contract\s+waived .* 200\d\d finding\(s\)/);
  t.match(shown, /cut: \d+ of 200\d\d finding\(s\) not stored \(over 100\d\d path\(s\)\); sha256 of the full list [0-9a-f]{64}/);
  t.ok((await gate.srv.audit.verify()).ok);
});

t.test('boundRecord: a record that fits is unchanged; huge details are cut to a digest', async (t) => {
  const small = { pushId: 'p-1', repo: 'app', actor: 'a', role: 'agent' as const, verdict: 'accept' as const, refs: [{ ref: 'refs/heads/x', old: '0'.repeat(40), new: '1'.repeat(40), verdict: 'accept' as const, rules: [{ rule: 'contract', status: 'pass', findings: [] }] }] };
  t.equal(boundRecord(small), small, 'unchanged (the same object)');
  const big = { ...small, refs: [{ ...small.refs[0]!, rules: [{ rule: 'contract', status: 'waived', findings: [], details: { diff: 'x'.repeat(200_000) } }] }] };
  const out = boundRecord(big);
  t.ok(JSON.stringify(out).length < MAX_PUSH_RECORD_BYTES);
  const o = out.refs[0]!.rules[0] as { details?: unknown; cut: { details: { bytes: number; digest: string } } };
  t.equal(o.details, undefined, 'the details are not stored');
  t.ok(o.cut.details.bytes > 200_000, 'their size is');
  t.match(o.cut.details.digest, /^[0-9a-f]{64}$/, 'and their digest');
});
