// The pinned command-line interface of DESIGN.md, run as outside scripts run it:
// `node dist/cli.js ...` (built by `npm test`'s pretest), checking output shape and exit codes.

import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

function cli(args: string[], cwd = process.cwd()): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('node', [CLI, ...args], { cwd }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

t.test('check: exit codes and the pinned --json shape', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'x = 1\n' });
  r.checkout('good', true).commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  r.checkout('main').checkout('bad', true).commit('weaken', { 'tests/test_app.py': 'x = 2\n' });
  const ok = await cli(['check', '--repo', r.dir, '--base', 'main', '--head', 'good', '--json']);
  t.equal(ok.code, 0);
  const okJson = JSON.parse(ok.stdout);
  t.equal(okJson.verdict, 'accept');
  t.same(okJson.reasons, []);
  t.match(okJson.contract, { base: /^[0-9a-f]{64}$/, head: /^[0-9a-f]{64}$/ });
  t.equal(typeof okJson.action, 'string');
  const bad = await cli(['check', '--repo', r.dir, '--base', 'main', '--head', 'bad', '--json']);
  t.equal(bad.code, 1);
  const badJson = JSON.parse(bad.stdout);
  t.equal(badJson.verdict, 'reject');
  t.match(badJson.reasons[0], { rule: 'write-block', path: 'tests/test_app.py', commit: /^[0-9a-f]{40}$/ });
  t.match(badJson.action, /strip test edits/);
  const human = await cli(['check', '--repo', r.dir, '--base', 'main', '--head', 'bad', '--role', 'human']);
  t.equal(human.code, 0);
  const err = await cli(['check', '--repo', r.dir, '--base', 'main', '--head', 'no-such-rev', '--json']);
  t.equal(err.code, 2);
  t.equal(JSON.parse(err.stdout).reasons[0].rule, 'error');
  const usage = await cli(['check', '--repo', r.dir, '--base', 'main']);
  t.equal(usage.code, 2, 'a missing option is an error');
  const badPolicy = TestRepo.init(t);
  badPolicy.commit('base', { 'ci/patchgate.json': '{"writeable": ["**"]}', 'src/a.py': 'x = 1\n' });
  badPolicy.checkout('w', true).commit('c', { 'src/a.py': 'x = 2\n' });
  const cfg = await cli(['check', '--repo', badPolicy.dir, '--base', 'main', '--head', 'w', '--json']);
  t.equal(cfg.code, 2);
  t.match(JSON.parse(cfg.stdout).reasons[0].message, /CONFIG: ci\/patchgate.json@[0-9a-f]+: writeable: unknown key/);
});

t.test('contract: digest on the last line; --json is one JSON document with the rows and the digest', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n' });
  const plain = await cli(['contract', '--repo', r.dir]);
  t.equal(plain.code, 0);
  const lines = plain.stdout.trim().split('\n');
  t.match(lines.at(-1), /^[0-9a-f]{64}$/);
  const json = await cli(['contract', '--repo', r.dir, '--json', '--format', 'seed']);
  const doc = JSON.parse(json.stdout) as { rows: string[]; digest: string };
  t.same(doc.rows, ['src/app.py::add(a,b)->']);
  t.match(doc.digest, /^[0-9a-f]{64}$/);
  const seedPlain = await cli(['contract', '--repo', r.dir, '--format', 'seed']);
  t.equal(doc.digest, seedPlain.stdout.trim().split('\n').at(-1), 'the same digest as plain contract prints last');
});

t.test('fixtures lock / verify', async (t) => {
  const r = TestRepo.init(t);
  r.write('tests/fixtures/a.json', '{"a": 1}\n').write('tests/fixtures/sub/b.bin', Buffer.from([0, 1, 2]));
  const lock = await cli(['fixtures', 'lock', 'tests/fixtures', '--repo', r.dir]);
  t.equal(lock.code, 0, lock.stderr);
  const locked = JSON.parse(readFileSync(join(r.dir, 'ci/fixtures.lock'), 'utf8'));
  t.same(Object.keys(locked), ['tests/fixtures/a.json', 'tests/fixtures/sub/b.bin']);
  t.equal((await cli(['fixtures', 'verify', '--repo', r.dir])).code, 0);
  r.write('tests/fixtures/a.json', '{"a": 2}\n');
  const drift = await cli(['fixtures', 'verify', '--repo', r.dir]);
  t.equal(drift.code, 1);
  t.match(drift.stdout, /drift: changed tests\/fixtures\/a.json/);
  const driftJson = await cli(['fixtures', 'verify', '--repo', r.dir, '--json']);
  t.equal(driftJson.code, 1, '--json keeps the exit code');
  const dj = JSON.parse(driftJson.stdout) as { ok: boolean; drift: Array<{ kind: string; path: string }> };
  t.equal(dj.ok, false);
  t.same(dj.drift.map((d) => `${d.kind} ${d.path}`), ['changed tests/fixtures/a.json']);
  r.write('tests/fixtures/new.json', '{}');
  t.match((await cli(['fixtures', 'verify', '--repo', r.dir])).stdout, /drift: unlocked tests\/fixtures\/new.json/);
  const missing = await cli(['fixtures', 'lock', 'nope', '--repo', r.dir]);
  t.equal(missing.code, 2);
});

