// Issue 49's messages, each as a newcomer meets it, checked on its text and form: `check --head`
// names the ref it judged; the contract refusal says which commit is the trusted branch's tip;
// GitLab's next step is one runnable line naming the folder; a token for a plain http:// upstream
// is refused unless the flag says so; a mistyped subcommand under `audit` gets "did you mean" and
// the subcommand's --help; a confirm row keeps where the ref was; the README's sample refusal
// carries the patchgate-json line; `contract --format seed` on a project without Python says so;
// `serve` says it is starting before its seconds of warm-up.

import t from 'tap';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliRun, serve } from '../helpers/serve.js';
import { TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync, seededGate } from '../helpers/gate.js';
import { parseUpstream } from '../../src/upstream/settings.js';
import { rowCode } from '../../src/policy/decision-table.js';
import { usageErrorLines } from '../../src/commands/usage-error.js';
import { repoNameFor } from '../../src/commands/init.js';
import { TAMPER_CHECKS } from '../../src/policy/tamper/checks.js';

const cli = (args: string[], cwd?: string) => cliRun(args, { cwd, env: { ...process.env, PATCHGATE_DATA: '' } });

t.test('check --head agent/api: the ref is named, and the contract refusal names main\'s tip as such', async (t) => {
  const r = TestRepo.init(t);
  const base = r.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'def test_a():\n    pass\n' });
  r.checkout('agent/api', true);
  const head = r.commit('api', { 'src/app.py': 'def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n' });
  const out = await cli(['check', '--repo', r.dir, '--base', 'main', '--head', 'agent/api']);
  t.equal(out.code, 1, out.stderr);
  const lines = out.stdout.split('\n');
  t.match(lines[0], new RegExp(`^patchgate: REJECT refs/heads/agent/api ${base.slice(0, 12)}\\.\\.${head.slice(0, 12)}( |$)`));
  t.match(lines[1], new RegExp(`^  \\[contract\\] public API of src/ changed at ${head.slice(0, 12)}: digest [0-9a-f]{64} is neither the merge-base digest [0-9a-f]{64} nor listed in ci/contract\\.allow on the trusted branch main \\(its tip ${base.slice(0, 12)}\\)$`));
  // A revision that is not a ref keeps its own name.
  const bySha = await cli(['check', '--repo', r.dir, '--base', 'main', '--head', head]);
  t.match(bySha.stdout.split("\n")[0], new RegExp(`^patchgate: REJECT ${head} ${base.slice(0, 12)}\\.\\.${head.slice(0, 12)}( |$)`));
});

