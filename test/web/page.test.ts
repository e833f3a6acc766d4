// The audit page in a real browser: Debian's headless Chromium (driven by playwright-core)
// against a real gate server on port 0, seeded with real pushes over HTTP. The charts
// render (DOM read and a screenshot taken), the filters narrow the table, an agent-written
// path `<img src=x onerror=…>` shows as text, a request without credentials gets 401, the
// session cookie carries HttpOnly and SameSite=Strict, the table and the push page work
// with JavaScript off, and every answer sends the strict CSP. The whole run happens twice:
// once with the audit log in the data folder's SQLite file, once in PostgreSQL (the page
// reads the configured log, whichever it is).

import t from 'tap';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { TestRepo } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';
import { needPostgres, startPostgres } from '../helpers/postgres.js';
import { CSP } from '../../src/web/routes.js';

type Tap = Parameters<Parameters<typeof t.test>[1]>[0];

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const EVIL = '<img src=x onerror=window.__xss=1>.py';

if (!existsSync(CHROMIUM)) {
  if (process.env.CI) t.fail(`${CHROMIUM} is missing: .ci/run must apt-get install chromium`);
  else t.skip(`${CHROMIUM} is missing (apt-get install -y chromium); skipping the browser tests`);
} else {
  t.test('the audit page in Chromium (SQLite)', (t) => run(t, 'sqlite'));
  const why = needPostgres(t);
  if (why) t.comment(`skipping the PostgreSQL run of the page: ${why}`);
  else t.test('the audit page in Chromium (PostgreSQL)', (t) => run(t, 'postgres'));
}

async function browser(tt: { teardown(fn: () => unknown): void }, opts: { javaScriptEnabled?: boolean; extraHTTPHeaders?: Record<string, string> } = {}): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), 'pg-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: ARGS, headless: true, ...opts });
  tt.teardown(async () => {
    await ctx.close();
    rmSync(profile, { recursive: true, force: true });
  });
  return ctx;
}

