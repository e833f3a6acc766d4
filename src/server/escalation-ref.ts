// The commits of an escalated push, kept for a person to review (issue 48, item 6). git drops
// a refused push's quarantine, so before the hook answers, the objects the push brought (its
// new commit and whatever the repository's refs do not already reach) are packed from the
// quarantine into the repository and pinned by `refs/patchgate/escalations/N` until the
// escalation is closed. Those refs are hidden from every ref advertisement by the repository's
// `transfer.hideRefs` (src/server/repos.ts); a person's fetch un-hides them for that one
// upload-pack (src/git/spawner.ts), and an agent's fetch that wants an object only they reach
// is refused by the front (agentWantsEscalated), since allowReachableSHA1InWant would
// otherwise serve a hidden ref's objects to anyone who names them.

import { spawn } from 'node:child_process';
import type http from 'node:http';
import { GitError, errorMessage } from '../errors.js';
import { gitEnv, runGit } from '../git/exec.js';
import { isZeroId } from '../git/git.js';
import { exchangeOf } from './git-front.js';
import { pkt } from './pkt-line.js';

export const ESCALATION_REFS = 'refs/patchgate/escalations';
export const escalationRef = (id: number): string => `${ESCALATION_REFS}/${id}`;
const OID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/** Every ref's tip outside the escalation refs (what agents may reach). */
async function visibleTips(repoDir: string): Promise<string[]> {
  const { stdout } = await runGit(repoDir, gitEnv(), ['for-each-ref', '--format=%(objectname) %(refname)']);
  return stdout.toString('utf8').split('\n').filter(Boolean).filter((l) => !l.slice(l.indexOf(' ') + 1).startsWith(`${ESCALATION_REFS}/`)).map((l) => l.slice(0, l.indexOf(' ')));
}

/** Tips of the escalation refs (id → commit). */
export async function escalationTips(repoDir: string): Promise<Map<number, string>> {
  const { stdout } = await runGit(repoDir, gitEnv(), ['for-each-ref', '--format=%(objectname) %(refname)', `${ESCALATION_REFS}/`]);
  const out = new Map<number, string>();
  for (const l of stdout.toString('utf8').split('\n').filter(Boolean)) {
    const [oid, ref] = l.split(' ');
    const id = Number(ref!.slice(ESCALATION_REFS.length + 1));
    if (Number.isSafeInteger(id)) out.set(id, oid!);
  }
  return out;
}

