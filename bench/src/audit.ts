// Measurement (5): `patchgate audit` queries on a 1,000,000-row audit log. The log is filled
// three ways, each timed: through the store's API one push per transaction (as the server
// writes, an fsync each), through the same API inside large outer transactions (better-sqlite3
// turns the store's transactions into savepoints), and for the bulk through prepared statements
// that reproduce the store's hash chain with its own rowHash. verify() then proves the chain.

import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditStore, canonicalJson, rowHash, type QueryOptions, type RefDecisionInput } from '../../dist/audit/store.js';
import { CLI_JS, median, nowMs, Rng, run, tempDir } from './util.js';
import { overview, tablePage } from '../../dist/audit/insights.js';

export interface QueryFigure {
  name: string;
  options: QueryOptions;
  rows: number;
  firstMs: number;
  medianMs: number;
  p95Ms: number;
  plan: string[];
}

export interface AuditBenchResult {
  rows: number;
  pushes: number;
  dbBytes: number;
  /** One push per transaction, as the server writes: rows/s and the time 1M rows would take. */
  apiRowsPerSec: number;
  apiProjectedMs: number;
  /** The same API calls in outer transactions of `batch` pushes. */
  batchedRowsPerSec: number;
  /** Prepared-statement inserts reproducing the hash chain, same transactions. */
  directRowsPerSec: number;
  fillMs: number;
  batch: number;
  /** store.verify() over the whole log. */
  verifyMs: number;
  queries: QueryFigure[];
  cliActorRangeMs: number;
  /** The audit page (issue 15): the table's first page and the charts' queries (30-day window), first run and median. */
  page: { tableFirstMs: number; tableMedianMs: number; chartsFirstMs: number; chartsMedianMs: number; chartRefusals: number };
}

/** The content columns of `events` (store.ts keeps its list private; the schema is the contract). */
const COLUMNS = [
  'kind', 'time', 'push_id', 'repo', 'actor', 'role', 'remote_addr', 'user_agent', 'verdict',
  'ref', 'old', 'new', 'ref_count', 'decision', 'rules', 'contract_base', 'contract_head',
  'timings', 'moved', 'reason', 'action', 'subject', 'detail', 'base', 'head',
] as const;

const hex = (n: number) => randomBytes(n).toString('hex');
const DAY = 86_400_000;

function rulesFor(verdict: 'accept' | 'reject', human: boolean, head: string, base: string, files: number, path: string, commit: string): unknown[] {
  const reject = verdict === 'reject';
  return [
    { rule: 'refs', status: 'pass', findings: [], ms: 1 },
    reject && !human
      ? { rule: 'write-block', status: 'fail', ms: 4, details: { commits: 1, paths: 2 }, remediation: `strip the edits and push again: git reset --soft ${commit.slice(0, 12)} && git restore --source=${commit.slice(0, 12)} --staged --worktree -- ':(literal)${path}'`,
        findings: [{ messageId: 'protectedPath', path, commit, data: { commit: commit.slice(0, 12), path, verb: 'modifies', pattern: 'tests/**' }, message: `commit ${commit.slice(0, 12)} modifies protected path ${path} (matches tests/**)` }] }
      : { rule: 'write-block', status: human ? 'waived' : 'pass', findings: [], ms: 3, details: { commits: 1, paths: 1 } },
    { rule: 'contract', status: 'pass', findings: [], ms: 40, details: { format: 'v1', head, base, trusted: base, files, matched: 'base' } },
    { rule: 'fixtures', status: 'pass', findings: [], ms: 2, details: { locked: 10 } },
    { rule: 'ledger', status: 'pass', findings: [], ms: 3, details: { rows: 2 } },
  ];
}

