// Two gate nodes, one PostgreSQL log, one set of tokens: two real `serve` processes with
// separate data folders take the same tokens (made once, with `token create` against the
// shared log), and one revocation refuses the token on both at once. The database password
// reaches the processes by PATCHGATE_AUDIT_URL and PGPASSWORD only: no process on the
// machine (the servers, their git children, the CLI) has it in its argv, as `ps` reads it.
// Skipped with the reason when PostgreSQL is not installed; failed instead in CI.

import t from 'tap';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { needPostgres, startPostgres } from '../helpers/postgres.js';
import { gitAsync } from '../helpers/gate.js';
import { TestRepo, processList, tempDir } from '../helpers/repo.js';
import { cliRun, serve, type Served } from '../helpers/serve.js';
import { createRepo } from '../../src/server/repos.js';

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'def test_add():\n    assert True\n',
};

/** Every process's argv on this machine, as `ps` shows it (/proc/PID/cmdline). */
function allArgv(): Array<{ pid: number; argv: string }> {
  return processList().map((p) => ({ pid: p.pid, argv: p.argv.join(' ') }));
}

/** The pids of a process's children (and theirs), read from /proc. */
function descendants(pid: number): number[] {
  const out: number[] = [];
  const walk = (p: number): void => {
    let kids: number[] = [];
    try {
      kids = readdirSync(`/proc/${p}/task`).flatMap((task) => readFileSync(`/proc/${p}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    } catch {
      return;
    }
    for (const k of kids) {
      out.push(k);
      walk(k);
    }
  };
  walk(pid);
  return out;
}

const why = needPostgres(t);
if (why) {
  t.comment(`skipping the two-node token test: ${why}`);
  t.pass('skipped: ' + why);
} else {
  t.test('two serve nodes on one PostgreSQL share one token and see one revocation; no password in any argv', async (t) => {
    const pg = await startPostgres(t);
    // The URL without its password (safe on a command line) and the password in PGPASSWORD.
    const bare = pg.url.replace(`:${encodeURIComponent(pg.password)}@`, '@');
    t.notMatch(bare, pg.password);
    const cliEnv = { ...process.env, PGPASSWORD: pg.password };
    const cli = (args: string[]) => cliRun(args, { env: cliEnv });
    const made = await cli(['token', 'create', 'agent-1', '--role', 'agent', '--repos', 'app', '--audit', bare]);
    t.equal(made.code, 0, made.stderr);
    const agent = made.stdout.trim().split('\n').pop()!;
    const human = (await cli(['token', 'create', 'alice', '--role', 'human', '--audit', bare])).stdout.trim().split('\n').pop()!;
    t.match(agent, /^pg_/);

    const nodes: Array<{ srv: Served; data: string; w: TestRepo }> = [];
    for (let n = 0; n < 2; n++) {
      const data = tempDir('pg-node-');
      t.teardown(() => rmSync(data, { recursive: true, force: true }));
      await createRepo(data, 'app');
      const srv = await serve(data, [], 300_000, { ...process.env, PATCHGATE_AUDIT_URL: pg.url }); // a generous start deadline: a loaded machine, not a timed assertion
      t.teardown(() => {
        srv.child.kill('SIGTERM');
        return srv.exited;
      });
      t.notOk(existsSync(join(data, 'admin-token')), `node ${n}: the shared log has tokens, so no first-start admin token`);
      const w = TestRepo.init(t);
      w.commit('base', BASE);
      nodes.push({ srv, data, w });
    }
    const url = (n: number, user: string, secret: string) => `http://${user}:${secret}@127.0.0.1:${nodes[n]!.srv.port}/app.git`;

    // One token, made once, works on both nodes.
    for (const [n, node] of nodes.entries()) {
      const seed = await gitAsync(node.w.dir, ['push', url(n, 'alice', human), 'main']);
      t.equal(seed.code, 0, `node ${n}: the person's token works: ${seed.stderr}`);
      node.w.checkout('agent/ok', true);
      node.w.commit(`fix ${n}`, { 'src/app.py': `def add(a, b):\n    return b + a + ${n}\n` });
      const push = await gitAsync(node.w.dir, ['push', url(n, 'agent-1', agent), 'agent/ok']);
      t.equal(push.code, 0, `node ${n}: the agent's token works: ${push.stderr}`);
    }
    // While both servers (and whatever git they started) run: no argv holds the password.
    const children = nodes.flatMap((node) => descendants(node.srv.child.pid!));
    const leaking = allArgv().filter((p) => p.argv.includes(pg.password));
    t.same(leaking, [], `no process's argv holds the database password (${children.length} child process(es) of the servers seen)`);
    for (const node of nodes) t.notMatch(node.srv.out(), pg.password, 'nor does the server\'s output');

    // Both nodes' decisions are in the one log.
    const rows = await cli(['audit', '--audit', bare, '--kind', 'ref', '--actor', 'agent-1', '--json']);
    t.equal(rows.stdout.trim().split('\n').length, 2, 'one accept row per node, in the shared log');

    // One revocation, on every node, at once (read through: no cache to wait out).
    const revoked = await cli(['token', 'revoke', 'agent-1', '--audit', bare]);
    t.equal(revoked.code, 0, revoked.stderr);
    for (const [n, node] of nodes.entries()) {
      const r = await gitAsync(node.w.dir, ['ls-remote', url(n, 'agent-1', agent)]);
      t.not(r.code, 0, `node ${n}: the revoked token is refused`);
      t.match(r.stderr, /Authentication failed|401/, `node ${n}: as bad credentials`);
    }
    const human2 = await gitAsync(nodes[1]!.w.dir, ['ls-remote', url(1, 'alice', human)]);
    t.equal(human2.code, 0, 'other tokens still work');
    const failures = await cli(['audit', '--audit', bare, '--kind', 'auth', '--json']);
    t.equal(failures.stdout.trim().split('\n').filter((l) => JSON.parse(l).actor === 'agent-1').length, 2, 'each node wrote its refusal to the shared log');
    const admins = await cli(['audit', '--audit', bare, '--kind', 'admin', '--json']);
    t.same(admins.stdout.trim().split('\n').map((l) => JSON.parse(l)).map((r: { action: string; subject: string }) => `${r.action} ${r.subject}`).reverse(),
      ['token.create agent-1', 'token.create alice', 'token.revoke agent-1'], 'grants and the revocation are rows of the same chain');
    const v = await cli(['audit', 'verify', '--audit', bare]);
    t.equal(v.code, 0, v.stdout + v.stderr);
    t.same(allArgv().filter((p) => p.argv.includes(pg.password)), [], 'still no password in any argv');
  });
}
