// Escalation (issue 21, section 2), end to end: real git pushes with `-o patchgate.escalate=…`
// over HTTP to a real gate on port 0. A refused push and an accepted one each get their
// escalation row and the `remote:` message; the text is stored sanitised (control characters
// out, a token redacted); a local notify server receives the event; the CLI lists and closes
// (closing twice, or an unknown id, fails); the test-tree refusal prints the escalate command,
// which, run as printed, records an escalation; a dead notify URL does not fail a push; the
// page shows open escalations first.

import t from 'tap';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { chromium } from 'playwright-core';
import type { AddressInfo } from 'node:net';
import { GIT_ENV, tempDir } from '../helpers/repo.js';
import { gitAsync, seededGate, type Gate } from '../helpers/gate.js';
import { CLI } from '../helpers/serve.js';
import { listEscalations } from '../../src/audit/escalation.js';

type T = Parameters<Parameters<typeof t.test>[1]>[0];

const CHROMIUM = '/usr/bin/chromium';

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
  'README.md': '# demo\n',
};

function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: opts.cwd, env: { ...process.env, ...GIT_ENV, GIT_ASKPASS: 'true', ...opts.env }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

const cli = (args: string[], env?: NodeJS.ProcessEnv) => run(process.execPath, [CLI, ...args], { env });

