// Held-out repositories (issue 11): `repo create NAME-holdout --holdout-of NAME` keeps tests
// agents never see. Over real HTTP with the real git client: an agent token whose grant
// covers every repository can neither clone nor list (ls-remote) it, a person's token can,
// and `patchgate ci --holdout` (the real CLI, a child process) runs its tests straight from
// the repository, by URL or as a bare repository path: a patch that special-cases the visible
// input goes red, an honest fix stays green, and every way the source cannot be had (agent
// token, wrong token, unreachable, empty) is red with a one-line reason that holds no token.

import t, { type Test } from 'tap';
import { join } from 'node:path';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { runRepoCreate } from '../../src/commands/admin.js';
import { classifyHoldout, holdoutRedactor } from '../../src/ci/holdout.js';
import { HoldoutError } from '../../src/errors.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { bareDir, gitAsync, startGate, type Gate } from '../helpers/gate.js';
import { cliRun, type CliRun } from '../helpers/serve.js';
import { FIXED, pyAgent, pyProject, pythonWithPytest } from '../ci/pyproject.js';
import { NODE, T0, TODAY, agent as agentBranch, ci as ciInProcess, project, tapCmd, CALC } from '../ci/project.js';

t.test('an agent token cannot clone or list the held-out repository; a person can', async (t) => {
  const gate = await startGate(t);
  await gate.repo('app');
  await runRepoCreate({ data: gate.data, name: 'app-holdout', trusted: 'main', holdoutOf: 'app' });
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent', '*');
  const w = TestRepo.init(t);
  w.commit('held-out tests', { 'test_props.py': 'from calc import add\n\ndef test_big():\n    assert add(10, 20) == 30\n' });
  const pushed = await gitAsync(w.dir, ['push', gate.remote('app-holdout', 'alice', human), 'HEAD:refs/heads/main']);
  t.equal(pushed.code, 0, pushed.stderr);

  const dest = tempDir('pg-clone-');
  t.teardown(() => {});
  const agentClone = await gitAsync(dest, ['clone', gate.remote('app-holdout', 'agent-1', agent), 'a']);
  t.not(agentClone.code, 0, 'the agent cannot clone it');
  t.match(agentClone.stderr, /not found|404/i);
  t.notOk(existsSync(join(dest, 'a', 'test_props.py')));
  const agentList = await gitAsync(dest, ['ls-remote', gate.remote('app-holdout', 'agent-1', agent)]);
  t.not(agentList.code, 0, 'the agent cannot list its refs');
  t.notMatch(agentList.stdout, /refs\/heads/);
  t.notMatch(agentClone.stderr + agentList.stderr, new RegExp(agent), 'the token never appears in output');
  const okApp = await gitAsync(dest, ['ls-remote', gate.remote('app', 'agent-1', agent)]);
  t.equal(okApp.code, 0, 'the same token still reaches the ordinary repository');

  const humanClone = await gitAsync(dest, ['clone', gate.remote('app-holdout', 'alice', human), 'h']);
  t.equal(humanClone.code, 0, humanClone.stderr);
  t.ok(existsSync(join(dest, 'h', 'test_props.py')), 'a person clones the held-out tests');
});

t.test('--holdout-of names an existing repository', async (t) => {
  const gate = await startGate(t);
  await t.rejects(runRepoCreate({ data: gate.data, name: 'x-holdout', trusted: 'main', holdoutOf: 'nope' }), /no repository nope/);
});

// ---- patchgate ci --holdout from the held-out repository itself

type TT = Test;

const PY = pythonWithPytest();
if (!PY && process.env.CI) t.fail('pytest is missing: .ci/run installs python3-pytest');
const noPytest = PY ? false : 'pytest is not installed (python3 -m pytest); .ci/run installs it';

const HELD_OUT_PY = 'from calc import add\n\n\ndef test_other_inputs():\n    assert add(10, 20) == 30\n\n\ndef test_negative():\n    assert add(-4, 1) == -3\n';
/** Passes the visible tests (2 + 3, 0 + 0) by their exact inputs only. */
const SPECIAL = 'def add(a, b):\n    return {(2, 3): 5, (0, 0): 0}.get((a, b), 0)\n';

