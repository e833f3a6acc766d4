// Set-up shared by the intent-before-effect tests (test/upstream/intent*.test.ts): a gate in
// this process in front of a real upstream, restartable on the same data folder, an upstream
// hook that holds a forward until released, and the check that upstream's refs and the log agree.

import type t from 'tap';
import { existsSync, mkdirSync, readdirSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { TestRepo, removeTree, tempDir } from './repo.js';
import { refIn } from './gate.js';
import { startUpstream, type Upstream } from './upstream.js';
import { startServer, type RunningServer } from '../../src/server/app.js';
import { runRepoCreateUpstream } from '../../src/commands/upstream.js';
import type { AuditSink } from '../../src/audit/sink.js';
import { IntentJournal } from '../../src/server/intent-journal.js';
import type { AuditRow } from '../../src/audit/store.js';

export type TT = Parameters<Parameters<typeof t.test>[1]>[0];

export const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
};

export { waitFor } from './repo.js';

/** An upstream hook (pre-receive: before upstream's refs move; post-receive: after) that waits for `release`. */
export function holdingHook(up: Upstream, hook: 'pre-receive' | 'post-receive', dir: string): { entered: () => boolean; release: () => void } {
  const p = join(up.dir('app'), 'hooks', hook);
  mkdirSync(join(up.dir('app'), 'hooks'), { recursive: true });
  writeFileSync(p, `#!/usr/bin/env bash\ncat > /dev/null\ntouch '${dir}/entered'\nwhile [ ! -e '${dir}/release' ]; do sleep 0.05; done\nexit 0\n`);
  chmodSync(p, 0o755);
  return { entered: () => existsSync(join(dir, 'entered')), release: () => writeFileSync(join(dir, 'release'), '') };
}

export async function setup(t: TT, auditUrl?: string, extra: { beforeJudge?: () => Promise<void> } = {}) {
  const up = await startUpstream(t);
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  await up.create('app', w.dir);
  const data = tempDir('pg-intent-');
  const cred = join(tempDir('pg-cred-'), 'token');
  writeFileSync(cred, `${up.secret}\n`);
  await runRepoCreateUpstream({ data, name: 'app', trusted: 'main', upstream: up.url('app'), credentialFile: cred });
  const logs: string[] = [];
  let srv: RunningServer | null = null;
  const start = async () => (srv = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: (l) => logs.push(l), upstreamFreshMs: 0, ...(auditUrl ? { auditUrl } : {}), ...extra }));
  await start();
  // With PostgreSQL the token store is the shared log's, and async.
  const agent = await srv!.tokens.create('agent-1', 'agent');
  t.teardown(async () => {
    await srv?.close();
    removeTree(data);
  });
  const remote = () => `http://agent-1:${agent}@127.0.0.1:${srv!.port}/app.git`;
  return {
    up, w, data, logs, remote, start,
    get srv() {
      return srv!;
    },
    async stop() {
      await srv?.close();
      srv = null;
    },
    bare: join(data, 'repos', 'app.git'),
    upDir: up.dir('app'),
  };
}

/** The push ids still open in a data folder's intent journal (src/server/intent-journal.ts). */
export const intents = (data: string): string[] => new IntentJournal(join(data, 'intents')).list().entries.map((e) => e.pushId);

/** The log's rows of one push (push, ref, confirm, outcome rows), read from `sink`. */
export async function pushRows(sink: AuditSink, pushId: string): Promise<{ refs: AuditRow[]; confirms: AuditRow[]; outcomes: AuditRow[]; refusals: AuditRow[] }> {
  const trace = await sink.getPush(pushId);
  return { refs: trace?.refs ?? [], confirms: trace?.confirms ?? [], outcomes: trace?.outcomes ?? [], refusals: trace?.upstreamRefusals ?? [] };
}

/** Upstream's ref and the log agree: an accepted ref upstream has is `upstream.forwarded`, one it lacks is not. */
export async function agree(t: TT, sink: AuditSink, pushId: string, upDir: string, ref: string, head: string): Promise<void> {
  const upTip = await refIn(upDir, ref);
  const { refs, outcomes, refusals } = await pushRows(sink, pushId);
  const forwarded = outcomes.filter((o) => o.action === 'upstream.forwarded' && JSON.stringify(o.detail).includes(ref));
  const failed = refusals.filter((o) => o.ref === ref);
  if (upTip === head) {
    t.equal(refs[0]?.verdict, 'accept', 'upstream has the commit: the log has its accepting decision');
    t.equal(forwarded.length, 1, 'and one upstream.forwarded row');
    t.equal(failed.length, 0);
  } else {
    t.equal(forwarded.length, 0, 'upstream lacks the commit: no upstream.forwarded row');
    if (refs[0]?.verdict === 'accept') {
      t.equal(failed.length, 1, 'an accepted decision that did not reach upstream has its upstream-refusal row');
      t.equal(refs[0]?.outcome, 'reject', 'and its ref reads as refused');
    }
  }
  const v = await sink.verify();
  t.ok(v.ok, `the log verifies (${JSON.stringify(v)})`);
}