/** `from | to`, both git, with their stderr; rejects with GitError naming the failing one. */
function pipeGit(dir: string, from: { env: NodeJS.ProcessEnv; args: string[]; input: string }, to: { env: NodeJS.ProcessEnv; args: string[] }): Promise<void> {
  return new Promise((resolve, reject) => {
    const a = spawn('git', from.args, { cwd: dir, env: from.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const b = spawn('git', to.args, { cwd: dir, env: to.env, stdio: ['pipe', 'ignore', 'pipe'] });
    const errA: Buffer[] = [];
    const errB: Buffer[] = [];
    a.stderr.on('data', (c: Buffer) => errA.push(c));
    b.stderr.on('data', (c: Buffer) => errB.push(c));
    a.stdout.pipe(b.stdin);
    a.stdin.on('error', () => {});
    b.stdin.on('error', () => {});
    a.stdin.end(from.input);
    let codeA: number | null | undefined;
    let codeB: number | null | undefined;
    const done = () => {
      if (codeA === undefined || codeB === undefined) return;
      if (codeA !== 0) return reject(new GitError(from.args, codeA, Buffer.concat(errA).toString('utf8')));
      if (codeB !== 0) return reject(new GitError(to.args, codeB, Buffer.concat(errB).toString('utf8')));
      resolve();
    };
    a.on('error', (e) => reject(new GitError(from.args, null, String(e), { cause: e })));
    b.on('error', (e) => reject(new GitError(to.args, null, String(e), { cause: e })));
    a.on('close', (c) => { codeA = c; done(); });
    b.on('close', (c) => { codeB = c; done(); });
  });
}

/**
 * Keep `newId` and what only it reaches, read through the push's quarantine (`quarantine`: its
 * GIT_OBJECT_DIRECTORY and alternates), as `refs/patchgate/escalations/<id>` of the repository.
 * Throws GitError when git fails; a deleted ref (zero id) keeps nothing.
 */
export async function keepEscalation(repoDir: string, quarantine: Record<string, string>, id: number, newId: string): Promise<boolean> {
  if (isZeroId(newId) || !OID.test(newId)) return false;
  const tips = await visibleTips(repoDir);
  // Packed with the quarantine's view, indexed into the repository itself (no quarantine: git
  // refuses ref updates under one, and its objects go away with it).
  await pipeGit(repoDir,
    { env: gitEnv(quarantine), args: ['pack-objects', '--revs', '--stdout', '--quiet'], input: `${[newId, ...tips.map((v) => `^${v}`)].join('\n')}\n` },
    { env: gitEnv(), args: ['index-pack', '--stdin'] });
  await runGit(repoDir, gitEnv(), ['update-ref', '-m', `patchgate escalation ${id}`, escalationRef(id), newId]);
  return true;
}

/** Drop the ref of a closed escalation (its objects go at the next gc); true when there was one. */
export async function dropEscalation(repoDir: string, id: number): Promise<boolean> {
  const tips = await escalationTips(repoDir);
  if (!tips.has(id)) return false;
  await runGit(repoDir, gitEnv(), ['update-ref', '-d', escalationRef(id)]);
  return true;
}

/**
 * An agent's fetch: the first wanted object that only an escalation ref reaches, or null. No
 * escalation ref (the usual case): nothing is run. A blob that is also deep in visible history
 * may be counted as escalated (git marks only the boundary's trees): such a want is refused,
 * never served wrongly.
 */
export async function agentWantsEscalated(repoDir: string, wants: readonly string[]): Promise<string | null> {
  if (!wants.length) return null;
  const tips = [...(await escalationTips(repoDir)).values()];
  if (!tips.length) return null;
  const want = new Set(wants);
  for (const t of tips) if (want.has(t)) return t;
  const visible = await visibleTips(repoDir);
  const { stdout } = await runGit(repoDir, gitEnv(), ['rev-list', '--objects', '--stdin'], { input: `${[...tips, ...visible.map((v) => `^${v}`)].join('\n')}\n` });
  for (const line of stdout.toString('utf8').split('\n')) {
    const oid = line.slice(0, line.indexOf(' ') < 0 ? undefined : line.indexOf(' '));
    if (want.has(oid)) return oid;
  }
  return null;
}

/** One line for a keep that failed (the escalation row stands; the person is told what is missing). */
export const keepFailed = (id: number, err: unknown): string => `patchgate: escalation ${id}: its commits could not be kept for review (${errorMessage(err).split('\n')[0]!.slice(0, 200)}); a person sees the row but not the diff`;

/**
 * An agent's upload-pack POST (`view`, its command section read by ./git-front.ts): when it
 * wants an escalated object, answer git's ERR line, audit it (`audit`, an auth row) and return
 * true; a check that fails refuses too (fail closed).
 */
export async function refuseEscalatedFetch(repoDir: string, view: unknown, res: http.ServerResponse, audit: (why: string) => unknown): Promise<boolean> {
  const ex = exchangeOf(view);
  const wants = [...(ex?.section?.bytes.toString('latin1') ?? '').matchAll(/want ([0-9a-f]{40}(?:[0-9a-f]{24})?)/g)].map((w) => w[1]!);
  const hit = await agentWantsEscalated(repoDir, wants).catch((err: unknown) => `unknown (${errorMessage(err).split('\n')[0]})`);
  if (!hit) return false;
  ex?.abandon('wants an escalated object');
  await Promise.resolve().then(() => audit(`agent fetch of an object kept for an escalation's review: ${hit.slice(0, 80)}`)).catch(() => undefined);
  if (res.headersSent) {
    res.end();
    return true;
  }
  res.writeHead(200, { 'Content-Type': 'application/x-git-upload-pack-result', 'Cache-Control': 'no-cache' });
  res.end(pkt(`ERR patchgate: ${hit.slice(0, 80)} is kept for a person's review of an escalation; agents cannot fetch it\n`));
  return true;
}
