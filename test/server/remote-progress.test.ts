// Issue 24, nothing silent for long: a push whose contract is not cached yet (the first push
// of a repository) says so on `remote:` while it parses, one line when the phase has run
// `remoteProgressDelayMs` (2 s by default; 0 here, so the form shows on a small tree without
// timing) and one when it is done, before the verdict lines. The form on a terminal and off
// one is in test/cli/progress.test.ts; a hook's stderr is never a terminal.

import { randomBytes } from 'node:crypto';
import t from 'tap';
import { TestRepo } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';

function files(n: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < n; i++) out[`src/pkg/mod${i}.py`] = `def f${i}(a: int) -> int:\n    return a + ${i}\n`;
  return out;
}

t.test("a first push's contract parse: a line when it starts and one when it is done, on remote:, before the verdict", async (t) => {
  const gate = await startGate(t, { remoteProgressDelayMs: 0 });
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const w = TestRepo.init(t);
  // Over PACK_MAX (1 MiB, incompressible): the pack is not read ahead (src/server/hook/prewarm.ts),
  // whose parse would otherwise fill the cache first, racing the hook, and show no line at all.
  const tip = w.commit('import 40 modules', { ...files(40), 'assets/noise.bin': randomBytes(3 << 19).toString('base64') });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(r.code, 0, r.code ? r.stderr : 'accepted');
  const lines = r.stderr.split('\n').map((l) => l.trim());
  const start = lines.findIndex((l) => /^remote: patchgate: contract of the pushed commit [0-9a-f]+ \(not cached yet: the first push of this repository or of this tree\): 40 files to read$/.test(l));
  const done = lines.findIndex((l) => /^remote: patchgate: contract of the pushed commit [0-9a-f]+ \(.*\): done, 40 files parsed in \d+ s/.test(l));
  const verdict = lines.findIndex((l) => /^remote: patchgate: ACCEPT refs\/heads\/main/.test(l));
  t.ok(start >= 0, r.stderr);
  t.ok(done > start, 'then the done line');
  t.ok(verdict > done, 'then the verdict');
  t.ok(lines[start]!.includes(tip.slice(0, 7)), 'it names the commit');
  t.notOk(lines.some((l) => l === 'remote:'), 'the spacer lines the daemon sends are not shown');
  t.notOk(/\r|\x1b/.test(r.stderr.replace(/\r\n/g, '\n')), 'no terminal control on remote:');

});
