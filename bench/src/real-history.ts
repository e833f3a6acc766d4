// Measurement (9), issue 47: a real project's whole history, as an adopter's first step. The
// other figures come from generated trees of one commit; this one pushes a real repository
// (../shared/corpus/requests.bundle by default: 6,489 commits, one old commit with a time zone
// git's fsck flags) into a never-seen gated repository, the way a person seeds the gate, and
// then times the agent's first one-file push right after it. Beside it in the same run, the
// same history pushed to plain node-git-server (receive.fsckObjects on, with the same format
// slips relaxed as the gate relaxes them for a person: src/git/push-fsck.ts), so the figure is a
// ratio taken on one machine at one time. Then a repository made with `repo create --upstream`
// in front of that plain copy (a real upstream with the whole history) takes the same agent
// push, as a second node meets the project. The gate runs with its default hook limit (30 s):
// a person's push that the gate's clock refuses is a MISS, not a slow figure.

import { chmodSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { AuditStore } from '../../dist/audit/store.js';
import { TokenStore } from '../../dist/audit/tokens.js';
import { createRepo } from '../../dist/server/repos.js';
import { RELAXED_FSCK_IDS } from '../../dist/git/push-fsck.js';
import { CLI_JS, git as gitRaw, nowMs, REPO_TOP, run, startNodeChild, startServeChild, stopServeChild, tempDir } from './util.js';
import { fileURLToPath } from 'node:url';

export interface RealHistoryResult {
  project: string;
  commits: number;
  objects: number;
  /** The person's push of the whole history through the gate, and to plain node-git-server. */
  personMs: number;
  plainMs: number;
  personOk: boolean;
  /** personMs / plainMs. */
  ratio: number;
  /** The agent's first one-file push right after it. */
  agentMs: number;
  agentOk: boolean;
  /**
   * A second repository on the same gate made with `repo create --upstream` in front of the
   * plain server's copy of the whole history (a real upstream, by file://), as a second node
   * meets a project: the create, then the agent's first push through it.
   */
  upstreamCreateMs: number;
  upstreamAgentMs: number;
  upstreamAgentOk: boolean;
  stderrTail: string;
}

/** git's output, trimmed (util.ts's git returns stdout as it is). */
const git = async (cwd: string, args: string[]): Promise<string> => (await gitRaw(cwd, args)).trim();

const BASELINE_JS = fileURLToPath(new URL('./baseline-server.js', import.meta.url));

/** The corpus bundle of `project` (../shared/corpus), or null when it is not there. */
export function corpusBundle(project: string): string | null {
  const p = join(REPO_TOP, '..', 'shared', 'corpus', `${project}.bundle`);
  return existsSync(p) ? p : null;
}

export async function realHistoryBench(project: string, bundle: string, opts: { log: (s: string) => void; budgetMs: number }): Promise<RealHistoryResult> {
  // The project's clone: what a person pushes.
  const work = tempDir('real-', tmpdir());
  const client = join(work, 'client');
  await run('git', ['clone', '-q', bundle, client], { timeoutMs: 600_000 });
  const head = await git(client, ['rev-parse', 'HEAD']);
  const commits = Number(await git(client, ['rev-list', '--count', 'HEAD']));
  const objects = (await git(client, ['rev-list', '--objects', '--all'])).split('\n').filter(Boolean).length;

  // Plain node-git-server: an empty repository with fsck on, the person's slips relaxed as the gate relaxes them.
  const root = join(work, 'plain');
  const bare = join(root, 'bench.git');
  mkdirSync(bare, { recursive: true });
  await git(bare, ['init', '-q', '--bare', '--initial-branch=main', '.']);
  for (const [k, v] of [['receive.fsckObjects', 'true'], ['http.receivepack', 'true'], ...RELAXED_FSCK_IDS.map((id) => [`receive.fsck.${id}`, 'warn'])] as const) await git(bare, ['config', k, v]);
  for (const f of readdirSync(join(bare, 'hooks'))) rmSync(join(bare, 'hooks', f));
  writeFileSync(join(bare, 'hooks', 'pre-receive'), '#!/bin/sh\nexit 0\n');
  chmodSync(join(bare, 'hooks', 'pre-receive'), 0o755);
  const plain = await startNodeChild([BASELINE_JS, root], /port (\d+)/, 'baseline server');

  // The gate: a never-seen repository, a person's token and an agent's, the default hook limit.
  const data = join(work, 'data');
  await createRepo(data, 'bench');
  const store = AuditStore.open(join(data, 'patchgate.db'));
  let person = '';
  let agent = '';
  try {
    const tokens = new TokenStore(store);
    person = tokens.create('seed-person', 'human');
    agent = tokens.create('first-agent', 'agent', { repos: 'bench*' });
    tokens.create('admin', 'admin');
  } finally {
    store.close();
  }
  const gate = await startServeChild(data, 30);
  try {
    const t0 = nowMs();
    const p = await run('git', ['push', '-q', `http://127.0.0.1:${plain.port}/bench.git`, `${head}:refs/heads/main`], { cwd: client, timeoutMs: opts.budgetMs });
    const plainMs = nowMs() - t0;
    if (p.code !== 0) opts.log(`  [${project}] plain push failed: ${p.stderr.trim().split('\n').slice(-2).join(' | ')}`);
    const t1 = nowMs();
    const g = await run('git', ['push', `http://seed-person:${person}@127.0.0.1:${gate.port}/bench.git`, `${head}:refs/heads/main`], { cwd: client, timeoutMs: opts.budgetMs });
    const personMs = nowMs() - t1;
    const personOk = g.code === 0 && /patchgate: ACCEPT/.test(g.stderr);
    // The agent's first push right after: one changed file on top of the trusted tip.
    await git(client, ['checkout', '-q', '-b', 'agent/first', head]);
    // A comment at the end of a source file under src/ (writable by default; the contract does not move).
    const files = (await git(client, ['ls-files', 'src'])).split('\n').filter((f) => f.endsWith('.py') || f.endsWith('.ts'));
    const file = files.find((f) => !/test/i.test(f)) ?? files[0];
    if (!file) throw new Error(`${project} has no source file under src/ for the agent's push`);
    writeFileSync(join(client, file), `\n${file.endsWith('.py') ? '#' : '//'} one more line from the agent\n`, { flag: 'a' });
    await git(client, ['-c', 'user.name=Bench Agent', '-c', 'user.email=agent@bench.test', 'commit', '-qam', 'agent: one file']);
    const sha = await git(client, ['rev-parse', 'HEAD']);
    const t2 = nowMs();
    const a = await run('git', ['push', `http://first-agent:${agent}@127.0.0.1:${gate.port}/bench.git`, `${sha}:refs/heads/agent/first`], { cwd: client, timeoutMs: opts.budgetMs });
    const agentMs = nowMs() - t2;
    const agentOk = a.code === 0 && /patchgate: ACCEPT/.test(a.stderr);
    // The same first push on a repository made in front of a real upstream holding the whole
    // history (the plain server's repository), which the gate has never parsed.
    const u0 = nowMs();
    const c = await run(process.execPath, [CLI_JS, 'repo', 'create', 'bench-up', '--data', data, '--upstream', `file://${bare}`], { timeoutMs: opts.budgetMs });
    const upstreamCreateMs = nowMs() - u0;
    if (c.code !== 0) opts.log(`  [${project}] repo create --upstream failed: ${c.stderr.trim().split('\n').slice(-2).join(' | ')}`);
    const u1 = nowMs();
    const up = c.code === 0 ? await run('git', ['push', `http://first-agent:${agent}@127.0.0.1:${gate.port}/bench-up.git`, `${sha}:refs/heads/agent/first`], { cwd: client, timeoutMs: opts.budgetMs }) : null;
    const upstreamAgentMs = nowMs() - u1;
    const upstreamAgentOk = !!up && up.code === 0 && /patchgate: ACCEPT/.test(up.stderr);
    // git leaves credentials out of the URLs it prints; the tokens are taken out here all the same.
    const tail = (s: string) => s.split(person).join('***').split(agent).join('***').trim().split('\n').filter((l) => /REJECT|error|\[/.test(l)).slice(0, 3).join(' | ');
    const res: RealHistoryResult = {
      project, commits, objects, personMs, plainMs, personOk, ratio: personMs / plainMs, agentMs, agentOk, upstreamCreateMs, upstreamAgentMs, upstreamAgentOk,
      stderrTail: !personOk ? tail(g.stderr) : !agentOk ? tail(a.stderr) : up && !upstreamAgentOk ? tail(up.stderr) : '',
    };
    opts.log(`  [${project}] ${commits} commits, ${objects} objects: a person's first push ${Math.round(personMs)} ms through the gate${personOk ? '' : ' (NOT accepted)'}, ${Math.round(plainMs)} ms to plain node-git-server (${res.ratio.toFixed(2)}x); the agent's first one-file push ${Math.round(agentMs)} ms${agentOk ? '' : ' (NOT accepted)'}; after repo create --upstream (${Math.round(upstreamCreateMs)} ms) the same push ${Math.round(upstreamAgentMs)} ms${upstreamAgentOk ? '' : ' (NOT accepted)'}${res.stderrTail ? `: ${res.stderrTail}` : ''}`);
    return res;
  } finally {
    await stopServeChild(gate.child);
    await stopServeChild(plain.child, 10_000);
  }
}
