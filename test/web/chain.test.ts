// Issue 48, item 4: the page tells the truth about the chain. /chain walks the configured log
// (SQLite, or a real PostgreSQL) as `audit verify` does and says its verdict first: green while
// every row and token agrees, red naming the first bad row once a row is edited in the database
// behind the gate's back, red naming the token once the tokens table is changed; and the same
// words as `audit verify` prints. Over HTTP, and in Debian's headless Chromium (the verdict's
// colour as the browser renders it). The overview shows the last verdict and when it was reached.
// A walk longer than the page waits (a large log) is said to be running, not claimed done.

import t from 'tap';
import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import http from 'node:http';
import { TestRepo, removeTree, tempDir } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';
import { needPostgres, startPostgres } from '../helpers/postgres.js';
import { cliRun } from '../helpers/serve.js';
import { createWeb } from '../../src/web/routes.js';
import { AuditStore } from '../../src/audit/store.js';
import { TokenStore } from '../../src/audit/tokens.js';
import { FailureLimiter } from '../../src/server/auth.js';

type Tap = Parameters<Parameters<typeof t.test>[1]>[0];

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

t.test('/chain on SQLite', (t) => run(t, 'sqlite'));
const why = needPostgres(t);
if (why) t.comment(`skipping the PostgreSQL run of /chain: ${why}`);
else t.test('/chain on PostgreSQL', (t) => run(t, 'postgres'));

