// Helpers for the git-host tests: a bare repository seeded by a person, a real `patchgate
// daemon` (in this process, port 0 monitor) with its config, and an async `git push` whose
// environment carries the host's variables into the real git receive-pack and its hooks.

import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseDaemonConfig, type DaemonConfig } from '../../src/host/config.js';
import { startDaemon, type RunningDaemon } from '../../src/host/daemon.js';
import { GIT_ENV, TestRepo, removeTree, tempDir } from './repo.js';
import { gitAsync, type Run } from './gate.js';

interface T { teardown(fn: () => unknown): void }

export const BASE = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
};

/** A bare repository ROOT/NAME.git (HEAD main; NAME may hold folders) and a work repo whose main a person pushed into it. */
export async function seededBare(t: T, name = 'app'): Promise<{ root: string; bare: string; w: TestRepo }> {
  const root = tempDir('pg-host-');
  t.teardown(() => removeTree(root));
  const bare = join(root, `${name}.git`);
  mkdirSync(dirname(bare), { recursive: true });
  const init = await gitAsync(root, ['init', '-q', '--bare', '-b', 'main', bare]);
  if (init.code) throw new Error(init.stderr);
  const w = TestRepo.init(t);
  w.commit('base', BASE);
  const r = await gitAsync(w.dir, ['push', bare, 'main']);
  if (r.code) throw new Error(`seeding failed: ${r.stderr}`);
  return { root, bare, w };
}

export function daemonConfig(data: string, extra: Record<string, unknown> = {}): DaemonConfig {
  return parseDaemonConfig({ data, humans: ['alice', 'bob-*'], agents: ['agent-*'], monitor: '127.0.0.1:0', ...extra });
}

export async function startTestDaemon(t: T, extra: Record<string, unknown> = {}, opts: Parameters<typeof startDaemon>[1] = {}): Promise<{ d: RunningDaemon; cfg: DaemonConfig; data: string }> {
  const data = tempDir('pg-daemon-');
  const cfg = daemonConfig(data, extra);
  const d = await startDaemon(cfg, { log: () => {}, ...opts });
  t.teardown(async () => {
    await d.close();
    removeTree(data);
  });
  return { d, cfg, data };
}

/** `git ARGS` in cwd with the host's variables in the environment (inherited by receive-pack and its hooks). */
export function gitWithEnv(cwd: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile('git', args, { cwd, env: { ...process.env, ...GIT_ENV, ...env }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}
