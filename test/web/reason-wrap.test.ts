// Issue 49: on /pushes a long contract digest in the reason column ran into the push-id column.
// td.reason wraps anywhere (src/web/assets.ts); here a real gate refuses a real agent push that
// moves the contract, so its row's reason carries two 64-hex digests, and headless Chromium
// (playwright-core, as test/web/page.test.ts launches it) compares the cells' boxes. The same
// page with the wrap rule taken away shows the overlap, so the check can fail.

import t from 'tap';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { TestRepo } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

type Box = { left: number; right: number; top: number; bottom: number };

/** The reason cell and the push-id cell (the next one) of the row whose reason holds a 64-hex digest, and the widest line box of the reason's text. */
async function boxes(page: Page): Promise<{ reason: Box; push: Box; text: Box; digest: string } | null> {
  return page.$$eval('#pushes tbody tr', (rows) => {
    const box = (r: DOMRect) => ({ left: r.left, right: r.right, top: r.top, bottom: r.bottom });
    for (const tr of rows) {
      const reason = tr.querySelector('td.reason');
      const digest = /[0-9a-f]{64}/.exec(reason?.textContent ?? '')?.[0];
      if (!reason || !digest) continue;
      const push = reason.nextElementSibling!;
      const range = document.createRange();
      range.selectNodeContents(reason);
      const lines = [...range.getClientRects()];
      const text = { left: Math.min(...lines.map((l) => l.left)), right: Math.max(...lines.map((l) => l.right)), top: Math.min(...lines.map((l) => l.top)), bottom: Math.max(...lines.map((l) => l.bottom)) };
      return { reason: box(reason.getBoundingClientRect()), push: box(push.getBoundingClientRect()), text, digest };
    }
    return null;
  });
}

if (!existsSync(CHROMIUM)) {
  if (process.env.CI) t.fail(`${CHROMIUM} is missing: .ci/run must apt-get install chromium`);
  else t.skip(`${CHROMIUM} is missing (apt-get install -y chromium); skipping the browser test`);
} else {
  t.test('a long contract digest in the reason column stays out of the push-id column', async (t) => {
    const gate = await startGate(t);
    await gate.repo('app');
    const human = await gate.tokenAsync('alice', 'human');
    const agent = await gate.tokenAsync('agent-1', 'agent');
    const w = TestRepo.init(t);
    w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n' });
    t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0, 'a person seeds main');
    w.checkout('agent/api', true);
    w.commit('move the API', { 'src/app.py': 'def add(a, b, c=0):\n    return a + b + c\n' });
    t.not((await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/api'])).code, 0, 'the contract move is refused');

    const profile = mkdtempSync(join(tmpdir(), 'pg-chromium-'));
    const ctx = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, args: ARGS, headless: true, viewport: { width: 1100, height: 800 } });
    t.teardown(async () => {
      await ctx.close();
      rmSync(profile, { recursive: true, force: true });
    });
    const page = await ctx.newPage();
    const base = gate.srv.url;
    await page.goto(`${base}/login`);
    await page.fill('input[name=token]', human);
    await Promise.all([page.waitForURL(`${base}/`), page.click('button[type=submit]')]);
    await page.goto(`${base}/pushes`);

    const b = await boxes(page);
    t.ok(b, 'a row whose reason carries a 64-hex digest');
    if (!b) return;
    t.ok(b.reason.right <= b.push.left + 0.5, `the reason cell ends (${b.reason.right}) where the push-id cell starts (${b.push.left}) or before`);
    t.ok(b.text.right <= b.reason.right + 0.5, `the reason's text, digest included, stays inside its cell (text right ${b.text.right}, cell right ${b.reason.right})`);
    t.ok(b.text.right <= b.push.left, 'so it does not run into the push-id column');

    // The same page without the wrap rule: the digest runs past its cell (the check above has teeth).
    // (Through the CSSOM: the page's CSP refuses an inline style sheet.) The table keeps the viewport's width, as a narrow window does.
    await page.$$eval('#pushes', (tables) => {
      for (const table of tables as HTMLElement[]) {
        table.style.setProperty('table-layout', 'fixed');
        table.style.setProperty('width', '100%');
        for (const td of table.querySelectorAll<HTMLElement>('td.reason')) {
          td.style.setProperty('overflow-wrap', 'normal', 'important');
          td.style.setProperty('word-break', 'normal', 'important');
        }
      }
    });
    const off = await boxes(page);
    t.ok(off && off.text.right > off.reason.right + 0.5, `without the rule the text runs past its cell (text right ${off?.text.right}, cell right ${off?.reason.right})`);
    // The rule back, the table still held to the window's width: the digest wraps inside its cell again.
    await page.$$eval('#pushes td.reason', (tds) => {
      for (const td of tds as HTMLElement[]) {
        td.style.removeProperty('overflow-wrap');
        td.style.removeProperty('word-break');
      }
    });
    const held = await boxes(page);
    t.ok(held && held.text.right <= held.reason.right + 0.5 && held.reason.right <= held.push.left + 0.5, `with the rule, in a table held to the window, it wraps inside its cell (text right ${held?.text.right}, cell right ${held?.reason.right}, push-id left ${held?.push.left})`);
  });
}
