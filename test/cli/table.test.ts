// The CLI table: each command with good, missing and bad arguments, checked on the exit code
// and the first line it prints (stdout, else stderr), as a newcomer would meet it. Also
// `patchgate init` on an empty project, on one with tests/fixtures, and on an existing one.

import t from 'tap';

import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliRun } from '../helpers/serve.js';
import { TestRepo, tempDir } from '../helpers/repo.js';

interface Out { code: number; first: string; stdout: string; stderr: string }

async function cli(args: string[], env: NodeJS.ProcessEnv = {}, cwd?: string): Promise<Out> {
  const { code, stdout, stderr } = await cliRun(args, { cwd, env: { ...process.env, PATCHGATE_DATA: '', ...env } });
  return { code, stdout, stderr, first: (stdout.trim() || stderr.trim()).split('\n')[0] ?? '' };
}

t.test('the table: good, missing and bad arguments', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'src/app.py': 'def add(a, b):\n    return a + b\n' });
  const data = tempDir('pg-table-');
  const empty = tempDir('pg-empty-');
  t.teardown(() => {
    rmSync(data, { recursive: true, force: true });
    rmSync(empty, { recursive: true, force: true });
  });
  // A data folder with gate data in it (what repo create makes).
  t.equal((await cli(['repo', 'create', 'app', '--data', data])).code, 0);
  const version = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')).version as string;
  const noData = /^patchgate: no gate data in .* \(no patchgate\.db\): pass --data/;
  const rows: Array<[string[], number, RegExp]> = [
    [['--version'], 0, new RegExp(`^${version.replace(/\./g, '\\.')}$`)],
    [[], 2, /^patchgate: name a command/],
    [['audti'], 2, /^patchgate: Did you mean audit\?/],
    [['tokn', 'list'], 2, /^patchgate: Did you mean token\?/],
    [['check', '--repo', r.dir, '--base', 'main', '--head', 'main'], 0, /^patchgate: ACCEPT refs\/heads\/main /],
    [['check', '--repo', r.dir, '--base', 'main'], 2, /^patchgate: Missing required argument: head/],
    [['check', '--repo', r.dir, '--base', 'nosuchrev', '--head', 'main'], 2, /^patchgate: gate error: unknown revision "nosuchrev" \(--base\)/],
    [['check', '--repo', r.dir, '--base', 'main', '--head', 'nosuchrev'], 2, /^patchgate: gate error: unknown revision "nosuchrev" \(--head\)/],
    [['contract', '--repo', r.dir], 0, /^[0-9a-f]{64}$/],
    [['contract', '--repo', r.dir, '--format', 'v9'], 2, /^patchgate: Invalid values:/],
    [['audit', '--data', data], 0, /^#\d+ /],
    [['audit', '--data', join(data, 'typo')], 2, noData],
    [['audit', '--data', data, '--limit', 'abc'], 2, /^patchgate: --limit: must be a whole number from 1 to 1000000 \(got "abc"\)$/],
    [['audit', '--data', data, '--since', 'yesterday'], 2, /^patchgate: --since: not an ISO date/],
    [['audit', 'show', 'nosuch-push', '--data', data], 2, /^patchgate: /],
    [['audit', 'show', '--data', data], 2, /^patchgate: Not enough non-option arguments/],
    [['audit', 'verify', '--data', data], 0, /^ok: \d+ row\(s\), hash chain intact$/],
    [['audit', 'verify', '--data', empty], 2, noData],
    [['audit', 'verify'], 2, noData],
    [['token', 'list', '--data', empty], 2, noData],
    [['token', 'revoke', 'nobody', '--data', empty], 2, noData],
    [['token', 'create', 'bot', '--role', 'agent', '--data', data, '--expires', '0'], 2, /^patchgate: --expires: must be a number of days above 0/],
    [['token', 'create', 'bot', '--data', data], 2, /^patchgate: Missing required argument: role/],
    [['token', 'create', 'bot', '--role', 'robot', '--data', data], 2, /^patchgate: Invalid values:/],
    [['token', 'create', 'bot', '--role', 'agent', '--data', data, '--expires', '7'], 0, /^token bot \(agent, repos \*, expires in 7 day\(s\)\) created/],
    [['token', 'list', '--data', data], 0, /^bot\tagent/],
    [['repo', 'create', '--data', data], 2, /^patchgate: Not enough non-option arguments/],
    [['repo', 'create', '../x', '--data', data], 2, /^patchgate: /],
    [['ledger', 'check', '--repo', r.dir], 0, /./],
    [['fixtures', 'verify', '--repo', r.dir], 0, /^no ci\/fixtures\.lock: nothing to verify$/],
    [['fixtures'], 2, /^patchgate: name a fixtures command/],
    [['serve', '--port', 'abc', '--data', empty], 2, /^patchgate: CONFIG: --port: not a port number/],
    [['init', '--repo', join(empty, 'nowhere')], 2, /^patchgate: init: .* is not a folder/],
  ];
  for (const [args, code, first] of rows) {
    const out = await cli(args);
    t.equal(out.code, code, `patchgate ${args.join(' ')}: exit ${code}\n${out.stdout}${out.stderr}`);
    t.match(out.first, first, `patchgate ${args.join(' ')}: first line`);
  }
  t.notOk(existsSync(join(empty, 'patchgate.db')), 'no command made a database in a folder without gate data');
  t.notOk(existsSync(join(data, 'typo')), 'nor under a mistyped --data');
  // PATCHGATE_DATA is every command's --data default.
  t.equal((await cli(['audit', 'verify'], { PATCHGATE_DATA: data })).code, 0);
  t.match((await cli(['serve', '--help'])).stdout, /PATCHGATE_PORT/);
  t.match((await cli(['ci', '--help'])).stdout, /-- CMD/);
  const audit = await cli(['audit', '--data', data]);
  t.match(audit.stdout.trim().split('\n').at(-1), /confirm rows are hidden, --kind confirm shows them/, 'audit says what it hides');
  t.equal((await cli(['audit', '--data', data, '--json'])).stdout.trim().split('\n').filter((l) => !l.startsWith('{')).length, 0, '--json stays JSON only');
  const verify = await cli(['audit', 'verify', '--data', data]);
  t.notMatch(verify.stdout, /undefined/);
});

