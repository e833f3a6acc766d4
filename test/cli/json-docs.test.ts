// `--json` on `audit verify` and on the `repo` commands (issue 21, part 3): each prints one JSON
// document on stdout, an error included (`{"ok": false, "error"}`, exit 2); a tampered chain is
// `{"ok": false, …}` with exit 1. Also: `--help` names the escalation commands, and `repo
// create` turns on receive.advertisePushOptions (push options need it).

import t from 'tap';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { tempDir } from '../helpers/repo.js';
import { CLI } from '../helpers/serve.js';

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => execFile(process.execPath, [CLI, ...args], { env: { ...process.env, PATCHGATE_AUDIT_URL: '' } }, (err, stdout, stderr) =>
    resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })));
}

/** stdout is exactly one line of JSON: parsed. */
function oneDoc(t: Tap, stdout: string): Record<string, unknown> {
  const lines = stdout.split('\n').filter((l) => l !== '');
  t.equal(lines.length, 1, 'one JSON document on stdout');
  return JSON.parse(lines[0] ?? 'null') as Record<string, unknown>;
}
type Tap = Parameters<Parameters<typeof t.test>[1]>[0];

t.test('repo commands with --json', async (t) => {
  const data = tempDir('pg-json-');
  t.teardown(() => rmSync(data, { recursive: true, force: true }));
  const d = ['--data', data];
  const create = await cli(['repo', 'create', 'app', '--json', ...d]);
  t.equal(create.code, 0, create.stderr);
  const c = oneDoc(t, create.stdout);
  t.match(c, { ok: true, command: 'repo create', repo: 'app', trusted: 'main', mode: 'enforce' });
  t.equal(c.dir, join(data, 'repos', 'app.git'));
  t.ok(Array.isArray(c.lines) && (c.lines as string[])[0]!.startsWith('created '));
  const adv = await new Promise<string>((r) => execFile('git', ['config', '--get', 'receive.advertisePushOptions'], { cwd: join(data, 'repos', 'app.git') }, (_e, out) => r(out.trim())));
  t.equal(adv, 'true', 'push options are advertised');

  const dup = await cli(['repo', 'create', 'app', '--json', ...d]);
  t.equal(dup.code, 2);
  t.match(oneDoc(t, dup.stdout), { ok: false, command: 'repo create', error: /already exists/ });

  const mode = await cli(['repo', 'mode', 'app', 'evaluate', '--json', ...d]);
  t.equal(mode.code, 0, mode.stderr);
  t.match(oneDoc(t, mode.stdout), { ok: true, command: 'repo mode', repo: 'app', mode: 'evaluate' });

  const hooks = await cli(['repo', 'hooks', 'app', '--json', ...d]);
  t.equal(hooks.code, 0, hooks.stderr);
  t.match(oneDoc(t, hooks.stdout), { ok: true, command: 'repo hooks', repo: 'app' });

  const sync = await cli(['repo', 'sync', 'app', '--json', ...d]);
  t.equal(sync.code, 2, 'no upstream to sync from');
  t.match(oneDoc(t, sync.stdout), { ok: false, error: /has no upstream/ });

  const list = await cli(['repo', 'list', '--json', ...d]);
  t.equal(list.code, 0, list.stderr);
  const l = oneDoc(t, list.stdout) as { ok: boolean; repos: Array<Record<string, unknown>> };
  t.same(l.repos.map((r) => [r.name, r.trusted, r.mode, r.upstream, r.hooks]), [['app', 'main', 'evaluate', null, 'ok']]);
  t.match((await cli(['repo', 'list', ...d])).stdout, /^app\ttrusted main\tevaluate\tno upstream\thooks ok$/m);

  const verify = await cli(['audit', 'verify', '--json', ...d]);
  t.equal(verify.code, 0, verify.stderr);
  const v = oneDoc(t, verify.stdout);
  t.match(v, { ok: true, command: 'audit verify' });
  t.ok(typeof v.rows === 'number' && v.rows > 0, 'the rows counted');

  // Tampered: an admin row's subject changed behind patchgate's back.
  const db = new Database(join(data, 'patchgate.db'));
  db.exec('DROP TRIGGER events_no_update');
  db.prepare("UPDATE events SET subject = 'evil' WHERE id = 1").run();
  db.close();
  const bad = await cli(['audit', 'verify', '--json', ...d]);
  t.equal(bad.code, 1, 'tampered: exit 1');
  t.match(oneDoc(t, bad.stdout), { ok: false, firstBadId: 1 });

  const missing = await cli(['audit', 'verify', '--json', '--data', join(data, 'nope')]);
  t.equal(missing.code, 2);
  t.match(oneDoc(t, missing.stdout), { ok: false, command: 'audit verify', error: /./ });
});

t.test('--help names the escalation commands', async (t) => {
  const top = await cli(['--help']);
  t.match(top.stdout, /patchgate escalation\s/);
  const esc = await cli(['escalation', '--help']);
  t.match(esc.stdout, /escalation list/);
  t.match(esc.stdout, /escalation close <id>/);
  const audit = await cli(['audit', '--help']);
  t.match(audit.stdout, /"escalation"/, 'audit --kind escalation');
  const serve = await cli(['serve', '--help']);
  t.match(serve.stdout, /--notify-url/);
});
