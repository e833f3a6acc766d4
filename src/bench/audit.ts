// Measurement (5): `patchgate audit` queries on a 1,000,000-row audit log. The log is filled
// through the store's own API (recordPush + confirmRefs, so every row is validated and
// hash-chained exactly as the server writes it), batched inside large outer transactions
// (better-sqlite3 turns the store's per-push transactions into savepoints). The rate of the
// unbatched API, one push per fsync'd transaction as the server writes, is measured too.

import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditStore, type QueryOptions, type RefDecisionInput } from '../audit/store.js';
import { CLI_JS, median, nowMs, Rng, run, tempDir } from './util.js';

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
  /** Batched fill (outer transactions of `batch` pushes). */
  fillMs: number;
  fillRowsPerSec: number;
  batch: number;
  queries: QueryFigure[];
  cliActorRangeMs: number;
}

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
  const one = (i: number) => {
    const t = Math.round(start + i * step);
    const human = r.chance(0.1);
    const actor = human ? r.pick(humans) : r.pick(agents);
    const verdict: 'accept' | 'reject' = r.chance(0.1) ? 'reject' : 'accept';
    const pushId = `${t.toString(36)}-${hex(6)}`;
    const repo = pickRepo();
    const ref = human ? 'refs/heads/main' : `refs/heads/agent/${actor}/task-${i % 97}`;
    const newId = hex(20);
    const base = hex(32);
    const decision: RefDecisionInput = {
      ref, old: hex(20), new: newId, verdict, decision: verdict === 'accept' ? 'accept' : 'test-tree-write',
      rules: rulesFor(verdict, human, base, base, 9000, `tests/unit/test_${i % 500}.py`, newId),
      contractBase: base, contractHead: base, timings: { total: 30 + (i % 40) },
    };
    const time = new Date(t).toISOString();
    store.recordPush({ pushId, time, repo, actor, role: human ? 'human' : 'agent', remoteAddr: '10.0.0.7', userAgent: 'git/2.39.5', verdict, timings: { total: 32 + (i % 40) }, refs: [decision] });
    store.confirmRefs(pushId, [{ ref, new: newId, moved: verdict === 'accept' }], { time, repo });
  };

  // The server's way: each push its own IMMEDIATE transaction (synchronous=FULL, so an fsync each).
  const apiN = Math.min(300, pushes);
  let t0 = nowMs();
  for (let i = 0; i < apiN; i++) one(i);
  const apiMs = nowMs() - t0;
  const apiRowsPerSec = (apiN * 3) / (apiMs / 1000);
  log(`  [audit] store API, one push per transaction: ${Math.round(apiRowsPerSec)} rows/s (1,000,000 rows would take ${Math.round(1e6 / apiRowsPerSec)} s)`);

  // The fill: the same calls, many pushes per outer transaction.
  const batch = 2000;
  t0 = nowMs();
  let lastLog = t0;
  for (let i = apiN; i < pushes; i += batch) {
    store.db.transaction(() => {
      for (let j = i; j < Math.min(pushes, i + batch); j++) one(j);
    })();
    if (nowMs() - lastLog > 15_000) {
      lastLog = nowMs();
      log(`  [audit] filled ${(i + batch) * 3} rows...`);
    }
  }
  const fillMs = nowMs() - t0;
  const total = store.lastRow().id;
  const fillRowsPerSec = (total - apiN * 3) / (fillMs / 1000);
  log(`  [audit] ${total} rows in ${Math.round(fillMs / 1000)} s (${Math.round(fillRowsPerSec)} rows/s in transactions of ${batch} pushes)`);
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
    rows: total, pushes, dbBytes, apiRowsPerSec, apiProjectedMs: (1e6 / apiRowsPerSec) * 1000, fillMs, fillRowsPerSec, batch,
    queries: figures, cliActorRangeMs: median(cli),
  };
}
