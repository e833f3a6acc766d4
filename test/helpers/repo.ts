// Real git repositories in temp folders for tests: write files, commit, branch, merge.
// Every test builds its repository with the real git client; nothing is mocked.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, symlinkSync, chmodSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Test Agent', GIT_AUTHOR_EMAIL: 'agent@example.test',
  GIT_COMMITTER_NAME: 'Test Agent', GIT_COMMITTER_EMAIL: 'agent@example.test',
  GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0',
};

/** Every folder tempDir made in this test process: removed when it exits (each CI run left some eighty behind). */
const made = new Set<string>();
process.once('exit', () => {
  for (const d of made) {
    try {
      rmSync(d, { recursive: true, force: true });
    } catch {
      // a folder a test made unreadable (not as root): left, as before
    }
  }
});

export function tempDir(prefix = 'pg-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.add(d);
  return d;
}

/** Every process on this machine, with its command line's arguments (/proc/PID/cmdline); one that ends while listed is left out. */
export function processList(): Array<{ pid: number; argv: string[] }> {
  const out: Array<{ pid: number; argv: string[] }> = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      out.push({ pid: Number(e), argv: readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0') });
    } catch {
      // gone between the listing and the read
    }
  }
  return out;
}

/** Other processes whose command line names `dir` (a detached `repo warm NAME --data DIR` a CLI run started, say). */
export function processesNaming(dir: string): number[] {
  return processList().filter((p) => p.pid !== process.pid && p.argv.includes(dir)).map((p) => p.pid);
}

/** Wait, trying every 100 ms, until `cond` holds; throws naming `what` after `ms`. */
export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, ms = 90_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Wait until no process names `dir` on its command line; true when none does before `ms`. */
export function processesDone(dir: string, ms = 60_000): Promise<boolean> {
  return waitFor(`the processes naming ${dir} to end`, () => processesNaming(dir).length === 0, ms).then(() => true, () => false);
}

/**
 * Remove a test folder in a teardown without throwing: a removal racing a process that still
 * writes into it (ENOTEMPTY) is retried, and what stays is left to the exit sweep above. A
 * teardown that throws stops tap from running the ones after it, and a server one of them
 * would have closed then holds the file open until its 600 s timeout.
 */
export function removeTree(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  } catch {
    made.add(dir);
  }
}

interface Teardown { teardown(fn: () => void): void }

export class TestRepo {
  constructor(readonly dir: string, private date = 1_767_000_000) {}

  static init(t: Teardown, opts: { objectFormat?: 'sha1' | 'sha256'; branch?: string } = {}): TestRepo {
    const dir = tempDir('pg-repo-');
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const args = ['init', '-q', '-b', opts.branch ?? 'main'];
    if (opts.objectFormat) args.push(`--object-format=${opts.objectFormat}`);
    execFileSync('git', [...args, dir], { env: { ...process.env, ...GIT_ENV } });
    const r = new TestRepo(dir);
    r.git('config', 'core.autocrlf', 'false');
    return r;
  }

  git(...args: string[]): string {
    return execFileSync('git', args, {
      cwd: this.dir,
      env: { ...process.env, ...GIT_ENV, GIT_AUTHOR_DATE: `@${this.date} +0000`, GIT_COMMITTER_DATE: `@${this.date} +0000` },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  }

  /** Set the commit clock (seconds since epoch) for the following commits. */
  at(epochSeconds: number): this {
    this.date = epochSeconds;
    return this;
  }

  write(path: string, content: string | Buffer): this {
    const abs = join(this.dir, path);
    mkdirSync(dirname(abs), { recursive: true });
    if (existsSync(abs)) rmSync(abs, { recursive: true, force: true });
    writeFileSync(abs, content);
    return this;
  }

  rm(path: string): this {
    rmSync(join(this.dir, path), { recursive: true, force: true });
    return this;
  }

  symlink(path: string, target: string): this {
    const abs = join(this.dir, path);
    rmSync(abs, { recursive: true, force: true });
    mkdirSync(dirname(abs), { recursive: true });
    symlinkSync(target, abs);
    return this;
  }

  chmod(path: string, mode: number): this {
    chmodSync(join(this.dir, path), mode);
    return this;
  }

  /** Write `files` (null deletes), stage everything, commit; returns the commit id. */
  commit(message: string, files: Record<string, string | Buffer | null> = {}): string {
    for (const [p, c] of Object.entries(files)) {
      if (c === null) this.rm(p);
      else this.write(p, c);
    }
    this.git('add', '-A');
    this.git('commit', '-q', '--allow-empty', '-m', message);
    this.date += 60;
    return this.head();
  }

  head(): string {
    return this.git('rev-parse', 'HEAD');
  }

  checkout(branch: string, create = false): this {
    if (create) this.git('checkout', '-q', '-b', branch);
    else this.git('checkout', '-q', branch);
    return this;
  }
}
