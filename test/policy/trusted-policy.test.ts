// The fallback of a broken trusted policy (src/policy/trusted-policy.ts), on real repositories:
// the newest first-parent ancestor whose policy validates, else the documented defaults; and
// the engine on top of it (`check`): an agent refused with the file and line, a person's fix
// judged under the fallback.

import t from 'tap';
import { Git } from '../../src/git/git.js';
import { trustedPolicy } from '../../src/policy/trusted-policy.js';
import { loadPolicy } from '../../src/policy/config.js';
import { PolicyFileError } from '../../src/errors.js';
import { runCheck } from '../../src/commands/check.js';
import { checkExitCode } from '../../src/commands/check.js';
import { TestRepo } from '../helpers/repo.js';

const TYPO = '{\n  "writable": ["src/**"],\n  "writeable_typo": true\n}\n';

t.test('a broken tip falls back to the newest valid first-parent policy, skipping broken ones', async (t) => {
  const r = TestRepo.init(t);
  const good = r.commit('good', { 'ci/patchgate.json': '{"writable": ["lib/**"]}', 'src/a.py': 'x = 1\n' });
  r.commit('typo', { 'ci/patchgate.json': TYPO });
  r.commit('unrelated, still broken', { 'src/a.py': 'x = 2\n' });
  const tip = r.commit('another break', { 'ci/patchgate.json': '{\n  "writable": [1]\n}\n' });
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const err = await loadPolicy(git, tip).then(() => null, (e: unknown) => e);
  t.ok(err instanceof PolicyFileError, 'the tip\'s policy does not load');
  t.equal((err as PolicyFileError).line, 2, 'the line of the bad element');
  t.match((err as Error).message, /^CONFIG: ci\/patchgate\.json@[0-9a-f]{12}: writable\.0: .* \(line 2\)$/);
  const p = await trustedPolicy(git, tip);
  t.same(p.writable, ['lib/**'], 'the valid ancestor\'s policy applies');
  t.match(p.fallback, { tip, under: good, path: 'ci/patchgate.json', line: 2 });
  // A valid tip: no fallback.
  const fine = await trustedPolicy(git, good);
  t.equal(fine.fallback, undefined);
});

t.test('no valid policy in the history: the documented defaults', async (t) => {
  const r = TestRepo.init(t);
  const tip = r.commit('broken from the start', { 'ci/patchgate.json': '{"writable": ', 'src/a.py': 'x = 1\n' });
  const git = new Git({ dir: r.dir });
  t.teardown(() => git.close());
  const p = await trustedPolicy(git, tip);
  t.same(p.writable, ['src/**']);
  t.match(p.fallback, { tip, under: null, line: 1, error: /not valid JSON/ });
});

t.test('check on a broken base: an agent cannot be judged (exit 2); a person\'s fix is accepted under the fallback', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'ci/patchgate.json': '{"writable": ["src/**"]}', 'src/a.py': 'x = 1\n' });
  r.commit('typo', { 'ci/patchgate.json': TYPO });
  r.checkout('work', true).commit('agent work', { 'src/a.py': 'x = 2\n' });
  const agent = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'agent' });
  t.equal(agent.row, 'policy-broken');
  t.equal(checkExitCode(agent), 2);
  t.match(agent.reasons[0], { rule: 'policy', path: 'ci/patchgate.json', message: /ci\/patchgate\.json:3 on the trusted branch .*writeable_typo: unknown key/ });
  const stillBroken = await runCheck({ repo: r.dir, base: 'main', head: 'work', role: 'human' });
  t.equal(stillBroken.verdict, 'reject', 'a person\'s work that leaves the policy broken is refused');
  t.equal(stillBroken.row, 'policy-invalid');
  r.checkout('main').checkout('fix', true).commit('fix', { 'ci/patchgate.json': '{"writable": ["src/**", "lib/**"]}' });
  const fix = await runCheck({ repo: r.dir, base: 'main', head: 'fix', role: 'human' });
  t.equal(fix.verdict, 'accept');
  t.match(fix.outcomes.find((o) => o.rule === 'policy')?.details, { fallback: { judgedUnder: /^[0-9a-f]{40}$/, line: 3 } });
});
