// Pack bombs, end to end with the real git client over HTTP: a push with too many objects
// (loose and packed in the quarantine), too many bytes, or one huge but highly compressible
// blob is refused by the `limits` rule before any other rule reads it, with a message that
// names the limit and the next step; git's own receive.maxInputSize refuses an oversized
// pack before the hook runs; repositories made before the limits get git's settings at
// start and on `repo hooks`.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { TestRepo } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';
import { startServer } from '../../src/server/app.js';
import { runRepoHooks } from '../../src/commands/admin.js';
import { checkExitCode, checkJson, runCheck } from '../../src/commands/check.js';
import { parsePolicy, DEFAULT_LIMITS } from '../../src/policy/config.js';
import { REPO_GIT_CONFIG } from '../../src/server/repos.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { craftedPushBody, noise } from '../helpers/bigrepo.js';
import { dechunk, head, rawRequest, sideband } from '../helpers/raw-http.js';

type T = Parameters<Parameters<typeof t.test>[1]>[0];

/** A gate whose trusted branch carries `limits` in its policy, seeded by a person. */
async function setup(t: T, limits: Record<string, number>) {
  const gate = await startGate(t);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'x = 1\n', 'ci/patchgate.json': JSON.stringify({ limits }) });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(r.code, 0, r.code ? r.stderr : 'a person seeds main with the policy');
  w.checkout('agent/work', true);
  return { gate, human, agent, w, bare: bareDir(gate, 'app'), remote: gate.remote('app', 'agent-1', agent) };
}

function manyFiles(n: number, tag: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) files[`src/gen/f${i}.py`] = `# ${tag} ${i}\nx = ${i}\n`;
  return files;
}

function lastRef(gate: Awaited<ReturnType<typeof setup>>['gate']) {
  const row = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' })[0]!;
  return { row, rules: row.rules as Array<{ rule: string; status: string; details?: Record<string, unknown> }> };
}

t.test('too many objects: refused by the limits rule, loose (unpack-objects) and packed (index-pack)', async (t) => {
  const { gate, w, bare, remote } = await setup(t, { maxObjects: 20 });
  // 30 files + their trees + a commit: fewer than receive.unpackLimit (100), so loose objects.
  w.commit('thirty', manyFiles(30, 'a'));
  const loose = await gitAsync(w.dir, ['push', remote, 'agent/work']);
  t.not(loose.code, 0);
  t.match(loose.stderr, /remote: .*\[limits\] the push brings 3\d objects, over limits\.maxObjects \(20\); nothing else was checked/);
  t.match(loose.stderr, /remote: .*next step: split the work into smaller pushes/);
  t.match(loose.stderr, /pre-receive hook declined/);
  t.equal(await refIn(bare, 'refs/heads/agent/work'), null);
  let { row, rules } = lastRef(gate);
  t.equal(row.decision, 'push-too-large');
  t.match(rules[0], { rule: 'limits', status: 'fail', details: { loose: Number, packs: 0 } });
  t.same(rules.slice(1).map((r) => `${r.rule}:${r.status}`), ['refs:skipped', 'write-block:skipped', 'policy:skipped', 'contract:skipped', 'fixtures:skipped', 'tamper-scan:skipped', 'ledger:skipped'], 'no other rule ran');

  // 150 more files: over the unpack limit, so one pack in the quarantine, counted by its index.
  w.commit('one hundred fifty', manyFiles(150, 'b'));
  const packed = await gitAsync(w.dir, ['push', remote, 'agent/work']);
  t.not(packed.code, 0);
  t.match(packed.stderr, /\[limits\] the push brings \d{3} objects, over limits\.maxObjects \(20\)/);
  ({ row, rules } = lastRef(gate));
  t.match(rules[0], { rule: 'limits', status: 'fail', details: { packs: 1, loose: 0 } });
  t.ok((rules[0]!.details!.objects as number) > 180, `objects counted from the pack index: ${rules[0]!.details!.objects}`);
});

t.test('a person is held to the limits too', async (t) => {
  const { gate, human, w, bare } = await setup(t, { maxObjects: 10 });
  w.checkout('main').commit('many', manyFiles(20, 'c'));
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.not(r.code, 0);
  t.match(r.stderr, /REJECT refs\/heads\/main .* for alice/);
  t.match(r.stderr, /\[limits\] the push brings \d+ objects, over limits\.maxObjects \(10\)/);
  t.match(r.stderr, /a person decides the repository should take it, they raise `limits` in ci\/patchgate\.json/);
  t.not(await refIn(bare, 'refs/heads/main'), w.head());
});