async function run(t: Tap, kind: 'sqlite' | 'postgres'): Promise<void> {
  const pg = kind === 'postgres' ? await startPostgres(t) : null;
  const gate = await startGate(t, pg ? { auditUrl: pg.url } : {});
  await gate.repo('app');
  const human = await gate.tokenAsync('alice', 'human');
  const agent1 = await gate.tokenAsync('agent-1', 'agent');
  const agent2 = await gate.tokenAsync('agent-2', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  const push = async (user: string, secret: string, branch: string) => {
    const r = await gitAsync(w.dir, ['push', gate.remote('app', user, secret), branch]);
    if (r.code !== 0) t.comment(r.stderr);
    return r;
  };
  t.equal((await push('alice', human, 'main')).code, 0, 'human seeds main');
  w.checkout('agent/ok', true);
  w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  t.equal((await push('agent-2', agent2, 'agent/ok')).code, 0, 'agent-2 push accepted');
  w.checkout('main');
  w.checkout('agent/evil', true);
  w.commit('weaken', { [`tests/${EVIL}`]: 'x = 1\n' });
  const refused = await push('agent-1', agent1, 'agent/evil');
  t.not(refused.code, 0, 'agent-1 push touching tests/ refused');
  const rejectRow = (await gate.srv.sink.query({ kind: 'ref', actor: 'agent-1' }))[0]!;
  if (pg) t.notOk(existsSync(join(gate.data, 'patchgate.db')), 'the data folder has no SQLite file: the page can only show PostgreSQL\'s decisions');
  t.equal(rejectRow.verdict, 'reject');
  const base = gate.srv.url;

  t.test('no credentials: 401; an agent token: 403; the CSP on every answer', async (t) => {
    let r = await fetch(`${base}/`, { headers: { Accept: 'text/html' } });
    t.equal(r.status, 401);
    t.equal(r.headers.get('content-security-policy'), CSP);
    t.match(await r.text(), /<form method="post" action="\/login"/, 'a browser gets the login form');
    r = await fetch(`${base}/pushes`);
    t.equal(r.status, 401);
    t.match(r.headers.get('www-authenticate') ?? '', /^Basic /, 'other clients get the Basic challenge');
    const basic = (u: string, s: string) => ({ Authorization: `Basic ${Buffer.from(`${u}:${s}`).toString('base64')}` });
    r = await fetch(`${base}/`, { headers: basic('agent-1', agent1) });
    t.equal(r.status, 403, 'agents may not read the audit log');
    r = await fetch(`${base}/`, { headers: basic('x', 'pg_not-a-real-token') });
    t.equal(r.status, 401);
    r = await fetch(`${base}/pushes`, { headers: basic('alice', human) });
    t.equal(r.status, 200, 'Basic auth with a human token');
    t.notMatch(CSP, /unsafe-inline|unsafe-eval|\*/, 'no inline script, no eval, no wildcard');
    r = await fetch(`${base}/assets/../../etc/passwd`, { headers: basic('alice', human) });
    t.not(r.status, 200, 'the asset route serves only its own files');
    const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
    r = await fetch(`${base}/login`, { method: 'POST', headers: { ...form, Origin: 'http://evil.example' }, body: `token=${encodeURIComponent(human)}`, redirect: 'manual' });
    t.equal(r.status, 403, 'a cross-site login is refused');
    t.equal(r.headers.get('set-cookie'), null);
    r = await fetch(`${base}/login`, { method: 'POST', headers: form, body: `token=${'a'.repeat(20_000)}`, redirect: 'manual' });
    t.equal(r.status, 401, 'an oversized form is refused');
    r = await fetch(`${base}/`, { headers: { Accept: 'text/html', Cookie: `patchgate_session=${'A'.repeat(43)}; x=${'y'.repeat(4000)}` } });
    t.equal(r.status, 401, 'an unknown session is no session');
    r = await fetch(`${base}/push/%E0%A4%A`, { headers: basic('alice', human) });
    t.equal(r.status, 400, 'a malformed push id');
    r = await fetch(`${base}/pushes?before=%3Cscript%3E&since=nope`, { headers: basic('alice', human) });
    t.equal(r.status, 400, 'bad filters are a 400 naming the field');
    t.notMatch(await r.text(), /<script>/);
    r = await fetch(`${base}/healthz`);
    t.equal(r.status, 200, 'the server is still up');
    r = await fetch(`${base}/assets/chart.umd.min.js`);
    t.equal(r.status, 200, 'chart.js is served from node_modules');
  });

  t.test('login form: the cookie is HttpOnly and SameSite=Strict; the charts render', async (t) => {
    const r = await fetch(`${base}/login`, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: `token=${encodeURIComponent(human)}`, redirect: 'manual' });
    t.equal(r.status, 303);
    const cookie = r.headers.get('set-cookie') ?? '';
    t.match(cookie, /^patchgate_session=[A-Za-z0-9_-]{43};/);
    t.match(cookie, /; HttpOnly/);
    t.match(cookie, /; SameSite=Strict/);
    t.notMatch(cookie, /Secure/, 'Secure only with TLS');
    t.notMatch(cookie, new RegExp(human), 'the token is not in the cookie');

    const ctx = await browser(t);
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.goto(`${base}/login`);
    await page.fill('input[name=token]', human);
    await Promise.all([page.waitForURL(`${base}/`), page.click('button[type=submit]')]);
    const cookies = await ctx.cookies(base);
    const c = cookies.find((x) => x.name === 'patchgate_session');
    t.ok(c, 'the browser holds the session cookie');
    t.equal(c?.httpOnly, true);
    t.equal(c?.sameSite, 'Strict');
    t.equal(await page.evaluate(() => document.cookie), '', 'scripts cannot read it');
    await page.waitForSelector('canvas[data-rendered="true"]');
    const rendered = await page.$$eval('canvas', (cs) => cs.map((c) => ({ id: c.id, done: c.getAttribute('data-rendered'), w: (c as HTMLCanvasElement).width })));
    t.equal(rendered.length, 6, 'six charts');
    for (const c of rendered) t.ok(c.done === 'true' && c.w > 0, `${c.id} rendered`);
    const counts = await page.$$eval('table[data-chart="chart-paths"] td', (tds) => tds.map((td) => td.textContent));
    t.ok(counts.includes(`tests/${EVIL}`), 'the refused path is counted, as text');
    t.equal(await page.$$eval('main img', (x) => x.length), 0, 'no element was injected');
    t.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined, 'no injected handler ran');
    const shot = join(gate.data, 'overview.png');
    await page.screenshot({ path: shot, fullPage: true });
    t.ok(statSync(shot).size > 10_000, 'a screenshot of the rendered page');
    t.equal(readFileSync(shot).subarray(1, 4).toString(), 'PNG');
    if (process.env.PATCHGATE_SCREENSHOT) copyFileSync(shot, process.env.PATCHGATE_SCREENSHOT); // to look at it by hand
    t.same(errors.filter((e) => /Content Security Policy/i.test(e)), [], 'nothing was blocked by the CSP');

    // The filters narrow the table.
    await page.goto(`${base}/pushes`);
    const all = await page.$$eval('#pushes tbody tr', (rows) => rows.length);
    t.ok(all >= 3, `${all} ref decisions listed`);
    await page.fill('input[name=actor]', 'agent-1');
    await Promise.all([page.waitForURL(/actor=agent-1/), page.click('#filters button[type=submit]')]);
    const actors = await page.$$eval('#pushes tbody tr td:nth-child(3)', (tds) => tds.map((td) => td.textContent ?? ''));
    t.ok(actors.length > 0 && actors.length < all, 'fewer rows');
    t.ok(actors.every((a) => a.startsWith('agent-1')), 'only agent-1');
    await page.goto(`${base}/pushes?verdict=accept`);
    const verdicts = await page.$$eval('#pushes tbody td.verdict', (tds) => tds.map((td) => td.textContent));
    t.ok(verdicts.length > 0 && verdicts.every((v) => v === 'accept'), 'verdict filter');
    await page.goto(`${base}/pushes?rule=write-block`);
    const rules = await page.$$eval('#pushes tbody tr td:nth-child(6)', (tds) => tds.map((td) => td.textContent));
    t.same(rules, ['write-block'], 'rule filter');

    // Log out ends the session.
    await Promise.all([page.waitForURL(`${base}/login`), page.click('form.logout button')]);
    const again = await page.goto(`${base}/`);
    t.equal(again?.status(), 401, 'logged out');
  });

  t.test('with JavaScript off: the table and the push page, the evil path shown as text', async (t) => {
    // A browser is not sent the Basic challenge (it gets the login form instead), so send Basic up front.
    const ctx = await browser(t, { javaScriptEnabled: false, extraHTTPHeaders: { Authorization: `Basic ${Buffer.from(`alice:${human}`).toString('base64')}` } });
    const page = await ctx.newPage();
    const resp = await page.goto(`${base}/pushes?verdict=reject`);
    t.equal(resp?.status(), 200);
    t.equal(resp?.headers()['content-security-policy'], CSP);
    const links = await page.$$eval('#pushes tbody a', (as) => as.map((a) => a.getAttribute('href')));
    t.same(links, [`/push/${rejectRow.pushId}`], 'the refused push is listed');
    await page.click('#pushes tbody a');
    await page.waitForURL(`${base}/push/${rejectRow.pushId}`);
    const text = await page.textContent('main');
    t.match(text, 'write-block', 'every rule of the trace');
    t.match(text, /refs\/heads\/agent\/evil/);
    t.match(text, `tests/${EVIL}`, 'the agent-written path is shown as text');
    t.match(text, /next step: [\s\S]*\$ git (restore|reset --hard)/, 'the remediation the agent got');
    t.equal(await page.$$eval('main img', (x) => x.length), 0, 'no <img> was made from it');
    const rulesShown = await page.$$eval('table.rules tbody tr td:first-child', (tds) => tds.map((td) => td.textContent));
    t.ok(rulesShown.length >= 3 && rulesShown.includes('write-block') && rulesShown.includes('refs'), `rules listed: ${rulesShown.join(', ')}`);
    const raw = await (await fetch(`${base}/push/${rejectRow.pushId}`, { headers: { Authorization: `Basic ${Buffer.from(`a:${human}`).toString('base64')}` } })).text();
    t.notMatch(raw, /<img src=x/, 'escaped in the HTML itself');
    t.match(raw, /&lt;img src=x onerror=window.__xss=1&gt;/);
    t.notMatch(raw, /<script>(?!<\/script>)/, 'no inline script');
  });
}
