// Request-level fuzz of the HTTP front: a corpus of malformed, aborted, stalled, oversized
// and lying requests to git-upload-pack, git-receive-pack and info/refs, sent over raw
// sockets with a valid token. One of them (an aborted upload-pack body) used to end the
// process. After the corpus the server must still answer, a real agent push must still land
// and be audited, nothing the corpus sent may have moved a ref, and the hash chain verifies.

import t from 'tap';
import { gzipSync } from 'node:zlib';
import { TestRepo } from '../helpers/repo.js';
import { bareDir, gitAsync, refIn, startGate } from '../helpers/gate.js';
import { head, pkt, rawRequest, type RawResult, type Step } from '../helpers/raw-http.js';

const Z = '0'.repeat(40);
const N = '1'.repeat(40);
// idle and request deadlines leave room for the seed and final pushes on a loaded machine (a first
// push starts the parse worker, and receive-pack is silent while its hook runs), and stay under
// rawRequest's 20 s deadline, so every stalled case is ended by the server.
const LIMITS = { commandTimeoutMs: 1500, requestTimeoutMs: 15_000, idleTimeoutMs: 8000, maxCommandBytes: 64 * 1024, maxBodyBytes: 2 * 1024 * 1024, otherTimeoutMs: 6000 };

interface Case {
  name: string;
  steps: (secret: string) => Step[];
  /** Statuses that are a correct answer; absent: any answer or a closed connection. */
  status?: number[];
  body?: RegExp;
}

const post = (svc: 'upload-pack' | 'receive-pack', secret: string, extra: Record<string, string | number> = {}) =>
  head('POST', `/app.git/git-${svc}`, { 'Content-Type': `application/x-git-${svc}-request`, ...extra }, secret);
const withLength = (svc: 'upload-pack' | 'receive-pack', secret: string, body: string | Buffer, extra: Record<string, string | number> = {}): Step[] =>
  [post(svc, secret, { 'Content-Length': Buffer.byteLength(body), ...extra }), body];
const command = (ref: string, caps = ' report-status side-band-64k') => pkt(`${Z} ${N} ${ref}\0${caps}`);
const want = pkt(`want ${N} multi_ack_detailed side-band-64k\n`);

