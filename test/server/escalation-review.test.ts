// Escalations a person can review (issue 48, item 6), end to end over a real gate on port 0
// with real git clients: a refused push that escalates keeps its commit under
// refs/patchgate/escalations/N (written from the quarantine before the hook answers); agents
// neither see that ref advertised nor fetch it, by name or by id; a person fetches it with
// their own token; `escalation show N` prints the diff; closing needs a person (their token in
// PATCHGATE_TOKEN, or --as), records them, and lets the ref go; the close command the page
// and the webhook print runs as printed against this gate's data folder.

import t from 'tap';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { GIT_ENV, tempDir } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, seededGate } from '../helpers/gate.js';
import { CLI } from '../helpers/serve.js';
import { listEscalations } from '../../src/audit/escalation.js';

const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
};

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env: { ...process.env, ...GIT_ENV, GIT_ASKPASS: 'true', PATCHGATE_TOKEN: '', ...env }, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });
}
const cli = (args: string[], env: NodeJS.ProcessEnv = {}) => run(process.execPath, [CLI, ...args], env);

t.test('an escalated refusal is kept for a person, hidden from agents, shown, fetched and closed by a person', async (t) => {
  const bodies: string[] = [];
  const hookSrv = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void (bodies.push(Buffer.concat(chunks).toString('utf8')), res.writeHead(204).end()));
  });
  await new Promise<void>((r) => hookSrv.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => hookSrv.close(() => r())));
  const { gate, agent, human, tokens } = await seededGate(t, BASE, { notifyUrl: `http://127.0.0.1:${(hookSrv.address() as AddressInfo).port}/`, notify: { timeoutMs: 2000, retries: 1, backoffMs: 50 } }, ['agent-1', 'agent-2']);
  const bare = bareDir(gate, 'app');
  const dir = tempDir('pg-esc-review-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const a = join(dir, 'a');
  t.equal((await gitAsync(dir, ['clone', '-q', gate.remote('app', 'agent-1', agent), a])).code, 0);
  const commit = async (files: Record<string, string>, msg: string) => {
    for (const [p, text] of Object.entries(files)) {
      mkdirSync(dirname(join(a, p)), { recursive: true });
      writeFileSync(join(a, p), text);
    }
    await gitAsync(a, ['add', '-A']);
    await gitAsync(a, ['commit', '-q', '-m', msg]);
    return (await gitAsync(a, ['rev-parse', 'HEAD'])).stdout.trim();
  };
  // Two commits: the tip and its parent exist only in this push.
  await gitAsync(a, ['checkout', '-q', '-b', 'agent/fix']);
  const parent = await commit({ 'src/app.py': 'def add(a, b):\n    return a + b + 0\n' }, 'first step');
  const bad = await commit({ 'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 4  # spec says 4\n' }, 'the test is wrong');
  const pushed = await gitAsync(a, ['push', '-o', 'patchgate.escalate=the spec says 4', 'origin', 'HEAD:refs/heads/agent/fix']);
  t.not(pushed.code, 0, 'refused as usual');
  const id = Number(/escalation (\d+) recorded/.exec(pushed.stderr)?.[1]);
  t.ok(id > 0, pushed.stderr);
  t.match(pushed.stderr, new RegExp(`escalation ${id}: commit ${bad.slice(0, 12)} kept for review`));
  const ref = `refs/patchgate/escalations/${id}`;
  t.equal(await refIn(bare, ref), bad, 'the escalated commit is kept under its ref');
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), null, 'and the push moved nothing');

  // Agents: not advertised, not fetchable by name, nor by id (tip or parent), from another agent's clone.
  const b = join(dir, 'b');
  const cb = await gitAsync(dir, ['clone', '-q', gate.remote('app', 'agent-2', tokens['agent-2']!), b]);
  t.equal(cb.code, 0, cb.stderr);
  const lsAgent = await gitAsync(b, ['ls-remote', 'origin']);
  t.equal(lsAgent.code, 0, lsAgent.stderr);
  t.notMatch(lsAgent.stdout, /refs\/patchgate/, 'an agent is not shown the ref');
  const byName = await gitAsync(b, ['fetch', 'origin', ref]);
  t.not(byName.code, 0, 'an agent cannot fetch it by name');
  for (const oid of [bad, parent]) {
    const byId = await gitAsync(b, ['fetch', 'origin', oid]);
    t.not(byId.code, 0, `an agent cannot fetch ${oid === bad ? 'the tip' : 'its parent'} by id`);
    t.match(byId.stderr, /kept for a person's review of an escalation; agents cannot fetch it/);
  }
  t.not((await gitAsync(b, ['cat-file', '-e', bad])).code, 0, 'nothing reached the agent');
  const pushRef = await gitAsync(b, ['push', 'origin', `HEAD:${ref}`]);
  t.not(pushRef.code, 0, 'nor can an agent push to it');
  t.equal(await refIn(bare, ref), bad);

  // A person: shown it, and fetches it by name with their own token.
  const p = join(dir, 'p');
  await gitAsync(dir, ['init', '-q', p]);
  const lsPerson = await gitAsync(p, ['ls-remote', gate.remote('app', 'alice', human)]);
  t.match(lsPerson.stdout, new RegExp(`${bad}\\s+${ref}`), 'a person is shown the ref');
  const fetched = await gitAsync(p, ['fetch', gate.remote('app', 'alice', human), ref]);
  t.equal(fetched.code, 0, fetched.stderr);
  t.equal((await gitAsync(p, ['rev-parse', 'FETCH_HEAD'])).stdout.trim(), bad, 'the person has the commit');
  t.equal((await gitAsync(p, ['cat-file', '-e', parent])).code, 0, 'and its parent');

  // `escalation show N`: the escalation and the diff.
  const data = ['--data', gate.data];
  const show = await cli(['escalation', 'show', String(id), ...data]);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, new RegExp(`kept for review: ${ref} = ${bad}`));
  t.match(show.stdout, /\+    assert add\(1, 2\) == 4  # spec says 4/, 'the diff of the test');
  t.match(show.stdout, /\+    return a \+ b \+ 0/, 'and of the first commit');
  t.match(show.stdout, /2 commit\(s\)/);
  t.equal((await cli(['escalation', 'show', '99999', ...data])).code, 2, 'an unknown id exits 2');

  // Closing: a person is required; an agent's token is refused; the person's token names them.
  const nobody = await cli(['escalation', 'close', String(id), '--note', 'x', ...data]);
  t.equal(nobody.code, 2, nobody.stdout + nobody.stderr);
  t.match(nobody.stderr, /say who closes it: --as NAME, or your token in PATCHGATE_TOKEN/);
  const asAgent = await cli(['escalation', 'close', String(id), '--note', 'x', ...data], { PATCHGATE_TOKEN: agent });
  t.equal(asAgent.code, 2);
  t.match(asAgent.stderr, /is agent agent-1's token/);
  t.notOk(asAgent.stderr.includes(agent), 'the token is not echoed');
  t.equal(await refIn(bare, ref), bad, 'a refused close keeps the commits');
  const closed = await cli(['escalation', 'close', String(id), '--note', 'the test was right', ...data], { PATCHGATE_TOKEN: human });
  t.equal(closed.code, 0, closed.stderr);
  t.match(closed.stdout, new RegExp(`escalation ${id} closed \\(audit row \\d+, by alice\\).*let go`));
  t.equal((await listEscalations(gate.srv.sink)).find((e) => e.id === id)?.closed?.actor, 'alice', 'the closer is the person');
  t.equal(await refIn(bare, ref), null, 'the ref is gone once closed');
  t.match((await cli(['escalation', 'show', String(id), ...data])).stdout, /it is closed, and its kept commits were let go/);

  // The printed close command (page and webhook) runs as printed against this gate's data folder.
  await gitAsync(a, ['commit', '-q', '--amend', '-m', 'again']);
  const again = await gitAsync(a, ['push', '-o', 'patchgate.escalate=still 4', 'origin', 'HEAD:refs/heads/agent/fix']);
  const id2 = Number(/escalation (\d+) recorded/.exec(again.stderr)?.[1]);
  t.ok(id2 > id, again.stderr);
  const page = await (await fetch(`${gate.srv.url}/escalations`, { headers: { Authorization: `Basic ${Buffer.from(`alice:${human}`).toString('base64')}` } })).text();
  const printed = new RegExp(`patchgate escalation close ${id2} --data (\\S+) --as &quot;\\$USER&quot; --note &quot;what was decided&quot;`).exec(page);
  t.ok(printed, 'the page prints the close command with the data folder');
  t.equal(printed?.[1], gate.data);
  t.match(page, new RegExp(`patchgate escalation show ${id2} --data `));
  while (bodies.length < 2) await new Promise((r) => setTimeout(r, 20));
  const event = JSON.parse(bodies[1]!) as { close: string };
  t.equal(event.close, `patchgate escalation close ${id2} --data ${gate.data} --as "$USER" --note "what was decided"`);
  const asPrinted = await run('bash', ['-c', event.close.replace(/^patchgate /, `${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} `)], { USER: 'carol', PATCHGATE_DATA: '/nonexistent' });
  t.equal(asPrinted.code, 0, asPrinted.stderr);
  t.equal((await listEscalations(gate.srv.sink)).find((e) => e.id === id2)?.closed?.actor, 'carol', 'closed by the person who ran it');
});
