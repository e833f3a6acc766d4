// Big repositories for the push-size tests: file content that is deterministic (the same bytes
// on every run) and incompressible (an AES-CTR keystream), so a pack really is as large as the
// content and git's zlib cannot shrink it below http.postBuffer. The commit is written with
// `git fast-import` (one process, no work tree), which takes seconds where `git add` of 10,000
// files takes half a minute on a busy machine, and stored without compression (random bytes do
// not compress), which takes most of the CPU out of making and sending the pack.

import { execFileSync, spawn } from 'node:child_process';
import { createCipheriv } from 'node:crypto';
import { GIT_ENV, type TestRepo } from './repo.js';

/** `n` pseudo-random bytes, the same for the same `seed`. */
export function noise(seed: string, n: number): Buffer {
  const key = Buffer.alloc(16);
  key.write(seed.slice(0, 16).padEnd(16, '.'), 'latin1');
  const iv = Buffer.alloc(16);
  iv.write(seed.slice(16, 32).padEnd(16, '.'), 'latin1');
  return createCipheriv('aes-128-ctr', key, iv).update(Buffer.alloc(n));
}

export interface BigCommit {
  /** Files of random bytes, 100 to a folder, under `root`. */
  files: number;
  bytes: number;
  root: string;
  seed: string;
  message: string;
  /** The branch to commit on (its current tip is the parent, if it has one). */
  branch: string;
  /** Small text files to add as well (path -> content). */
  extra?: Record<string, string>;
}

/** Commit `files` random files (and `extra`) on `branch` of `repo` with git fast-import; returns the commit id. */
export async function bigCommit(repo: TestRepo, o: BigCommit): Promise<string> {
  const parent = (() => {
    try {
      return repo.git('rev-parse', '-q', '--verify', `refs/heads/${o.branch}`);
    } catch {
      return null;
    }
  })();
  const stream = noise(o.seed, o.files * o.bytes);
  // Stored uncompressed (the bytes are random; zlib would only burn CPU): `git push` reuses the
  // stored objects as they are, with its default config.
  const child = spawn('git', ['-c', 'core.compression=0', '-c', 'pack.compression=0', 'fast-import', '--quiet', '--done'], { cwd: repo.dir, env: { ...process.env, ...GIT_ENV }, stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const done = new Promise<number>((r) => child.on('close', (code) => r(code ?? 1)));
  const write = (b: string | Buffer): Promise<void> => new Promise((r) => (child.stdin.write(b) ? r() : child.stdin.once('drain', () => r())));
  const message = Buffer.from(o.message);
  await write(`commit refs/heads/${o.branch}\ncommitter Test Person <person@example.test> 1767000000 +0000\ndata ${message.length}\n`);
  await write(message);
  await write('\n');
  if (parent) await write(`from ${parent}\n`);
  for (const [path, content] of Object.entries(o.extra ?? {})) {
    const b = Buffer.from(content);
    await write(`M 100644 inline ${path}\ndata ${b.length}\n`);
    await write(b);
    await write('\n');
  }
  for (let i = 0; i < o.files; i++) {
    const path = `${o.root}/d${String(Math.floor(i / 100)).padStart(3, '0')}/f${String(i).padStart(5, '0')}.bin`;
    await write(`M 100644 inline ${path}\ndata ${o.bytes}\n`);
    await write(stream.subarray(i * o.bytes, (i + 1) * o.bytes));
    await write('\n');
  }
  await write('done\n');
  child.stdin.end();
  const code = await done;
  if (code !== 0) throw new Error(`git fast-import failed: ${stderr}`);
  return repo.git('rev-parse', `refs/heads/${o.branch}`);
}

/**
 * A receive-pack request body git itself would never build: the ref command, then a pack of
 * every object `rev-list --objects` lists for `range` plus the `extra` objects (which no
 * commit needs to name). Built with the real `git pack-objects`.
 */
export function craftedPushBody(repo: TestRepo, o: { oldId: string; newId: string; ref: string; range: string[]; extra: string[]; caps?: string }): Buffer {
  const listed = repo.git('rev-list', '--objects', ...o.range).split('\n').map((l) => l.split(' ')[0]!).filter(Boolean);
  const pack = execFileSync('git', ['pack-objects', '--stdout', '-q'], { cwd: repo.dir, env: { ...process.env, ...GIT_ENV }, input: [...listed, ...o.extra].join('\n') + '\n', maxBuffer: 256 * 1024 * 1024 });
  const line = Buffer.from(`${o.oldId} ${o.newId} ${o.ref}\0${o.caps ?? 'report-status side-band-64k agent=git/2.39'}`, 'latin1');
  return Buffer.concat([Buffer.from((line.length + 4).toString(16).padStart(4, '0'), 'latin1'), line, Buffer.from('0000', 'latin1'), pack]);
}