const corpus: Case[] = [];
for (const svc of ['upload-pack', 'receive-pack'] as const) {
  corpus.push(
    { name: `${svc}: body promised, nothing sent, aborted`, steps: (s) => [post(svc, s, { 'Content-Length': 1000 }), { wait: 200 }, 'abort'] },
    { name: `${svc}: flush only, then aborted`, steps: (s) => [post(svc, s, { 'Content-Length': 1000 }), '0000', { wait: 200 }, 'abort'] },
    // git's probe before a body over http.postBuffer: answered as git http-backend does, 200 and nothing else.
    { name: `${svc}: flush only (git's probe)`, steps: (s) => withLength(svc, s, '0000'), status: [200], body: /^$/ },
    { name: `${svc}: flush only, gzipped`, steps: (s) => withLength(svc, s, gzipSync(Buffer.from('0000')), { 'Content-Encoding': 'gzip' }), status: [200], body: /^$/ },
    { name: `${svc}: flush, then more`, steps: (s) => withLength(svc, s, '0000' + pkt('done\n')), status: [400], body: /is a probe and carries nothing after it/ },
    { name: `${svc}: flush, then a stall`, steps: (s) => [post(svc, s, { 'Transfer-Encoding': 'chunked' }), '4\r\n0000\r\n', { wait: 2500 }], status: [408] },
    { name: `${svc}: empty body`, steps: (s) => withLength(svc, s, ''), status: [400] },
    { name: `${svc}: truncated pkt-line`, steps: (s) => withLength(svc, s, '00a0' + '0'.repeat(20)), status: [400], body: /truncated pkt-line/ },
    { name: `${svc}: length is not hex`, steps: (s) => withLength(svc, s, 'zzzz0000'), status: [400], body: /malformed pkt-line length/ },
    { name: `${svc}: pkt-line longer than git writes`, steps: (s) => withLength(svc, s, 'ffff' + 'a'.repeat(100)), status: [400] },
    { name: `${svc}: v2 delimiter`, steps: (s) => withLength(svc, s, '0001'), status: [400], body: /protocol v2/ },
    { name: `${svc}: v2 command`, steps: (s) => withLength(svc, s, pkt('command=ls-refs\n') + '0000'), status: [400], body: /protocol v0 only/ },
    { name: `${svc}: command section past the limit`, steps: (s) => [post(svc, s, { 'Transfer-Encoding': 'chunked' }), ...chunked(svc === 'upload-pack' ? pkt(`want ${N}\n`).repeat(2000) : command('refs/heads/a', '').repeat(1000))], status: [413] },
    { name: `${svc}: declared length past the limit`, steps: (s) => [post(svc, s, { 'Content-Length': 10 * 1024 * 1024 }), 'aaaa'], status: [413] },
    { name: `${svc}: one byte every 100 ms (slow body)`, steps: (s) => [post(svc, s, { 'Content-Length': 200 }), ...Array.from({ length: 40 }, (_, i): Step[] => [(svc === 'upload-pack' ? want : command('refs/heads/slow'))[i % 10]!, { wait: 100 }]).flat()], status: [408] },
    { name: `${svc}: wrong content type`, steps: (s) => [head('POST', `/app.git/git-${svc}`, { 'Content-Type': 'text/plain', 'Content-Length': 4 }, s), '0000'], status: [415] },
    { name: `${svc}: deflate encoding`, steps: (s) => withLength(svc, s, '0000', { 'Content-Encoding': 'deflate' }), status: [415] },
    { name: `${svc}: gzip that is not gzip`, steps: (s) => withLength(svc, s, 'not gzip at all', { 'Content-Encoding': 'gzip' }), status: [400], body: /not valid gzip/ },
    { name: `${svc}: gzip of 3 MB of zeros`, steps: (s) => withLength(svc, s, gzipSync(Buffer.alloc(3 * 1024 * 1024, '0')), { 'Content-Encoding': 'gzip' }), status: [400] },
    { name: `${svc}: chunked with a broken chunk size`, steps: (s) => [post(svc, s, { 'Transfer-Encoding': 'chunked' }), 'zz\r\nabc\r\n'] },
    { name: `${svc}: unauthenticated, aborted`, steps: () => [head('POST', `/app.git/git-${svc}`, { 'Content-Type': `application/x-git-${svc}-request`, 'Content-Length': 500 }), '00', 'abort'] },
    { name: `${svc}: GET instead of POST`, steps: (s) => [head('GET', `/app.git/git-${svc}`, {}, s)], status: [405] },
    { name: `${svc}: headers never finish (slowloris)`, steps: () => [`POST /app.git/git-${svc} HTTP/1.1\r\nHost: x\r\n`, { wait: 8000 }] },
  );
}
corpus.push(
  { name: 'upload-pack: want line, then aborted', steps: (s) => [post('upload-pack', s, { 'Content-Length': 5000 }), want, { wait: 300 }, 'abort'] },
  { name: 'upload-pack: want of an unknown object', steps: (s) => withLength('upload-pack', s, want + '0000' + pkt('done\n')) },
  { name: 'upload-pack: first line is not a want', steps: (s) => withLength('upload-pack', s, pkt(`have ${N}\n`) + '0000'), status: [400], body: /must start with "want/ },
  { name: 'receive-pack: command, then aborted before the pack', steps: (s) => [post('receive-pack', s, { 'Content-Length': 5000 }), command('refs/heads/fuzz-abort') + '0000', { wait: 300 }, 'abort'] },
  { name: 'receive-pack: command, then the pack stalls', steps: (s) => [post('receive-pack', s, { 'Content-Length': 5000 }), command('refs/heads/fuzz-stall') + '0000' + 'PACK', { wait: 7000 }] },
  { name: 'receive-pack: command, then a garbage pack', steps: (s) => withLength('receive-pack', s, command('refs/heads/fuzz-garbage') + '0000' + 'PACK' + 'x'.repeat(5000)) },
  { name: 'receive-pack: command, then more than the body limit', steps: (s) => [post('receive-pack', s, { 'Transfer-Encoding': 'chunked' }), ...chunked(command('refs/heads/fuzz-big') + '0000' + 'PACK' + 'y'.repeat(3 * 1024 * 1024))] },
  { name: 'receive-pack: command, then a gzip bomb past the body limit', steps: (s) => withLength('receive-pack', s, gzipSync(Buffer.concat([Buffer.from(command('refs/heads/fuzz-gzbomb') + '0000PACK', 'latin1'), Buffer.alloc(8 * 1024 * 1024)])), { 'Content-Encoding': 'gzip' }) },
  { name: 'receive-pack: shallow line after a command', steps: (s) => withLength('receive-pack', s, command('refs/heads/a') + pkt(`shallow ${N}`) + '0000'), status: [400] },
  { name: 'receive-pack: malformed command', steps: (s) => withLength('receive-pack', s, pkt(`${Z} ${N}\0report-status`) + '0000'), status: [400], body: /malformed ref command/ },
  { name: 'receive-pack: signed push', steps: (s) => withLength('receive-pack', s, pkt('push-cert\0report-status\n') + '0000'), status: [400], body: /signed pushes/ },
  { name: 'receive-pack: only refs outside heads and tags', steps: (s) => withLength('receive-pack', s, command('refs/notes/fuzz') + '0000'), status: [200], body: /ng refs\/notes\/fuzz patchgate: only refs\/heads/ },
  { name: 'receive-pack: delete of a branch that does not exist', steps: (s) => withLength('receive-pack', s, pkt(`${N} ${Z} refs/heads/nope\0report-status`) + '0000') },
  { name: 'info/refs: GET with a body, aborted', steps: (s) => [head('GET', '/app.git/info/refs?service=git-upload-pack', { 'Content-Length': 100 }, s), 'abc', 'abort'], status: [0, 400] },
  { name: 'info/refs: aborted before the answer', steps: (s) => [head('GET', '/app.git/info/refs?service=git-receive-pack', {}, s), 'abort'] },
  { name: 'info/refs: unknown service', steps: (s) => [head('GET', '/app.git/info/refs?service=git-upload-archive', {}, s)], status: [403] },
  { name: 'HEAD: aborted', steps: (s) => [head('GET', '/app.git/HEAD', {}, s), 'abort'] },
  { name: 'not HTTP at all', steps: () => ['\x16\x03\x01\x02\x00garbage\r\n\r\n'], status: [0, 400] },
  { name: 'request line without a version', steps: () => ['GET /\r\n\r\n'], status: [0, 400, 401, 404] }, // 401: `/` is the audit page's login
  { name: 'API: POST with a body, aborted', steps: (s) => [head('POST', '/api/repos?name=fuzz', { 'Content-Length': 1000 }, s), 'x', 'abort'] },
  { name: 'half-closed after headers', steps: (s) => [post('receive-pack', s, { 'Content-Length': 100 }), 'end', { wait: 500 }], status: [0, 400] },
);

function chunked(body: string): Step[] {
  const out: Step[] = [];
  for (let i = 0; i < body.length; i += 16384) {
    const c = body.slice(i, i + 16384);
    out.push(`${Buffer.byteLength(c, 'latin1').toString(16)}\r\n`, Buffer.from(c, 'latin1'), '\r\n');
  }
  out.push('0\r\n\r\n');
  return out;
}

t.test('the server survives a corpus of malformed and aborted requests; a good push still lands; the chain verifies', async (t) => {
  const gate = await startGate(t, { limits: LIMITS });
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const agent = gate.token('agent-1', 'agent');
  const admin = gate.token('root', 'admin');
  const w = TestRepo.init(t);
  w.commit('base', { 'src/app.py': 'x = 1\n', 'tests/test_app.py': 'def test_x():\n    assert True\n' });
  const seed = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  t.equal(seed.code, 0, seed.code ? seed.stderr : 'a person seeds main');

  // All at once: the server must keep each request apart.
  const results = await Promise.all(corpus.map((c) => rawRequest(gate.srv.port, c.steps(c.name.startsWith('API') ? admin : agent), 20_000).then((r) => [c, r] as [Case, RawResult])));
  for (const [c, r] of results) {
    t.not(r.ended, 'deadline', `${c.name}: the server answered or closed the connection (${r.status})`);
    if (c.status) t.ok(c.status.includes(r.status), `${c.name}: status ${r.status} is one of ${c.status.join('/')}${c.status.includes(r.status) ? '' : `: ${r.body.slice(0, 200)}`}`);
    if (c.body) t.match(r.body, c.body, `${c.name}: says why`);
  }

  const health = await rawRequest(gate.srv.port, ['GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']);
  t.equal(health.status, 200, `healthz still ok: ${health.body.trim()}`);

  const bare = bareDir(gate, 'app');
  for (const ref of ['fuzz-abort', 'fuzz-stall', 'fuzz-garbage', 'fuzz-big', 'fuzz-gzbomb', 'slow', 'a']) t.equal(await refIn(bare, `refs/heads/${ref}`), null, `refs/heads/${ref} was not created`);
  t.equal(await refIn(bare, 'refs/notes/fuzz'), null, 'refs/notes/fuzz was not created');

  w.checkout('agent/fix', true);
  const tip = w.commit('fix', { 'src/app.py': 'x = 2\n' });
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'agent/fix']);
  t.equal(r.code, 0, r.code ? r.stderr : 'a good agent push lands after the corpus');
  t.equal(await refIn(bare, 'refs/heads/agent/fix'), tip);
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  const good = rows.filter((row) => row.ref === 'refs/heads/agent/fix');
  t.equal(good.length, 1);
  t.equal(good[0]!.verdict, 'accept');
  t.equal(good[0]!.moved, 1, 'post-receive confirmed the move');
  // Only well-formed commands reach the policy (the delete of refs/heads/nope does); none of them moved.
  for (const row of rows.filter((x) => x !== good[0])) t.ok(row.verdict === 'reject' && row.moved !== 1, `corpus ref ${row.ref} was refused and did not move`);
  const v = gate.srv.audit.verify();
  t.ok(v.ok, `the audit chain verifies (${JSON.stringify(v).slice(0, 200)})`);
  t.equal(gate.srv.hooks.sessions.size, 0, 'no push session is left open');
});