t.test('ledger check', async (t) => {
  const r = TestRepo.init(t).at(Date.UTC(2026, 10, 1) / 1000);
  const row = (o: object) => JSON.stringify({ nodeid: 'tests/t.py::test_a', seed: 1, fixture_digest: 'f'.repeat(64), expires: '2026-11-20', reason: 'x', ...o });
  r.commit('base', { 'ci/flake-ledger.jsonl': row({}) + '\n' });
  const ok = await cli(['ledger', 'check', '--repo', r.dir, '--today', '2026-11-18']);
  t.equal(ok.code, 0, ok.stdout);
  t.match(ok.stdout, /expiring: tests\/t.py::test_a seed 1 expires 2026-11-20/);
  writeFileSync(join(r.dir, 'ci/flake-ledger.jsonl'), row({}) + '\n' + row({ seed: 2, fixture_digest: undefined }) + '\n');
  const bad = await cli(['ledger', 'check', '--repo', r.dir, '--today', '2026-11-18']);
  t.equal(bad.code, 1);
  t.match(bad.stdout, /:2: missingField: missing fixture_digest/);
  const badJson = await cli(['ledger', 'check', '--repo', r.dir, '--today', '2026-11-18', '--json']);
  t.equal(badJson.code, 1, '--json keeps the exit code');
  const bj = JSON.parse(badJson.stdout) as { ok: boolean; problems: Array<{ line: number; messageId: string }> };
  t.equal(bj.ok, false);
  t.same(bj.problems.map((p) => `${p.line}:${p.messageId}`), ['2:missingField']);
  t.equal((await cli(['ledger', 'check', '--repo', r.dir, '--today', 'tomorrow'])).code, 2);
});

t.test('token, repo and audit against a real server; audit verify detects an edit', async (t) => {
  const data = tempDir('pg-cli-');
  const made = await cli(['repo', 'create', 'app', '--data', data]);
  t.equal(made.code, 0, made.stderr);
  t.equal((await cli(['repo', 'create', '../evil', '--data', data])).code, 2);
  const agentOut = await cli(['token', 'create', 'agent-1', '--role', 'agent', '--data', data]);
  const agent = agentOut.stdout.trim().split('\n').at(-1)!;
  t.match(agent, /^pg_[A-Za-z0-9_-]{43}$/, 'the secret is the last line');
  const human = (await cli(['token', 'create', 'alice', '--role', 'human', '--data', data])).stdout.trim().split('\n').at(-1)!;
  t.notMatch((await cli(['token', 'list', '--data', data])).stdout, /pg_/, 'token list never shows secrets');

  const gate = await startGate(t, { dataDir: data });
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'x = 1\n' });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0);
  w.checkout('agent/a', true).commit('bad', { 'tests/test_app.py': 'x = 2\n' });
  t.not((await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/a'])).code, 0);

  const audit = await cli(['audit', '--data', data, '--json', '--kind', 'ref']);
  t.equal(audit.code, 0, audit.stderr);
  const rows = audit.stdout.trim().split('\n').map((l) => JSON.parse(l));
  t.equal(rows.length, 2);
  t.match(rows[0], { actor: 'agent-1', verdict: 'reject', decision: 'test-tree-write', ref: 'refs/heads/agent/a' });
  t.match(rows[1], { actor: 'alice', verdict: 'accept', ref: 'refs/heads/main' });
  const rejected = await cli(['audit', '--data', data, '--json', '--verdict', 'reject', '--actor', 'agent-1']);
  t.ok(rejected.stdout.trim().split('\n').every((l) => JSON.parse(l).verdict === 'reject'));
  const show = await cli(['audit', 'show', rows[0].pushId, '--data', data]);
  t.match(show.stdout, /write-block\s+fail/);
  t.match(show.stdout, /refs\s+pass/);
  t.match(show.stdout, /ledger\s+pass/);
  t.equal((await cli(['audit', '--data', data, '--since', 'last week'])).code, 2);

  await gate.srv.close();
  const intact = await cli(['audit', 'verify', '--data', data]);
  t.equal(intact.code, 0, intact.stdout);
  const db = new Database(join(data, 'patchgate.db'));
  db.exec('DROP TRIGGER IF EXISTS events_no_update');
  db.prepare("UPDATE events SET verdict = 'accept' WHERE id = ?").run(rows[0].id);
  db.close();
  const tampered = await cli(['audit', 'verify', '--data', data]);
  t.equal(tampered.code, 1);
  t.match(tampered.stdout, new RegExp(`first bad row ${rows[0].id}`));
});

t.test('ci through the CLI: the seed is the first line; green, and a forged pass is red', async (t) => {
  const { project, agent, tapCmd } = await import('../ci/project.js');
  const r = agent(project(t), { 'src/notes.mjs': '// notes, no exports\n' }, 'agent');
  const green = await cli(['ci', '--repo', r.dir, '--base', 'main', '--head', 'HEAD', '--seed', '42', '--', ...tapCmd()]);
  t.equal(green.stdout.split('\n')[0], 'patchgate: seed 42');
  t.equal(green.code, 0, green.code ? green.stdout + green.stderr : 'green');
  const bad = await cli(['ci', '--repo', r.dir, '--base', 'main', '--head', 'HEAD', '--', 'node', '-e', 'console.log("1 passed")']);
  t.equal(bad.code, 1, 'a forged "1 passed" with no report is red');
  t.match(bad.stdout.split('\n')[0], /^patchgate: seed \d+$/);
});
