// One large or slow file must not freeze the server: a file over contract.maxSourceBytes is
// refused from its size before any parse; a slow file under it is parsed on a worker that the
// hook time limit terminates, and the judge stops; meanwhile /healthz and other pushes are
// served. Real git, real HTTP, the real daemon; no timed assertions, only deadlines for hangs.

import t from 'tap';
import http from 'node:http';
import { TestRepo } from '../helpers/repo.js';
import { gitAsync, refIn, seededGate, startGate, type Gate } from '../helpers/gate.js';
import { parsePool } from '../../src/contract/parse-pool.js';
import { DEFAULT_MAX_SOURCE_BYTES } from '../../src/policy/config.js';

const BASE = {
  'src/app.ts': 'export function add(a: number, b: number): number {\n  return a + b;\n}\n',
  'tests/app.test.ts': 'import { add } from "../src/app";\n',
};

type TT = Parameters<Parameters<typeof t.test>[1]>[0];

async function setup(t: TT, opts: Parameters<typeof startGate>[1] = {}) {
  const s = await seededGate(t, BASE, opts, ['agent-1', 'agent-2']);
  await s.gate.srv.hooks.warmed;
  return { ...s, agent2: s.tokens['agent-2']! };
}

/** GET /healthz with a generous deadline (a hang fails, slowness does not). */
function health(gate: Gate): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: gate.srv.port, path: '/healthz', timeout: 20_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error('healthz hung')));
    req.on('error', () => resolve(0));
  });
}

/** Poll /healthz until `done` settles; returns every status seen. */
async function pollHealth(gate: Gate, done: Promise<unknown>): Promise<number[]> {
  let finished = false;
  void done.finally(() => (finished = true));
  const seen: number[] = [];
  do {
    seen.push(await health(gate));
    await new Promise((r) => setTimeout(r, 50));
  } while (!finished);
  return seen;
}

/** A second clone that pushes a harmless body change on its own branch. */
function goodClone(t: TT, w: TestRepo, branch: string): TestRepo {
  const g = TestRepo.init(t);
  g.git('pull', '-q', w.dir, 'main');
  g.checkout(branch, true);
  g.commit('body only', { 'src/app.ts': 'export function add(a: number, b: number): number {\n  return b + a;\n}\n' });
  return g;
}

