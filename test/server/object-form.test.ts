// The push-level half of issue 45's differential suite: hostile commits and trees pushed through
// a real gate with the real git client, on both of its paths: a small push, judged ahead from
// its pack (src/server/hook/ahead.ts, src/git/pack-read.ts), and a push over 1 MiB, judged by
// the hook over the quarantine. For an agent, each is refused (by the gate's canonical-form
// check, or by git's own strict fsck before it). For a person, whatever lands was judged on
// git's own reading: the paths the gate's (waived) write-block findings name are exactly the
// paths `git diff-tree` finds between the commit git checks out and its parent.

import t from 'tap';
import { randomBytes } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { GIT_ENV, type TestRepo } from '../helpers/repo.js';
import { gitAsync, refIn, seededGate } from '../helpers/gate.js';
import { Git } from '../../src/git/git.js';

const APP = 'def add(a, b):\n    return a + b\n';
const TEST = 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n';
const IDENT = 'A U Thor <a@example.test> 1767000000 +0000';

function git(cwd: string, args: string[], input?: Buffer | string): string {
  const r = spawnSync('git', args, { cwd, input, env: { ...process.env, ...GIT_ENV } });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.toString().trim();
}

const entry = (mode: string, name: string, id: string) => Buffer.concat([Buffer.from(`${mode} ${name}\0`), Buffer.from(id, 'hex')]);
const tree = (w: TestRepo, entries: Buffer[]) => git(w.dir, ['hash-object', '-t', 'tree', '--literally', '-w', '--stdin'], Buffer.concat(entries));
const commit = (w: TestRepo, lines: string[]) => git(w.dir, ['hash-object', '-t', 'commit', '--literally', '-w', '--stdin'], Buffer.from(`${lines.join('\n')}\n\nhand-made\n`, 'latin1'));

interface Built { main: string; trusted: string; evil: string; src: string; evilSrc: string; tests: string; evilTests: string; srcBlob: string; big: string | null }

/** The trees an attack is made of: the trusted one, and one that rewrites tests/ (and, for a big push, adds a 1.2 MiB blob under src/). */
function build(w: TestRepo, big: boolean): Built {
  const main = w.git('rev-parse', 'main');
  const trusted = w.git('rev-parse', 'main^{tree}');
  const src = w.git('rev-parse', 'main:src');
  const tests = w.git('rev-parse', 'main:tests');
  const srcBlob = w.git('rev-parse', 'main:src/app.py');
  const evilBlob = git(w.dir, ['hash-object', '-w', '--stdin'], 'def test_add():\n    pass\n');
  const evilTests = tree(w, [entry('100644', 'test_app.py', evilBlob)]);
  const bigBlob = big ? git(w.dir, ['hash-object', '-w', '--stdin'], randomBytes(1_200_000)) : null;
  const evilSrc = bigBlob ? tree(w, [entry('100644', 'app.py', srcBlob), entry('100644', 'big.bin', bigBlob)]) : src;
  const evil = tree(w, [entry('40000', 'src', evilSrc), entry('40000', 'tests', evilTests)]);
  return { main, trusted, evil, src, evilSrc, tests, evilTests, srcBlob, big: bigBlob };
}

interface Attack {
  name: string;
  make(w: TestRepo, b: Built): string;
  /** What the refusal names (the gate's finding, or git's fsck). */
  refused: RegExp;
  /** git's fsck refuses it for everyone. */
  fsck?: boolean;
}

