// The update hook (hooks/update): there only while a push of several refs is in flight
// (src/server/hook/update-hook.ts), so a one-ref push runs none; its shortcut
// (src/server/hook/pass.ts): a push whose refs pre-receive accepted all is never asked about
// again by the update hook; a push with a refused ref still asks for every ref and is refused
// ref by ref; the pass and the hook are gone once receive-pack ends; and the shim itself takes
// only a complete, identical line of its own receive-pack's file, asking the daemon (here:
// none, so it refuses) for anything else.

import t from 'tap';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitAsync, refIn, seededGate } from '../helpers/gate.js';
import { tempDir } from '../helpers/repo.js';

const UPDATE = fileURLToPath(new URL('../../hooks/update', import.meta.url));

async function answers(gate: Awaited<ReturnType<typeof seededGate>>['gate'], hook: string, verdict: string): Promise<number> {
  const m = await gate.srv.metrics.registry.getSingleMetric('patchgate_hook_answers_total')!.get();
  return m.values.find((v) => v.labels.hook === hook && v.labels.verdict === verdict)?.value ?? 0;
}

async function passes(data: string): Promise<string[]> {
  for (let i = 0; i < 40; i++) {
    const left = readdirSync(join(data, 'hook-pass'));
    if (left.length === 0) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
  return readdirSync(join(data, 'hook-pass'));
}

/** hooks/update is gone (polled: receive-pack's exit reaches the daemon a moment after the client's answer at the latest). */
async function updateHookGone(bare: string): Promise<boolean> {
  for (let i = 0; i < 40 && existsSync(join(bare, 'hooks/update')); i++) await new Promise((r) => setTimeout(r, 50));
  return !existsSync(join(bare, 'hooks/update'));
}

t.test('accepted whole: no update request; one ref refused: every ref asks, refused ref by ref', async (t) => {
  // Whether hooks/update is in place while each push is judged.
  const during: boolean[] = [];
  let bareDir = '';
  const { gate, agent, w, bare } = await seededGate(t, { 'src/app.py': 'x = 1\n', 'tests/test_app.py': 'def test_x():\n    assert True\n' }, { beforeJudge: async () => void (bareDir && during.push(existsSync(join(bareDir, 'hooks/update')))) });
  bareDir = bare;
  const remote = gate.remote('app', 'agent-1', agent);
  t.notOk(existsSync(join(bare, 'hooks/update')), 'a served repository has no update hook between pushes');

  w.checkout('agent/solo', true);
  w.commit('solo', { 'src/app.py': 'x = 9\n' });
  const solo = await gitAsync(w.dir, ['push', remote, 'agent/solo']);
  t.equal(solo.code, 0, solo.stderr);
  t.same(during, [false], 'a one-ref push was judged with no update hook in place');
  t.equal(await answers(gate, 'pre-receive', 'accept'), 2, 'the seed and the one-ref push: pre-receive asked');
  const soloRow = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.same(soloRow.map((x) => [x.ref, x.moved]), [['refs/heads/agent/solo', 1]], 'its confirm row (from git\'s report) is there when the client\'s push returns');

  w.checkout('agent/one', true);
  const one = w.commit('one', { 'src/app.py': 'x = 2\n' });
  w.checkout('agent/two', true);
  const two = w.commit('two', { 'src/app.py': 'x = 3\n' });
  const r = await gitAsync(w.dir, ['push', remote, 'agent/one', 'agent/two']);
  t.equal(r.code, 0, r.code ? r.stderr : 'two refs accepted');
  t.equal(await refIn(bare, 'refs/heads/agent/one'), one);
  t.equal(await refIn(bare, 'refs/heads/agent/two'), two);
  t.equal(await answers(gate, 'pre-receive', 'accept'), 3, 'and this push: pre-receive asked');
  t.same(during, [false, true], 'the two-ref push was judged with the update hook in place');
  t.equal(await answers(gate, 'update', 'accept') + await answers(gate, 'update', 'reject'), 0, 'no update hook asked the daemon: both refs took the pass');
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' }).filter((x) => x.ref !== 'refs/heads/agent/solo');
  t.same(rows.map((x) => [x.ref, x.verdict, x.moved]).sort(), [['refs/heads/agent/one', 'accept', 1], ['refs/heads/agent/two', 'accept', 1]], 'both audited as accepted and moved');
  t.same(await passes(gate.data), [], 'the pass is gone once receive-pack ended');
  t.ok(await updateHookGone(bare), 'so is the update hook');

  w.checkout('agent/three', true);
  const three = w.commit('three', { 'src/app.py': 'x = 4\n' });
  w.checkout('agent/bad', true);
  w.commit('bad', { 'tests/test_app.py': 'def test_x():\n    pass\n' });
  const mixed = await gitAsync(w.dir, ['push', remote, 'agent/three', 'agent/bad']);
  t.not(mixed.code, 0, 'one ref refused');
  t.match(mixed.stderr, /agent\/bad \(hook declined\)|agent\/bad -> agent\/bad \(hook declined\)/, 'the refused ref is refused by the update hook');
  t.equal(await refIn(bare, 'refs/heads/agent/three'), three, 'the accepted ref landed');
  t.equal(await refIn(bare, 'refs/heads/agent/bad'), null, 'the refused ref did not');
  t.equal(await answers(gate, 'update', 'accept'), 1, 'the accepted ref asked the daemon');
  t.equal(await answers(gate, 'update', 'reject'), 1, 'so did the refused one');
  t.same(await passes(gate.data), [], 'no pass left');
  t.ok(await updateHookGone(bare), 'no update hook left');
  const moved = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' }).filter((x) => x.ref === 'refs/heads/agent/three' || x.ref === 'refs/heads/agent/bad');
  t.same(moved.map((x) => [x.ref, x.verdict, x.moved]).sort(), [['refs/heads/agent/bad', 'reject', 0], ['refs/heads/agent/three', 'accept', 1]], 'the accepted ref confirmed as moved, the refused one as not');
});

/** hooks/update run by hand in `<data>/repos/app.git`, as git runs it: $PPID is this process. */
function runShim(data: string, args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(join(data, 'repos/app.git/hooks/update'), args, { cwd: join(data, 'repos/app.git') }, (err, _out, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stderr }));
  });
}

