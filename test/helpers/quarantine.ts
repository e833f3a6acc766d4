// A served bare repository, a clone one commit ahead of it, and receive-pack's quarantine of
// that commit made the way git makes it (unpack-objects, or index-pack for a kept pack), for
// the tests of a push's object reads (test/git/quarantine-loose, spare-reader).

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { GIT_ENV, tempDir } from './repo.js';

export const gitEnvForTests = { ...process.env, ...GIT_ENV };
export const gitIn = (cwd: string, args: string[], input?: Buffer | string): Buffer => execFileSync('git', args, { cwd, env: gitEnvForTests, input, maxBuffer: 1 << 26 });
export const gitOut = (cwd: string, args: string[]): string => gitIn(cwd, args).toString('utf8').trim();

export interface PushedRepo {
  bare: string;
  work: string;
  base: string;
  head: string;
}

/** `main` with `base` files in a bare repository; the clone's next commit writes `head` files. */
export function pushedRepo(base: Record<string, string>, head: Record<string, string>): PushedRepo {
  const root = tempDir('pg-pushed-');
  const bare = join(root, 'repo.git');
  const work = join(root, 'work');
  gitIn(root, ['init', '-q', '--bare', bare]);
  gitIn(root, ['init', '-q', '-b', 'main', work]);
  const write = (files: Record<string, string>) => {
    for (const [p, text] of Object.entries(files)) {
      mkdirSync(dirname(join(work, p)), { recursive: true });
      writeFileSync(join(work, p), text);
    }
    gitIn(work, ['add', '-A']);
  };
  write(base);
  gitIn(work, ['commit', '-qm', 'base']);
  gitIn(work, ['push', '-q', bare, 'main']);
  const baseId = gitOut(work, ['rev-parse', 'HEAD']);
  write(head);
  gitIn(work, ['commit', '-qm', 'agent']);
  return { bare, work, base: baseId, head: gitOut(work, ['rev-parse', 'HEAD']) };
}

/** receive-pack's variables for a quarantine (made now) holding what `head` adds: loose objects, or with `keep` one pack. */
export function quarantineOf(r: PushedRepo, name: string, keep = false): Record<string, string> {
  const q = join(r.bare, 'objects', `tmp_objdir-incoming-${name}`);
  mkdirSync(join(q, 'pack'), { recursive: true });
  const qenv = { GIT_OBJECT_DIRECTORY: q, GIT_ALTERNATE_OBJECT_DIRECTORIES: join(r.bare, 'objects'), GIT_QUARANTINE_PATH: q };
  const pack = gitIn(r.work, ['pack-objects', '--stdout', '--revs', '-q'], `${r.head}\n^${r.base}\n`);
  execFileSync('git', keep ? ['index-pack', '--stdin'] : ['unpack-objects', '-q'], { cwd: r.bare, env: { ...gitEnvForTests, ...qenv }, input: pack });
  return qenv;
}
