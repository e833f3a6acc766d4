// GitLab, Gitea/Forgejo and GitHub Enterprise Server: the shim `patchgate hook install --host`
// writes is run by a real `git receive-pack` (a local push) with the variables and working
// directory each host documents, against a real `patchgate daemon` with a real audit log.
// Sources for the environments:
// - GitLab: https://docs.gitlab.com/administration/server_hooks (custom_hooks/pre-receive,
//   GL_ID, GL_PROTOCOL, GL_REPOSITORY, GL_USERNAME; Gitaly runs the hook in the repository
//   with GIT_DIR=., see the env dump in https://gitlab.com/gitlab-org/gitlab/-/issues/299431).
//   Gitaly points core.hooksPath at its own hooks, which run custom_hooks/pre-receive; here
//   core.hooksPath points straight at custom_hooks.
// - Gitea: modules/repository/env.go (GITEA_PUSHER_NAME, GITEA_PUSHER_ID, GITEA_REPO_USER_NAME,
//   GITEA_REPO_NAME); Gitea's generated hooks/pre-receive runs every executable in
//   hooks/pre-receive.d/ with the same stdin (reproduced below from its template).
// - GHES: https://docs.github.com/en/enterprise-server@3.12/admin/enforcing-policies/enforcing-policy-with-pre-receive-hooks/creating-a-pre-receive-hook-script
//   (GITHUB_USER_LOGIN, GITHUB_USER_ID, GITHUB_REPO_NAME, GITHUB_VIA, GIT_DIR; stdin ref lines;
//   5 s for all pre-receive hooks together).

import t from 'tap';
import net from 'node:net';
import { execFile } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { installHostHooks } from '../../src/host/install.js';
import type { DaemonConfig } from '../../src/host/config.js';
import type { HostKind } from '../../src/host/identity.js';
import { refIn } from '../helpers/gate.js';
import { tempDir } from '../helpers/repo.js';
import { CLI } from '../helpers/serve.js';
import { gitWithEnv, seededBare, startTestDaemon } from '../helpers/host.js';

