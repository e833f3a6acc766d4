// Operations end to end, on `patchgate serve` as a real child process configured from
// environment variables alone: JSON log lines per request and per push decision, GET /metrics
// (admin tokens on the main port, no token on the separate metrics port) parsed by a
// Prometheus text parser with push counters equal to the audit log's counts, Bearer tokens on
// the API, and API errors that name query parameters and no server paths.

import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { CLI, cliRun } from '../helpers/serve.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync } from '../helpers/gate.js';

const parsePrometheus = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Array<{ name: string; type: string; metrics: Array<{ labels?: Record<string, string>; value?: string; buckets?: Record<string, string>; count?: string }> }>;

const cliEnv = (env: NodeJS.ProcessEnv, args: string[]) => cliRun(args, { env });

t.test('serve from env vars: logs, metrics equal to the audit log, Bearer, API errors', async (t) => {
  const data = tempDir('pg-obs-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  // Only variables: no flag at all.
  const env = { ...process.env, PATCHGATE_DATA: data, PATCHGATE_PORT: '0', PATCHGATE_HOST: '127.0.0.1', PATCHGATE_METRICS_PORT: '0', PATCHGATE_LOG_FORMAT: 'json', PATCHGATE_HOOK_TIMEOUT: '60' };
  const child = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const exited = new Promise<number | string>((r) => child.once('exit', (code, sig) => r(code ?? sig ?? -1)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  const started = await new Promise<{ port: number; metricsPort: number }>((resolve, reject) => {
    child.stdout.on('data', (c) => {
      stdout += c;
      const m = / at http:\/\/127\.0\.0\.1:(\d+) /.exec(stdout);
      const mm = /metrics \(no token\) at http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(stdout);
      if (m && mm) resolve({ port: Number(m[1]), metricsPort: Number(mm[1]) });
    });
    void exited.then((code) => reject(new Error(`serve exited ${code}: ${stdout}${stderr}`)));
  });
  t.match(stdout, new RegExp(`serving ${data.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/repos`), 'PATCHGATE_DATA chose the data folder');
  const base = `http://127.0.0.1:${started.port}`;

  // The CLI finds the same data folder through PATCHGATE_DATA, without --data.
  const admin = readFileSync(join(data, 'admin-token'), 'utf8').trim();
  t.equal((await cliEnv(env, ['repo', 'create', 'app'])).code, 0);
  const human = (await cliEnv(env, ['token', 'create', 'alice', '--role', 'human'])).stdout.trim().split('\n').pop()!;
  const agent = (await cliEnv(env, ['token', 'create', 'agent-1', '--role', 'agent'])).stdout.trim().split('\n').pop()!;

  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'x = 1\n' });
  const url = (user: string, secret: string) => `http://${user}:${secret}@127.0.0.1:${started.port}/app.git`;
  t.equal((await gitAsync(w.dir, ['push', url('alice', human), 'main'])).code, 0, 'the person seeds main');
  w.checkout('agent/bad', true).commit('weaken', { 'tests/test_app.py': 'x = 2\n' });
  t.not((await gitAsync(w.dir, ['push', url('agent-1', agent), 'agent/bad'])).code, 0, 'a test edit is refused');
  w.checkout('main').checkout('agent/good', true).commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  t.equal((await gitAsync(w.dir, ['push', url('agent-1', agent), 'agent/good'])).code, 0, 'a src change is accepted');
  t.not((await gitAsync(w.dir, ['push', url('agent-1', agent), 'agent/good:main'])).code, 0, 'the trusted branch is refused');

  // /metrics: admin token (Bearer or Basic) on the main port; others refused.
  t.equal((await fetch(`${base}/metrics`)).status, 401);
  t.equal((await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${agent}` } })).status, 403);
  const viaBasic = await fetch(`${base}/metrics`, { headers: { Authorization: `Basic ${Buffer.from(`x:${admin}`).toString('base64')}` } });
  t.equal(viaBasic.status, 200);
  const res = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${admin}` } });
  t.equal(res.status, 200);
  const families = parsePrometheus(await res.text());
  const fam = (name: string) => families.find((f) => f.name === name);
  const pushes = fam('patchgate_pushes_total');
  t.ok(pushes, 'pushes_total is exposed');
  const byVerdict: Record<string, number> = {};
  const byRule: Record<string, number> = {};
  for (const m of pushes!.metrics) {
    byVerdict[m.labels!.verdict!] = (byVerdict[m.labels!.verdict!] ?? 0) + Number(m.value);
    byRule[m.labels!.rule!] = (byRule[m.labels!.rule!] ?? 0) + Number(m.value);
  }
  // The audit log's own counts.
  const rows = (await cliEnv(env, ['audit', '--kind', 'push', '--json'])).stdout.trim().split('\n').map((l) => JSON.parse(l) as { verdict: string; pushId: string });
  const auditCounts: Record<string, number> = {};
  for (const r of rows) auditCounts[r.verdict] = (auditCounts[r.verdict] ?? 0) + 1;
  t.same(byVerdict, auditCounts, 'pushes_total by verdict equals the audit log');
  t.same(auditCounts, { accept: 2, reject: 2 });
  t.same(byRule, { none: 2, 'write-block': 1, refs: 1 }, 'refusals counted by the deciding rule');
  // This parser keeps a histogram's buckets; the +Inf bucket is its count.
  t.equal(fam('patchgate_judge_seconds')!.metrics.reduce((n, m) => n + Number(m.buckets?.['+Inf'] ?? 0), 0), 4, 'one judge time per push');
  t.equal(Number(fam('patchgate_hook_timeouts_total')!.metrics[0]!.value), 0);
  t.equal(Number(fam('patchgate_audit_write_failures_total')!.metrics[0]!.value), 0);
  t.ok(Number(fam('patchgate_cache_hits_total')!.metrics[0]!.value) + Number(fam('patchgate_cache_misses_total')!.metrics[0]!.value) > 0, 'cache lookups are counted');
  const sep = await fetch(`http://127.0.0.1:${started.metricsPort}/metrics`);
  t.equal(sep.status, 200, 'the metrics port needs no token');
  t.match(await sep.text(), /patchgate_pushes_total\{verdict="reject",rule="write-block"\} 1/);
  t.equal((await fetch(`http://127.0.0.1:${started.metricsPort}/api/tokens`)).status, 404, 'and serves nothing else');

  // The API: Bearer accepted; errors name query parameters; no server paths.
  const auth = { Authorization: `Bearer ${admin}` };
  t.equal((await fetch(`${base}/api/tokens`, { headers: auth })).status, 200);
  const badLimit = await fetch(`${base}/api/audit?limit=abc`, { headers: auth });
  t.equal(badLimit.status, 400);
  const badLimitText = await badLimit.text();
  t.match(badLimitText, /query parameter limit/);
  t.notMatch(badLimitText, /--limit|null/);
  const badSince = await (await fetch(`${base}/api/audit?since=yesterday`, { headers: auth })).text();
  t.match(badSince, /query parameter since/);
  const created = await fetch(`${base}/api/repos?name=other`, { method: 'POST', headers: auth });
  t.equal(created.status, 201);
  const createdText = await created.text();
  t.notMatch(createdText, new RegExp(data.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'no server path in the answer');
  t.match(createdText, /created repository other/);

  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM stops it cleanly');

  // The log: every line JSON; one per request and per push decision, no secret anywhere.
  const lines = stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const pushLines = lines.filter((l) => l.event === 'push');
  t.equal(pushLines.length, 4, 'one log line per push decision');
  for (const l of pushLines) {
    t.match(l, { pushId: String, repo: 'app', actor: String, verdict: /^(accept|reject)$/, rule: String, ms: Number });
    t.ok(rows.some((r) => r.pushId === l.pushId), 'the logged push id is the audit row\'s');
  }
  t.same(pushLines.filter((l) => l.verdict === 'reject').map((l) => l.rule).sort(), ['refs', 'write-block']);
  // The push line names its refs and their verdicts (issue 21), in the fields and in the message.
  for (const l of pushLines) {
    const refs = l.refs as Array<{ ref: string; verdict: string; decision: string }>;
    t.ok(Array.isArray(refs) && refs.length > 0 && refs.every((r) => /^refs\//.test(r.ref) && /^(accept|reject)$/.test(r.verdict)), 'refs with verdicts');
    for (const r of refs) t.ok(String(l.msg).includes(`${r.ref} ${r.verdict}`), `the message names ${r.ref} ${r.verdict}`);
  }
  t.ok(pushLines.some((l) => (l.refs as Array<{ verdict: string; decision: string }>).some((r) => r.verdict === 'reject' && r.decision === 'test-tree-write')), 'a refused ref carries its decision row');
  const reqLines = lines.filter((l) => l.event === 'request');
  t.ok(reqLines.some((l) => l.route === 'git-receive-pack' && l.status === 200 && l.actor === 'agent-1' && l.repo === 'app'), 'a push request line names actor and repo');
  t.ok(reqLines.some((l) => l.path === '/metrics' && l.status === 403), 'a refused request is logged too');
  for (const secret of [admin, human, agent]) t.notOk(stderr.includes(secret) || stdout.includes(secret), 'no token in the logs');
  t.ok(lines.some((l) => l.event === 'start' && (l.sources as Record<string, string>).port === 'PATCHGATE_PORT'), 'the start line says where the port came from');
});
