// Pushes of the sizes real projects have, with stock git and its default config: a person's
// first push of 10,000 files (about 40 MB) and a 50 MB agent push. Both packs are far over
// http.postBuffer (1 MiB), so git sends its probe (a lone flush-pkt) first and then the body
// with Transfer-Encoding: chunked; before the front answered the probe, every such push
// failed with `RPC failed; HTTP 400`. Also: git's probe itself, and a gzip-encoded push body
// (which git sends for smaller bodies), over raw HTTP.

import t from 'tap';
import { gzipSync } from 'node:zlib';
import { TestRepo } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';
import { bigCommit, craftedPushBody } from '../helpers/bigrepo.js';
import { dechunk, head, rawRequest, sideband } from '../helpers/raw-http.js';

const MiB = 1024 * 1024;

/** The bytes the push brought, as the limits rule counted them in the quarantine (audit trace). */
function pushedBytes(gate: Awaited<ReturnType<typeof startGate>>, actor: string): number {
  const row = gate.srv.audit.query({ kind: 'ref', actor })[0]!;
  const limits = (row.rules as Array<{ rule: string; details?: { bytes?: number } }>).find((r) => r.rule === 'limits');
  return limits?.details?.bytes ?? 0;
}

t.test("git's probe is answered as git http-backend answers it: 200, no body; with credentials only", async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  for (const svc of ['receive-pack', 'upload-pack']) {
    const probe = (secret?: string) => rawRequest(gate.srv.port, [head('POST', `/app.git/git-${svc}`, { 'Content-Type': `application/x-git-${svc}-request`, 'Content-Length': 4, Connection: 'close' }, secret), '0000']);
    const anon = await probe();
    t.equal(anon.status, 401, `${svc}: the probe without credentials gets the challenge git answers with credentials`);
    const r = await probe(human);
    t.equal(r.status, 200, `${svc}: probe answered 200`);
    t.equal(r.body, '', `${svc}: with an empty body`);
    const more = await rawRequest(gate.srv.port, [head('POST', `/app.git/git-${svc}`, { 'Content-Type': `application/x-git-${svc}-request`, 'Content-Length': 8 }, human), '00000000']);
    t.equal(more.status, 400, `${svc}: a flush-pkt followed by more is not a probe: refused`);
  }
  t.equal(gate.srv.audit.query({ kind: 'push' }).length, 0, 'a probe is not a push');
});

t.test("a person's first push of 10,000 files (40 MB) lands with stock git and default config, and clones back", async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const w = TestRepo.init(t);
  const tip = await bigCommit(w, { files: 10_000, bytes: 4096, root: 'assets', seed: 'first-push-10k', message: 'import the project', branch: 'main', extra: { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'def test_add():\n    assert True\n' } });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(r.code, 0, r.code ? r.stderr : 'the push landed');
  t.match(r.stderr, /remote: patchgate: ACCEPT refs\/heads\/main \(new\)\.\.[0-9a-f]{12} for alice/);
  const bare = bareDir(gate, 'app');
  t.equal(await refIn(bare, 'refs/heads/main'), tip, 'main is the pushed commit');
  t.equal((await gitAsync(bare, ['ls-tree', '-r', '--name-only', 'main'])).stdout.trim().split('\n').length, 10_002, 'every file is in the repository');
  const bytes = pushedBytes(gate, 'alice');
  t.ok(bytes > 10_000 * 4096, `the pack was ${Math.round(bytes / MiB)} MiB, far over http.postBuffer: git probed, then sent it chunked`);
  const row = gate.srv.audit.query({ kind: 'ref', actor: 'alice' })[0]!;
  t.equal(row.verdict, 'accept');
  t.equal(row.moved, 1, 'post-receive confirmed the move');

  const clone = await gitAsync(w.dir, ['clone', '-q', '--no-checkout', gate.remote('app', 'alice', human), 'back']);
  t.equal(clone.code, 0, clone.code ? clone.stderr : 'it clones back from the gate');
  t.equal((await gitAsync(`${w.dir}/back`, ['rev-parse', 'HEAD'])).stdout.trim(), tip);
});

