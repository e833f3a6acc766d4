// Big pushes through the host shims: a real `git push` to a local bare repository, so a real
// `git receive-pack` runs the shim each host runs (GitLab custom_hooks, Gitea's
// pre-receive.d, GHES's script), against a real `patchgate daemon`. A person's first push of
// 10,000 files (40 MB) must land through each, and a 50 MB agent push through GitLab's; the
// shim and daemon read only ref lines and the quarantine, so pack size must change nothing but time. And a pack that git
// would never build (a 2 MiB blob no commit names), fed to a real `git receive-pack`, is refused
// by the limits rule naming the blob.

import t from 'tap';
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { installHostHooks } from '../../src/host/install.js';
import type { DaemonConfig } from '../../src/host/config.js';
import type { HostKind } from '../../src/host/identity.js';
import { gitAsync, refIn } from '../helpers/gate.js';
import { GIT_ENV, TestRepo, tempDir } from '../helpers/repo.js';
import { gitWithEnv, startTestDaemon } from '../helpers/host.js';
import { bigCommit, craftedPushBody, noise } from '../helpers/bigrepo.js';
import { sideband } from '../helpers/raw-http.js';

const MiB = 1024 * 1024;

// Gitea's generated hooks/pre-receive runs every executable in hooks/pre-receive.d/ (its template, as in receive-pack.test.ts).
const GITEA_PRE_RECEIVE = `#!/usr/bin/env bash
data=$(cat)
exitcodes=""
hookname=$(basename $0)
GIT_DIR=\${GIT_DIR:-$(dirname $0)/..}
for hook in \${GIT_DIR}/hooks/\${hookname}.d/*; do
  test -x "\${hook}" && test -f "\${hook}" || continue
  echo "\${data}" | "\${hook}"
  exitcodes="\${exitcodes} $?"
done
for i in \${exitcodes}; do
  [ \${i} -eq 0 ] || exit \${i}
done
`;

interface Host {
  host: HostKind;
  install(cfg: DaemonConfig, bare: string): Promise<void>;
  env(user: string): Record<string, string>;
}

const HOSTS: Host[] = [
  {
    host: 'gitlab',
    async install(cfg, bare) {
      await installHostHooks('gitlab', cfg, [bare]);
      const r = await gitWithEnv(bare, ['config', 'core.hooksPath', join(bare, 'custom_hooks')], {});
      if (r.code) throw new Error(r.stderr);
    },
    env: (user) => ({ GL_USERNAME: user, GL_ID: 'user-17', GL_PROTOCOL: 'ssh', GL_REPOSITORY: 'project-3', GL_PROJECT_PATH: 'team/app' }),
  },
  {
    host: 'gitea',
    async install(cfg, bare) {
      await installHostHooks('gitea', cfg, [bare]);
      writeFileSync(join(bare, 'hooks', 'pre-receive'), GITEA_PRE_RECEIVE);
      chmodSync(join(bare, 'hooks', 'pre-receive'), 0o755);
    },
    env: (user) => ({ GITEA_PUSHER_NAME: user, GITEA_PUSHER_ID: '5', GITEA_REPO_USER_NAME: 'team', GITEA_REPO_NAME: 'app', GITEA_REPO_ID: '9' }),
  },
  {
    host: 'ghes',
    async install(cfg, bare) {
      const hookRepo = tempDir('pg-ghes-hooks-');
      await installHostHooks('ghes', cfg, [hookRepo]);
      mkdirSync(join(bare, 'hooks'), { recursive: true });
      copyFileSync(join(hookRepo, 'patchgate-pre-receive.sh'), join(bare, 'hooks', 'pre-receive'));
      chmodSync(join(bare, 'hooks', 'pre-receive'), 0o755);
    },
    env: (user) => ({ GITHUB_USER_LOGIN: user, GITHUB_USER_ID: '42', GITHUB_REPO_NAME: 'team/app', GITHUB_VIA: 'git push', GITHUB_REPO_PUBLIC: 'false' }),
  },
  {
    // gitolite's shim in the repository's own hooks/ (what gitolite-shell runs it from is
    // test/host/gitolite.test.ts, over ssh); the variables are the ones gitolite-shell sets.
    host: 'gitolite',
    async install(cfg, bare) {
      await installHostHooks('gitolite', cfg, [bare]);
    },
    env: (user) => ({ GL_USER: user, GL_REPO: 'app' }),
  },
];

async function emptyBare(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const root = tempDir('pg-host-big-');
  const bare = join(root, 'app.git');
  const r = await gitAsync(root, ['init', '-q', '--bare', '-b', 'main', bare]);
  if (r.code) throw new Error(r.stderr);
  t.teardown(() => execFile('rm', ['-rf', root]));
  return bare;
}