const attacks: Attack[] = [
  {
    name: 'the red team\'s commit: an upper-case tree first, the trusted tree after committer',
    make: (w, b) => commit(w, [`tree ${b.evil.toUpperCase()}`, `parent ${b.main}`, `author ${IDENT}`, `committer ${IDENT}`, `tree ${b.trusted}`]),
    refused: /\[write-block\] commit \w+ is not in the form git writes: it writes its tree id in upper-case hex/,
  },
  {
    name: 'a trusted tree hidden in a signature\'s continuation line',
    make: (w, b) => commit(w, [`tree ${b.evil}`, `parent ${b.main}`, `author ${IDENT}`, `committer ${IDENT}`, 'gpgsig -----BEGIN PGP SIGNATURE-----', ` tree ${b.trusted}`, ' -----END PGP SIGNATURE-----']),
    refused: /hides a header in a continuation line/,
  },
  {
    name: 'an upper-case parent and a header git does not write',
    make: (w, b) => commit(w, [`tree ${b.evil}`, `parent ${b.main.toUpperCase()}`, `author ${IDENT}`, `committer ${IDENT}`, 'x-agent-note trust me']),
    refused: /upper-case hex|header git does not write/,
  },
  {
    name: 'tests/ twice in one tree, the trusted copy second',
    make: (w, b) => commit(w, [`tree ${tree(w, [entry('40000', 'src', b.evilSrc), entry('40000', 'tests', b.evilTests), entry('40000', 'tests', b.tests)])}`, `parent ${b.main}`, `author ${IDENT}`, `committer ${IDENT}`]),
    refused: /duplicateEntries|is in the tree twice/,
    fsck: true,
  },
  {
    name: 'entries out of order',
    make: (w, b) => commit(w, [`tree ${tree(w, [entry('40000', 'tests', b.evilTests), entry('40000', 'src', b.evilSrc)])}`, `parent ${b.main}`, `author ${IDENT}`, `committer ${IDENT}`]),
    refused: /treeNotSorted|out of git's order/,
    fsck: true,
  },
  {
    name: 'a .GIT folder',
    make: (w, b) => commit(w, [`tree ${tree(w, [entry('40000', '.GIT', b.tests), entry('40000', 'src', b.evilSrc), entry('40000', 'tests', b.tests)])}`, `parent ${b.main}`, `author ${IDENT}`, `committer ${IDENT}`]),
    refused: /hasDotgit|\.git/,
    fsck: true,
  },
  {
    name: 'a carriage return in the committer line',
    make: (w, b) => commit(w, [`tree ${b.evil}`, `parent ${b.main}`, `author ${IDENT}`, `committer ${IDENT}\r`]),
    refused: /badTimezone|carriage return/,
    fsck: true,
  },
];

/** The paths git itself sees change between commit `id`'s parent and the tree git checks out. */
function gitPaths(bare: string, id: string): string[] {
  return git(bare, ['diff-tree', '-r', '--no-renames', '--name-only', '--no-commit-id', `${id}^`, id]).split('\n').filter(Boolean).sort();
}

for (const big of [false, true]) {
  const path = big ? 'over 1 MiB (judged by the hook)' : 'small (judged ahead from its pack)';
  t.test(path, async (t) => {
    // One gate for every attack of a path: each pushes refs of its own.
    const { gate, agent, human, w, bare } = await seededGate(t, { 'src/app.py': APP, 'tests/test_app.py': TEST });
    const b = build(w, big);
    for (const [n, a] of attacks.entries()) {
      // Git's fsck refuses these before any hook runs, whatever their size: one path is enough.
      if (big && a.fsck) continue;
      await t.test(a.name, async (t) => {
        const id = a.make(w, b);
        w.git('update-ref', `refs/heads/attack${n}`, id);
        const ahead = gate.srv.hooks.prewarms.judged;

        const r = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), `attack${n}:refs/heads/agent/x${n}`]);
        t.not(r.code, 0, 'the agent\'s push is refused');
        t.match(r.stderr, a.refused, 'naming what is wrong');
        t.equal(await refIn(bare, `refs/heads/agent/x${n}`), null, 'the ref was not created');
        if (!a.fsck) {
          t.match(r.stderr, /git commit|git add/, 'the next step rebuilds the commit with stock git');
          const [row] = gate.srv.audit.query({ kind: 'ref', actor: 'agent-1', limit: 1 });
          t.equal(row?.verdict, 'reject', 'audited as refused');
          const wb = (row?.rules as Array<{ rule: string; findings: Array<{ messageId?: string }> }>).find((o) => o.rule === 'write-block');
          t.ok(wb?.findings.some((f) => f.messageId === 'badCommit' || f.messageId === 'badTree'), 'the audit row holds the form finding');
          if (big) t.equal(gate.srv.hooks.prewarms.judged, ahead, 'not judged ahead: the hook judged it');
          else t.equal(gate.srv.hooks.prewarms.judged, ahead + 1, 'judged ahead from its pack');
        }

        // A person's push of the same: refused by git's fsck (which a person's push relaxes only for
        // old tools' format slips, issue 47), or it lands, judged on git's own reading.
        const p = await gitAsync(w.dir, ['push', gate.remote('app', 'alice', human), `attack${n}:refs/heads/person/x${n}`]);
        if (p.code !== 0) {
          t.ok(a.fsck, `only git's fsck refuses a person's push: ${p.stderr.slice(-400)}`);
          t.match(p.stderr, /fsck|error in (?:packed )?object/, 'git\'s fsck refused it');
          return;
        }
        const [row] = gate.srv.audit.query({ kind: 'ref', actor: 'alice', limit: 1 });
        const wb = (row?.rules as Array<{ rule: string; status: string; findings: Array<{ messageId?: string; path?: string }> }>).find((o) => o.rule === 'write-block');
        t.equal(wb?.status, 'waived', 'the findings are waived for a person');
        t.ok(wb?.findings.some((f) => f.messageId === 'badCommit' || f.messageId === 'badTree'), 'and the object\'s form is among them');
        const judged = [...new Set(wb!.findings.filter((f) => f.messageId === 'protectedPath' || f.messageId === 'notWritable').map((f) => f.path!))].sort();
        t.same(judged, gitPaths(bare, id).filter((p) => !p.startsWith('src/')), 'the gate judged the paths git checks out');
        t.same(gitPaths(bare, id).filter((p) => p.startsWith('tests/')), ['tests/test_app.py'], 'which rewrite the tests');
      });
    }
  });
}