t.test('a 50 MB agent push lands with stock git and default config, judged by every rule', async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'def test_add():\n    assert True\n' });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0, 'a person seeds main');
  w.git('branch', 'agent/assets');
  // 25 files of 2 MiB: each under limits.maxBlobBytes, 50 MiB in all, in the agent's writable src/.
  let s0 = Date.now();
  const tip = await bigCommit(w, { files: 25, bytes: 2 * MiB, root: 'src/assets', seed: 'agent-push-50mb', message: 'add the assets', branch: 'agent/assets' });
  t.comment(`generation took ${Date.now() - s0} ms`);
  s0 = Date.now();
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/assets']);
  t.comment(`push took ${Date.now() - s0} ms`);
  t.equal(r.code, 0, r.code ? r.stderr : 'the push landed');
  t.match(r.stderr, /remote: patchgate: ACCEPT refs\/heads\/agent\/assets/);
  t.equal(await refIn(bareDir(gate, 'app'), 'refs/heads/agent/assets'), tip);
  const bytes = pushedBytes(gate, 'agent-1');
  t.ok(bytes > 50 * MiB, `the pack was ${Math.round(bytes / MiB)} MiB`);
  const row = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' })[0]!;
  t.equal(row.verdict, 'accept');
  t.same((row.rules as Array<{ rule: string; status: string }>).map((x) => `${x.rule}:${x.status}`).filter((x) => !x.endsWith(':pass')), [], 'every rule ran and passed');
});

t.test('a gzip-encoded push body is decoded and judged; the body limit holds on the decoded bytes', async (t) => {
  const gate = await startGate(t, { limits: { commandTimeoutMs: 30_000, requestTimeoutMs: 60_000, idleTimeoutMs: 30_000, maxCommandBytes: 64 * 1024, maxBodyBytes: 4 * MiB, otherTimeoutMs: 60_000 } });
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  const base = w.commit('base', { 'src/app.py': 'x = 1\n' });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0, 'a person seeds main');
  w.checkout('agent/gz', true);
  const tip = w.commit('fix', { 'src/app.py': 'x = 2\n' });
  const bare = bareDir(gate, 'app');
  const send = (body: Buffer) => rawRequest(gate.srv.port, [head('POST', '/app.git/git-receive-pack', { 'Content-Type': 'application/x-git-receive-pack-request', 'Content-Encoding': 'gzip', 'Content-Length': body.length }, agent), body], 60_000);

  const good = craftedPushBody(w, { oldId: '0'.repeat(40), newId: tip, ref: 'refs/heads/agent/gz', range: [tip, `^${base}`], extra: [] });
  const r = await send(gzipSync(good));
  t.equal(r.status, 200);
  t.match(sideband(dechunk(r.body)).data, /ok refs\/heads\/agent\/gz/, 'git reports the ref updated');
  t.equal(await refIn(bare, 'refs/heads/agent/gz'), tip, 'the gzip-encoded push landed');

  // A few kB of gzip that decode to 16 MiB after a valid command: stopped at the 4 MiB limit.
  const command = `${'0'.repeat(40)} ${tip} refs/heads/agent/bomb\0report-status side-band-64k`;
  const bomb = Buffer.concat([Buffer.from(`${(command.length + 4).toString(16).padStart(4, '0')}${command}0000PACK`, 'latin1'), Buffer.alloc(16 * MiB)]);
  const packed = gzipSync(bomb);
  t.ok(packed.length < 100 * 1024, `the bomb is ${packed.length} bytes on the wire`);
  const b = await send(packed);
  t.not(b.ended, 'deadline', `the server ended the exchange (${b.status})`);
  t.notMatch(sideband(dechunk(b.body)).data, /ok refs\/heads\/agent\/bomb/);
  t.equal(await refIn(bare, 'refs/heads/agent/bomb'), null, 'nothing moved');
  const health = await rawRequest(gate.srv.port, ['GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']);
  t.equal(health.status, 200, 'the server still answers');
});
