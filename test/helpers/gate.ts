// A real gate server for end-to-end tests: its own temp data folder, port 0, real tokens,
// and an async `git` runner (the server runs in this process, so git must not block it).

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server/app.js';
import { createRepo } from '../../src/server/repos.js';
import { GIT_ENV, TestRepo, removeTree, tempDir } from './repo.js';

export interface Gate {
  srv: RunningServer;
  data: string;
  /** A new token's secret (SQLite: at once). */
  token(name: string, role: 'agent' | 'human' | 'admin', repos?: string): string;
  /** The same for either store (PostgreSQL's token store is async). */
  tokenAsync(name: string, role: 'agent' | 'human' | 'admin', repos?: string): Promise<string>;
  repo(name: string): Promise<string>;
  remote(name: string, user: string, secret: string): string;
}

interface T { teardown(fn: () => unknown): void }

export async function startGate(t: T, opts: Partial<ServerOptions> = {}): Promise<Gate> {
  const data = tempDir('pg-data-');
  // Tests read a person's waived findings in the answer: by default they wait a quarter of the
  // hook limit for them, as before serve's 1 s default (test/server/person-waived.test.ts tests that).
  const srv = await startServer({ dataDir: data, port: 0, host: '127.0.0.1', log: () => {}, waivedWaitMs: Math.floor((opts.hookTimeoutMs ?? 30_000) / 4), ...opts });
  t.teardown(async () => {
    await srv.close();
    removeTree(data);
  });
  return {
    srv,
    data,
    token: (name, role, repos) => {
      const secret = srv.tokens.create(name, role, { repos });
      if (typeof secret !== 'string') throw new Error('this gate\'s tokens are in PostgreSQL: use tokenAsync');
      return secret;
    },
    tokenAsync: async (name, role, repos) => srv.tokens.create(name, role, { repos }),
    repo: (name) => createRepo(data, name),
    remote: (name, user, secret) => `http://${encodeURIComponent(user)}:${encodeURIComponent(secret)}@127.0.0.1:${srv.port}/${name}.git`,
  };
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run git asynchronously in `cwd`; never throws on a non-zero exit. */
export function gitAsync(cwd: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile('git', args, { cwd, env: { ...process.env, ...GIT_ENV, GIT_ASKPASS: 'true' }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The id a ref has in a bare repository, or null. */
export async function refIn(bare: string, ref: string): Promise<string | null> {
  const r = await gitAsync(bare, ['rev-parse', '-q', '--verify', ref]);
  return r.code === 0 ? r.stdout.trim() : null;
}

export function bareDir(gate: Gate, name: string): string {
  return join(gate.data, 'repos', `${name}.git`);
}

/**
 * A gate with repository `app` whose trusted branch `main` a person (alice) seeded from a
 * work repo with `files`; one agent token per name in `agents` (default `agent-1`).
 */
export async function seededGate(t: T, files: Record<string, string>, opts: Partial<ServerOptions> = {}, agents = ['agent-1']) {
  const gate = await startGate(t, opts);
  await gate.repo('app');
  const human = gate.token('alice', 'human');
  const tokens = Object.fromEntries(agents.map((a) => [a, gate.token(a, 'agent')]));
  const w = TestRepo.init(t);
  w.commit('base', files);
  const r = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), 'main']);
  if (r.code !== 0) throw new Error(`a person could not seed main: ${r.stderr}`);
  return { gate, human, agent: tokens[agents[0]!]!, tokens, w, bare: bareDir(gate, 'app') };
}