export async function auditBench(rows: number, log: (s: string) => void): Promise<AuditBenchResult> {
  const data = tempDir('pga-', tmpdir());
  const dbPath = join(data, 'patchgate.db');
  const store = AuditStore.open(dbPath);
  const r = new Rng(5);
  const pushes = Math.ceil(rows / 3); // push row, ref row, confirm row
  const end = Date.now();
  const start = end - 365 * DAY;
  const step = (end - start) / pushes;
  const agents = Array.from({ length: 40 }, (_, i) => `agent-${i + 1}`);
  const humans = ['alice', 'bob', 'carol', 'dave', 'erin'];
  const repos = Array.from({ length: 20 }, (_, i) => `repo-${String(i + 1).padStart(2, '0')}`);
  const repoWeights = repos.map((_, i) => 1 / (i + 1));
  const repoTotal = repoWeights.reduce((a, b) => a + b, 0);
  const pickRepo = () => {
    let x = r.next() * repoTotal;
    for (let i = 0; i < repos.length; i++) if ((x -= repoWeights[i]!) <= 0) return repos[i]!;
    return repos[0]!;
  };
  interface Push {
    pushId: string; time: string; repo: string; actor: string; role: 'agent' | 'human'; verdict: 'accept' | 'reject';
    decision: RefDecisionInput; pushMs: number;
  }
  const make = (i: number): Push => {
    const t = Math.round(start + i * step);
    const human = r.chance(0.1);
    const actor = human ? r.pick(humans) : r.pick(agents);
    const verdict: 'accept' | 'reject' = r.chance(0.1) ? 'reject' : 'accept';
    const ref = human ? 'refs/heads/main' : `refs/heads/agent/${actor}/task-${i % 97}`;
    const newId = hex(20);
    const base = hex(32);
    return {
      pushId: `${t.toString(36)}-${hex(6)}`, time: new Date(t).toISOString(), repo: pickRepo(), actor, role: human ? 'human' : 'agent', verdict, pushMs: 32 + (i % 40),
      decision: {
        ref, old: hex(20), new: newId, verdict, decision: verdict === 'accept' ? 'accept' : 'test-tree-write',
        rules: rulesFor(verdict, human, base, base, 9000, `tests/unit/test_${i % 500}.py`, newId),
        contractBase: base, contractHead: base, timings: { total: 30 + (i % 40) },
      },
    };
  };
  // Through the store's API: validated and chained by the store itself.
  const viaApi = (p: Push) => {
    store.recordPush({ pushId: p.pushId, time: p.time, repo: p.repo, actor: p.actor, role: p.role, remoteAddr: '10.0.0.7', userAgent: 'git/2.39.5', verdict: p.verdict, timings: { total: p.pushMs }, refs: [p.decision] });
    store.confirmRefs(p.pushId, [{ ref: p.decision.ref, new: p.decision.new, moved: p.verdict === 'accept' }], { time: p.time, repo: p.repo });
  };
  // Straight into SQLite with the store's own row hash: the same rows, without per-push validation
  // and savepoints. verify() below proves the chain is the one the store would have written.
  const insert = store.db.prepare(`INSERT INTO events (id, ${COLUMNS.join(', ')}, prev_hash, hash) VALUES (@id, ${COLUMNS.map((c) => '@' + c).join(', ')}, @prev_hash, @hash)`);
  const setHead = store.db.prepare('UPDATE chain_head SET last_id = ?, last_hash = ? WHERE singleton = 1');
  const direct = (ps: Push[]) => {
    let { id, hash: prev } = store.lastRow();
    const put = (content: Record<string, unknown>) => {
      const row: Record<string, unknown> = { id: ++id, prev_hash: prev };
      for (const c of COLUMNS) row[c] = content[c] ?? null;
      row.hash = prev = rowHash(row);
      insert.run(row);
    };
    for (const p of ps) {
      const common = { time: p.time, push_id: p.pushId, repo: p.repo, actor: p.actor, role: p.role, remote_addr: '10.0.0.7', user_agent: 'git/2.39.5' };
      const d = p.decision;
      put({ kind: 'push', ...common, verdict: p.verdict, ref_count: 1, timings: canonicalJson({ total: p.pushMs }) });
      put({ kind: 'ref', ...common, ref: d.ref, old: d.old, new: d.new, verdict: d.verdict, decision: d.decision, rules: canonicalJson(d.rules), contract_base: d.contractBase, contract_head: d.contractHead, timings: canonicalJson(d.timings) });
      put({ kind: 'confirm', time: p.time, push_id: p.pushId, repo: p.repo, ref: d.ref, new: d.new, moved: p.verdict === 'accept' ? 1 : 0 });
    }
    setHead.run(id, prev);
  };

  // 1. The server's way: each push its own IMMEDIATE transaction (synchronous=FULL: an fsync each).
  let next = 0;
  const apiN = Math.min(300, pushes);
  let t0 = nowMs();
  for (; next < apiN; next++) viaApi(make(next));
  const apiMs = nowMs() - t0;
  const apiRowsPerSec = (apiN * 3) / (apiMs / 1000);
  log(`  [audit] store API, one push per transaction: ${Math.round(apiRowsPerSec)} rows/s (1,000,000 rows would take ${Math.round(1e6 / apiRowsPerSec)} s)`);

  // 2. The same API calls, many pushes per outer transaction (the store's transactions become savepoints).
  const batch = 2000;
  const batchedN = Math.min(pushes, next + Math.max(batch, Math.round(pushes * 0.05)));
  t0 = nowMs();
  const from = next;
  while (next < batchedN) {
    const end2 = Math.min(batchedN, next + batch);
    store.db.transaction(() => {
      for (; next < end2; next++) viaApi(make(next));
    })();
  }
  const batchedMs = nowMs() - t0;
  const batchedRowsPerSec = ((next - from) * 3) / (batchedMs / 1000);
  log(`  [audit] store API in transactions of ${batch} pushes: ${Math.round(batchedRowsPerSec)} rows/s (1,000,000 rows would take ${Math.round(1e6 / batchedRowsPerSec)} s)`);

  // 3. The rest straight into SQLite, in the same large transactions.
  t0 = nowMs();
  const directFrom = next;
  let lastLog = t0;
  while (next < pushes) {
    const ps: Push[] = [];
    for (const end2 = Math.min(pushes, next + batch); next < end2; next++) ps.push(make(next));
    store.db.transaction(() => direct(ps))();
    if (nowMs() - lastLog > 15_000) {
      lastLog = nowMs();
      log(`  [audit] filled ${next * 3} rows...`);
    }
  }
  const directMs = nowMs() - t0;
  const directRowsPerSec = ((next - directFrom) * 3) / (directMs / 1000 || 1);
  const total = store.lastRow().id;
  const fillMs = apiMs + batchedMs + directMs;
  log(`  [audit] ${total} rows in ${Math.round(fillMs / 1000)} s (direct inserts ${Math.round(directRowsPerSec)} rows/s)`);
  t0 = nowMs();
  const verified = store.verify();
  const verifyMs = nowMs() - t0;
  if (!verified.ok) throw new Error(`the filled audit log does not verify: ${verified.reason}`);
  log(`  [audit] verify(): chain of ${verified.rows} rows intact in ${Math.round(verifyMs / 1000)} s`);
  store.db.pragma('wal_checkpoint(TRUNCATE)');
  store.db.exec('ANALYZE');

  const mid = start + 180 * DAY;
  const iso = (ms: number) => new Date(ms).toISOString();
  const queries: Array<{ name: string; options: QueryOptions }> = [
    { name: 'actor + time range (7 days)', options: { actor: 'agent-7', since: iso(mid), until: iso(mid + 7 * DAY) } },
    { name: 'repo + verdict', options: { repo: 'repo-03', verdict: 'reject' } },
    { name: 'newest 100', options: { limit: 100 } },
  ];
  const figures: QueryFigure[] = [];
  for (const q of queries) {
    const times: number[] = [];
    let n = 0;
    for (let k = 0; k < 21; k++) {
      const s = nowMs();
      n = store.query(q.options).length;
      times.push(nowMs() - s);
    }
    const [first, ...rest] = times;
    figures.push({ name: q.name, options: q.options, rows: n, firstMs: first!, medianMs: median(rest), p95Ms: [...rest].sort((a, b) => a - b)[Math.ceil(rest.length * 0.95) - 1]!, plan: store.explainQuery(q.options) });
  }
  // The audit page: the newest table page and every chart, as the server computes them for `/`.
  const lastTime = (store.db.prepare('SELECT max(time) AS t FROM events').get() as { t: string }).t;
  const timed = async (fn: () => Promise<unknown>): Promise<number[]> => {
    const out: number[] = [];
    for (let k = 0; k < 6; k++) {
      const s = nowMs();
      await fn();
      out.push(nowMs() - s);
    }
    return out;
  };
  const table = await timed(() => tablePage(store, {}));
  let chartRefusals = 0;
  const charts = await timed(async () => (chartRefusals = (await overview(store, { now: new Date(lastTime) })).refusals));
  const page = { tableFirstMs: table[0]!, tableMedianMs: median(table.slice(1)), chartsFirstMs: charts[0]!, chartsMedianMs: median(charts.slice(1)), chartRefusals };
  log(`  [audit] page: table first page ${Math.round(page.tableFirstMs)} ms (median ${Math.round(page.tableMedianMs)}), charts ${Math.round(page.chartsFirstMs)} ms (median ${Math.round(page.chartsMedianMs)}, ${chartRefusals} refusals in 30 days)`);
  store.close();
  const dbBytes = statSync(dbPath).size;

  // The same first query through the CLI (node start-up included), as a person runs it.
  const q0 = queries[0]!.options;
  const cli: number[] = [];
  for (let k = 0; k < 3; k++) {
    const res = await run(process.execPath, [CLI_JS, 'audit', '--data', data, '--actor', q0.actor!, '--since', q0.since!, '--until', q0.until!, '--json'], {});
    if (res.code !== 0) throw new Error(`patchgate audit failed: ${res.stderr}`);
    cli.push(res.ms);
  }
  return {
    rows: total, pushes, dbBytes, apiRowsPerSec, apiProjectedMs: (1e6 / apiRowsPerSec) * 1000, batchedRowsPerSec, directRowsPerSec, fillMs, batch, verifyMs,
    queries: figures, cliActorRangeMs: median(cli), page,
  };
}