/** A local HTTP server that keeps every POSTed body (the notify target). */
async function notifyServer(t: T): Promise<{ url: string; bodies: string[]; got: (n: number) => Promise<void> }> {
  const bodies: string[] = [];
  const waiters: Array<() => void> = [];
  const srv = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(204).end();
      for (const w of waiters.splice(0)) w();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())));
  const got = async (n: number): Promise<void> => {
    while (bodies.length < n) await new Promise<void>((r) => waiters.push(r));
  };
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`, bodies, got };
}

async function agentClone(t: T, gate: Gate, secret: string, branch: string): Promise<{ dir: string; commit(files: Record<string, string>): Promise<string> }> {
  const dir = tempDir('pg-esc-agent-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const c = await gitAsync(dirname(dir), ['clone', '-q', gate.remote('app', 'agent-1', secret), dir]);
  t.equal(c.code, 0, `clone: ${c.stderr}`);
  await gitAsync(dir, ['checkout', '-q', '-b', branch]);
  return {
    dir,
    commit: async (files) => {
      for (const [p, text] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, p)), { recursive: true });
        writeFileSync(join(dir, p), text);
      }
      await gitAsync(dir, ['add', '-A']);
      await gitAsync(dir, ['commit', '-q', '-m', 'agent work']);
      return (await gitAsync(dir, ['rev-parse', 'HEAD'])).stdout.trim();
    },
  };
}

const remoteText = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('remote: ')).map((l) => l.slice(8)).join('\n');

function machine(stderr: string): Array<Record<string, unknown>> {
  return stderr.split('\n').filter((l) => l.startsWith('remote: patchgate-json ')).map((l) => {
    const raw = l.slice('remote: patchgate-json '.length).replace(/\s+$/, '');
    return JSON.parse(raw) as Record<string, unknown>;
  });
}

t.test('escalation over real pushes: refused and accepted, the notify event, list and close', async (t) => {
  const hook = await notifyServer(t);
  const { gate, agent } = await seededGate(t, BASE, { notifyUrl: hook.url, notify: { timeoutMs: 2000, retries: 1, backoffMs: 50 } });
  const a = await agentClone(t, gate, agent, 'agent/fix');

  // 1. A push the gate refuses (a test edit), with an escalation whose text carries a line
  //    break's stand-in, a control character and a token.
  const bad = await a.commit({ 'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 4\n' });
  const token = `pg_${'A1b2C3d4'.repeat(5)}`;
  const text = `the test expects 3 but the spec says 4\ttab, bell\x07 and a token ${token} here`;
  const r1 = await gitAsync(a.dir, ['push', '-o', `patchgate.escalate=${text}`, 'origin', 'HEAD:refs/heads/agent/fix']);
  t.not(r1.code, 0, 'the push is still refused: escalation does not change the verdict');
  const said = remoteText(r1.stderr);
  t.match(said, /REJECT refs\/heads\/agent\/fix/);
  const m = /escalation (\d+) recorded: a person will look at it/.exec(said);
  t.ok(m, 'the agent is told a person will look, with the escalation id');
  const id1 = Number(m?.[1]);
  t.notOk(said.includes(token), 'the token is not echoed');
  t.notMatch(said, /patchgate\.escalate="<why/, 'an escalating push is not told to escalate again');
  const ml = machine(r1.stderr);
  t.equal(ml.length, 1, 'one machine line');
  t.same(ml[0]!.escalation, { id: id1 }, 'the machine line carries the escalation id');
  t.ok(Buffer.byteLength(`patchgate-json ${JSON.stringify(ml[0])}`) <= 4096);

  const rows1 = await listEscalations(gate.srv.sink);
  t.equal(rows1.length, 1);
  const e1 = rows1[0]!;
  t.equal(e1.id, id1);
  t.equal(e1.open, true);
  t.equal(e1.actor, 'agent-1');
  t.equal(e1.repo, 'app');
  t.equal(e1.ref, 'refs/heads/agent/fix');
  t.equal(e1.new, bad, 'the commit pushed');
  t.equal(e1.verdict, 'reject', 'the verdict the push got');
  t.match(e1.text, /^the test expects 3 but the spec says 4 tab, bell and a token \[redacted token\] here$/, 'control characters out, the token redacted');
  t.notOk(/[\x00-\x1f]/.test(e1.text));

  // 2. The notify server got the event, without the token.
  await hook.got(1);
  const ev = JSON.parse(hook.bodies[0]!) as Record<string, unknown>;
  t.equal(ev.type, 'patchgate.escalation');
  t.equal(ev.id, id1);
  t.equal(ev.repo, 'app');
  t.equal(ev.new, bad);
  t.equal(ev.text, e1.text);
  t.notOk(hook.bodies[0]!.includes(token) || hook.bodies[0]!.includes(agent), 'no token in the event');

  // 3. An accepted push with an escalation (and an unknown patchgate option, ignored).
  await gitAsync(a.dir, ['reset', '-q', '--hard', 'origin/main']);
  const good = await a.commit({ 'src/app.py': 'def add(a, b):\n    return a + b  # checked\n' });
  const r2 = await gitAsync(a.dir, ['push', '-o', 'patchgate.escalate=the spec and the test disagree on add(1, 2); I left the test alone', '-o', 'patchgate.bogus=1', 'origin', 'HEAD:refs/heads/agent/ok']);
  t.equal(r2.code, 0, `the accepted push is still accepted: ${r2.stderr}`);
  const said2 = remoteText(r2.stderr);
  t.match(said2, /ACCEPT refs\/heads\/agent\/ok/);
  const id2 = Number(/escalation (\d+) recorded/.exec(said2)?.[1]);
  t.ok(id2 > id1, 'a second escalation id');
  t.match(said2, /push option patchgate\.bogus is not one patchgate knows.*ignored/);
  await hook.got(2);
  const rows2 = await listEscalations(gate.srv.sink);
  t.same(rows2.map((e) => [e.id, e.verdict, e.new, e.open]), [[id2, 'accept', good, true], [id1, 'reject', bad, true]], 'both open, newest first');

  // 4. The CLI against the data folder's log: list, close, close again, an unknown id.
  const data = ['--data', gate.data];
  const list = await cli(['escalation', 'list', '--open', '--json', ...data]);
  t.equal(list.code, 0, list.stderr);
  t.same(list.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { id: number }).id), [id2, id1]);
  const plain = await cli(['escalation', 'list', ...data]);
  t.match(plain.stdout, new RegExp(`#${id1} .* OPEN`));
  t.match(plain.stdout, /2 escalation\(s\), 2 open/);
  const close = await cli(['escalation', 'close', String(id1), '--note', 'the test was right: add(1, 2) is 3', '--by', 'alice', ...data]);
  t.equal(close.code, 0, close.stderr);
  t.match(close.stdout, new RegExp(`escalation ${id1} closed`));
  const again = await cli(['escalation', 'close', String(id1), '--note', 'twice', '--as', 'alice', ...data]);
  t.not(again.code, 0, 'closing twice fails');
  t.match(again.stderr, new RegExp(`escalation ${id1} is already closed`));
  const unknown = await cli(['escalation', 'close', '99999', '--note', 'x', '--as', 'alice', ...data]);
  t.not(unknown.code, 0, 'an unknown id fails');
  t.match(unknown.stderr, /no escalation 99999/);
  const notEsc = await cli(['escalation', 'close', '1', '--note', 'x', '--as', 'alice', ...data]);
  t.not(notEsc.code, 0, 'a row that is no escalation fails');
  const open = await cli(['escalation', 'list', '--open', '--json', ...data]);
  t.same(open.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { id: number }).id), [id2], 'only the second is open');
  const all = (await cli(['escalation', 'list', '--json', ...data])).stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: number; open: boolean; closed?: { actor: string; note: string } });
  t.same(all.map((e) => [e.id, e.open]), [[id2, true], [id1, false]], 'open first');
  t.equal(all[1]!.closed?.actor, 'alice');
  t.equal(all[1]!.closed?.note, 'the test was right: add(1, 2) is 3');
  const kind = await cli(['audit', '--kind', 'escalation', '--json', ...data]);
  const kinds = kind.stdout.trim().split('\n').map((l) => JSON.parse(l) as { kind: string; action: string; subject?: string });
  t.equal(kinds.length, 3, 'two escalations and one closing row');
  t.ok(kinds.every((k) => k.kind === 'escalation'));
  t.same(kinds.filter((k) => k.action === 'escalation.close').map((k) => k.subject), [String(id1)]);
  const verify = await cli(['audit', 'verify', '--json', ...data]);
  t.equal(verify.code, 0);
  t.match(JSON.parse(verify.stdout), { ok: true, command: 'audit verify' }, 'the chain holds the escalation rows');
  t.equal(verify.stdout.trim().split('\n').length, 1, 'one JSON document');

  // 5. The page: open escalations first on the overview, and on /escalations.
  const human = gate.token('bob', 'human');
  const get = (path: string) => fetch(`http://127.0.0.1:${gate.srv.port}${path}`, { headers: { Authorization: `Basic ${Buffer.from(`bob:${human}`).toString('base64')}` } });
  const overview = await (await get('/')).text();
  t.match(overview, /Open escalations \(1\)/);
  t.match(overview, new RegExp(`data-escalation="${id2}"`));
  t.notMatch(overview, new RegExp(`data-escalation="${id1}"`), 'a closed one is not on the overview');
  const page = await (await get('/escalations')).text();
  t.ok(page.indexOf(`data-escalation="${id2}"`) < page.indexOf(`data-escalation="${id1}"`), 'open before closed');
  t.match(page, /patchgate escalation close \d+ --data \S+ --as &quot;\$USER&quot; --note/);
  t.notMatch(page, /<script>(?!<\/script>)/, 'no inline script');

  // In Chromium (when installed): the open escalation on the overview, its copy button shown by the page's script.
  if (!existsSync(CHROMIUM)) return void t.comment(`${CHROMIUM} is missing: the page was checked over HTTP only`);
  const profile = mkdtempSync(join(tmpdir(), 'pg-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    extraHTTPHeaders: { Authorization: `Basic ${Buffer.from(`bob:${human}`).toString('base64')}` },
  });
  t.teardown(async () => {
    await ctx.close();
    rmSync(profile, { recursive: true, force: true });
  });
  const tab = await ctx.newPage();
  await tab.goto(`http://127.0.0.1:${gate.srv.port}/`);
  const block = await tab.textContent('#open-escalations');
  t.match(block, /Open escalations \(1\)/, 'Chromium shows the open escalation');
  t.match(block, /the spec and the test disagree on add\(1, 2\)/);
  t.equal(await tab.isVisible(`#open-escalations [data-escalation="${id2}"] button.copy`), true, 'its copy button is shown by /assets/app.js');
  const first = await tab.$eval('main', (m) => m.firstElementChild?.nextElementSibling?.id ?? '');
  t.equal(first, 'open-escalations', 'right below the title, before the charts');
});