/** A gate with repository demo and its held-out twin, into which a person pushed `files`. */
async function holdoutGate(t: TT, files: Record<string, string> | null) {
  const gate = await startGate(t);
  await gate.repo('demo');
  await runRepoCreate({ data: gate.data, name: 'demo-holdout', trusted: 'main', holdoutOf: 'demo' });
  const human = gate.token('ci', 'human');
  const agent = gate.token('agent-1', 'agent', '*');
  if (files) {
    const w = TestRepo.init(t);
    w.commit('held-out tests', files);
    const pushed = await gitAsync(w.dir, ['push', gate.remote('demo-holdout', 'ci', human), 'HEAD:refs/heads/main']);
    if (pushed.code !== 0) throw new Error(`a person could not push the held-out tests: ${pushed.stderr}`);
  }
  return { gate, human, agent, url: (user: string, secret: string) => gate.remote('demo-holdout', user, secret), bare: bareDir(gate, 'demo-holdout') };
}

interface CiOut { run: CliRun; report: { verdict: string; row: string; fired: string[]; reasons: Array<{ kind: string; row: string; message: string; test?: string }> }; raw: string }

/** `patchgate ci` as a child process (the gate serves in this process: never a sync spawn). */
async function ciCli(repo: string, cmd: string[], holdout: string | null, head = 'agent', env?: NodeJS.ProcessEnv): Promise<CiOut> {
  const d = tempDir('pg-hold-ci-');
  const rep = join(d, 'r.json');
  const run = await cliRun(['ci', '--repo', repo, '--base', 'main', '--head', head, '--seed', '7', '--today', TODAY, '--report', rep, ...(holdout !== null ? ['--holdout', holdout] : []), '--', ...cmd], env ? { env: { ...process.env, ...env } } : {});
  const raw = existsSync(rep) ? readFileSync(rep, 'utf8') : '{}';
  return { run, report: JSON.parse(raw), raw };
}

function noSecret(t: TT, out: CiOut, secrets: string[]): void {
  for (const s of secrets) {
    t.notOk(out.run.stdout.includes(s), 'the token is not on stdout');
    t.notOk(out.run.stderr.includes(s), 'the token is not on stderr');
    t.notOk(out.raw.includes(s), 'the token is not in the JSON report');
  }
}

t.test('ci --holdout URL and --holdout BARE-REPO: a green visible run turns red on the held-out tests; ids only, no source, no token', { skip: noPytest }, async (t) => {
  const { human, url, bare } = await holdoutGate(t, { 'test_props.py': HELD_OUT_PY });
  const r = pyAgent(pyProject(t), { 'src/calc.py': SPECIAL });
  const cmd = [PY!, '-m', 'pytest', 'tests'];

  const visible = await ciCli(r.dir, cmd, null);
  t.equal(visible.run.code, 0, visible.run.code === 0 ? 'the visible suite alone is green' : visible.run.stdout);
  t.same(visible.report.fired, ['accept']);

  const ids = ['.patchgate-holdout/test_props.py::test_negative', '.patchgate-holdout/test_props.py::test_other_inputs'];
  for (const [how, source] of [['URL with a CI token', url('ci', human)], ['bare repository path', bare]] as const) {
    const out = await ciCli(r.dir, cmd, source);
    t.equal(out.run.code, 1, out.run.code === 1 ? `${how}: red` : `${out.run.stdout}${out.run.stderr}`);
    t.equal(out.report.row, 'holdout-red', `${how}: the deciding row is holdout-red`);
    t.same(out.report.reasons.filter((x) => x.kind === 'holdout-failed').map((x) => x.test).sort(), ids, `${how}: both held-out tests failed, named by id`);
    t.match(out.run.stdout, /held-out tests from the repository .* at [0-9a-f]{12} \(1 file\(s\)\)/, `${how}: says where the tests came from`);
    t.match(out.run.stdout, /held-out tests: 0 of 2 passed/);
    for (const text of [out.run.stdout, out.run.stderr, out.raw]) {
      t.notMatch(text, /add\(10, 20\)|add\(-4, 1\)|== 30/, `${how}: the held-out source is never shown`);
    }
    noSecret(t, out, [human, encodeURIComponent(human)]);
  }

  // The honest fix passes the held-out tests too: green through the URL.
  pyAgent(r, { 'src/calc.py': FIXED }, 'fix');
  const ok = await ciCli(r.dir, cmd, url('ci', human), 'fix');
  t.equal(ok.run.code, 0, ok.run.code === 0 ? 'the honest fix is green with the held-out tests' : ok.run.stdout);
  t.match(ok.run.stdout, /held-out tests: 2 of 2 passed/);
  noSecret(t, ok, [human]);
});

