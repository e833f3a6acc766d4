// Intent before effect with a real PostgreSQL that the test stops and starts: the store down
// before the forward (refused, nothing forwarded), during it and after it (accepted; after a
// restart upstream's refs and the log agree, and the log verifies).

import t from 'tap';
import { join } from 'node:path';
import { tempDir } from '../helpers/repo.js';
import { gitAsync, refIn } from '../helpers/gate.js';
import { needPostgres, startPostgres } from '../helpers/postgres.js';
import { openAuditSink, parseAuditUrl } from '../../src/audit/sink.js';
import { agree, holdingHook, intents, pushRows, setup, waitFor } from '../helpers/intent.js';

t.test('PostgreSQL down before the forward: refused, nothing forwarded, nothing moves', async (t) => {
  const skip = needPostgres(t);
  if (skip) return t.skip(skip);
  const pg = await startPostgres(t);
  // The store goes down once the push is authenticated (tokens live in it too, so a store that
  // is down before the request refuses it at the door): while it is judged, before the decision.
  let stopAtJudge = false;
  const g = await setup(t, pg.url, { beforeJudge: async () => { if (stopAtJudge) await pg.stop(); } });
  g.w.checkout('agent/fix', true);
  g.w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const forwardsBefore = g.up.served.filter((s) => s.startsWith('POST') && s.includes('receive-pack')).length;
  stopAtJudge = true;
  const r = await gitAsync(g.w.dir, ['push', g.remote(), 'agent/fix']);
  t.not(r.code, 0, 'refused');
  t.match(r.stderr, /remote: patchgate: push refused: the audit log could not record push \S+, so nothing is accepted or forwarded/);
  t.equal(g.up.served.filter((s) => s.startsWith('POST') && s.includes('receive-pack')).length, forwardsBefore, 'no forward reached upstream');
  t.equal(await refIn(g.upDir, 'refs/heads/agent/fix'), null, 'upstream did not move');
  t.equal(await refIn(g.bare, 'refs/heads/agent/fix'), null, 'the gate did not move');
  await pg.start();
  await g.stop();
  await g.start();
  t.same(intents(g.data), [], 'nothing is left unsettled after the restart');
  const sink = await openAuditSink(parseAuditUrl(pg.url, g.data));
  t.teardown(() => sink.close());
  t.equal((await sink.query({ verdict: 'accept', actor: 'agent-1' })).length, 0, 'no accept in the log');
  t.ok((await sink.verify()).ok, 'the log verifies');
});

for (const hook of ['pre-receive', 'post-receive'] as const) {
  const when = hook === 'pre-receive' ? 'during the forward (before upstream moved)' : 'after the forward (upstream moved, its answer not back yet)';
  t.test(`PostgreSQL stopped ${when}: accepted, and after a restart the log and upstream agree`, async (t) => {
    const skip = needPostgres(t);
    if (skip) return t.skip(skip);
    const pg = await startPostgres(t);
    const g = await setup(t, pg.url);
    const hold = holdingHook(g.up, hook, tempDir('pg-hold-'));
    g.w.checkout('agent/fix', true);
    const head = g.w.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
    const push = gitAsync(g.w.dir, ['push', g.remote(), 'agent/fix']);
    await waitFor('upstream to hold the forward', hold.entered);
    const [pushId] = intents(g.data);
    t.ok(pushId, 'the push has an intent entry while its forward runs');
    const sink0 = await openAuditSink(parseAuditUrl(pg.url, g.data));
    t.equal((await pushRows(sink0, pushId!)).refs[0]?.verdict, 'accept', 'the decision is in PostgreSQL before upstream answered');
    await sink0.close();
    await pg.stop();
    hold.release();
    const r = await push;
    t.equal(r.code, 0, `upstream took it, so the gate accepts (its decision was written first): ${r.stderr}`);
    t.equal(await refIn(g.upDir, 'refs/heads/agent/fix'), head);
    t.equal(await refIn(g.bare, 'refs/heads/agent/fix'), head);
    await g.stop(); // the outcome and confirm rows cannot be written: named, and the entry stays
    t.match(g.logs.join('\n'), /NOT written at stop: .*push \S+/);
    t.same(intents(g.data), [pushId], 'the intent entry outlives the stop');
    await pg.start();
    await g.start();
    t.same(intents(g.data), [], 'settled at start');
    t.match(g.logs.join('\n'), /recovery: push \S+: upstream has refs\/heads\/agent\/fix; recorded as upstream.forwarded/);
    const sink = await openAuditSink(parseAuditUrl(pg.url, g.data));
    t.teardown(() => sink.close());
    const rows = await pushRows(sink, pushId!);
    t.equal(rows.confirms.at(-1)?.moved, 1, 'the confirm row says the gate\'s ref moved');
    t.equal((rows.outcomes.find((o) => o.action === 'upstream.forwarded')?.detail as { recovered?: boolean })?.recovered, true, 'recorded by the recovery');
    await agree(t, sink, pushId!, g.upDir, 'refs/heads/agent/fix', head);
  });
}