const GITEA_PRE_RECEIVE = `#!/usr/bin/env bash
# Gitea's generated hooks/pre-receive (template of modules/repository/hooks.go)
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
  /** Install the shim as that host would run it; returns nothing. */
  install(cfg: DaemonConfig, bare: string): Promise<void>;
  env(user: string): Record<string, string>;
  userVar: string;
}

function execAsync(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => execFile(cmd, args, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr })));
}

const HOSTS: Host[] = [
  {
    host: 'gitlab', userVar: 'GL_USERNAME',
    async install(cfg, bare) {
      await installHostHooks('gitlab', cfg, [bare]);
      const r = await gitWithEnv(bare, ['config', 'core.hooksPath', join(bare, 'custom_hooks')], {});
      if (r.code) throw new Error(r.stderr);
    },
    env: (user) => ({ GL_USERNAME: user, GL_ID: 'user-17', GL_PROTOCOL: 'ssh', GL_REPOSITORY: 'project-3', GL_PROJECT_PATH: 'team/app' }),
  },
  {
    host: 'gitea', userVar: 'GITEA_PUSHER_NAME',
    async install(cfg, bare) {
      // Through the pinned CLI form, with the config in a file.
      const file = join(tempDir('pg-cfg-'), 'daemon.json');
      writeFileSync(file, JSON.stringify({ data: cfg.data, humans: cfg.humans, agents: cfg.agents }));
      const r = await execAsync(process.execPath, [CLI, 'hook', 'install', '--host', 'gitea', '--config', file, bare]);
      if (r.code) throw new Error(r.stderr);
      writeFileSync(join(bare, 'hooks', 'pre-receive'), GITEA_PRE_RECEIVE);
      chmodSync(join(bare, 'hooks', 'pre-receive'), 0o755);
    },
    env: (user) => ({ GITEA_PUSHER_NAME: user, GITEA_PUSHER_ID: '5', GITEA_REPO_USER_NAME: 'team', GITEA_REPO_NAME: 'app', GITEA_REPO_ID: '9' }),
  },
  {
    host: 'ghes', userVar: 'GITHUB_USER_LOGIN',
    async install(cfg, bare) {
      const hookRepo = tempDir('pg-ghes-hooks-');
      await installHostHooks('ghes', cfg, [hookRepo]);
      mkdirSync(join(bare, 'hooks'), { recursive: true });
      copyFileSync(join(hookRepo, 'patchgate-pre-receive.sh'), join(bare, 'hooks', 'pre-receive'));
      chmodSync(join(bare, 'hooks', 'pre-receive'), 0o755);
    },
    env: (user) => ({ GITHUB_USER_LOGIN: user, GITHUB_USER_ID: '42', GITHUB_REPO_NAME: 'team/app', GITHUB_VIA: 'git push', GITHUB_REPO_PUBLIC: 'false' }),
  },
];

for (const h of HOSTS) {
  t.test(`${h.host}: accept, refuse, a person's push, all audited`, async (t) => {
    const { d, cfg } = await startTestDaemon(t);
    const { bare, w } = await seededBare(t);
    await h.install(cfg, bare);

    w.checkout('agent/fix', true);
    const good = w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
    const ok = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], h.env('agent-1'));
    t.equal(ok.code, 0, ok.code ? ok.stderr : 'agent src/ push accepted');
    t.match(ok.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: ACCEPT refs\/heads\/agent\/fix/);
    t.equal(await refIn(bare, 'refs/heads/agent/fix'), good, 'the ref moved');

    w.checkout('agent/bad', true);
    const bad = w.commit('weaken', { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
    const no = await gitWithEnv(w.dir, ['push', bare, 'agent/bad'], h.env('agent-1'));
    t.not(no.code, 0, 'agent tests/ push refused');
    t.match(no.stderr, /! \[remote rejected\] agent\/bad -> agent\/bad \(pre-receive hook declined\)/);
    t.match(no.stderr, /remote: .*\[write-block\] commit [0-9a-f]{12} modifies protected path tests\/test_app.py/);
    t.match(no.stderr, /remote: .*next step: /);
    t.match(no.stderr, /remote: .*\$ git (reset --hard|restore --source=)/, 'with a command to run');
    t.equal(await refIn(bare, 'refs/heads/agent/bad'), null);
    // GitLab shows only lines that start with GL-HOOK-ERR: (issue 21): every line the shim relays
    // carries it there, the machine line included; no other host gets it.
    const relayed = [ok.stderr, no.stderr].flatMap((e) => e.split('\n')).filter((l) => l.startsWith('remote: ')).map((l) => l.slice('remote: '.length)).filter((l) => l.trim() !== '');
    t.ok(relayed.length > 5, `${relayed.length} relayed lines`);
    if (h.host === 'gitlab') {
      t.same(relayed.filter((l) => !l.startsWith('GL-HOOK-ERR: ')), [], 'every GitLab line carries GL-HOOK-ERR: ');
      t.ok(relayed.some((l) => l.startsWith('GL-HOOK-ERR: patchgate-json {')), 'the machine line too');
    } else {
      t.notOk(relayed.some((l) => l.includes('GL-HOOK-ERR')), 'no GitLab prefix elsewhere');
      t.ok(relayed.some((l) => l.startsWith('patchgate-json {')), 'the machine line');
    }

    // An unknown name is an agent: the strict path.
    const stranger = await gitWithEnv(w.dir, ['push', bare, 'agent/bad:refs/heads/stranger'], h.env('mallory'));
    t.not(stranger.code, 0, 'an unknown pusher is judged as an agent');

    w.checkout('main');
    const human = w.commit('person edits tests', { 'tests/test_app.py': 'def test_add():\n    assert 1 + 1 == 2\n' });
    const hp = await gitWithEnv(w.dir, ['push', bare, 'main'], h.env('alice'));
    t.equal(hp.code, 0, hp.code ? hp.stderr : 'person push accepted');
    t.equal(await refIn(bare, 'refs/heads/main'), human);

    const pushes = d.audit.query({ kind: 'push' });
    const by = (actor: string) => pushes.filter((r) => r.actor === actor).map((r) => `${r.role}:${r.verdict}`).sort();
    t.same(by('agent-1'), ['agent:accept', 'agent:reject']);
    t.same(by('mallory'), ['agent:reject']);
    t.same(by('alice'), ['human:accept']);
    t.ok(pushes.every((r) => r.repo === 'team/app'), 'the repository is named as the host names it');
    t.ok(pushes.every((r) => String(r.userAgent).startsWith(h.host)), 'the host is recorded');
    t.ok(d.audit.verify().ok, 'the chain verifies');
    t.ok(bad);
  });

  t.test(`${h.host}: no identity variable refuses`, async (t) => {
    const { d, cfg } = await startTestDaemon(t);
    const { bare, w } = await seededBare(t);
    await h.install(cfg, bare);
    w.checkout('agent/fix', true);
    w.commit('fix', { 'src/app.py': 'x = 1\n' });
    const env = h.env('agent-1');
    delete env[h.userVar];
    const r = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], env);
    t.not(r.code, 0);
    t.match(r.stderr, new RegExp(`remote: (?:GL-HOOK-ERR: )?patchgate: push refused: no pusher identity \\(${h.userVar}`));
    t.equal(await refIn(bare, 'refs/heads/agent/fix'), null);
    t.equal(d.audit.query({ kind: 'push' }).length, 0);
  });

  t.test(`${h.host}: daemon down refuses`, async (t) => {
    const { d, cfg, data } = await startTestDaemon(t);
    const { bare, w } = await seededBare(t);
    await h.install(cfg, bare);
    w.checkout('agent/fix', true);
    w.commit('fix', { 'src/app.py': 'x = 1\n' });
    await d.close();
    const r = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], h.env('alice'));
    t.not(r.code, 0, 'even a person is refused without a daemon');
    t.match(r.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: push refused: the gate daemon is not running/);
    // A daemon killed without cleanup leaves its endpoint file naming a port nobody listens on.
    const dead = net.createServer();
    await new Promise<void>((r2) => dead.listen(0, '127.0.0.1', () => r2()));
    const port = (dead.address() as net.AddressInfo).port;
    await new Promise<void>((r2) => dead.close(() => r2()));
    writeFileSync(join(data, 'hook.endpoint'), `127.0.0.1 ${port} ${'0'.repeat(64)} 60\n`, { mode: 0o600 });
    const r2 = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], h.env('alice'));
    t.not(r2.code, 0);
    t.match(r2.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: push refused: the gate daemon did not answer on 127\.0\.0\.1:/);
    t.equal(await refIn(bare, 'refs/heads/agent/fix'), null);
  });
}

