// Issue 48, item 2: `serve --config FILE` and a git host daemon's config record the log they
// were given in the data folder (without its password); `serve` with no URL then uses the
// recorded log, and refuses another with one line, before it creates anything. (A migrated
// folder and every command against it: test/audit/folder-log.test.ts.) Real PostgreSQL; skipped
// with the reason when it is not installed, failed instead in CI.

import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { needPostgres, startPostgres, type Postgres } from '../helpers/postgres.js';
import { removeTree, tempDir } from '../helpers/repo.js';
import { cliRun, serve, serveExpectingExit } from '../helpers/serve.js';
import { parseDaemonConfig } from '../../src/host/config.js';
import { startDaemon } from '../../src/host/daemon.js';

/** The environment of a person's shell: no PATCHGATE_AUDIT_URL, and the password (when given) in PGPASSWORD only. */
function shellEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const k of ['PATCHGATE_AUDIT_URL', 'PGPASSWORD', 'PGPASSFILE', 'PATCHGATE_DATA']) if (!(k in extra)) delete env[k];
  return env;
}

const why = needPostgres(t);
if (why) {
  t.comment(`skipping the audit location tests: ${why}`);
  t.pass('skipped: ' + why);
} else {
  t.test('serve --config and a daemon\'s config record their log; serve with no URL then uses it, and refuses another', async (t) => {
    const pg: Postgres = await startPostgres(t);
    const bare = pg.url.replace(`:${encodeURIComponent(pg.password)}@`, '@');
    const data = tempDir('pg-folder-cfg-');
    t.teardown(() => removeTree(data));
    const cfg = join(data, '..', `${data.split('/').pop()}.json`);
    writeFileSync(cfg, JSON.stringify({ audit: pg.url }), { mode: 0o600 });
    t.teardown(() => removeTree(cfg));
    const first = await serve(data, ['--config', cfg], 300_000, shellEnv());
    first.child.kill('SIGTERM');
    await first.exited;
    const record = JSON.parse(readFileSync(join(data, 'audit-location.json'), 'utf8'));
    t.match(record, { audit: bare, by: `serve config ${cfg}: audit` }, 'serve recorded the config file\'s log, without its password');
    t.notOk(existsSync(join(data, 'patchgate.db')), 'and made no SQLite file');
    const env = shellEnv({ PGPASSWORD: pg.password });
    const listed = await cliRun(['token', 'list', '--data', data], { env });
    t.equal(listed.code, 0, listed.stderr);
    t.match(listed.stdout, /^admin\tadmin/m, 'token list reads the first start\'s admin token from PostgreSQL');
    const again = await serve(data, [], 300_000, env);
    t.match(again.out(), `(audit log ${bare}, recorded in ${join(data, 'audit-location.json')})`, 'no URL given: the recorded log');
    again.child.kill('SIGTERM');
    await again.exited;
    const wrong = await serveExpectingExit(data, ['--port', '0', '--audit', `sqlite:${join(data, 'patchgate.db')}`], 60_000, env);
    t.equal(wrong.code, 2);
    t.match(wrong.output, `CONFIG: --audit: names the audit log ${join(data, 'patchgate.db')}, but this data folder's log is ${bare}`);
    t.notOk(existsSync(join(data, 'patchgate.db')), 'the refused start made no SQLite file');

    // A git host's daemon: its config's log is recorded the same way.
    const hostData = tempDir('pg-folder-daemon-');
    t.teardown(() => removeTree(hostData));
    const d = await startDaemon(parseDaemonConfig({ data: hostData, audit: pg.url, humans: ['alice'], agents: ['agent-*'], monitor: '127.0.0.1:0' }), { log: () => {} });
    t.equal(d.auditLog, pg.url.replace(`:${encodeURIComponent(pg.password)}@`, ':***@'));
    await d.close();
    t.match(JSON.parse(readFileSync(join(hostData, 'audit-location.json'), 'utf8')), { audit: bare, by: 'daemon config: audit' });
    const hostList = await cliRun(['token', 'list', '--data', hostData], { env });
    t.equal(hostList.code, 0, hostList.stderr);
  });
}
