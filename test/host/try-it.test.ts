// docs/hosts.md's "Try it on one machine" block, run as written (issue 49): bash, with
// `patchgate` on PATH as this clone's dist/cli.js, in an empty folder. A person's push is
// accepted and an agent's edit of tests/ refused through the generic shim and a real daemon,
// both audited.

import t from 'tap';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeTree, tempDir } from '../helpers/repo.js';

const DOC = join(import.meta.dirname, '..', '..', 'docs', 'hosts.md');
const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');

t.test('docs/hosts.md "Try it on one machine" runs as written', async (t) => {
  const m = /## Try it on one machine[\s\S]*?```sh\n([\s\S]*?)```/.exec(readFileSync(DOC, 'utf8'));
  t.ok(m, 'the section has a sh block');
  const dir = tempDir('pg-tryit-');
  t.teardown(() => removeTree(dir));
  mkdirSync(join(dir, 'bin'));
  writeFileSync(join(dir, 'bin', 'patchgate'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
  chmodSync(join(dir, 'bin', 'patchgate'), 0o755);
  writeFileSync(join(dir, 'try.sh'), m![1]!);
  const r = spawnSync('bash', ['-eu', join(dir, 'try.sh')], {
    cwd: dir, encoding: 'utf8', timeout: 120_000,
    env: { ...process.env, PATH: `${join(dir, 'bin')}:${process.env.PATH}`, PATCHGATE_DATA: '', GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' },
  });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stderr, /remote: patchgate: ACCEPT refs\/heads\/main \(new\)\.\.[0-9a-f]{12} for alice/);
  t.match(r.stderr, /remote: patchgate: REJECT refs\/heads\/agent\/fix \(new\)\.\.[0-9a-f]{12} for agent-1/);
  t.match(r.stdout, /refused, as it should be/);
  const rows = r.stdout.split('\n').filter((l) => / push /.test(l) && l.startsWith('#'));
  t.match(rows[0], /agent-1\(agent\)\s+REJECT/);
  t.match(rows[1], /alice\(human\)\s+ACCEPT/);
});
