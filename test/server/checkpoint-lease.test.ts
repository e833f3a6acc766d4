// Issue 48, item 5: one checkpoint signer per shared log by default. Two gate servers on one
// real PostgreSQL log, each with its own data folder and checkpoint key, both told to checkpoint
// every half second: only the node holding the log's signing lease signs (the other's folder
// gets no checkpoint at all), each says in its log which node signs, the page's chain status on
// the other node names the holder and its last checkpoint, and `audit checkpoint` against the
// other node's folder is refused naming the holder (unless --ignore-lease). When the holder
// stops, the other node takes the lease over and signs. A node told `every-node` signs anyway.
// Skipped with the reason when PostgreSQL is not installed; failed instead in CI.

import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { needPostgres, startPostgres } from '../helpers/postgres.js';
import { startGate, type Gate } from '../helpers/gate.js';
import { cliRun } from '../helpers/serve.js';
import { nodeName } from '../../src/audit/checkpoint-lease.js';

/** Checkpoints in a data folder's own line. */
function signed(data: string): number {
  const f = join(data, 'checkpoints.jsonl');
  return existsSync(f) ? readFileSync(f, 'utf8').trim().split('\n').filter(Boolean).length : 0;
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const why = needPostgres(t);
if (why) {
  t.comment(`skipping the checkpoint lease test: ${why}`);
  t.pass('skipped: ' + why);
} else {
  t.test('two nodes on one PostgreSQL log: one signs, both say which; the other takes over when it stops', async (t) => {
    const pg = await startPostgres(t);
    const logs = new Map<string, string[]>();
    const node = async (): Promise<Gate> => {
      const lines: string[] = [];
      const g = await startGate(t, { auditUrl: pg.url, checkpointEverySeconds: 0.5, log: (l) => void lines.push(l) });
      logs.set(g.data, lines);
      return g;
    };
    const a = await node();
    const b = await node();
    const holderRow = async () => (await pg.psql("SELECT holder FROM checkpoint_lease WHERE expires > now()").catch(() => '')).trim();
    await until('a lease holder', async () => (await holderRow()) !== '');
    const holderName = await holderRow();
    const [holder, other] = holderName === nodeName(a.data) ? [a, b] : [b, a];
    t.equal(holderName, nodeName(holder.data), 'the lease names one node: its host and data folder');
    await until('three checkpoints by the holder', () => signed(holder.data) >= 3);
    await new Promise((r) => setTimeout(r, 1500)); // the other node's ticks ran meanwhile, three times over
    t.equal(signed(other.data), 0, 'the other node signed nothing');
    t.equal(await holderRow(), holderName, 'the holder kept its lease');
    const hLog = logs.get(holder.data)!.join('\n');
    const oLog = logs.get(other.data)!.join('\n');
    t.match(hLog, `patchgate: checkpoint: this node (${holderName}) signs this shared log's checkpoints (lease until `, 'the holder says it signs');
    t.match(oLog, `patchgate: checkpoint: node ${holderName} (key patchgate.invalid/audit/`, 'the other names the holder and its key');
    t.match(oLog, /signs this shared log's checkpoints; this node does not while that lease holds/);
    t.equal(oLog.split('\n').filter((l) => l.includes('this node does not')).length, 1, 'said once, not on every tick');

    // The page of the node that does not sign: the holder, and the shared log's last checkpoint.
    const human = await other.tokenAsync('alice', 'human');
    const chain = await (await fetch(`${other.srv.url}/chain`, { headers: { Authorization: `Basic ${Buffer.from(`alice:${human}`).toString('base64')}` } })).text();
    const signer = /<dd id="checkpoint-signer" class="">([^<]*)<\/dd>/.exec(chain)?.[1] ?? '';
    t.match(signer, new RegExp(`^node ${holderName.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(key patchgate\\.invalid/audit/[0-9a-f]{16}\\+[0-9a-f]{8}\\), lease until `), 'the page names the holder');
    t.notMatch(signer, /this node/);
    t.match(chain, new RegExp(`rows, by node ${holderName.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}, <span class="ok">still a prefix of the chain</span>`), 'and the last checkpoint, by the holder, still a prefix');

    // audit checkpoint against the other node's folder: refused, naming the holder; signed with --ignore-lease.
    const env = { ...process.env, PATCHGATE_AUDIT_URL: pg.url };
    const refused = await cliRun(['audit', 'checkpoint', '--data', other.data], { env });
    t.equal(refused.code, 1, 'not signed');
    t.match(refused.stdout, `not signed: node ${holderName} (key patchgate.invalid/audit/`);
    t.match(refused.stdout, /signs this shared log's checkpoints; run it with that node's data folder, or give --ignore-lease/);
    t.equal(signed(other.data), 0);
    const anyway = await cliRun(['audit', 'checkpoint', '--data', other.data, '--ignore-lease'], { env });
    t.equal(anyway.code, 0, anyway.stdout + anyway.stderr);
    t.equal(signed(other.data), 1, '--ignore-lease signs with the other folder\'s key');
    t.equal(await holderRow(), holderName, 'and takes no lease');
    const own = await cliRun(['audit', 'checkpoint', '--data', holder.data], { env });
    t.equal(own.code, 0, own.stdout + own.stderr);
    t.match(own.stdout, `signer: this node (${holderName}) holds this shared log's signing lease (until `, 'the holder\'s folder signs, under the lease it holds');
    t.notMatch(refused.stdout + own.stdout + anyway.stdout + hLog + oLog, pg.password, 'no password anywhere');

    // The holder stops: it gives the lease back, the other node takes it over and signs.
    const before = signed(other.data);
    await holder.srv.close();
    await until('the other node to take the lease', async () => (await holderRow()) === nodeName(other.data), 30_000);
    await until('a checkpoint by the new holder', () => signed(other.data) > before, 30_000);
    t.match(logs.get(other.data)!.join('\n'), `patchgate: checkpoint: this node (${nodeName(other.data)}) signs this shared log's checkpoints`, 'the new holder says so');

    // A node told every-node signs with its own key while another holds the lease.
    const c = await startGate(t, { auditUrl: pg.url, checkpointEverySeconds: 0.5, checkpointSigner: 'every-node', log: () => {} });
    await until('a checkpoint by the every-node node', () => signed(c.data) >= 1, 30_000);
    t.equal(await holderRow(), nodeName(other.data), 'it takes no lease');
  });
}