t.test('ghes: a judgement past the budget is refused with "gate did not finish in time", and audited', async (t) => {
  const { d, cfg } = await startTestDaemon(t, { ghesBudgetMs: 1500, ghesReserveMs: 500 }, { beforeJudge: () => new Promise((r) => setTimeout(r, 4000)) });
  const { bare, w } = await seededBare(t);
  await HOSTS[2]!.install(cfg, bare);
  w.checkout('agent/fix', true);
  w.commit('fix', { 'src/app.py': 'x = 1\n' });
  const r = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], HOSTS[2]!.env('agent-1'));
  t.not(r.code, 0);
  t.match(r.stderr, /remote: .*gate did not finish in time/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null);
  const rows = d.audit.query({ kind: 'push', actor: 'agent-1' });
  t.equal(rows.length, 1);
  t.equal(rows[0]!.verdict, 'reject');
});

t.test('ghes: a daemon that takes the connection but never answers: the shim gives up at its budget', async (t) => {
  const { cfg, data } = await startTestDaemon(t, { ghesBudgetMs: 800 });
  const { bare, w } = await seededBare(t);
  await HOSTS[2]!.install(cfg, bare);
  const held: net.Socket[] = [];
  const mute = net.createServer((s) => void held.push(s));
  await new Promise<void>((r) => mute.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    for (const s of held) s.destroy();
    mute.close();
  });
  writeFileSync(join(data, 'hook.endpoint'), `127.0.0.1 ${(mute.address() as net.AddressInfo).port} ${'0'.repeat(64)} 60\n`, { mode: 0o600 });
  w.checkout('agent/fix', true);
  w.commit('fix', { 'src/app.py': 'x = 1\n' });
  const r = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], HOSTS[2]!.env('alice'));
  t.not(r.code, 0);
  t.match(r.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: push refused: gate did not finish in time \(the hook's budget is 800 ms/);
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null);
});
