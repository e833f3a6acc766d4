// The audit page items of issue 21 over real HTTP (no browser needed for these): /favicon.ico is
// answered without a login, /pushes has a reason column, a push's fix commands are code blocks
// (one per command, a copy button driven by /assets/app.js, no inline script, the CSP kept),
// and `audit show` indents the fix commands inside the trace.

import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tempDir } from '../helpers/repo.js';
import { gitAsync, seededGate } from '../helpers/gate.js';
import { CLI } from '../helpers/serve.js';
import { CSP } from '../../src/web/routes.js';

t.test('favicon, reason column, fix commands as code blocks, audit show', async (t) => {
  const { gate, agent } = await seededGate(t, {
    'src/app.py': 'def add(a, b):\n    return a + b\n',
    'tests/test_app.py': 'def test_add():\n    assert True\n',
  });
  const dir = tempDir('pg-page-agent-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.equal((await gitAsync(dirname(dir), ['clone', '-q', gate.remote('app', 'agent-1', agent), dir])).code, 0);
  mkdirSync(join(dir, 'tests'), { recursive: true });
  writeFileSync(join(dir, 'tests', 'test_app.py'), 'def test_add():\n    assert 1\n');
  await gitAsync(dir, ['commit', '-qam', 'edit the test']);
  const push = await gitAsync(dir, ['push', 'origin', 'HEAD:refs/heads/agent/p']);
  t.not(push.code, 0);
  const pushId = /push (\S+) audited/.exec(push.stderr)?.[1] ?? '';
  t.ok(pushId, 'the refusal names its push');

  const base = `http://127.0.0.1:${gate.srv.port}`;
  const fav = await fetch(`${base}/favicon.ico`);
  t.equal(fav.status, 204, '/favicon.ico answered without a login (no 401, no 404)');
  t.equal(fav.headers.get('content-security-policy'), CSP);
  const icon = await fetch(`${base}/assets/favicon.svg`);
  t.equal(icon.status, 200);
  t.match(icon.headers.get('content-type') ?? '', /image\/svg\+xml/);

  const human = gate.token('bob', 'human');
  const get = (path: string) => fetch(`${base}${path}`, { headers: { Authorization: `Basic ${Buffer.from(`bob:${human}`).toString('base64')}` } });
  const pushes = await get('/pushes');
  t.equal(pushes.headers.get('content-security-policy'), CSP, 'the CSP stays');
  const table = await pushes.text();
  t.match(table, /<th>reason<\/th>/, 'a reason column');
  t.match(table, /<td class="reason">[^<]*tests\/test_app\.py[^<]*<\/td>/, 'the refusal\'s reason names the path');

  const page = await (await get(`/push/${encodeURIComponent(pushId)}`)).text();
  const blocks = [...page.matchAll(/<div class="cmd"><pre><span class="prompt">\$ <\/span><code>([^<]*)<\/code><\/pre><button type="button" class="copy" hidden>Copy<\/button><\/div>/g)].map((m) => m[1]!);
  t.ok(blocks.length >= 2, 'each fix command is its own code block with a copy button');
  t.ok(blocks.some((b) => /^git (restore|reset) /.test(b)), 'the command that takes the test edit out', { blocks });
  t.ok(blocks.some((b) => b.startsWith('git push patchgate-fix ')), 'the push command');
  t.ok(blocks.every((b) => !b.includes('\n')), 'one command per block');
  t.notMatch(page, /<script(?![^>]*\bsrc=)(?![^>]*application\/json)[^>]*>/, 'no inline script');
  const js = await (await fetch(`${base}/assets/app.js`)).text();
  t.match(js, /button\.copy/, 'the copy buttons are wired by the page\'s script file');
  t.match(js, /navigator\.clipboard\.writeText/);

  const show = await new Promise<string>((resolve) => execFile(process.execPath, [CLI, 'audit', 'show', pushId, '--data', gate.data], (_e, stdout) => resolve(stdout)));
  const lines = show.split('\n');
  const fix = lines.findIndex((l) => /^ {6}fix: /.test(l));
  t.ok(fix > 0, 'the trace has its fix');
  const cmds = lines.slice(fix + 1).filter((l) => l.trim().startsWith('$ '));
  t.ok(cmds.length >= 2, 'the fix commands follow it');
  t.ok(cmds.every((l) => /^ {10}\$ git /.test(l)), 'each command on its own line, indented below the fix');
});
