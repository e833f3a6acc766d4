// What a newcomer hit (issue 21, part 3), each through the real CLI: a command whose reader
// stops early exits quietly, NO_COLOR turns colour off, and the help of the host commands says
// what they accept.

import t from 'tap';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/repo.js';
import { CLI, serve } from '../helpers/serve.js';
import { AuditStore } from '../../src/audit/store.js';
import { noColor } from '../../src/log.js';

function sh(script: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', script], { env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

t.test('audit export | head -1: one row, exit 0, nothing on stderr (no EPIPE crash)', async (t) => {
  const data = tempDir('pg-epipe-');
  mkdirSync(data, { recursive: true });
  const store = AuditStore.open(join(data, 'patchgate.db'));
  // Far more than a pipe's buffer holds, so the writer really meets the closed pipe.
  for (let i = 0; i < 3000; i++) store.appendAdmin({ actor: 'cli', action: 'token.create', subject: `agent-${i}`, detail: { pad: 'x'.repeat(200) } });
  store.close();
  const r = await sh(`node ${JSON.stringify(CLI)} audit export --since 2000-01-01 --data ${JSON.stringify(data)} | head -1; echo "status=\${PIPESTATUS[0]}" >&2`);
  t.equal(r.stdout.trim().split('\n').length, 1, 'head printed one line');
  t.match(JSON.parse(r.stdout).action, 'token.create');
  t.match(r.stderr, /status=0/, 'the export exited 0');
  t.notMatch(r.stderr, /EPIPE|Error|at /, 'no stack trace');
  const whole = await sh(`node ${JSON.stringify(CLI)} audit --data ${JSON.stringify(data)} --json --limit 5000 | head -2; echo "status=\${PIPESTATUS[0]}" >&2`);
  t.match(whole.stderr, /status=0/, 'audit --json into head exits 0 too');
  t.notMatch(whole.stderr, /EPIPE|Error/);
});

t.test('NO_COLOR: set and not empty turns colour off; empty does not', async (t) => {
  t.equal(noColor({ NO_COLOR: '1' }), true);
  t.equal(noColor({ NO_COLOR: '' }), false);
  t.equal(noColor({}), false);
  // A real serve on a terminal (util-linux `script` gives it a pty, so the log is pretty and
  // coloured): escape sequences without NO_COLOR, none with it.
  const onTty = async (env: NodeJS.ProcessEnv): Promise<string> => {
    const data = tempDir('pg-nocolor-');
    const cmd = `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} serve --data ${JSON.stringify(data)} --port 0`;
    const child = spawn('script', ['-qfec', cmd, '/dev/null'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let text = '';
    child.stdout.on('data', (c) => (text += c));
    child.stderr.on('data', (c) => (text += c));
    const stop = (): void => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } };
    t.teardown(stop);
    let port = 0;
    for (let i = 0; i < 900 && !port; i++) {
      port = Number(/ at https?:\/\/127\.0\.0\.1:(\d+) /.exec(text)?.[1] ?? 0);
      if (!port) await new Promise((r) => setTimeout(r, 100));
    }
    t.ok(port, 'serve started on a terminal');
    await fetch(`http://127.0.0.1:${port}/healthz`);
    for (let i = 0; i < 200 && !/healthz/.test(text); i++) await new Promise((r) => setTimeout(r, 50));
    stop();
    t.match(text, /healthz/, 'the request was logged');
    return text;
  };
  const { NO_COLOR: _drop, ...plain } = process.env;
  const coloured = await onTty({ ...plain, NO_COLOR: undefined });
  t.match(coloured, /\x1b\[/, 'on a terminal the log is coloured');
  const uncoloured = await onTty({ NO_COLOR: '1' });
  t.notMatch(uncoloured, /\x1b\[/, 'NO_COLOR: no ANSI colour codes');
});

t.test('daemon --help and hook install --help say what they accept', async (t) => {
  const d = await sh(`node ${JSON.stringify(CLI)} daemon --help`);
  t.equal(d.code, 0);
  t.match(d.stdout, /postgres:\/\//, 'daemon --help names the postgres audit URL');
  t.match(d.stdout, /"data"/, 'and the config keys');
  const h = await sh(`node ${JSON.stringify(CLI)} hook install --help`);
  t.equal(h.code, 0);
  t.match(h.stdout, /gitlab/);
  t.match(h.stdout, /REPO_DIR|dirs/, 'names what its directories are');
  t.match(h.stdout, /custom_hooks|pre-receive\.d|repo-specific/, 'says where each host\'s shim goes');
});

t.test('the start-up warning about local-only checkpoints is said once per data folder', async (t) => {
  const data = tempDir('pg-warn-once-');
  const said = async (): Promise<boolean> => {
    const s = await serve(data, [], 120_000);
    s.child.kill('SIGTERM');
    await s.exited;
    return /checkpoints go only to the data folder/.test(s.out());
  };
  t.equal(await said(), true, 'the first start says it');
  t.equal(await said(), false, 'the second start on the same folder does not');
  const other = tempDir('pg-warn-once-');
  const s = await serve(other, [], 120_000);
  s.child.kill('SIGTERM');
  await s.exited;
  t.match(s.out(), /checkpoints go only to the data folder/, 'a new data folder hears it again');
});