async function until(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// 50 MB is over the push limits (limits.maxBlobBytes, 32 MiB): refused from the object header.
// 5 MB is under them but over contract.maxSourceBytes (1 MiB): refused from its size by the
// contract rule. Neither is ever read into a parser.
const BIG_CASES = [
  {
    mb: 50,
    reason: (head: string) => new RegExp(`\\[limits\\] commit ${head.slice(0, 12)} adds src/big\\.ts, a blob of 50 MiB, over limits\\.maxBlobBytes \\(32 MiB\\)`),
    next: /next step: take the large files out of your new commits[\s\S]*\$ git restore [^\n]*src\/big\.ts/,
  },
  {
    mb: 5,
    reason: (head: string) => new RegExp(`\\[contract\\] commit ${head.slice(0, 12)}: src/big\\.ts is \\d{7} bytes, over contract\\.maxSourceBytes \\(${DEFAULT_MAX_SOURCE_BYTES} bytes\\)`),
    next: /next step: shrink or split src\/big\.ts below 1048576 bytes/,
  },
];

for (const bc of BIG_CASES) t.test(`a ${bc.mb} MB .ts under src/ is refused from its size while a good push and /healthz are served`, async (t) => {
  let started!: () => void;
  const bigJudged = new Promise<void>((r) => (started = r));
  const { gate, agent, agent2, w, bare } = await setup(t, { beforeJudge: async () => started() });
  const line = 'export const value = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]; // padding padding padding\n';
  const big = line.repeat(Math.floor((bc.mb * 1024 * 1024) / line.length));
  w.checkout('agent/big', true);
  const bigHead = w.commit('one huge file', { 'src/big.ts': big });
  const good = goodClone(t, w, 'agent/good');
  const killedBefore = parsePool.killed;

  const bigPush = gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/big']);
  // The good push and the health checks start once the big push is being judged.
  const goodPush = bigJudged.then(() => gitAsync(good.dir, ['push', gate.remote('app', 'agent-2', agent2), 'agent/good']));
  const healthSeen = pollHealth(gate, Promise.all([bigPush, goodPush]));
  const [b, g, hs] = await Promise.all([bigPush, goodPush, healthSeen]);

  t.not(b.code, 0, `the ${bc.mb} MB push is refused`);
  t.match(b.stderr, bc.reason(bigHead));
  t.match(b.stderr, bc.next);
  t.equal(await refIn(bare, 'refs/heads/agent/big'), null, 'the big branch was not created');
  t.equal(g.code, 0, `the good push is accepted meanwhile${g.code ? `: ${g.stderr}` : ''}`);
  t.ok(await refIn(bare, 'refs/heads/agent/good'), 'the good branch moved');
  t.ok(hs.length > 0 && hs.every((s) => s === 200), `/healthz answered 200 throughout (${hs.length} checks)`);
  t.equal(parsePool.killed, killedBefore, 'no parse had to be stopped: the file was never parsed');

  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(rows.length, 1);
  t.equal(rows[0]!.verdict, 'reject', 'the audit says refused');
  t.equal(rows[0]!.moved, 0);
  t.equal(gate.srv.audit.query({ kind: 'ref', actor: 'agent-2' })[0]?.verdict, 'accept');
});

t.test('a slow file under the limit: the time limit stops the parse worker and the judge; others are served', async (t) => {
  let started!: () => void;
  const slowJudged = new Promise<void>((r) => (started = r));
  const { gate, agent, agent2, w, bare } = await setup(t, { hookTimeoutMs: 1500, beforeJudge: async () => started() });
  // About 10,000 exported functions just under 1 MiB: several seconds of typescript-estree here.
  const fn = (i: number) => `export function f${i}(a: string, b: number = ${i}): Promise<Map<string, number[]>> { return null as any }\n`;
  let slow = '';
  for (let i = 0; slow.length + fn(i).length < DEFAULT_MAX_SOURCE_BYTES - 64; i++) slow += fn(i);
  w.checkout('agent/slow', true);
  w.commit('slow to parse', { 'src/slow.ts': slow });
  // The other push changes a file that is not parsed, so its time is the gate's own and not a worker start.
  const good = TestRepo.init(t);
  good.git('pull', '-q', w.dir, 'main');
  good.checkout('agent/notes', true).commit('notes', { 'src/NOTES.md': 'notes\n' });
  const killedBefore = parsePool.killed;

  const slowPush = gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/slow']);
  const goodPush = slowJudged.then(() => gitAsync(good.dir, ['push', gate.remote('app', 'agent-2', agent2), 'agent/notes']));
  const healthSeen = pollHealth(gate, Promise.all([slowPush, goodPush]));
  const [s, g, hs] = await Promise.all([slowPush, goodPush, healthSeen]);

  t.not(s.code, 0, 'the slow push is refused');
  t.match(s.stderr, /gate error: the policy did not finish within 1500 ms: still parsing src\/slow\.ts \(ref refs\/heads\/agent\/slow, running the rules for [\d.]+ s; still running: .*contract \([\d.]+ s.*; finished: .*\); the parse was stopped/, 'naming the phase, the rules still running and those finished');
  t.match(s.stderr, /next step: split or simplify src\/slow\.ts/);
  t.equal(await refIn(bare, 'refs/heads/agent/slow'), null);
  t.equal(g.code, 0, `the other push is accepted meanwhile${g.code ? `: ${g.stderr}` : ''}`);
  t.ok(hs.length > 0 && hs.every((x) => x === 200), `/healthz answered 200 throughout (${hs.length} checks)`);
  t.ok(parsePool.killed > killedBefore, 'the worker parsing src/slow.ts was terminated');
  await until('the cancelled judge to stop', () => gate.srv.hooks.judging === 0);
  t.equal(gate.srv.hooks.judging, 0, 'no judgement keeps running in the background');
  await until('the parse queue to empty', () => parsePool.pending === 0);
  t.equal(parsePool.pending, 0, 'no parse of src/slow.ts is left running or queued');

  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.equal(rows[0]!.verdict, 'reject', 'the audit says refused');
  t.equal(rows[0]!.decision, 'gate-error');
  t.equal(gate.srv.audit.query({ kind: 'ref', actor: 'agent-2' })[0]?.verdict, 'accept');
});

t.test('while one worker parses a slow file, a push that needs a parse of its own is judged on another', async (t) => {
  let started!: () => void;
  const slowJudged = new Promise<void>((r) => (started = r));
  const { gate, agent, agent2, w, bare } = await setup(t, { beforeJudge: async () => started() });
  const fn = (i: number) => `export function g${i}(a: string): number[] { return [] }\n`;
  let slow = '';
  for (let i = 0; slow.length + fn(i).length < 600_000; i++) slow += fn(i);
  w.checkout('agent/slow', true);
  w.commit('slow to parse', { 'src/slow.ts': slow });
  const good = goodClone(t, w, 'agent/good');

  const slowPush = gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/slow']);
  const goodPush = slowJudged.then(() => gitAsync(good.dir, ['push', gate.remote('app', 'agent-2', agent2), 'agent/good']));
  const [s, g] = await Promise.all([slowPush, goodPush]);
  t.not(s.code, 0, 'the slow file adds exports: refused as a contract change');
  t.match(s.stderr, /\[contract\] public API of src\/ changed/);
  t.equal(g.code, 0, `the body-only change is accepted${g.code ? `: ${g.stderr}` : ''}`);
  t.ok(await refIn(bare, 'refs/heads/agent/good'));
});