t.test('a huge, highly compressible blob is refused from its header, never read', async (t) => {
  const { gate, w, bare, remote } = await setup(t, { maxBlobBytes: 1024 * 1024 });
  const zeros = Buffer.alloc(64 * 1024 * 1024); // 64 MiB of zeros, a few hundred kB packed
  const bomb = w.commit('bomb', { 'src/data/zeros.bin': zeros, 'src/app.py': 'x = 2\n' });
  w.commit('later', { 'src/app.py': 'x = 3\n' });
  const rss0 = process.resourceUsage().maxRSS;
  const r = await gitAsync(w.dir, ['push', remote, 'agent/work']);
  const grew = process.resourceUsage().maxRSS - rss0;
  t.not(r.code, 0);
  t.match(r.stderr, new RegExp(`\\[limits\\] commit ${bomb.slice(0, 12)} adds src/data/zeros\\.bin, a blob of 64 MiB, over limits\\.maxBlobBytes \\(1\\.0 MiB\\)`));
  t.match(r.stderr, /next step: take the large files out of your new commits[^\n]*\nremote:\s+\$ git reset --soft [0-9a-f]{40}\s*\nremote:\s+\$ git restore --source=[0-9a-f]{40} --staged --worktree -- ':\(literal\)src\/data\/zeros\.bin'/);
  t.match(r.stderr, /decision: a new file over limits.maxBlobBytes/);
  t.equal(await refIn(bare, 'refs/heads/agent/work'), null);
  const { row, rules } = lastRef(gate);
  t.equal(row.decision, 'blob-too-large');
  t.match(rules[0], { rule: 'limits', status: 'fail', details: { largestBlob: 64 * 1024 * 1024 } });
  t.ok(rules.slice(1).every((x) => x.status === 'skipped'), 'no other rule ran, so no rule read the blob');
  t.comment(`max RSS of the test process (which hosts the gate) grew by ${Math.round(grew / 1024)} MiB during the push`);
});

t.test('a large blob that no commit names, sent in a crafted pack over raw HTTP, is refused naming the object and the limit', async (t) => {
  const { gate, agent, w, bare } = await setup(t, { maxBlobBytes: 4096 });
  const base = w.head();
  const tip = w.commit('small', { 'src/app.py': 'x = 2\n' });
  // 2 MiB of incompressible bytes, stored in the work repository but named by no commit.
  const tmp = join(w.dir, '.git', 'extra.bin');
  writeFileSync(tmp, noise('unreferenced-blob', 2 * 1024 * 1024));
  const extra = w.git('hash-object', '-w', tmp);
  const body = craftedPushBody(w, { oldId: '0'.repeat(40), newId: tip, ref: 'refs/heads/agent/work', range: [tip, `^${base}`], extra: [extra] });
  const r = await rawRequest(gate.srv.port, [head('POST', '/app.git/git-receive-pack', { 'Content-Type': 'application/x-git-receive-pack-request', 'Content-Length': body.length }, agent), body], 60_000);
  t.equal(r.status, 200, 'git answers in its own format');
  const { data, progress } = sideband(dechunk(r.body));
  t.match(data, /ng refs\/heads\/agent\/work pre-receive hook declined/, 'the ref is refused');
  t.match(progress, new RegExp(`\\[limits\\] the push carries blob ${extra} of 2\\.0 MiB, which no new commit names, over limits\\.maxBlobBytes \\(4\\.0 KiB\\)`), 'the refusal names the object and the limit');
  t.match(progress, /push with plain `git push`/);
  t.equal(await refIn(bare, 'refs/heads/agent/work'), null);
  t.equal((await gitAsync(bare, ['cat-file', '-e', extra])).code === 0, false, 'the blob was not stored');
  const { row, rules } = lastRef(gate);
  t.equal(row.decision, 'object-too-large');
  t.match(rules[0], { rule: 'limits', status: 'fail', details: { largestBlob: 2 * 1024 * 1024 } });

  // The same commit pushed by git itself (which sends only what the commit names) is accepted.
  const ok = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/work']);
  t.equal(ok.code, 0, ok.code ? ok.stderr : 'the plain push lands');
  t.equal(await refIn(bare, 'refs/heads/agent/work'), tip);
});

t.test('too many bytes: refused with both sizes named', async (t) => {
  const { w, bare, remote } = await setup(t, { maxPushBytes: 100_000 });
  w.commit('noise', { 'src/noise.bin': randomBytes(300_000) }); // does not compress
  const r = await gitAsync(w.dir, ['push', remote, 'agent/work']);
  t.not(r.code, 0);
  t.match(r.stderr, /\[limits\] the push brings 29\d KiB of objects, over limits\.maxPushBytes \(98 KiB\)/);
  t.equal(await refIn(bare, 'refs/heads/agent/work'), null);
});

t.test('under the limits, an ordinary push is accepted', async (t) => {
  const { gate, w, bare, remote } = await setup(t, { maxObjects: 40, maxBlobBytes: 1024 * 1024 });
  const head = w.commit('fix', { 'src/app.py': 'x = 2\n', 'src/small.bin': Buffer.alloc(512 * 1024) });
  const r = await gitAsync(w.dir, ['push', remote, 'agent/work']);
  t.equal(r.code, 0, r.code ? r.stderr : 'accepted');
  t.equal(await refIn(bare, 'refs/heads/agent/work'), head);
  const { rules } = lastRef(gate);
  t.match(rules[0], { rule: 'limits', status: 'pass', details: { largestBlob: 512 * 1024 } });
});

