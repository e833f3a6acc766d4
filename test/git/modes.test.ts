// The mode classifier must read a tree entry exactly as git's checkout does, or an agent can
// hide a folder, a symlink or a submodule behind digits git stores but never writes
// (`40755`, `120777`). This test writes raw trees with every type value git's parser accepts,
// combined with many permission bits, leading zeros, values that wrap git's 32-bit parse and
// random values; it checks the classifier against `git ls-tree` and against what a real
// checkout (`git worktree add`) puts on disk, and that digits git cannot parse are refused.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { lstatSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Git } from '../../src/git/git.js';
import { classifyMode, parseModeDigits, type EntryKind } from '../../src/git/modes.js';
import { GIT_ENV, tempDir, TestRepo } from '../helpers/repo.js';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Mode digit strings: 16 type values x permission sets, leading zeros, 32-bit wraps, random values. */
function modeCorpus(): string[] {
  const perms = [0, 0o644, 0o755, 0o777, 0o664, 0o600, 0o700, 0o070, 0o007, 0o100, 0o010, 0o001, 0o111, 0o4000, 0o2000, 0o1000, 0o7777];
  const out = new Set<string>();
  for (let type = 0; type < 16; type++) for (const p of perms) out.add(((type << 12) | p).toString(8));
  for (const c of ['40000', '100644', '100755', '120000', '160000']) {
    out.add(`0${c}`);
    out.add(`000${c}`);
    // The same value plus multiples of 2^32: git keeps only the low 32 bits.
    out.add((BigInt(parseInt(c, 8)) + (1n << 32n)).toString(8));
    out.add((BigInt(parseInt(c, 8)) + (5n << 35n)).toString(8));
  }
  const r = rng(20261201);
  for (let i = 0; i < 120; i++) out.add(Math.floor(r() * 2 ** 32).toString(8));
  out.add('0');
  out.add('7');
  return [...out];
}

function git(cwd: string, args: string[], input?: Buffer): Buffer {
  return execFileSync('git', args, { cwd, input, env: { ...process.env, ...GIT_ENV }, maxBuffer: 64 * 1024 * 1024 });
}

function hex(id: string): Buffer {
  return Buffer.from(id, 'hex');
}

function rawTree(cwd: string, entries: Array<{ mode: string; name: string; id: string }>): string {
  const body = Buffer.concat(entries.map((e) => Buffer.concat([Buffer.from(`${e.mode} ${e.name}\0`), hex(e.id)])));
  return git(cwd, ['hash-object', '-t', 'tree', '--literally', '-w', '--stdin'], body).toString().trim();
}

function diskKind(path: string): EntryKind | 'missing' {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return 'missing';
  }
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return readdirSync(path).length ? 'tree' : 'gitlink';
  if (st.isFile()) return st.mode & 0o100 ? 'executable' : 'regular';
  return 'missing';
}