t.test('serve takes its settings from a config file, and a flag beats the variable', async (t) => {
  const dir = tempDir('pg-cfg-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'gate.json'), JSON.stringify({ port: 'abc' }));
  const fromFile = await cli(['serve', '--config', join(dir, 'gate.json'), '--data', dir]);
  t.equal(fromFile.code, 2);
  t.match(fromFile.first, /^patchgate: CONFIG: config .*gate\.json: port: not a port number/);
  writeFileSync(join(dir, 'typo.json'), JSON.stringify({ prot: 1 }));
  t.match((await cli(['serve', '--config', join(dir, 'typo.json')])).first, /unknown key "prot"/);
  const envBad = await cli(['serve', '--data', dir], { PATCHGATE_PORT: '70000' });
  t.match(envBad.first, /^patchgate: CONFIG: PATCHGATE_PORT: not a port number/);
  t.equal((await cli(['serve', '--data', dir, '--hook-timeout', '-1'], { PATCHGATE_PORT: '70000' })).code, 2);
  t.match((await cli(['serve', '--data', dir, '--port', 'x'], { PATCHGATE_PORT: '0' })).first, /--port/, 'the flag wins over the variable');
});

t.test('init: an empty project, one with fixtures, and one that has the files already', async (t) => {
  const r = TestRepo.init(t);
  const out = await cli(['init', '--repo', r.dir]);
  t.equal(out.code, 0, out.stderr);
  t.match(out.first, /^created ci\/patchgate\.json/);
  const policy = JSON.parse(readFileSync(join(r.dir, 'ci/patchgate.json'), 'utf8'));
  t.equal(policy.trustedBranch, 'main');
  t.same(policy.writable, ['src/**']);
  t.equal(readFileSync(join(r.dir, 'ci/contract.allow'), 'utf8'), '');
  t.same(JSON.parse(readFileSync(join(r.dir, 'ci/fixtures.lock'), 'utf8')), {});
  t.equal(readFileSync(join(r.dir, 'ci/flake-ledger.jsonl'), 'utf8'), '');
  t.match(out.stdout, /git add ci\/patchgate\.json ci\/contract\.allow ci\/fixtures\.lock ci\/flake-ledger\.jsonl && git commit/);
  t.match(out.stdout, /next steps:\n  1\. .*\n  2\. .*\n  3\. /);
  // What init wrote is a policy the gate accepts, and the project still checks.
  r.git('add', '.');
  r.git('commit', '-qm', 'patchgate init');
  t.equal((await cli(['check', '--repo', r.dir, '--base', 'main', '--head', 'main'])).code, 0);
  t.equal((await cli(['ledger', 'check', '--repo', r.dir])).code, 0);
  t.equal((await cli(['fixtures', 'verify', '--repo', r.dir])).code, 0);
  // Again: refused, nothing overwritten.
  writeFileSync(join(r.dir, 'ci/contract.allow'), 'keep me\n');
  const again = await cli(['init', '--repo', r.dir]);
  t.equal(again.code, 2);
  t.match(again.first, /^patchgate: init: refusing to overwrite ci\/patchgate\.json, ci\/contract\.allow/);
  t.equal(readFileSync(join(r.dir, 'ci/contract.allow'), 'utf8'), 'keep me\n');

  const f = TestRepo.init(t);
  mkdirSync(join(f.dir, 'tests/fixtures'), { recursive: true });
  writeFileSync(join(f.dir, 'tests/fixtures/a.json'), '{"a": 1}\n');
  const withFixtures = await cli(['init', '--repo', f.dir]);
  t.equal(withFixtures.code, 0);
  t.same(Object.keys(JSON.parse(readFileSync(join(f.dir, 'ci/fixtures.lock'), 'utf8'))), ['tests/fixtures/a.json']);
  t.equal((await cli(['fixtures', 'verify', '--repo', f.dir])).code, 0, 'the lock init wrote verifies');
  // One existing file refuses the whole run.
  const p = TestRepo.init(t);
  p.write('ci/flake-ledger.jsonl', '');
  const partial = await cli(['init', '--repo', p.dir]);
  t.equal(partial.code, 2);
  t.notOk(existsSync(join(p.dir, 'ci/patchgate.json')), 'nothing written when one file exists');
  const notGit = tempDir('pg-notgit-');
  t.teardown(() => rmSync(notGit, { recursive: true, force: true }));
  t.match((await cli(['init', '--repo', notGit])).first, /not a git work tree/);
});