t.test("git's receive.maxInputSize refuses an oversized pack before the hook runs", async (t) => {
  const { gate, w, bare, remote } = await setup(t, {});
  t.equal((await gitAsync(bare, ['config', 'receive.maxInputSize', '100000'])).code, 0);
  w.commit('noise', { 'src/noise.bin': randomBytes(300_000) });
  const before = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' }).length;
  const r = await gitAsync(w.dir, ['push', remote, 'agent/work']);
  t.not(r.code, 0);
  t.match(r.stderr, /pack exceeds maximum allowed size/);
  t.equal(await refIn(bare, 'refs/heads/agent/work'), null);
  t.equal(gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' }).length, before, 'the hook never ran');
});

t.test('repositories get git\'s push limits at creation, at start and on `repo hooks`', async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  const bare = bareDir(gate, 'app');
  const get = async (k: string) => (await gitAsync(bare, ['config', '--get', k])).stdout.trim();
  t.equal(await get('receive.maxInputSize'), String(1024 ** 3), 'created with maxInputSize 1 GiB');
  t.equal(await get('core.bigFileThreshold'), String(32 * 1024 ** 2), 'created with bigFileThreshold 32 MiB');
  // A repository from before the limits: no limits, fsck off.
  await gitAsync(bare, ['config', '--unset', 'receive.maxInputSize']);
  await gitAsync(bare, ['config', '--unset', 'core.bigFileThreshold']);
  await gitAsync(bare, ['config', 'receive.fsckObjects', 'false']);
  const logs: string[] = [];
  await gate.srv.close(); // one server per data folder: the restart needs the folder
  const again = await startServer({ dataDir: gate.data, port: 0, host: '127.0.0.1', log: (l) => logs.push(l) });
  await again.close();
  t.equal(await get('receive.maxInputSize'), String(1024 ** 3), 'start-up set maxInputSize');
  t.equal(await get('core.bigFileThreshold'), String(32 * 1024 ** 2), 'start-up set bigFileThreshold');
  t.equal(await get('receive.fsckObjects'), 'true', 'start-up turned fsck back on');
  t.match(logs.join('\n'), /repository app: set receive\.fsckobjects, receive\.maxinputsize, core\.bigfilethreshold/);
  // An operator's own value for a limit is kept; `repo hooks` fills in what is missing.
  await gitAsync(bare, ['config', 'receive.maxInputSize', '2000000000']);
  await gitAsync(bare, ['config', '--unset', 'core.bigFileThreshold']);
  const out = await runRepoHooks({ data: gate.data, name: 'app' });
  t.match(out[0], /reinstalled patchgate hooks in .* and set core\.bigfilethreshold$/);
  t.equal(await get('receive.maxInputSize'), '2000000000', 'the operator\'s maxInputSize is kept');
  t.equal(await get('core.bigFileThreshold'), String(32 * 1024 ** 2));
  t.ok(REPO_GIT_CONFIG.every((c) => c.key === c.key.toLowerCase()), 'keys are written in git\'s canonical lower case');
});

t.test('policy: limits defaults, validation, and `check` applies the blob limit too', async (t) => {
  t.same(parsePolicy({}).limits, DEFAULT_LIMITS);
  t.throws(() => parsePolicy({ limits: { maxBlobs: 1 } }), { message: /CONFIG: ci\/patchgate\.json: limits\.maxBlobs: unknown key/ });
  t.throws(() => parsePolicy({ limits: { maxObjects: 0 } }), { message: /limits\.maxObjects/ });
  const r = TestRepo.init(t);
  r.commit('base', { 'src/app.py': 'x = 1\n', 'ci/patchgate.json': JSON.stringify({ limits: { maxBlobBytes: 1000 } }) });
  r.checkout('big', true).commit('big', { 'src/blob.txt': 'y'.repeat(5000) });
  const d = await runCheck({ repo: r.dir, base: 'main', head: 'big', role: 'agent' });
  t.equal(d.verdict, 'reject');
  t.equal(d.row, 'blob-too-large');
  t.match(d.reasons[0], { rule: 'limits', path: 'src/blob.txt', message: /a blob of 4\.9 KiB, over limits\.maxBlobBytes \(1000 bytes\)/ });
  // The pinned `check --json` shape keeps its closed list of rule names.
  const json = checkJson(d) as { reasons: Array<{ rule: string; limit?: boolean }> };
  t.match(json.reasons[0], { rule: 'error', limit: true });
  t.equal(checkExitCode(d), 1, 'a refusal, not a gate error');
});
