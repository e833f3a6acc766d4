// The remote set-up line of every printed fix (src/policy/push-target.ts), run with sh in real
// clones: which remote it picks for the gate's URL (tokens and all, never printed), what it
// falls back to, that a stale `patchgate-fix` from an earlier refusal does not win, the host
// form matched by repository path, and that nothing unsafe from a request reaches the command.
// Through a real server: `publicUrl` is the URL the fix names.

import t from 'tap';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { checkPublicUrl, fixRemoteCommand, hostRepoPath, requestPushUrl } from '../../src/policy/push-target.js';
import { GIT_ENV, TestRepo, tempDir } from '../helpers/repo.js';
import { gitAsync, startGate } from '../helpers/gate.js';

type T = Parameters<Parameters<typeof t.test>[1]>[0];

function sh(cwd: string, line: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', line], { cwd, env: { ...process.env, ...GIT_ENV } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr });
    });
  });
}

/** A clone with these remotes (name -> URL), after running `cmd`: the URL patchgate-fix got. */
async function picked(t: T, remotes: Array<[string, string]>, cmd: string): Promise<string> {
  const dir = tempDir('pg-target-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await gitAsync(dir, ['init', '-q']);
  for (const [name, url] of remotes) await gitAsync(dir, ['remote', 'add', name, url]);
  const r = await sh(dir, cmd);
  t.equal(r.code, 0, `the set-up runs: ${r.out}`);
  return (await gitAsync(dir, ['config', 'remote.patchgate-fix.url'])).stdout.trim();
}

const URL = 'http://127.0.0.1:7005/app.git';

t.test('URL form: the agent\'s remote for the gate, with its token, else the plain URL', async (t) => {
  const cmd = fixRemoteCommand({ url: URL })!;
  t.notMatch(cmd, /:tok@|agent-1/, 'no secret or user of the clone in the command');
  t.equal(await picked(t, [['origin', 'http://agent-1:tok@127.0.0.1:7005/app.git']], cmd), 'http://agent-1:tok@127.0.0.1:7005/app.git', 'origin with a token in it');
  t.equal(await picked(t, [['origin', 'https://example.com/other.git'], ['gate', 'http://a:tok@127.0.0.1:7005/app.git/']], cmd), 'http://a:tok@127.0.0.1:7005/app.git/', 'a remote of another name; a trailing slash still matches');
  t.equal(await picked(t, [['origin', 'http://127.0.0.1:7005/app.git']], cmd), 'http://127.0.0.1:7005/app.git', 'a remote without a token');
  t.equal(await picked(t, [], cmd), URL, 'no remote: the plain URL (a credential helper answers)');
  t.equal(await picked(t, [['origin', 'http://a:tok@127.0.0.1:7005/other.git'], ['x', 'http://a:tok@127.0.0.2:7005/app.git']], cmd), URL, 'another repository or host is not the gate');
  t.equal(await picked(t, [['patchgate-fix', 'http://a:old@127.0.0.1:7005/app.git'], ['origin', 'http://a:new@127.0.0.1:7005/app.git']], cmd), 'http://a:new@127.0.0.1:7005/app.git', 'a stale patchgate-fix does not win');
});

t.test('no remote for the gate: the set-up says how to give the token, on stderr', async (t) => {
  const dir = tempDir('pg-target-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await gitAsync(dir, ['init', '-q']);
  const r = await sh(dir, fixRemoteCommand({ url: URL })!);
  t.equal(r.code, 0);
  t.match(r.out, /no remote of this clone points at http:\/\/127\.0\.0\.1:7005\/app\.git: the push asks your credential helper; if it holds no token, put yours in: git config remote\.patchgate-fix\.url /);
  await gitAsync(dir, ['remote', 'add', 'origin', 'http://a:tok@127.0.0.1:7005/app.git']);
  t.notMatch((await sh(dir, fixRemoteCommand({ url: URL })!)).out, /no remote/, 'silent when a remote matches');
});

t.test('a push URL set apart from the fetch URL is the one taken', async (t) => {
  const dir = tempDir('pg-target-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await gitAsync(dir, ['init', '-q']);
  await gitAsync(dir, ['remote', 'add', 'origin', 'https://mirror.example.com/app.git']);
  await gitAsync(dir, ['remote', 'set-url', '--push', 'origin', 'http://a:tok@127.0.0.1:7005/app.git']);
  t.equal((await sh(dir, fixRemoteCommand({ url: URL })!)).code, 0);
  t.equal((await gitAsync(dir, ['config', 'remote.patchgate-fix.url'])).stdout.trim(), 'http://a:tok@127.0.0.1:7005/app.git');
});

t.test('host form: matched by repository path, scp and URL remotes, else origin', async (t) => {
  const cmd = fixRemoteCommand({ path: 'group/app' })!;
  t.equal(await picked(t, [['origin', 'https://x.example.com/other.git'], ['lab', 'git@gitlab.example.com:group/app.git']], cmd), 'git@gitlab.example.com:group/app.git');
  t.equal(await picked(t, [['lab', 'https://u:tok@gitlab.example.com/group/app']], cmd), 'https://u:tok@gitlab.example.com/group/app');
  t.equal(await picked(t, [['lab', 'https://gitlab.example.com/group/myapp.git'], ['origin', 'ssh://git@h/o.git']], cmd), 'ssh://git@h/o.git', 'group/myapp is not group/app: origin');
  t.equal(hostRepoPath('/group/app.git/'), 'group/app');
  t.equal(hostRepoPath("group/a'pp"), undefined, 'a quote never reaches the command');
});

t.test('nothing unsafe from the request reaches the command', async (t) => {
  t.equal(requestPushUrl({ host: '127.0.0.1:7005', tls: false, rawName: 'app' }), URL);
  t.equal(requestPushUrl({ host: 'gate.example.com', tls: true, rawName: 'app' }), 'https://gate.example.com/app.git');
  t.equal(requestPushUrl({ host: '[::1]:7005', tls: false, rawName: 'app' }), 'http://[::1]:7005/app.git');
  for (const host of ["x'$(id)'", 'a b', 'u:p@h', 'h/x', '', 'h;rm']) t.equal(requestPushUrl({ host, tls: false, rawName: 'app' }), null, `Host ${JSON.stringify(host)}`);
  t.equal(requestPushUrl({ host: 'h', tls: false, rawName: "a'b" }), null, 'a quote in the name');
  t.equal(requestPushUrl({ publicUrl: 'https://git.example.com/gate/', host: 'ignored', tls: false, rawName: 'app' }), 'https://git.example.com/gate/app.git');
  t.equal(fixRemoteCommand({ url: "http://h/a'.git" }), null, 'an unchecked URL is not printed');
  t.equal(fixRemoteCommand({}), null);
  t.throws(() => checkPublicUrl('https://user:tok@git.example.com'), /no user, token/);
  t.throws(() => checkPublicUrl('ftp://git.example.com'));
  t.equal(checkPublicUrl('https://git.example.com/'), 'https://git.example.com');
});

t.test('a server with publicUrl prints that URL in the fix, and a bad one does not start', async (t) => {
  const gate = await startGate(t, { publicUrl: 'https://git.example.com/gate' });
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'x = 1\n', 'tests/test_app.py': 'def test(): pass\n' });
  t.equal((await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main'])).code, 0);
  w.commit('weaken', { 'tests/test_app.py': '# gone\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'HEAD:refs/heads/agent/x']);
  t.not(r.code, 0, 'refused');
  t.match(r.stderr, /awk -v u='https:\/\/git\.example\.com\/gate\/app\.git'/, 'the public URL');
  t.notOk(r.stderr.includes(agent), 'no token');
  await t.rejects(startGate(t, { publicUrl: 'https://u:secret@x.example.com' }), /--public-url.*no user, token/);
});