t.test('hook install --host gitlab: the next step is one runnable line per folder, with its path below repoRoots', async (t) => {
  const root = tempDir('pg-gitlab-');
  const repo = join(root, 'repositories', 'group', 'app.git');
  mkdirSync(repo, { recursive: true });
  const config = join(root, 'daemon.json');
  writeFileSync(config, JSON.stringify({ data: join(root, 'data'), humans: ['alice'], agents: ['agent-*'], repos: ['group/*'], repoRoots: [join(root, 'repositories')] }));
  const out = await cli(['hook', 'install', '--host', 'gitlab', '--config', config, repo]);
  t.equal(out.code, 0, out.stderr);
  const step = out.stdout.split('\n').find((l) => l.includes('gitaly hooks set'));
  t.equal(step, `    cd ${repo} && tar -cf custom_hooks.tar custom_hooks && gitaly hooks set --storage STORAGE --repository group/app.git --config /var/opt/gitlab/gitaly/config.toml < custom_hooks.tar`);
  t.notMatch(out.stdout, /REPO_DIR|\| then/);
  t.match(out.stdout, /STORAGE is its storage name in gitaly's config\.toml, "default" on a single node/);
});

t.test('an upstream on plain http:// with a token is refused unless --allow-http-credential', async (t) => {
  const data = tempDir('pg-http-');
  const out = await cli(['repo', 'create', 'app', '--data', data, '--upstream', 'http://bot:s3cret-token@git.example.test/org/app.git']);
  t.equal(out.code, 2);
  t.equal(out.stderr.split('\n')[0], 'patchgate: --upstream: http://git.example.test would carry the token in clear text; give the https:// URL, or pass --allow-http-credential if that network is private and you accept the risk');
  t.notMatch(out.stdout + out.stderr, /s3cret-token/, 'the token is never printed');
  t.throws(() => parseUpstream('http://bot:tok@git.example.test/org/app.git'), /clear text/);
  t.same(parseUpstream('http://bot:tok@git.example.test/org/app.git', undefined, { allowHttpCredential: true }), { url: 'http://git.example.test/org/app.git', user: 'bot', secret: 'tok' });
  t.equal(parseUpstream('http://bot:tok@127.0.0.1:8080/app.git').secret, 'tok', 'this machine (loopback) needs no flag');
  t.equal(parseUpstream('https://bot:tok@git.example.test/org/app.git').secret, 'tok');
  t.equal(parseUpstream('http://git.example.test/org/app.git').secret, null, 'no token: nothing to protect');
});

t.test('a mistyped subcommand: did you mean, and the subcommand\'s --help', async (t) => {
  const out = await cli(['audit', 'shwo', '3']);
  t.equal(out.code, 2);
  t.equal(out.stderr, 'patchgate: Did you mean audit show? (patchgate audit has no command "shwo")\nrun `patchgate audit --help` for usage\n');
  const missing = await cli(['repo', 'create']);
  t.equal(missing.stderr.split('\n')[1], 'run `patchgate repo create --help` for usage');
  t.same(usageErrorLines('Unknown argument: zzzzzzzz', ['audit'], ['show', 'verify'], ['audit', 'zzzzzzzz']), ['patchgate: Unknown argument: zzzzzzzz', 'run `patchgate audit --help` for usage'], 'nothing close: the message as yargs gave it');
});

t.test('a confirm row keeps the old id of a fast-forward', async (t) => {
  const { gate, human, w } = await seededGate(t, { 'src/app.py': 'def add(a, b):\n    return a + b\n' });
  const before = w.head();
  const after = w.commit('more', { 'README.md': 'hi\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(r.code, 0, r.stderr);
  const audit = await cli(['audit', '--data', gate.data, '--kind', 'confirm']);
  t.equal(audit.code, 0, audit.stderr);
  const rows = audit.stdout.trim().split('\n').filter((l) => l.startsWith('#'));
  t.equal(rows.length, 2);
  t.match(rows[0], `refs/heads/main ${before.slice(0, 12)}..${after.slice(0, 12)}`, 'the fast-forward names where main was');
  t.match(rows.at(-1)!, `refs/heads/main (new)..${before.slice(0, 12)}`, 'the first push made main');
});

t.test('the README\'s sample refusal carries the patchgate-json line', async (t) => {
  const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8').split('\n');
  const at = readme.findIndex((l) => l.startsWith('# remote: patchgate: push ') && l.includes('audited'));
  t.ok(at > 0);
  t.match(readme[at - 1], /^# remote: patchgate-json \{"v":1,"ref":"refs\/heads\/agent\/fix",/);
  t.match(readme[at - 1], `"code":"${rowCode('test-tree-write')}"`);
});

t.test('contract --format seed on a project without Python warns that the digest pins nothing', async (t) => {
  const r = TestRepo.init(t);
  r.commit('ts', { 'src/index.ts': 'export function add(a: number, b: number): number {\n  return a + b;\n}\n' });
  const out = await cli(['contract', '--repo', r.dir, '--format', 'seed']);
  t.equal(out.code, 0, out.stderr);
  t.match(out.stdout.trim(), /^[0-9a-f]{64}$/);
  t.equal(out.stderr, 'patchgate: contract: warning: the seed format reads .py files only and found none under src/; this digest pins no API (use the v1 format for TypeScript)\n');
});

t.test('serve says it is starting at once, before "serving"', async (t) => {
  const data = tempDir('pg-serve-');
  const s = await serve(data);
  t.teardown(async () => {
    s.child.kill('SIGTERM');
    await s.exited;
  });
  const text = s.out();
  const starting = text.indexOf(`patchgate: starting in ${data}: opening the audit log, checking the repositories and starting the hook daemon ("serving" follows)\n`);
  t.ok(starting >= 0, text);
  t.ok(starting < text.indexOf('patchgate: serving '), 'the first line comes before "serving"');
});

t.test('init: next steps name this project, keep the gate data out of the work tree, and every tamper check is written out', async (t) => {
  const r = TestRepo.init(t);
  const out = await cli(['init', '--repo', r.dir]);
  t.equal(out.code, 0, out.stderr);
  const name = repoNameFor(r.dir);
  t.match(name, /^[A-Za-z0-9][A-Za-z0-9._-]*$/);
  const steps = out.stdout.split('\n').filter((l) => /^ {2}\d\. /.test(l));
  t.equal(steps.length, 3);
  t.equal(steps[0], '  1. patchgate serve --data "$HOME/patchgate-data" &   # the gate, its data outside this work tree (the first start writes admin-token there)');
  t.equal(steps[1], `  2. patchgate repo create ${name} --data "$HOME/patchgate-data" && patchgate token create alice --role human --data "$HOME/patchgate-data" | tail -1`);
  t.match(steps[2], `http://alice:TOKEN@127.0.0.1:7005/${name}.git HEAD:main`);
  const policy = JSON.parse(readFileSync(join(r.dir, 'ci/patchgate.json'), 'utf8')) as { tamperScan: { checks: Record<string, string> } };
  t.same(Object.keys(policy.tamperScan.checks).sort(), [...TAMPER_CHECKS].sort());
  t.ok(Object.values(policy.tamperScan.checks).every((m) => m === 'refuse'));
  t.equal((await cli(['policy', 'check', '--repo', r.dir])).code, 0, 'the written policy validates');
  t.equal(repoNameFor('/tmp/My Project!'), 'My-Project-');
});