async function run(t: Tap, kind: 'sqlite' | 'postgres'): Promise<void> {
  const pg = kind === 'postgres' ? await startPostgres(t) : null;
  const gate = await startGate(t, pg ? { auditUrl: pg.url } : {});
  await gate.repo('app');
  const human = await gate.tokenAsync('alice', 'human');
  const agent = await gate.tokenAsync('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0, 'a person seeds main');
  w.checkout('agent/x', true);
  w.commit('weaken', { 'tests/test_app.py': 'x = 1\n' });
  t.not((await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/x'])).code, 0, 'an agent\'s test edit is refused');
  const refused = (await gate.srv.sink.query({ kind: 'ref', verdict: 'reject' }))[0]!;

  /** SQL behind the gate's back, past the append-only triggers. */
  const sql = async (q: string): Promise<void> => {
    if (pg) return void (await pg.psql(`BEGIN; ALTER TABLE events DISABLE TRIGGER events_no_update; ${q}; ALTER TABLE events ENABLE TRIGGER events_no_update; COMMIT;`));
    const db = new Database(join(gate.data, 'patchgate.db'));
    try {
      db.exec('DROP TRIGGER IF EXISTS events_no_update');
      db.exec(q);
    } finally {
      db.close();
    }
  };
  const basic = { Authorization: `Basic ${Buffer.from(`alice:${human}`).toString('base64')}` };
  const page = async (path: string) => {
    const r = await fetch(`${gate.srv.url}${path}`, { headers: basic });
    return { status: r.status, html: await r.text() };
  };
  const verdict = (html: string): { cls: string; text: string } | null => {
    const m = /<p class="verdict ?([a-z]*)" id="chain-verdict"[^>]*>([\s\S]*?)<\/p>/.exec(html);
    return m ? { cls: m[1]!, text: m[2]!.replace(/<[^>]+>/g, '').replace(/&#39;/g, "'").replace(/&quot;/g, '"') } : null;
  };
  const env = { ...process.env, ...(pg ? { PATCHGATE_AUDIT_URL: pg.url } : {}) };
  const verifyCli = () => cliRun(['audit', 'verify', '--data', gate.data], { env });

  // Before /chain was opened, the overview does not claim a verdict.
  let v = verdict((await page('/')).html);
  t.match(v?.text, /^Not verified since the server started/, 'the overview claims nothing it has not checked');

  // Intact: green, and the words of `audit verify`.
  const intact = await page('/chain');
  t.equal(intact.status, 200);
  v = verdict(intact.html);
  t.equal(v?.cls, 'ok', 'green while the log is intact');
  const cliOk = await verifyCli();
  t.equal(cliOk.code, 0, cliOk.stdout + cliOk.stderr);
  t.match(v?.text, `Intact: ${cliOk.stdout.trim().split('\n').join('; ')}`, 'the page says what audit verify says');
  t.match(verdict((await page('/')).html)?.text, /^Intact: ok: \d+ row\(s\), hash chain intact/, 'the overview shows the last verdict');

  // A row edited in the database: red, naming the row, as audit verify does.
  await sql(`UPDATE events SET actor = 'mallory' WHERE id = ${refused.id}`);
  const edited = await page('/chain');
  v = verdict(edited.html);
  t.equal(v?.cls, 'bad', 'red once a row was edited');
  const cliBad = await verifyCli();
  t.equal(cliBad.code, 1, 'audit verify says TAMPERED too');
  t.match(v?.text, `NOT intact: ${cliBad.stdout.trim()}`, 'the same words');
  t.match(v?.text, new RegExp(`TAMPERED: first bad row ${refused.id} .*row ${refused.id} does not match its hash: it was edited`));

  // In a browser: the verdict is there, and red.
  const profile = mkdtempSync(join(tmpdir(), 'pg-chromium-'));
  if (!existsSync(CHROMIUM)) {
    if (process.env.CI) t.fail(`${CHROMIUM} is missing: .ci/run must apt-get install chromium`);
    else t.comment(`${CHROMIUM} is missing; the browser check is skipped`);
  } else {
    const ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: ARGS, headless: true, extraHTTPHeaders: basic });
    t.teardown(async () => {
      await ctx.close();
      rmSync(profile, { recursive: true, force: true });
    });
    const tab = await ctx.newPage();
    const resp = await tab.goto(`${gate.srv.url}/chain`);
    t.equal(resp?.status(), 200);
    const shown = await tab.$eval('#chain-verdict', (el) => ({ text: el.textContent ?? '', color: getComputedStyle(el).color }));
    t.match(shown.text, new RegExp(`NOT intact: TAMPERED: first bad row ${refused.id}`), 'Chromium shows the edited row');
    t.equal(shown.color, 'rgb(198, 40, 40)', 'in red');
    await sql(`UPDATE events SET actor = 'agent-1' WHERE id = ${refused.id}`);
    await tab.reload();
    const back = await tab.$eval('#chain-verdict', (el) => ({ text: el.textContent ?? '', color: getComputedStyle(el).color }));
    t.match(back.text, /^Intact: ok: \d+ row\(s\), hash chain intact/, 'the row put back: intact again');
    t.equal(back.color, 'rgb(46, 125, 50)', 'in green');
  }
  await sql(`UPDATE events SET actor = 'agent-1' WHERE id = ${refused.id}`);
  t.equal((await verifyCli()).code, 0, 'put back, audit verify agrees');

  // A grant widened in the tokens table: red, naming the token.
  if (pg) await pg.psql("UPDATE tokens SET repos = '**' WHERE name = 'agent-1'");
  else await sql("UPDATE tokens SET repos = '**' WHERE name = 'agent-1'");
  v = verdict((await page('/chain')).html);
  t.equal(v?.cls, 'bad');
  t.match(v?.text, /NOT intact: TAMPERED: tokens: token agent-1: its repo grant "\*\*" is not the "\*" of its token\.create row \d+/);
  t.equal(verdict((await page('/')).html)?.cls, 'bad', 'the overview shows that verdict too');
  if (pg) t.notMatch(edited.html + cliBad.stdout + cliBad.stderr, pg.password, 'no password on the page or in the output');
}

t.test('a walk that outlasts the wait: /chain answers with how far it is, then the verdict once it ends', async (t) => {
  const data = tempDir('pg-chain-slow-');
  t.teardown(() => removeTree(data));
  const store = AuditStore.open(join(data, 'patchgate.db'));
  t.teardown(() => store.close());
  const secret = new TokenStore(store).create('alice', 'human');
  for (let i = 0; i < 5; i++) store.appendAdmin({ actor: 'cli', action: 'repo.create', subject: `r${i}` });
  // The store as a log whose walk takes as long as the test says (a log of millions of rows).
  let finish: () => void = () => {};
  const slow = new Promise<void>((r) => (finish = r));
  const log = {
    lastRow: () => store.lastRow(), get: (id: number) => store.get(id), select: (q: string, p?: readonly unknown[]) => store.select(q, p),
    query: (o: object) => store.query(o), getPush: (id: string) => store.getPush(id),
    verify: async () => {
      await slow;
      return store.verify();
    },
  };
  const web = createWeb({ dataDir: data, audit: log as never, tokens: new TokenStore(store), limiter: new FailureLimiter(), secure: false, log: () => {}, chainWaitMs: 300 });
  const server = http.createServer((req, res) => void web(req, res, new URL(req.url ?? '/', 'http://x')));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as { port: number }).port;
  const get = async (path: string) => (await fetch(`http://127.0.0.1:${port}${path}`, { headers: { Authorization: `Basic ${Buffer.from(`alice:${secret}`).toString('base64')}` } })).text();
  const t0 = Date.now();
  let html = await get('/chain');
  t.ok(Date.now() - t0 < 5000, 'answered without waiting for the walk');
  t.match(html, /Not verified since the server started\./);
  t.match(html, /<p class="walking" id="chain-walk">A walk of the whole chain is running \(started [^)]*\): reload for its verdict\.<\/p>/, 'it says a walk is running');
  t.notMatch(html, /class="verdict ok"/, 'and claims no verdict');
  html = await get('/chain');
  t.match(html, /id="chain-walk"/, 'a second load shares the running walk');
  finish();
  await new Promise((r) => setTimeout(r, 100));
  html = await get('/');
  t.match(html, /<p class="verdict ok" id="chain-verdict" data-ok="true">Intact: ok: 6 row\(s\), hash chain intact; ok: 1 token\(s\)/, 'once it ended, its verdict');
});
