// What moved, from git's own report (src/server/report-status.ts): the reader on real
// `git receive-pack --stateless-rpc` output (with and without a side band, an accepted and a
// refused ref, no report asked for, cut short, fed one byte at a time); the answer's end held
// until the confirm rows are written (and not longer than its cap); and, through the gate, a
// client that asks for no report still gets its confirm rows, read from the refs.

import t from 'tap';
import http from 'node:http';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { interposeStdout, ReportStatusReader } from '../../src/server/report-status.js';
import { seededGate, refIn } from '../helpers/gate.js';
import { GIT_ENV, TestRepo, tempDir } from '../helpers/repo.js';

const ZERO = '0'.repeat(40);
const pkt = (s: string | Buffer): Buffer => {
  const b = Buffer.isBuffer(s) ? s : Buffer.from(s);
  return Buffer.concat([Buffer.from((b.length + 4).toString(16).padStart(4, '0')), b]);
};
const FLUSH = Buffer.from('0000');

/** A work repo with one commit, a bare repo to push it to, and the pack of that commit. */
function fixture(t: { teardown(fn: () => unknown): void }, refuse = false) {
  const w = TestRepo.init(t);
  const head = w.commit('one', { 'a.txt': 'a\n' });
  const bare = tempDir('pg-rs-bare-');
  spawnSync('git', ['init', '-q', '--bare', bare], { env: { ...process.env, ...GIT_ENV } });
  if (refuse) {
    writeFileSync(join(bare, 'hooks/pre-receive'), '#!/bin/sh\nexit 1\n');
    chmodSync(join(bare, 'hooks/pre-receive'), 0o755);
  }
  const pack = spawnSync('git', ['pack-objects', '--stdout', '--revs', '-q'], { cwd: w.dir, input: `${head}\n`, env: { ...process.env, ...GIT_ENV } }).stdout;
  return { w, head, bare, pack };
}

/** The request body git's client sends: one command with `caps`, a flush, the pack. */
function body(head: string, ref: string, caps: string[], pack: Buffer): Buffer {
  return Buffer.concat([pkt(`${ZERO} ${head} ${ref}\0${caps.join(' ')}\n`), FLUSH, pack]);
}

/** Real receive-pack output for that request. */
function receivePack(bare: string, input: Buffer): Buffer {
  const r = spawnSync('git', ['receive-pack', '--stateless-rpc', bare], { input, env: { ...process.env, ...GIT_ENV } });
  return r.stdout;
}

function read(caps: string[], out: Buffer, step = out.length) {
  const r = new ReportStatusReader(caps);
  for (let i = 0; i < out.length; i += step) r.push(out.subarray(i, i + step));
  return r.outcome;
}

t.test('the reader on real receive-pack output', async (t) => {
  const ref = 'refs/heads/agent/x';
  for (const caps of [['report-status', 'side-band-64k'], ['report-status'], ['report-status-v2', 'side-band-64k', 'quiet'], ['report-status', 'side-band']]) {
    const f = fixture(t);
    const out = receivePack(f.bare, body(f.head, ref, caps, f.pack));
    t.equal(spawnSync('git', ['-C', f.bare, 'rev-parse', ref], { encoding: 'utf8' }).stdout.trim(), f.head, `${caps.join(',')}: git moved the ref`);
    t.same(read(caps, out), { unpackOk: true, refs: new Map([[ref, true]]) }, `${caps.join(',')}: ok ${ref}`);
    t.same(read(caps, out, 1), { unpackOk: true, refs: new Map([[ref, true]]) }, `${caps.join(',')}: the same fed one byte at a time`);
    t.equal(read(caps, out.subarray(0, out.length - 6)), null, `${caps.join(',')}: cut short, no report`);
    t.equal(read(caps.filter((c) => !c.startsWith('report-status')), out), null, `${caps.join(',')}: read as if no report was asked for, none`);
  }
  const bad = fixture(t, true);
  const caps = ['report-status', 'side-band-64k'];
  const out = receivePack(bad.bare, body(bad.head, ref, caps, bad.pack));
  t.same(read(caps, out), { unpackOk: true, refs: new Map([[ref, false]]) }, 'a ref the pre-receive hook declined: ng');
  const none = fixture(t);
  const quiet = receivePack(none.bare, body(none.head, ref, ['side-band-64k'], none.pack));
  t.equal(read(['side-band-64k'], quiet), null, 'a client that asked for no report gets none');
  t.equal(read(caps, Buffer.from('zzzz not a pkt-line')), null, 'garbage: no report');
});