t.test('every mode git parses is classified as git ls-tree and git checkout read it', async (t) => {
  const repo = TestRepo.init(t);
  const blob = git(repo.dir, ['hash-object', '-w', '--stdin'], Buffer.from('target')).toString().trim();
  const inner = git(repo.dir, ['hash-object', '-w', '--stdin'], Buffer.from('inside\n')).toString().trim();
  const sub = rawTree(repo.dir, [{ mode: '100644', name: 'f', id: inner }]);
  const gitlinkTarget = '1'.repeat(40);
  const modes = modeCorpus();
  // Names of one length sort the same with or without a trailing "/", so one tree holds all.
  const names = modes.map((_, i) => `m${String(i).padStart(4, '0')}`);

  // 1. git ls-tree never reads the entry's object: point every entry at a blob, read git's verdict.
  const probe = rawTree(repo.dir, modes.map((mode, i) => ({ mode, name: names[i]!, id: blob })));
  const listed = new Map<string, { mode: string; type: string }>();
  for (const rec of git(repo.dir, ['ls-tree', '-z', probe]).toString().split('\0').filter(Boolean)) {
    const [meta, name] = rec.split('\t');
    const [mode, type] = meta!.split(' ');
    listed.set(name!, { mode: mode!, type: type! });
  }
  t.equal(listed.size, modes.length, 'ls-tree lists every entry');
  const typeOf: Record<EntryKind, string> = { tree: 'tree', regular: 'blob', executable: 'blob', symlink: 'blob', gitlink: 'commit' };
  let mismatches = 0;
  for (let i = 0; i < modes.length; i++) {
    const c = classifyMode(modes[i]!);
    const l = listed.get(names[i]!)!;
    if (c.mode !== l.mode || typeOf[c.kind] !== l.type) {
      mismatches++;
      t.fail(`mode ${modes[i]}: classifier ${c.mode} ${c.kind}, ls-tree ${l.mode} ${l.type}`);
    }
  }
  t.equal(mismatches, 0, `${modes.length} modes read as ls-tree reads them`);

  // 2. A real checkout: each entry points at the object its type needs (as ls-tree named it).
  const real = rawTree(repo.dir, modes.map((mode, i) => {
    const type = listed.get(names[i]!)!.type;
    return { mode, name: names[i]!, id: type === 'tree' ? sub : type === 'commit' ? gitlinkTarget : blob };
  }));
  const commit = git(repo.dir, ['commit-tree', real, '-m', 'modes']).toString().trim();
  const out = join(tempDir('pg-modes-'), 'wt');
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  git(repo.dir, ['worktree', 'add', '-q', '--detach', out, commit]);
  const gitObj = new Git({ dir: repo.dir });
  t.teardown(() => gitObj.close());
  const ours = await gitObj.readTree(real);
  t.equal(ours.length, modes.length, 'our tree reader sees every entry');
  mismatches = 0;
  for (let i = 0; i < modes.length; i++) {
    const path = join(out, names[i]!);
    const disk = diskKind(path);
    const c = classifyMode(modes[i]!);
    const e = ours.find((x) => x.name === names[i]);
    if (disk !== c.kind || e?.kind !== c.kind || e.rawMode !== modes[i]) {
      mismatches++;
      t.fail(`mode ${modes[i]}: checkout wrote ${disk}, classifier says ${c.kind}, reader says ${e?.kind} (${e?.rawMode})`);
    }
    if (disk === 'symlink') t.equal(readlinkSync(path), 'target', `mode ${modes[i]} is a symlink to the blob's text`);
  }
  t.equal(mismatches, 0, `${modes.length} modes classified as checkout wrote them`);

  // The canonical set: only the five digit strings git writes count as canonical.
  const canonical = modes.filter((m) => classifyMode(m).canonical).sort();
  t.same(canonical, ['100644', '100755', '120000', '160000', '40000'], 'only the digits git writes are canonical');
});

t.test('mode digits git cannot parse are refused by git and by our reader', async (t) => {
  const repo = TestRepo.init(t);
  const blob = git(repo.dir, ['hash-object', '-w', '--stdin'], Buffer.from('x')).toString().trim();
  const gitObj = new Git({ dir: repo.dir });
  t.teardown(() => gitObj.close());
  for (const mode of ['', '100648', '1o0644', '-100644', '+40000', '9']) {
    t.equal(parseModeDigits(mode), null, `parse ${JSON.stringify(mode)}`);
    const id = rawTree(repo.dir, [{ mode, name: 'a', id: blob }]);
    let gitFailed = false;
    try {
      git(repo.dir, ['ls-tree', id]);
    } catch {
      gitFailed = true;
    }
    t.ok(gitFailed, `git ls-tree refuses mode ${JSON.stringify(mode)}`);
    await t.rejects(gitObj.readTree(id), /malformed/, `our reader refuses mode ${JSON.stringify(mode)}`);
  }
  // An empty name is malformed too.
  const noName = rawTree(repo.dir, [{ mode: '100644', name: '', id: blob }]);
  await t.rejects(gitObj.readTree(noName), /malformed/, 'an entry without a name is refused');
});
