// Which repository a host push is for, and who pushes it (issue 20, item 4): the folder git
// runs in decides whether a push is gated, a host variable only names it; identity values are
// taken as they are (no trimming, no control characters); `trusted` in the config overrides a
// repository's HEAD (gitolite makes HEAD master); `hook install` creates the folder it writes
// to. Every push is a real local push whose receive-pack runs the installed shim against a
// real daemon with a real audit log.

import t from 'tap';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { installHostHooks } from '../../src/host/install.js';
import { hostSession } from '../../src/host/identity.js';
import { parseDaemonConfig } from '../../src/host/config.js';
import type { DaemonConfig } from '../../src/host/config.js';
import { refIn } from '../helpers/gate.js';
import { tempDir } from '../helpers/repo.js';
import { cliRun } from '../helpers/serve.js';
import { gitWithEnv, seededBare, startTestDaemon } from '../helpers/host.js';

const WEAKEN = { 'tests/test_app.py': 'def test_add():\n    assert True\n' };

async function gitlab(cfg: DaemonConfig, bare: string): Promise<void> {
  await installHostHooks('gitlab', cfg, [bare]);
  const r = await gitWithEnv(bare, ['config', 'core.hooksPath', join(bare, 'custom_hooks')], {});
  if (r.code) throw new Error(r.stderr);
}
const glEnv = (user: string, vars: Record<string, string>) => ({ GL_USERNAME: user, GL_ID: 'user-17', GL_PROTOCOL: 'ssh', ...vars });

t.test('gitlab: the folder decides; a differently cased or missing GL_PROJECT_PATH is still judged, refused and audited', async (t) => {
  const { bare, w, root } = await seededBare(t, 'team/app');
  const { d, cfg } = await startTestDaemon(t, { repos: ['team/**'], repoRoots: [root] });
  await gitlab(cfg, bare);
  w.checkout('agent/x', true);
  w.commit('weaken', WEAKEN);
  const cases: Array<[string, Record<string, string>]> = [
    ['differently cased GL_PROJECT_PATH', { GL_PROJECT_PATH: 'TEAM/App', GL_REPOSITORY: 'project-7' }],
    ['only GL_REPOSITORY', { GL_REPOSITORY: 'project-7' }],
    ['no repository variable at all', {}],
    ['a variable naming an ungated repository', { GL_PROJECT_PATH: 'other/app' }],
  ];
  for (const [what, vars] of cases) {
    const r = await gitWithEnv(w.dir, ['push', bare, 'agent/x'], glEnv('agent-1', vars));
    t.not(r.code, 0, `${what}: refused`);
    t.match(r.stderr, /\[write-block\] commit [0-9a-f]{12} modifies protected path tests\/test_app.py/, `${what}: judged by the policy`);
    t.notMatch(r.stderr, /accepted without judgement/, what);
  }
  t.equal(await refIn(bare, 'refs/heads/agent/x'), null);
  const rows = d.audit.query({ kind: 'push' });
  t.equal(rows.length, cases.length, 'every one has its audit row');
  t.ok(rows.every((r) => r.verdict === 'reject' && r.role === 'agent'));
  t.same(rows.map((r) => r.repo).sort(), ['TEAM/App', 'other/app', 'project-7', 'team/app'], 'named for people by the variable, else by the folder');
});

t.test('a repository whose folder is cased differently from the glob is gated (folded like policy paths)', async (t) => {
  const { bare, w, root } = await seededBare(t, 'Team/Ápp');
  const { d, cfg } = await startTestDaemon(t, { repos: ['team/**'], repoRoots: [root] });
  await installHostHooks('generic', cfg, [bare]);
  w.checkout('agent/x', true);
  w.commit('weaken', WEAKEN);
  const r = await gitWithEnv(w.dir, ['push', bare, 'agent/x'], { PATCHGATE_USER: 'agent-1', PATCHGATE_REPO: 'Team/Ápp' });
  t.not(r.code, 0);
  t.equal(d.audit.query({ kind: 'push' }).length, 1);
});