/** A child that prints and exits; its stdout interposed with `hold`; resolves with what reached the end. */
function run(hold: Promise<unknown>, maxHoldMs: number, onEnd: () => void) {
  const ps = spawn(process.execPath, ['-e', 'process.stdout.write("0008abc\\n0000")']);
  const seen: Buffer[] = [];
  interposeStdout(ps, (c) => seen.push(c), () => hold, maxHoldMs);
  const got: Buffer[] = [];
  return new Promise<{ out: string; tapped: string }>((resolve) => {
    ps.stdout!.pipe(new Writable({ write(c, _e, cb) { got.push(c); cb(); }, final(cb) { onEnd(); cb(); resolve({ out: Buffer.concat(got).toString(), tapped: Buffer.concat(seen).toString() }); } }));
  });
}

t.test('the answer ends only once the hold settles, or at its cap', async (t) => {
  let release!: () => void;
  let released = false;
  let endedBeforeRelease: boolean | null = null;
  const hold = new Promise<void>((r) => (release = r));
  const done = run(hold, 60_000, () => (endedBeforeRelease = !released));
  // Long after the child's output ended, the end is still held.
  await new Promise((r) => setTimeout(r, 300));
  t.equal(endedBeforeRelease, null, 'not ended while the hold is pending');
  released = true;
  release();
  const r = await done;
  t.equal(endedBeforeRelease, false, 'ended after the hold settled');
  t.equal(r.out, '0008abc\n0000', 'every byte passed through');
  t.equal(r.tapped, '0008abc\n0000', 'and was shown to the reader');

  // (The cap's timer does not keep a process alive; this test's loop is kept alive meanwhile.)
  const alive = setInterval(() => {}, 1000);
  const capped = await run(new Promise(() => {}), 50, () => {}).finally(() => clearInterval(alive));
  t.equal(capped.out, '0008abc\n0000', 'a hold that never settles ends at the cap');
});

t.test('through the gate: a client that asks for no report still gets its confirm row', async (t) => {
  const { gate, agent, w, bare } = await seededGate(t, { 'src/app.py': 'x = 1\n' });
  const base = w.head();
  const head = w.commit('agent', { 'src/app.py': 'x = 2\n' });
  const pack = spawnSync('git', ['pack-objects', '--stdout', '--revs', '-q'], { cwd: w.dir, input: `${head}\n^${base}\n`, env: { ...process.env, ...GIT_ENV } }).stdout;
  const ref = 'refs/heads/agent/raw';
  const req = body(head, ref, ['side-band-64k', 'agent=raw-client'], pack);
  const res = await new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port: gate.srv.port, method: 'POST', path: '/app.git/git-receive-pack', headers: { 'Content-Type': 'application/x-git-receive-pack-request', 'Content-Length': req.length, Authorization: `Basic ${Buffer.from(`agent-1:${agent}`).toString('base64')}` } }, (m) => {
      const parts: Buffer[] = [];
      m.on('data', (c: Buffer) => parts.push(c));
      m.on('end', () => resolve({ status: m.statusCode ?? 0, body: Buffer.concat(parts) }));
    });
    r.on('error', reject);
    r.end(req);
  });
  t.equal(res.status, 200, 'answered');
  t.match(res.body.toString('latin1'), /patchgate: ACCEPT refs\/heads\/agent\/raw/, 'the gate accepted it');
  t.equal(await refIn(bare, ref), head, 'the ref moved');
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.same(rows.map((x) => [x.ref, x.verdict, x.moved]), [[ref, 'accept', 1]], 'confirmed as moved (read from the ref) by the time the answer ended');
});
