// Many gate nodes, one PostgreSQL audit log: four real `serve` processes (PATCHGATE_AUDIT_URL=postgres://…)
// take 200 agent pushes from the real git client at once. Every decision has exactly one row,
// `audit verify` passes, and a row edited with psql makes verify fail naming it. Skipped with
// the reason when PostgreSQL is not installed; failed instead in CI.

import t from 'tap';

import { rmSync } from 'node:fs';
import { needPostgres, startPostgres } from '../helpers/postgres.js';
import { gitAsync } from '../helpers/gate.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { cliRun, serve } from '../helpers/serve.js';
import { PgAuditStore } from '../../src/audit/pg-store.js';
import { PgTokenStore } from '../../src/audit/pg-tokens.js';
import { createRepo } from '../../src/server/repos.js';

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
};

const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => cliRun(args, { env: { ...process.env, ...env } });

const why = needPostgres(t);
if (why) {
  t.comment(`skipping the PostgreSQL scale-out test: ${why}`);
  t.pass('skipped: ' + why);
} else {
  t.test('four serve processes push 200 decisions at once into one PostgreSQL log; verify passes; a psql edit is named', async (t) => {
    const pg = await startPostgres(t);
    const NODES = 4;
    const PER = 50;
    const nodes: Array<{ port: number; agent: string; w: TestRepo; repo: string }> = [];
    // The tokens are in the shared log: made once, good on every node.
    const shared = await PgAuditStore.open(pg.url);
    const tokens = new PgTokenStore(shared);
    const human = await tokens.create('alice', 'human');
    const agents: string[] = [];
    for (let n = 1; n <= NODES; n++) agents.push(await tokens.create(`agent-${n}`, 'agent'));
    await shared.close();
    for (let n = 1; n <= NODES; n++) {
      const data = tempDir('pg-node-');
      t.teardown(() => rmSync(data, { recursive: true, force: true }));
      const repo = `app-${n}`;
      await createRepo(data, repo);
      const agent = agents[n - 1]!;
      const srv = await serve(data, [], 30_000, { ...process.env, PATCHGATE_AUDIT_URL: pg.url });
      t.teardown(() => {
        srv.child.kill('SIGTERM');
        return srv.exited;
      });
      t.notMatch(srv.out(), pg.password, 'serve prints the audit URL without its password');
      const w = TestRepo.init(t);
      w.commit('base', BASE);
      const url = (user: string, secret: string) => `http://${user}:${secret}@127.0.0.1:${srv.port}/${repo}.git`;
      const seeded = await gitAsync(w.dir, ['push', url('alice', human), 'main']);
      t.equal(seeded.code, 0, seeded.stderr);
      // 50 branches: even ones change only src/ (accepted), odd ones weaken a test (refused).
      for (let i = 0; i < PER; i++) {
        w.checkout('main');
        w.checkout(`b${i}`, true);
        w.commit(`change ${i}`, i % 2 ? { 'tests/test_app.py': `def test_add():\n    assert ${i}\n` } : { 'src/app.py': `def add(a, b):\n    return a + b + ${i}\n` });
      }
      nodes.push({ port: srv.port, agent: url(`agent-${n}`, agent), w, repo });
    }
    const jobs = nodes.flatMap((node) => Array.from({ length: PER }, (_, i) => ({ node, i })));
    const results: Array<{ repo: string; i: number; code: number }> = [];
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < jobs.length) {
        const { node, i } = jobs[next++]!;
        const r = await gitAsync(node.w.dir, ['push', node.agent, `b${i}`]);
        results.push({ repo: node.repo, i, code: r.code });
      }
    }));
    t.equal(results.length, 200);
    t.same(results.filter((r) => (r.i % 2 ? r.code === 0 : r.code !== 0)), [], 'every src-only push landed and every test edit was refused');

    const perRef = await pg.psql("SELECT repo || ' ' || ref || ' ' || count(*) FROM events WHERE kind = 'ref' AND ref LIKE 'refs/heads/b%' GROUP BY repo, ref HAVING count(*) <> 1");
    t.equal(perRef.trim(), '', 'no decision has two rows');
    t.equal((await pg.psql("SELECT count(*) FROM events WHERE kind = 'ref' AND ref LIKE 'refs/heads/b%'")).trim(), '200', 'every decision has exactly one row');
    const verdicts = await pg.psql("SELECT verdict || ' ' || count(*) FROM events WHERE kind = 'ref' AND ref LIKE 'refs/heads/b%' GROUP BY verdict ORDER BY verdict");
    t.same(verdicts.trim().split('\n'), ['accept 100', 'reject 100']);
    const v = await cli(['audit', 'verify'], { PATCHGATE_AUDIT_URL: pg.url });
    t.equal(v.code, 0, v.stdout + v.stderr);
    t.match(v.stdout, /hash chain intact/);

    // An edit with psql (the owner switches the guard trigger off): verify fails and names the row.
    const target = (await pg.psql("SELECT min(id) FROM events WHERE kind = 'ref' AND verdict = 'reject'")).trim();
    await pg.psql(`BEGIN; ALTER TABLE events DISABLE TRIGGER events_no_update; UPDATE events SET verdict = 'accept' WHERE id = ${target}; ALTER TABLE events ENABLE TRIGGER events_no_update; COMMIT;`);
    const bad = await cli(['audit', 'verify'], { PATCHGATE_AUDIT_URL: pg.url });
    t.equal(bad.code, 1, 'verify exits 1');
    t.match(bad.stdout, new RegExp(`TAMPERED: first bad row ${target} \\(a row id; \\d+ row\\(s\\) present\\): row ${target} does not match its hash: it was edited`));
  });
}