t.test('10,000 files (40 MB) first pushed by a person land through every host shim; a 50 MB agent push through GitLab\'s', async (t) => {
  // GHES gives all pre-receive hooks 5 s; on a loaded test machine the shim gets a minute instead.
  const { d, cfg } = await startTestDaemon(t, { ghesBudgetMs: 60_000 });
  const w = TestRepo.init(t);
  const first = await bigCommit(w, { files: 10_000, bytes: 4096, root: 'assets', seed: 'host-first-10k', message: 'import the project', branch: 'main', extra: { 'src/app.py': 'def add(a, b):\n    return a + b\n', 'tests/test_app.py': 'def test_add():\n    assert True\n' } });
  w.git('branch', 'agent/assets', first);
  const assets = await bigCommit(w, { files: 25, bytes: 2 * MiB, root: 'src/assets', seed: 'host-agent-50mb', message: 'add the assets', branch: 'agent/assets' });
  for (const h of HOSTS) {
    const bare = await emptyBare(t);
    await h.install(cfg, bare);
    const p = await gitWithEnv(w.dir, ['push', bare, 'main'], h.env('alice'));
    t.equal(p.code, 0, p.code ? p.stderr : `${h.host}: the person's first push landed`);
    t.match(p.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: ACCEPT refs\/heads\/main \(new\)/, `${h.host}: judged and accepted`);
    t.equal(await refIn(bare, 'refs/heads/main'), first);
    // The 50 MB pack through one shim only: the shims read ref lines, never the pack, and the
    // pushes here are all CPU (index-pack, fsck) on a 2-core machine.
    if (h.host !== 'gitlab') continue;
    const a = await gitWithEnv(w.dir, ['push', bare, 'agent/assets'], h.env('agent-1'));
    t.equal(a.code, 0, a.code ? a.stderr : `${h.host}: the agent's 50 MB push landed`);
    t.match(a.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: ACCEPT refs\/heads\/agent\/assets/, `${h.host}: judged and accepted`);
    t.equal(await refIn(bare, 'refs/heads/agent/assets'), assets);
  }
  const refs = d.audit.query({ kind: 'ref' });
  t.equal(refs.length, HOSTS.length + 1, 'every push was audited');
  t.ok(refs.every((r) => r.verdict === 'accept'), 'all accepted');
  const pushed = refs.filter((r) => r.actor === 'agent-1').map((r) => (r.rules as Array<{ rule: string; details?: { bytes?: number } }>).find((x) => x.rule === 'limits')?.details?.bytes ?? 0);
  t.ok(pushed.length === 1 && pushed[0]! > 50 * MiB, `the agent's pack was counted over 50 MiB (${pushed.map((b) => Math.round(b / MiB)).join(', ')} MiB)`);
  t.ok(d.audit.verify().ok, 'the chain verifies');
});

t.test('a 2 MiB blob no commit names, in a pack fed to a real git receive-pack, is refused by the limits rule', async (t) => {
  const { d, cfg } = await startTestDaemon(t);
  const bare = await emptyBare(t);
  const w = TestRepo.init(t);
  const base = w.commit('base', { 'src/app.py': 'x = 1\n', 'ci/patchgate.json': JSON.stringify({ limits: { maxBlobBytes: 4096 } }) });
  const h = HOSTS[0]!;
  await h.install(cfg, bare);
  const seed = await gitWithEnv(w.dir, ['push', bare, 'main'], h.env('alice'));
  t.equal(seed.code, 0, seed.code ? seed.stderr : 'a person seeds main with the policy');
  w.checkout('agent/work', true);
  const tip = w.commit('small', { 'src/app.py': 'x = 2\n' });
  const file = join(w.dir, '.git', 'extra.bin');
  writeFileSync(file, noise('host-unreferenced', 2 * MiB));
  const extra = w.git('hash-object', '-w', file);
  const body = craftedPushBody(w, { oldId: '0'.repeat(40), newId: tip, ref: 'refs/heads/agent/work', range: [tip, `^${base}`], extra: [extra] });
  // receive-pack writes its advertisement, then reads the commands and the pack from stdin.
  const out = await new Promise<string>((resolve) => {
    const child = execFile('git', ['receive-pack', bare], { env: { ...process.env, ...GIT_ENV, ...h.env('agent-1') }, encoding: 'latin1', maxBuffer: 16 * MiB }, (_err, stdout) => resolve(stdout));
    child.stdin!.end(body);
  });
  let i = 0; // past the advertisement: pkt-lines up to its flush
  while (i < out.length && out.slice(i, i + 4) !== '0000') i += parseInt(out.slice(i, i + 4), 16) || out.length;
  const { data, progress } = sideband(out.slice(i + 4));
  t.match(data, /ng refs\/heads\/agent\/work pre-receive hook declined/, 'the ref is refused');
  t.match(progress, new RegExp(`\\[limits\\] the push carries blob ${extra} of 2\\.0 MiB, which no new commit names, over limits\\.maxBlobBytes \\(4\\.0 KiB\\)`), 'naming the blob and the limit');
  t.equal(await refIn(bare, 'refs/heads/agent/work'), null);
  t.not((await gitAsync(bare, ['cat-file', '-e', extra])).code, 0, 'the blob was not stored');
  const row = d.audit.query({ kind: 'ref', actor: 'agent-1' })[0]!;
  t.equal(row.decision, 'object-too-large');
});
