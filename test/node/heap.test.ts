// The heap's growth step (src/heap.ts): PATCHGATE_HEAP_GROWTH_PERCENT is read strictly, and a
// bad value stops every command with one line naming the variable, before any work is done.

import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { DEFAULT_HEAP_GROWTH_PERCENT, heapGrowthPercent } from '../../src/heap.js';
import { ConfigError } from '../../src/errors.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

t.test('PATCHGATE_HEAP_GROWTH_PERCENT: default, 0, a number, and refusals', async (t) => {
  t.equal(DEFAULT_HEAP_GROWTH_PERCENT, 20);
  t.equal(heapGrowthPercent({}), 20, 'unset: the default');
  t.equal(heapGrowthPercent({ PATCHGATE_HEAP_GROWTH_PERCENT: ' ' }), 20, 'blank: the default');
  t.equal(heapGrowthPercent({ PATCHGATE_HEAP_GROWTH_PERCENT: '0' }), 0, "0: V8's own sizing");
  t.equal(heapGrowthPercent({ PATCHGATE_HEAP_GROWTH_PERCENT: ' 35 ' }), 35);
  t.equal(heapGrowthPercent({ PATCHGATE_HEAP_GROWTH_PERCENT: '1000' }), 1000);
  for (const bad of ['abc', '-5', '2.5', '1001', '20%', '1e3']) {
    t.throws(() => heapGrowthPercent({ PATCHGATE_HEAP_GROWTH_PERCENT: bad }), ConfigError, `${JSON.stringify(bad)} is refused`);
  }
});

t.test('a bad value stops the CLI with one line and exit 2; a good one runs it', async (t) => {
  const run = (value: string) => new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile('node', [CLI, '--version'], { env: { ...process.env, PATCHGATE_HEAP_GROWTH_PERCENT: value } },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
  const bad = await run('lots');
  t.equal(bad.code, 2);
  t.equal(bad.stdout, '', 'nothing ran');
  t.match(bad.stderr, /^patchgate: CONFIG: PATCHGATE_HEAP_GROWTH_PERCENT: must be a whole number .* not "lots"/);
  t.equal(bad.stderr.trim().split('\n').length, 1, 'one line');
  const good = await run('50');
  t.equal(good.code, 0);
  t.match(good.stdout, /^\d+\.\d+\.\d+/);
});
