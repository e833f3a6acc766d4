// `patchgate policy check` (issue 48), run as outside scripts run it: `node dist/cli.js`. A
// good policy prints ok and exits 0; a bad one prints FILE:LINE: problem and exits 1, from the
// work tree (uncommitted edits included) or from --rev; an unknown --rev exits 2.

import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TestRepo } from '../helpers/repo.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('node', [CLI, ...args], (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}

const GOOD = '{\n  "writable": ["src/**"],\n  "fixtures": { "lock": "ci/fixtures.lock" }\n}\n';

t.test('a good policy: ok, exit 0; a bad one: file, line and problem, exit 1', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'ci/patchgate.json': GOOD, 'ci/contract.allow': `# approved\n${'a'.repeat(64)}\n`, 'ci/fixtures.lock': '{}\n', 'src/a.py': 'x = 1\n' });
  const ok = await cli(['policy', 'check', '--repo', r.dir]);
  t.equal(ok.code, 0, ok.stderr);
  t.equal(ok.stdout, `ok: ci/patchgate.json, ci/contract.allow, ci/fixtures.lock valid in the work tree of ${r.dir}\n`);

  // An uncommitted typo in the work tree is what the default reads.
  r.write('ci/patchgate.json', '{\n  "writable": ["src/**"],\n  "fixtures": { "lock": "ci/fixtures.lock", "lokc": 1 }\n}\n');
  const bad = await cli(['policy', 'check', '--repo', r.dir]);
  t.equal(bad.code, 1);
  t.equal(bad.stdout.split('\n')[0], 'ci/patchgate.json:3: fixtures.lokc: unknown key');
  t.match(bad.stdout, /^1 problem\(s\) in the work tree of .*: a push of this file would be refused/m);
  const json = await cli(['policy', 'check', '--repo', r.dir, '--json']);
  t.equal(json.code, 1);
  t.match(JSON.parse(json.stdout), { ok: false, problems: [{ path: 'ci/patchgate.json', line: 3, message: 'fixtures.lokc: unknown key' }] });

  // --rev reads the committed files: HEAD is still good.
  const head = await cli(['policy', 'check', '--repo', r.dir, '--rev', 'HEAD']);
  t.equal(head.code, 0, head.stderr);
  t.match(head.stdout, /^ok: ci\/patchgate\.json, ci\/contract\.allow, ci\/fixtures\.lock valid in HEAD \([0-9a-f]{12}\)$/m);

  // Bad JSON, a bad allow line and a bad lock entry, committed: each with its line.
  r.commit('break', {
    'ci/patchgate.json': '{\n  "writable": ["src/**"],\n  "protected": ["tests/**"\n}\n',
    'ci/contract.allow': `# approved\n${'a'.repeat(64)}\nsha256:${'b'.repeat(64)}\n`,
    'ci/fixtures.lock': '{\n  "tests/a.json": "' + 'c'.repeat(64) + '",\n  "tests/b.json": "nothex"\n}\n',
  });
  const rev = await cli(['policy', 'check', '--repo', r.dir, '--rev', 'HEAD']);
  t.equal(rev.code, 1);
  const lines = rev.stdout.trim().split('\n');
  t.match(lines[0], /^ci\/patchgate\.json:4: not valid JSON: Expected ',' or ']' after array element/, 'the line JSON.parse stopped at (the missing ] is found at the })');
  t.equal(lines[1], `ci/contract.allow:3: not a sha256 digest: "sha256:${'b'.repeat(64)}" (one digest per line; # starts a comment)`);
  t.equal(lines[2], 'ci/fixtures.lock:3: tests/b.json: value must be a lowercase hex sha256');
  t.match(lines[3], /^3 problem\(s\) in HEAD \([0-9a-f]{12}\)/);

  const unknown = await cli(['policy', 'check', '--repo', r.dir, '--rev', 'no-such-rev']);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /^patchgate: --rev: "no-such-rev" is not a commit in /);
});

t.test('no policy at all: the defaults, ok', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'src/a.py': 'x = 1\n' });
  const ok = await cli(['policy', 'check', '--repo', r.dir]);
  t.equal(ok.code, 0);
  t.match(ok.stdout, /^ok: no ci\/patchgate\.json in the work tree of .* \(the documented defaults apply\)/);
});