t.test('a push passes unjudged only when the folder is outside `repos` and the variable names that same folder', async (t) => {
  const { bare, w, root } = await seededBare(t, 'other/app');
  const { d, cfg } = await startTestDaemon(t, { repos: ['team/**'], repoRoots: [root] });
  await gitlab(cfg, bare);
  w.checkout('agent/x', true);
  w.commit('weaken', WEAKEN);
  const passed = await gitWithEnv(w.dir, ['push', bare, 'agent/x'], glEnv('agent-1', { GL_PROJECT_PATH: 'Other/App', GL_REPOSITORY: 'project-9' }));
  t.equal(passed.code, 0, passed.stderr);
  t.match(passed.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: other\/app is not gated by this daemon's config \(repos\)/);
  t.equal(d.audit.query({ kind: 'push' }).length, 0);
  w.commit('more', { 'tests/b.py': 'x = 1\n' });
  const disagree = await gitWithEnv(w.dir, ['push', bare, 'agent/x'], glEnv('agent-1', { GL_PROJECT_PATH: 'team/app' }));
  t.not(disagree.code, 0, 'a variable that disagrees with the folder: judged');
  const missing = await gitWithEnv(w.dir, ['push', bare, 'agent/x'], glEnv('agent-1', {}));
  t.not(missing.code, 0, 'no variable: judged');
  t.equal(d.audit.query({ kind: 'push' }).length, 2);
});

t.test('identity values are taken as they are: " alice" is not alice; spaces only are no one; control characters refuse', async (t) => {
  const { d, cfg } = await startTestDaemon(t);
  const { bare, w } = await seededBare(t);
  await installHostHooks('generic', cfg, [bare]);
  w.checkout('agent/x', true);
  w.commit('weaken', WEAKEN);
  const spaced = await gitWithEnv(w.dir, ['push', bare, 'agent/x'], { PATCHGATE_USER: ' alice', PATCHGATE_REPO: 'app' });
  t.not(spaced.code, 0, '" alice" is an unknown name: judged as an agent');
  const rows = d.audit.query({ kind: 'push' });
  t.equal(rows.length, 1);
  t.equal(rows[0]!.actor, ' alice');
  t.equal(rows[0]!.role, 'agent');
  for (const [k, v] of [['PATCHGATE_USER', 'alice\tx'], ['PATCHGATE_USER', 'alice\x1b[2K'], ['PATCHGATE_REPO', 'app\x07']] as const) {
    const r = await gitWithEnv(w.dir, ['push', bare, 'agent/x'], { PATCHGATE_USER: 'alice', PATCHGATE_REPO: 'app', [k]: v });
    t.not(r.code, 0, `${JSON.stringify(v)} refused`);
    t.match(r.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: push refused: the host's identity variables hold a control character/);
  }
  // Spaces only name nobody: refused as missing, never judged as an agent named "   ".
  for (const user of ['   ', ' \t ']) {
    const r = await gitWithEnv(w.dir, ['push', bare, 'agent/x'], { PATCHGATE_USER: user, PATCHGATE_REPO: 'app' });
    t.not(r.code, 0, `${JSON.stringify(user)} refused`);
    t.match(r.stderr, /remote: (?:GL-HOOK-ERR: )?patchgate: push refused: no pusher identity \(PATCHGATE_USER is not set, or holds only spaces\)/);
  }
  for (const user of ['   ', '\u00a0\u3000', '']) {
    t.throws(() => hostSession({ hook: 'pre-receive', ppid: 1, dir: bare, env: {}, id: { host: 'generic', user }, lines: [] }, cfg), { name: 'HostIdentityError', message: /no pusher identity/ }, `the daemon refuses ${JSON.stringify(user)} too`);
  }
  t.equal(d.audit.query({ kind: 'push' }).length, 1, 'refused before judging');
  t.equal(await refIn(bare, 'refs/heads/agent/x'), null);
  // The daemon checks too, for a hook that is not our shim (C1 controls and U+2028 as well).
  for (const user of ['alice\u0085', 'alice\u2028', 'ali\x00ce']) {
    t.throws(() => hostSession({ hook: 'pre-receive', ppid: 1, dir: bare, env: {}, id: { host: 'generic', user }, lines: [] }, cfg), { name: 'HostIdentityError', message: /control character/ });
  }
});

t.test('trusted: the config overrides a HEAD at master; without it the refusal speaks of a person\'s key or account', async (t) => {
  const { bare, w, root } = await seededBare(t, 'app');
  const head = await gitWithEnv(bare, ['symbolic-ref', 'HEAD', 'refs/heads/master'], {});
  t.equal(head.code, 0, head.stderr);
  w.checkout('agent/fix', true);
  w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });

  const { cfg } = await startTestDaemon(t);
  await installHostHooks('gitolite', cfg, [bare]);
  const env = { GL_USER: 'agent-1', GL_REPO: 'app' };
  const no = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], env);
  t.not(no.code, 0, 'no trusted branch master: refused');
  t.match(no.stderr, /the trusted branch master does not exist in this repository yet/);
  t.match(no.stderr, /a person, with a person's key or account on gitolite, must push it first/);
  t.match(no.stderr, /"trusted": \{"app": "main"\}/);
  t.notMatch(no.stderr, /token/, 'no gate tokens inside a host');

  const { cfg: cfg2, d: d2 } = await startTestDaemon(t, { repoRoots: [root], trusted: { 'team/**': 'develop', APP: 'main' } });
  await installHostHooks('gitolite', cfg2, [bare]);
  const ok = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], env);
  t.equal(ok.code, 0, ok.stderr || 'judged against main');
  w.commit('weaken', WEAKEN);
  const bad = await gitWithEnv(w.dir, ['push', bare, 'agent/fix'], env);
  t.not(bad.code, 0);
  t.match(bad.stderr, /\[write-block\] commit [0-9a-f]{12} modifies protected path tests\/test_app.py/, 'judged against main, not refused for a missing master');
  t.same(d2.audit.query({ kind: 'push' }).map((r) => r.verdict), ['reject', 'accept']);
  t.throws(() => parseDaemonConfig({ data: root, trusted: 'a..b' }), { name: 'ConfigError' });
  t.throws(() => parseDaemonConfig({ data: root, trusted: { app: 'main' } }), { name: 'ConfigError', message: /repoRoots/ });
  t.throws(() => parseDaemonConfig({ data: root, repos: ['team/**'] }), { name: 'ConfigError', message: /repoRoots/ });
});

t.test('hook install --host gitolite creates the LOCAL_CODE folder it writes to', async (t) => {
  const home = tempDir('pg-gl-home-');
  const data = join(home, 'data');
  const config = join(home, 'daemon.json');
  (await import('node:fs')).writeFileSync(config, JSON.stringify({ data }));
  const local = join(home, 'local');
  t.notOk(existsSync(local));
  const r = await cliRun(['hook', 'install', '--host', 'gitolite', '--config', config, local]);
  t.equal(r.code, 0, r.stderr);
  const shim = join(local, 'hooks', 'repo-specific', 'patchgate');
  t.ok(statSync(shim).mode & 0o100, 'the shim is there and executable');
  t.match(r.stdout, /HEAD at master/, 'and says how to name the trusted branch');
  const gone = await cliRun(['hook', 'install', '--host', 'gitlab', '--config', config, join(home, 'nope.git')]);
  t.equal(gone.code, 2, 'a missing repository folder for a repository host is a usage error');
});