t.test('the shim takes only a complete, identical line of its own receive-pack', async (t) => {
  const data = tempDir('pg-pass-');
  mkdirSync(join(data, 'repos/app.git/hooks'), { recursive: true });
  copyFileSync(UPDATE, join(data, 'repos/app.git/hooks/update'));
  mkdirSync(join(data, 'hook-pass'));
  const ref = 'refs/heads/agent/x';
  const old = '0'.repeat(40);
  const neu = 'a'.repeat(40);
  const pass = join(data, 'hook-pass', String(process.pid));
  const none = await runShim(data, [ref, old, neu]);
  t.equal(none.code, 1, 'no pass: it asks the daemon (none runs here) and refuses');
  t.match(none.stderr, /the gate daemon is not running/);
  writeFileSync(pass, `${'b'.repeat(40)} ${'c'.repeat(40)} refs/heads/other\n${old} ${neu} ${ref}\n`);
  t.equal((await runShim(data, [ref, old, neu])).code, 0, 'its line: accepted without asking');
  t.equal((await runShim(data, [ref, old, 'd'.repeat(40)])).code, 1, 'another new id: asks, refused');
  t.equal((await runShim(data, ['refs/heads/agent', old, neu])).code, 1, 'a prefix of the ref: asks, refused');
  writeFileSync(pass, `${old} ${neu} ${ref}`);
  t.equal((await runShim(data, [ref, old, neu])).code, 1, 'a line without its newline (a write cut short) is not taken');
  writeFileSync(join(data, 'hook-pass', String(process.pid + 1)), `${old} ${neu} ${ref}\n`);
  writeFileSync(pass, '');
  t.equal((await runShim(data, [ref, old, neu])).code, 1, "another receive-pack's pass is not taken");
});

t.test('a push of several refs whose update hook cannot be put in place is refused whole, before judging', async (t) => {
  let judged = 0;
  const { gate, agent, w, bare } = await seededGate(t, { 'src/app.py': 'x = 1\n' }, { beforeJudge: async () => void judged++ });
  const remote = gate.remote('app', 'agent-1', agent);
  const before = judged;
  // The daemon writes the hook next to its place first: a folder there makes that fail.
  mkdirSync(join(bare, 'hooks', `update.patchgate-${process.pid}.tmp`));
  w.checkout('agent/a', true);
  w.commit('a', { 'src/app.py': 'x = 2\n' });
  w.checkout('agent/b', true);
  w.commit('b', { 'src/app.py': 'x = 3\n' });
  const r = await gitAsync(w.dir, ['push', remote, 'agent/a', 'agent/b']);
  t.not(r.code, 0, 'refused');
  t.match(r.stderr, /could not put its per-ref hook \(hooks\/update\) in place/, 'saying why');
  t.match(r.stderr, /push each ref on its own/, 'and what to do');
  const rows = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1' });
  t.same(rows.map((x) => [x.ref, x.verdict]).sort(), [['refs/heads/agent/a', 'reject'], ['refs/heads/agent/b', 'reject']], 'audited: both refs refused');
  t.equal(await refIn(bare, 'refs/heads/agent/a'), null, 'nothing moved');
  t.equal(await refIn(bare, 'refs/heads/agent/b'), null);
  t.equal(judged, before, 'nothing was judged');
  t.notOk(existsSync(join(bare, 'hooks/update')), 'no hook left half in place');
  const one = await gitAsync(w.dir, ['push', remote, 'agent/b']);
  t.equal(one.code, 0, `one ref alone goes through: ${one.stderr}`);
});
