// The page and the API enforce a token's grant (issue 20, item 7), over real HTTP against a
// real gate whose audit rows come from real pushes: a person token made with `--repos app`
// reads only app's rows on /api/audit, /pushes, /push/ID and the overview; `*-holdout`
// repositories are admin-only; a cross-site state-changing request is refused whatever its
// credentials; failed logins are counted per address and per claimed user, and one identity's
// success does not forgive another's failures.

import t from 'tap';
import http from 'node:http';
import { TestRepo } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';

function request(port: number, method: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}
const basic = (user: string, secret: string) => ({ Authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString('base64')}` });
const HIDDEN = 'tests/hidden_secret_case.py';

t.test('a token reads only the rows of repositories it may use; *-holdout rows are admin-only', async (t) => {
  const gate = await startGate(t);
  for (const r of ['app', 'other', 'app-holdout']) await gate.repo(r);
  const person = gate.token('alice', 'human');
  const scoped = gate.token('carol', 'human', 'app');
  const wide = gate.token('dave', 'human');
  const admin = gate.token('root', 'admin');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'x = 1\n', 'tests/test_app.py': 'def test_x():\n    assert True\n' });
  for (const r of ['app', 'other', 'app-holdout']) t.equal((await gitAsync(w.dir, ['push', gate.remote(r, 'alice', person), 'main'])).code, 0, `seeded ${r}`);
  // A person's change to the held-out tests: its ref row names the path (a waived finding).
  w.commit('held-out test', { [HIDDEN]: 'def test_hidden():\n    assert 2 + 2 == 4\n' });
  const hp = await gitAsync(w.dir, ['push', gate.remote('app-holdout', 'alice', person), 'main']);
  t.equal(hp.code, 0, hp.stderr);
  const port = gate.srv.port;

  t.equal((await request(port, 'GET', '/other.git/info/refs?service=git-upload-pack', basic('carol', scoped))).status, 403, 'the grant refuses git access to other');

  const rowsOf = async (secret: string, q = '') => {
    const r = await request(port, 'GET', `/api/audit?limit=1000${q}`, basic('u', secret));
    t.equal(r.status, 200);
    return { body: r.body, rows: r.body.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { repo: string | null; pushId: string | null; kind: string }) };
  };
  const all = await rowsOf(admin);
  t.ok(all.body.includes(HIDDEN), 'an admin reads the held-out path');
  t.same([...new Set(all.rows.map((r) => r.repo).filter(Boolean))].sort(), ['app', 'app-holdout', 'other']);
  const mine = await rowsOf(scoped);
  t.ok(mine.rows.length > 0);
  t.ok(mine.rows.every((r) => r.repo === 'app'), '--repos app reads only app rows (and no repository-less rows)');
  t.notOk(mine.body.includes(HIDDEN));
  t.same((await rowsOf(scoped, '&repo=other')).rows, [], 'asking for another repository gives nothing');
  const w2 = await rowsOf(wide);
  t.same([...new Set(w2.rows.map((r) => r.repo))].sort(), ['app', 'other'], 'a token for every repository still does not read *-holdout rows');
  t.notOk(w2.body.includes(HIDDEN));
  t.notOk(w2.body.includes('app-holdout'));

  const pushOf = (repo: string) => all.rows.find((r) => r.kind === 'push' && r.repo === repo)!.pushId!;
  const page = (path: string, secret: string) => request(port, 'GET', path, basic('u', secret));
  t.equal((await page(`/push/${pushOf('app')}`, scoped)).status, 200, 'its own push page');
  for (const repo of ['other', 'app-holdout']) {
    const p = await page(`/push/${pushOf(repo)}`, scoped);
    t.equal(p.status, 404, `the push page of ${repo} is not found for the scoped token`);
    t.notOk(p.body.includes(HIDDEN));
  }
  const holdoutPage = await page(`/push/${pushOf('app-holdout')}`, wide);
  t.equal(holdoutPage.status, 404, 'nor for a token of every repository');
  t.equal((await page(`/push/${pushOf('app-holdout')}`, admin)).status, 200, 'an admin reads it');
  const list = await page('/pushes', scoped);
  t.equal(list.status, 200);
  t.match(list.body, /\bapp\b/);
  t.notOk(/>other</.test(list.body) || list.body.includes('app-holdout'), '/pushes lists only app');
  const listWide = await page('/pushes?repo=app-holdout', wide);
  t.notOk(listWide.body.includes(pushOf('app-holdout')), 'filtering for the holdout repository finds nothing');
  const over = await page('/', wide);
  t.equal(over.status, 200);
  t.notOk(over.body.includes(HIDDEN), 'the overview counts no held-out path');
});

t.test('a cross-site state-changing request is refused, whatever its credentials', async (t) => {
  const gate = await startGate(t);
  const admin = gate.token('root', 'admin');
  const port = gate.srv.port;
  const foreign = await request(port, 'POST', '/api/repos?name=evil', { ...basic('root', admin), Origin: 'https://attacker.example' });
  t.equal(foreign.status, 403);
  t.match(foreign.body, /cross-site request refused/);
  const nul = await request(port, 'POST', '/api/repos?name=evil', { ...basic('root', admin), Origin: 'null' });
  t.equal(nul.status, 403, 'Origin: null is refused');
  const fetchSite = await request(port, 'POST', '/api/repos?name=evil', { ...basic('root', admin), 'Sec-Fetch-Site': 'cross-site' });
  t.equal(fetchSite.status, 403, 'Sec-Fetch-Site: cross-site is refused');
  const push = await request(port, 'POST', '/evil.git/git-receive-pack', { ...basic('root', admin), Origin: 'https://attacker.example', 'Content-Type': 'application/x-git-receive-pack-request' });
  t.equal(push.status, 403, 'a cross-site receive-pack POST too');
  const api = await request(port, 'GET', '/api/tokens', basic('root', admin));
  t.equal(api.status, 200);
  const audit = await request(port, 'GET', '/api/audit?kind=admin', basic('root', admin));
  t.notMatch(audit.body, /"subject":"evil"/, 'no repository was created');
  const same = await request(port, 'POST', '/api/repos?name=good', { ...basic('root', admin), Origin: `http://127.0.0.1:${port}` });
  t.equal(same.status, 201, 'the same origin is taken');
  const none = await request(port, 'POST', '/api/repos?name=good2', basic('root', admin));
  t.equal(none.status, 201, 'a client without Origin (curl, a script) is taken');
});