t.test('replace refs: never pushed through the gate, and never read by its git', async (t) => {
  const policy = JSON.stringify({ trustedBranch: 'main', writable: ['src/**'], refs: { allowOutsideHeads: true } });
  const { gate, agent, human, w, bare } = await seededGate(t, { 'src/app.py': APP, 'tests/test_app.py': TEST, 'ci/patchgate.json': policy });
  const main = w.git('rev-parse', 'main');
  // A commit that rewrites the tests, offered as the replacement of main's own commit.
  w.git('switch', '-q', '-c', 'evil');
  const evil = w.commit('rewrites the tests', { 'tests/test_app.py': 'def test_add():\n    pass\n' });
  for (const [who, secret] of [['agent-1', agent], ['alice', human]] as const) {
    const r = await gitAsync(w.dir, ['push', gate.remote('app', who, secret), `${evil}:refs/replace/${main}`]);
    t.not(r.code, 0, `${who}'s replace ref is refused although the policy allows refs outside refs/heads`);
    t.match(r.stderr, /only refs\/heads\/\* and refs\/tags\/\* can be pushed here/);
  }
  t.equal(await refIn(bare, `refs/replace/${main}`), null);

  // One made by hand in the bare repository changes nothing the gate reads: an agent's honest
  // commit on main is judged against main's real tree (through the replacement, it would undo a test edit).
  execFileSync('git', ['fetch', '-q', w.dir, 'evil'], { cwd: bare, env: { ...process.env, ...GIT_ENV } });
  execFileSync('git', ['replace', main, evil], { cwd: bare, env: { ...process.env, ...GIT_ENV } });
  const real = w.git('rev-parse', 'main^{tree}');
  t.not(git(bare, ['rev-parse', `${main}^{tree}`]), real, 'plain git in the bare repository now reads the replacement');
  const gateGit = new Git({ dir: bare, bare: true });
  t.equal((await gateGit.text(['rev-parse', `${main}^{tree}`])).trim(), real, 'the gate\'s git reads main\'s own commit');
  t.equal(await gateGit.commitTree(main), real, 'as its own reader does');
  gateGit.dispose();
  w.git('switch', '-q', 'main');
  w.commit('an honest fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' });
  const a = await gitAsync(w.dir, ['push', gate.remote('app', 'agent-1', agent), 'main:refs/heads/agent/fix']);
  t.equal(a.code, 0, `an honest agent push on main lands, judged against main's real commit: ${a.stderr.slice(-600)}`);
  t.notMatch(a.stderr, /tests\/test_app\.py/);
});
