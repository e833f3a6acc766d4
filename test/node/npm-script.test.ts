// node:test (not tap) on purpose: the suite `patchgate ci --help` shows as its example, green on
// this repository: node --import=@tapjs/typescript/import --test --test-reporter=tap
// test/node/npm-script.test.ts. It pins how npm/yarn/pnpm calls map to trusted scripts.
import test from 'node:test';
import assert from 'node:assert/strict';
import { resolveScript, scriptCall, ScriptError } from '../../src/ci/runners/npm-script.js';

const PKG = JSON.stringify({ scripts: { test: 'npm run spec', spec: 'vitest run --dir tests', lint: 'eslint . && tsc', env: 'CI=1 jest', glob: 'node --test tests/*.test.mjs' } });

test('npm, yarn and pnpm calls name a script; other subcommands do not', () => {
  assert.deepEqual(scriptCall(['npm', 'test']), { manager: 'npm', script: 'test', extra: [] });
  assert.deepEqual(scriptCall(['npm', 't', '--', '-t', 'adds']), { manager: 'npm', script: 'test', extra: ['-t', 'adds'] });
  assert.deepEqual(scriptCall(['npm', 'run', 'spec', 'ignored']), { manager: 'npm', script: 'spec', extra: [] });
  assert.deepEqual(scriptCall(['yarn', 'test', 'tests/a']), { manager: 'yarn', script: 'test', extra: ['tests/a'] });
  assert.deepEqual(scriptCall(['pnpm', 'run', 'spec', '--', 'x']), { manager: 'pnpm', script: 'spec', extra: ['x'] });
  assert.equal(scriptCall(['npm', 'install']), null);
  assert.equal(scriptCall(['pnpm', 'exec', 'vitest']), null);
  assert.equal(scriptCall(['node', '--test']), null);
});

test('a script that calls a script is followed to the runner; extra arguments come last', () => {
  const r = resolveScript({ manager: 'npm', script: 'test', extra: [] }, PKG);
  assert.deepEqual(r.argv, ['vitest', 'run', '--dir', 'tests']);
  assert.deepEqual(r.chain, ['test: npm run spec', 'spec: vitest run --dir tests']);
  assert.deepEqual(resolveScript({ manager: 'npm', script: 'spec', extra: ['-t', 'adds'] }, PKG).argv, ['vitest', 'run', '--dir', 'tests', '-t', 'adds']);
  // As npm itself does: `npm run spec -t adds` (no --) passes nothing on to the script.
  assert.deepEqual(resolveScript({ manager: 'npm', script: 'test', extra: ['-t', 'adds'] }, PKG).argv, ['vitest', 'run', '--dir', 'tests']);
});

test('a script that needs a shell is refused, naming what needs it', () => {
  assert.throws(() => resolveScript({ manager: 'npm', script: 'lint', extra: [] }, PKG), (e: unknown) => e instanceof ScriptError && /needs a shell \("&&"\)/.test(e.message));
  assert.throws(() => resolveScript({ manager: 'npm', script: 'env', extra: [] }, PKG), /sets a variable before its command/);
  assert.throws(() => resolveScript({ manager: 'npm', script: 'glob', extra: [] }, PKG), /the glob tests\/\*\.test\.mjs/);
  assert.throws(() => resolveScript({ manager: 'npm', script: 'nope', extra: [] }, PKG), /no script "nope"/);
});
