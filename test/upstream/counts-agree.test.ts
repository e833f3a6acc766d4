// Issue 48, item 3: every place that counts pushes counts the same thing. After a mixed run in
// front of a real upstream (gate accepts, gate refusals, upstream refusals of pushes the gate had
// written as accepted, evaluate mode's would-rejects, one of them refused upstream too), the log
// read by outcome (`audit --json`), `audit --verdict`, the page's charts and its /pushes table,
// and /metrics agree, before and after a restart of the server on the same data folder; on
// SQLite and on PostgreSQL.

import t from 'tap';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../src/server/app.js';
import { runRepoCreateUpstream, runRepoMode } from '../../src/commands/upstream.js';
import { runAudit } from '../../src/commands/admin.js';
import { TestRepo, removeTree, tempDir } from '../helpers/repo.js';
import { gitAsync } from '../helpers/gate.js';
import { startUpstream } from '../helpers/upstream.js';
import { needPostgres, startPostgres } from '../helpers/postgres.js';

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
};
const VERDICTS = ['accept', 'reject', 'would-reject'] as const;
type Counts = Record<(typeof VERDICTS)[number], number>;
const zero = (): Counts => ({ accept: 0, reject: 0, 'would-reject': 0 });

const basic = (user: string, secret: string) => ({ Authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}` });

/** pushes_total summed by verdict, from the server's own /metrics text. */
async function metricsCounts(srv: RunningServer, admin: string): Promise<Counts> {
  const text = await (await fetch(`${srv.url}/metrics`, { headers: basic('ops', admin) })).text();
  const out = zero();
  for (const m of text.matchAll(/^patchgate_pushes_total\{verdict="([^"]+)",rule="([^"]+)"\} (\d+)/gm)) out[m[1] as keyof Counts] += Number(m[3]);
  return out;
}

/** The overview page's push chart, read from its "as a table" form (the first series: days). */
async function pageCounts(srv: RunningServer, admin: string): Promise<{ pushes: Counts; refusalsByRule: Record<string, number> }> {
  const page = await (await fetch(`${srv.url}/`, { headers: basic('ops', admin) })).text();
  const table = /<table class="series">([\s\S]*?)<\/table>/.exec(page)![1]!;
  const heads = [...table.matchAll(/<th>([^<]*)<\/th>/g)].map((m) => m[1]!).slice(1);
  const pushes = zero();
  for (const row of table.matchAll(/<tr><td>[^<]*<\/td>((?:<td class="n">\d+<\/td>)+)<\/tr>/g)) {
    [...row[1]!.matchAll(/<td class="n">(\d+)<\/td>/g)].forEach((m, i) => (pushes[heads[i] as keyof Counts] += Number(m[1])));
  }
  return { pushes, refusalsByRule: rulesChart(page) };
}

/** "Refusals by rule": the chart's own table rows (key, count). */
function rulesChart(page: string): Record<string, number> {
  const section = /Refusals by rule([\s\S]*?)<\/section>/.exec(page)?.[1] ?? '';
  const out: Record<string, number> = {};
  for (const m of section.matchAll(/<tr><td>(?:<a[^>]*>)?([^<]+)(?:<\/a>)?<\/td><td class="n">(\d+)<\/td><\/tr>/g)) out[m[1]!] = Number(m[2]);
  return out;
}

/** The /pushes table: one row per ref decision, by the verdict it shows. */
async function tableCounts(srv: RunningServer, admin: string, query = ''): Promise<Counts> {
  const page = await (await fetch(`${srv.url}/pushes${query}`, { headers: basic('ops', admin) })).text();
  const out = zero();
  for (const m of page.matchAll(/<td class="verdict">([^<]+)<\/td>/g)) out[m[1] as keyof Counts]++;
  return out;
}

const noPg = needPostgres(t);
for (const store of ['sqlite', 'postgres'] as const) t.test(`${store}: after upstream refusals, evaluate mode and a restart, the log, audit, the page and /metrics count the same pushes`, { skip: store === 'postgres' && noPg ? noPg : false }, async (t) => {
  const auditUrl = store === 'postgres' ? (await startPostgres(t)).url : undefined;
  const opts = { port: 0, host: '127.0.0.1', log: () => {}, upstreamFreshMs: 0, ...(auditUrl ? { auditUrl } : {}) };
  // The commands' own way to the log's password, as a person gives it: PATCHGATE_AUDIT_URL.
  if (auditUrl) {
    process.env.PATCHGATE_AUDIT_URL = auditUrl;
    t.teardown(() => void delete process.env.PATCHGATE_AUDIT_URL);
  }
  const up = await startUpstream(t);
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  await up.create('app', w.dir);
  // upstream refuses any branch named agent/deny*, whatever the gate said.
  up.hook('app', 'while read o n r; do case "$r" in refs/heads/agent/deny*) echo "upstream rule: no deny branches" >&2; exit 1;; esac; done; exit 0');
  const data = tempDir('pg-counts-');
  t.teardown(() => removeTree(data));
  const credDir = tempDir('pg-cred-');
  t.teardown(() => rmSync(credDir, { recursive: true, force: true }));
  writeFileSync(join(credDir, 'token'), `${up.secret}\n`);

  let srv = await startServer({ dataDir: data, ...opts });
  t.teardown(() => srv.close());
  await runRepoCreateUpstream({ data, name: 'app', trusted: 'main', upstream: up.url('app'), credentialFile: join(credDir, 'token'), mode: 'enforce' });
  const agent = await srv.tokens.create('agent-1', 'agent');
  const admin = await srv.tokens.create('ops', 'admin');
  const push = (branch: string) => gitAsync(w.dir, ['push', `http://agent-1:${agent}@127.0.0.1:${srv.port}/app.git`, `HEAD:refs/heads/${branch}`]);

  // enforce: an accept that lands, a gate refusal, an accept upstream refuses.
  w.checkout('work', true).commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  t.equal((await push('agent/ok')).code, 0, 'accepted and forwarded');
  t.not((await push('agent/deny-1')).code, 0, 'accepted by the gate, refused by upstream');
  w.checkout('weak', true).commit('weaken', { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  t.not((await push('agent/weak')).code, 0, 'refused by the gate (write-block)');
  // evaluate: a would-reject that lands, and one upstream refuses.
  await runRepoMode({ data, name: 'app', mode: 'evaluate' });
  t.equal((await push('agent/eval')).code, 0, 'evaluate mode: accepted as would-reject');
  t.not((await push('agent/deny-2')).code, 0, 'evaluate mode: refused by upstream');

  const expected = { accept: 1, reject: 3, 'would-reject': 1 };
  const check = async (label: string): Promise<void> => {
    // The log, by outcome: audit --kind push --json.
    const rows = (await runAudit({ data, json: true, kind: 'push', limit: 1000 })).map((l) => JSON.parse(l) as { verdict: keyof Counts; outcome?: keyof Counts });
    const log = zero();
    for (const r of rows) log[r.outcome ?? r.verdict]++;
    t.same(log, expected, `${label}: the log read by outcome`);
    for (const v of VERDICTS) t.equal((await runAudit({ data, json: true, kind: 'push', verdict: v, limit: 1000 })).length, expected[v], `${label}: audit --kind push --verdict ${v}`);
    t.same(await metricsCounts(srv, admin), expected, `${label}: /metrics pushes_total`);
    const page = await pageCounts(srv, admin);
    t.same(page.pushes, expected, `${label}: the page's push chart`);
    t.equal(page.refusalsByRule.upstream, 2, `${label}: the page counts two refusals by rule upstream`);
    t.equal(page.refusalsByRule['write-block'], 1, `${label}: and one by write-block`);
    // One ref per push here: the table's ref rows count the same.
    t.same(await tableCounts(srv, admin), expected, `${label}: the /pushes table`);
    t.same(await tableCounts(srv, admin, '?verdict=reject'), { ...zero(), reject: 3 }, `${label}: /pushes?verdict=reject`);
    t.same(await tableCounts(srv, admin, '?rule=upstream&verdict=reject'), { ...zero(), reject: 2 }, `${label}: the chart's link to upstream refusals`);
  };
  await check('before the restart');
  const refusals = (await runAudit({ data, json: true, kind: 'upstream-refusal', limit: 100 })).map((l) => JSON.parse(l) as { ref: string; decision: string; reason: string });
  t.same(refusals.map((r) => r.ref).sort(), ['refs/heads/agent/deny-1', 'refs/heads/agent/deny-2'], 'one upstream-refusal row per ref upstream refused');
  t.ok(refusals.every((r) => r.decision === 'upstream-refused' && /remote rejected|declined/.test(r.reason)), 'each with its row and upstream\'s answer');

  await srv.close();
  srv = await startServer({ dataDir: data, ...opts });
  await check('after the restart');
  t.ok((await runAudit({ data, json: true, kind: 'push', limit: 1 })).length === 1, 'the CLI reads the same log as the server');
  if (srv.audit) t.ok(srv.audit.verify().ok, 'the log verifies');
});