/** A node:test project whose agent branch is an honest fix: the visible run is green, so only the held-out source decides. */
function nodeProject(t: Parameters<typeof TestRepo.init>[0]): TestRepo {
  const r = TestRepo.init(t).at(T0);
  r.commit('project', {
    'src/calc.mjs': 'export function add(a, b) {\n  return a - b;\n}\n',
    'tests/calc.test.mjs': "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.mjs';\n\ntest('adds', () => {\n  assert.equal(add(2, 3), 5);\n});\n",
  });
  r.checkout('agent', true).commit('fix', { 'src/calc.mjs': 'export function add(a, b) {\n  return a + b;\n}\n' });
  return r;
}
const NODE_CMD = [NODE, '--test', 'tests/'];
const HELD_OUT_NODE = { 'props.test.mjs': "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/calc.mjs';\n\ntest('adds other inputs', () => {\n  assert.equal(add(10, 20), 30);\n});\n" };

function unavailable(t: TT, out: CiOut, why: RegExp): void {
  t.equal(out.run.code, 1, out.run.code === 1 ? 'red, not green and not a crash' : `${out.run.stdout}${out.run.stderr}`);
  t.equal(out.report.row, 'holdout-red');
  const r = out.report.reasons.filter((x) => x.kind === 'holdout-unavailable');
  t.equal(r.length, 1, 'one holdout-unavailable reason');
  t.match(r[0]?.message ?? '', why);
  t.notMatch(r[0]?.message ?? '', /\n/, 'the reason is one line');
  t.match(out.run.stdout, /the held-out tests cannot be had/);
}

t.test('node:test: the held-out repository by URL passes an honest fix; its test ids are reported', async (t) => {
  const { human, url } = await holdoutGate(t, HELD_OUT_NODE);
  const r = nodeProject(t);
  const out = await ciCli(r.dir, NODE_CMD, url('ci', human));
  t.equal(out.run.code, 0, out.run.code === 0 ? 'green' : `${out.run.stdout}${out.run.stderr}`);
  t.match(out.run.stdout, /held-out tests: 1 of 1 passed/);
  noSecret(t, out, [human]);  // The token off the command line (where ps shows it): a plain URL and PATCHGATE_HOLDOUT_TOKEN.
  const plain = url('x', 'x').replace(/\/\/[^@/]*@/, '//');
  const viaEnv = await ciCli(r.dir, NODE_CMD, plain, 'agent', { PATCHGATE_HOLDOUT_TOKEN: human });
  t.equal(viaEnv.run.code, 0, viaEnv.run.code === 0 ? 'green with the token from the environment' : `${viaEnv.run.stdout}${viaEnv.run.stderr}`);
  t.match(viaEnv.run.stdout, /held-out tests: 1 of 1 passed/);
  noSecret(t, viaEnv, [human]);
  const noToken = await ciCli(r.dir, NODE_CMD, plain, 'agent', { PATCHGATE_HOLDOUT_TOKEN: '' });
  t.equal(noToken.run.code, 1, 'a plain URL and no token: red');
});

