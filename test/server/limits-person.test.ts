// The size limits on a person's push (issue 47): what they cost follows the size of the push,
// not the length of its history. The sizes come from the quarantine's one listing; the new
// commits are walked only to name the commit and path of a blob over the limit. Through a real
// gate and the real git client: a long history lands without the walk, and a large blob deep in
// it is still refused with its commit and path.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { gitAsync, refIn, seededGate } from '../helpers/gate.js';
import { GIT_ENV, type TestRepo } from '../helpers/repo.js';

/** `count` commits on `branch` from `from`, made in one `git fast-import` (fast where commit by commit is not): `files(i)` is commit i's changes. */
function history(w: TestRepo, branch: string, from: string, count: number, files: (i: number) => Record<string, Buffer>): string[] {
  const parts: Buffer[] = [];
  for (let i = 1; i <= count; i++) {
    parts.push(Buffer.from(`commit refs/heads/${branch}\nmark :${i}\ncommitter A <a@example.test> ${1_767_000_000 + i} +0000\ndata 8\nstep ${String(i).padStart(3, '0')}\n${i === 1 ? `from ${from}\n` : ''}`));
    for (const [path, data] of Object.entries(files(i))) parts.push(Buffer.from(`M 100644 inline ${path}\ndata ${data.length}\n`), data, Buffer.from('\n'));
    parts.push(Buffer.from('\n'));
  }
  execFileSync('git', ['fast-import', '--quiet'], { cwd: w.dir, input: Buffer.concat(parts), env: { ...process.env, ...GIT_ENV } });
  return w.git('rev-list', '--reverse', `${from}..${branch}`).split('\n');
}

type RuleRow = { rule: string; status: string; findings: Array<{ messageId?: string; path?: string; commit?: string }>; details?: Record<string, unknown> };

t.test('a person\'s push of a long history: limits read the sizes, not the history', async (t) => {
  const policy = JSON.stringify({ trustedBranch: 'main', writable: ['src/**'], limits: { maxBlobBytes: 64 * 1024 } });
  const { gate, human, w, bare } = await seededGate(t, { 'src/app.py': 'x = 0\n', 'ci/patchgate.json': policy });
  history(w, 'history', 'main', 400, (i) => ({ [`src/m${i % 7}.py`]: Buffer.from(`x = ${i}\n`) }));
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'history']);
  t.equal(r.code, 0, r.stderr);
  const [row] = gate.srv.audit.query({ kind: 'ref', actor: 'alice', limit: 1 });
  const limits = (row!.rules as RuleRow[]).find((o) => o.rule === 'limits')!;
  t.equal(limits.status, 'pass');
  t.equal(limits.details?.walked, 'no', 'no commit was walked for the limits');
  t.ok((limits.details?.pushedObjects as number) >= 400, `every pushed object was sized (${limits.details?.pushedObjects})`);

  // A blob over the limit, 80 commits below the tip: named by commit and path, and refused.
  const ids = history(w, 'big', 'main', 120, (i) => (i === 40 ? { 'src/data.bin': randomBytes(200 * 1024) } : { 'src/n.py': Buffer.from(`y = ${i}\n`) }));
  const bad = ids[39]!;
  const b = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'big']);
  t.not(b.code, 0, 'refused for a person too');
  t.match(b.stderr, new RegExp(`\\[limits\\] commit ${bad.slice(0, 12)} adds src/data\\.bin, a blob of 200 KiB, over limits\\.maxBlobBytes \\(64 KiB\\)`));
  t.equal(await refIn(bare, 'refs/heads/big'), null);
  const [row2] = gate.srv.audit.query({ kind: 'ref', actor: 'alice', limit: 1 });
  const l2 = (row2!.rules as RuleRow[]).find((o) => o.rule === 'limits')!;
  t.equal(l2.details?.walked, 'to name the blobs over the limit');
});