t.test('failed logins are counted per address and per claimed user; a success forgives only its own', async (t) => {
  const gate = await startGate(t, { limiter: { slowAfter: 1, blockAfter: 3, windowMs: 60_000, stepMs: 1, maxDelayMs: 2 } });
  await gate.repo('app');
  const good = gate.token('alice', 'human');
  const port = gate.srv.port;
  const path = '/app.git/info/refs?service=git-upload-pack';
  const guess = basic('mallory', 'pg_' + 'z'.repeat(43));
  const codes: number[] = [];
  codes.push((await request(port, 'GET', path, guess)).status);
  codes.push((await request(port, 'GET', path, guess)).status);
  codes.push((await request(port, 'GET', path, basic('alice', good))).status);
  codes.push((await request(port, 'GET', path, guess)).status);
  codes.push((await request(port, 'GET', path, guess)).status);
  t.same(codes, [401, 401, 200, 401, 429], "alice's good token does not reset mallory's count at the same address");
  t.equal((await request(port, 'GET', path, basic('alice', good))).status, 200, 'alice is not blocked by mallory');
  // A guesser that changes the claimed name each time: the address as a whole is refused past 4 × 3.
  const seen: number[] = [];
  for (let i = 0; i < 10; i++) seen.push((await request(port, 'GET', path, basic(`name-${i}`, 'pg_' + 'q'.repeat(43)))).status);
  t.same(seen, [401, 401, 401, 401, 401, 401, 401, 401, 401, 429], 'rotating names: counted at the address, blocked at 12 failures');
  t.equal((await request(port, 'GET', path, basic('alice', good))).status, 429, 'and then the address is refused for everyone until the window passes');
});