t.test('every way the held-out repository cannot be had is red with a redacted one-line reason', async (t) => {
  const { gate, human, agent, url } = await holdoutGate(t, HELD_OUT_NODE);
  await runRepoCreate({ data: gate.data, name: 'empty-holdout', trusted: 'main', holdoutOf: 'demo' });
  const r = nodeProject(t);

  await t.test('an agent token: the gate answers as if there were no such repository', async (t) => {
    const out = await ciCli(r.dir, NODE_CMD, url('agent-1', agent));
    unavailable(t, out, /held-out repository http:\/\/\*\*\*@127\.0\.0\.1:\d+\/demo-holdout\.git could not be fetched: .*not found.*agent tokens cannot read/);
    noSecret(t, out, [agent, encodeURIComponent(agent)]);
  });

  await t.test('a wrong token', async (t) => {
    const wrong = 'pg_wrong_' + human.slice(-20).split('').reverse().join('');
    const out = await ciCli(r.dir, NODE_CMD, url('ci', wrong));
    unavailable(t, out, /could not be fetched: .*(Authentication failed|401)/i);
    noSecret(t, out, [wrong]);
  });

  await t.test('an unreachable URL (a port nothing listens on)', async (t) => {
    const port = await new Promise<number>((res) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => res(p));
      });
    });
    const out = await ciCli(r.dir, NODE_CMD, `http://ci:${human}@127.0.0.1:${port}/demo-holdout.git`);
    unavailable(t, out, /could not be fetched: .*(connect|Couldn't|refused)/i);
    t.notMatch(out.report.reasons.find((x) => x.kind === 'holdout-unavailable')?.message ?? '', /agent tokens/, 'no credential hint for a refused connection');
    noSecret(t, out, [human]);
  });

  await t.test('an empty held-out repository, by URL and by path', async (t) => {
    const byUrl = await ciCli(r.dir, NODE_CMD, gate.remote('empty-holdout', 'ci', human));
    unavailable(t, byUrl, /empty-holdout\.git is empty \(no default branch\): push the held-out tests to it first/);
    noSecret(t, byUrl, [human]);
    const byPath = await ciCli(r.dir, NODE_CMD, bareDir(gate, 'empty-holdout'));
    unavailable(t, byPath, /empty-holdout\.git has no commit on its default branch \(HEAD\): it is empty/);
  });

  await t.test('a path that does not exist, and an empty --holdout', async (t) => {
    const missing = await ciCli(r.dir, NODE_CMD, join(tempDir('pg-hold-'), 'nope'));
    unavailable(t, missing, /no such folder or repository/);
    const empty = await ciCli(r.dir, NODE_CMD, '');
    unavailable(t, empty, /--holdout is empty/);
  });
});

t.test('--holdout tells a URL, a bare repository and a plain folder apart', async (t) => {
  const gate: Gate = await startGate(t);
  await gate.repo('x');
  const folder = tempDir('pg-hold-');
  mkdirSync(join(folder, 'objects'));
  writeFileSync(join(folder, 'HEAD'), 'ref: refs/heads/main\n'); // looks a little like a repository, is not one
  const work = TestRepo.init(t); // a work tree: a folder (its .git is left out of the copy), not a bare repository
  t.match(await classifyHoldout('http://u:s3cret-token@h:1/x.git'), { kind: 'url', url: 'http://h:1/x.git', user: 'u', secret: 's3cret-token', shown: 'http://***@h:1/x.git' });
  t.match(await classifyHoldout('git@example.test:team/x-holdout.git'), { kind: 'url' });
  t.match(await classifyHoldout(bareDir(gate, 'x')), { kind: 'bare' });
  t.match(await classifyHoldout(folder), { kind: 'folder' });
  t.match(await classifyHoldout(work.dir), { kind: 'folder' });
  await t.rejects(classifyHoldout(join(folder, 'HEAD')), HoldoutError);
  const redact = holdoutRedactor('https://ci:p%40ss-w0rd@h/x.git');
  t.equal(redact("fatal: Authentication failed for 'https://ci:p%40ss-w0rd@h/x.git/' (p@ss-w0rd)"), "fatal: Authentication failed for 'https://***@h/x.git/' (***)");
});

t.test('--holdout with ci.integrity "off" is red: held-out tests run only in the sealed run', async (t) => {
  const r = agentBranch(project(t), { 'src/calc.mjs': CALC('b + a') });
  const hold = tempDir('pg-hold-');
  writeFileSync(join(hold, 'props.test.mjs'), HELD_OUT_NODE['props.test.mjs']);
  const d = tempDir('pg-hold-ci-');
  const res = await ciInProcess({ repo: r.dir, seed: '4', report: join(d, 'r.json'), cmd: tapCmd(), holdout: hold });
  t.equal(res.code, 1, res.code === 1 ? 'red' : res.text);
  const rep = JSON.parse(readFileSync(join(d, 'r.json'), 'utf8')) as CiOut['report'];
  t.equal(rep.row, 'holdout-red');
  t.match(rep.reasons.find((x) => x.kind === 'holdout-unavailable')?.message ?? '', /--holdout needs ci\.integrity "strict"/);
});