t.test('the test-tree refusal ends with the escalate command, and running it as printed records an escalation', async (t) => {
  const { gate, agent } = await seededGate(t, BASE);
  const a = await agentClone(t, gate, agent, 'agent/t');
  await a.commit({ 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  const r = await gitAsync(a.dir, ['push', 'origin', 'HEAD:refs/heads/agent/t']);
  t.not(r.code, 0);
  const lines = remoteText(r.stderr).split('\n');
  const at = lines.findIndex((l) => /or, if the test itself is wrong, do not edit it: ask a person instead/.test(l));
  t.ok(at > 0, 'the refusal offers the honest exit');
  const cmd = lines.slice(at + 1).map((l) => l.trim()).find((l) => l.startsWith('git push -o patchgate.escalate='));
  t.ok(cmd, 'the escalate command is printed');
  t.match(cmd!, /^git push -o patchgate\.escalate="<why the test is wrong>" patchgate-fix '?HEAD:refs\/heads\/agent\/t'?$/);
  t.ok(lines.slice(0, at).some((l) => l.trim().startsWith('$ git config remote.patchgate-fix.url ')), 'the remote it names is set up by a printed line above');
  const json = machine(r.stderr)[0]!;
  t.equal(json.escalate, cmd, 'the machine line carries the same command');
  t.notOk((json.fix as string[]).some((c) => c.includes('patchgate.escalate')), 'it is not one of the fix steps');
  // As an agent would: the set-up line, then the escalate command, each through sh -c as printed.
  const setup = lines.map((l) => l.trim()).find((l) => l.startsWith('$ git config remote.patchgate-fix.url '))!.slice(2);
  t.equal((await run('sh', ['-c', setup], { cwd: a.dir })).code, 0);
  const esc = await run('sh', ['-c', cmd!], { cwd: a.dir });
  t.not(esc.code, 0, 'the same commits are still refused');
  t.match(esc.stderr, /escalation \d+ recorded: a person will look/);
  const rows = await listEscalations(gate.srv.sink, { open: true });
  t.equal(rows.length, 1);
  t.equal(rows[0]!.text, '<why the test is wrong>', 'recorded as given');
  t.equal(rows[0]!.ref, 'refs/heads/agent/t');
});

t.test('a dead notify URL neither fails nor refuses the push', async (t) => {
  // Port 1 on loopback: nothing listens, every attempt is refused at once.
  const { gate, agent } = await seededGate(t, BASE, { notifyUrl: 'http://127.0.0.1:1/dead', notify: { timeoutMs: 500, retries: 2, backoffMs: 20 } });
  const a = await agentClone(t, gate, agent, 'agent/d');
  await a.commit({ 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(a.dir, ['push', '-o', 'patchgate.escalate=please look', 'origin', 'HEAD:refs/heads/agent/d']);
  t.equal(r.code, 0, `accepted: ${r.stderr}`);
  t.match(remoteText(r.stderr), /escalation \d+ recorded/);
  t.equal((await listEscalations(gate.srv.sink)).length, 1, 'the row is written');
  await gate.srv.hooks.notifier!.idle();
});

t.test('an escalation the log cannot take: the agent is told nothing was recorded, and the verdict is unchanged', async (t) => {
  const { gate, agent } = await seededGate(t, BASE);
  gate.srv.audit.db.exec("CREATE TRIGGER test_no_escalation BEFORE INSERT ON events WHEN NEW.kind = 'escalation' BEGIN SELECT RAISE(ABORT, 'simulated failure'); END");
  const a = await agentClone(t, gate, agent, 'agent/n');
  await a.commit({ 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const r = await gitAsync(a.dir, ['push', '-o', 'patchgate.escalate=look', 'origin', 'HEAD:refs/heads/agent/n']);
  t.equal(r.code, 0, 'the accepted push is still accepted');
  t.match(remoteText(r.stderr), /your escalation could NOT be recorded .* nobody has seen it; push again/);
  t.notMatch(remoteText(r.stderr), /a person will look/);
  t.equal((await listEscalations(gate.srv.sink)).length, 0);
  t.same(gate.srv.audit.verify(), { ok: true, rows: gate.srv.audit.lastRow().id }, 'the chain is whole');
});
