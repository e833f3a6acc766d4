// Table tests for the write-block rule: every bypass vector named in the engine issue, each
// built as a real git history and judged through `runCheck` (the same engine the hook uses).

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { runCheck } from '../../src/commands/check.js';
import { TestRepo } from '../helpers/repo.js';

const BASE_FILES = {
  'src/app.py': 'def add(a, b):\n    return a + b\n',
  'src/lib.ts': 'export function add(a: number, b: number): number {\n  return a + b;\n}\n',
  'tests/test_app.py': 'from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n',
  'README.md': '# demo\n',
};

interface Case {
  name: string;
  /** Builds the agent branch on top of main; may also move main (a human's commit). */
  build(r: TestRepo): void;
  role?: 'agent' | 'human';
  verdict: 'accept' | 'reject';
  messageIds?: string[];
  paths?: string[];
  format?: 'sha1' | 'sha256';
  policy?: unknown;
  /** The decision-table row; default test-tree-write. */
  row?: string;
}

const cases: Case[] = [
  { name: 'src-only change', verdict: 'accept', build: (r) => r.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' }) },
  { name: 'new src file', verdict: 'accept', build: (r) => r.commit('new', { 'src/util/helpers.py': 'def _x():\n    pass\n' }) },
  { name: 'edit a test', verdict: 'reject', messageIds: ['protectedPath'], paths: ['tests/test_app.py'], build: (r) => r.commit('t', { 'tests/test_app.py': 'def test_add():\n    assert True\n' }) },
  { name: 'delete a test', verdict: 'reject', messageIds: ['protectedPath'], paths: ['tests/test_app.py'], build: (r) => r.commit('t', { 'tests/test_app.py': null }) },
  { name: 'rename a test out of tests/', verdict: 'reject', messageIds: ['protectedPath'], paths: ['tests/test_app.py'], build: (r) => { r.git('mv', 'tests/test_app.py', 'src/moved_app.py'); r.commit('mv'); } },
  { name: 'chmod a test', verdict: 'reject', messageIds: ['protectedPath'], paths: ['tests/test_app.py'], build: (r) => { r.chmod('tests/test_app.py', 0o755); r.commit('chmod'); } },
  { name: 'test file under src/', verdict: 'reject', messageIds: ['protectedPath'], paths: ['src/lib.test.ts'], build: (r) => r.commit('t', { 'src/lib.test.ts': 'x' }) },
  { name: 'python test file under src/', verdict: 'reject', messageIds: ['protectedPath'], paths: ['src/test_helpers.py'], build: (r) => r.commit('t', { 'src/test_helpers.py': 'x = 1\n' }) },
  { name: 'src/sitecustomize.py', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['src/sitecustomize.py'], build: (r) => r.commit('t', { 'src/sitecustomize.py': 'import os\n' }) },
  { name: 'src/conftest.py', verdict: 'reject', messageIds: ['protectedPath'], paths: ['src/conftest.py'], build: (r) => r.commit('t', { 'src/conftest.py': 'x = 1\n' }) },
  { name: 'a .pth file under src/', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['src/evil.pth'], build: (r) => r.commit('t', { 'src/evil.pth': 'import os\n' }) },
  { name: 'Tests/ case variant', verdict: 'reject', messageIds: ['protectedPath'], paths: ['Tests/test_new.py'], build: (r) => r.commit('t', { 'Tests/test_new.py': 'x' }) },
  { name: 'TESTS/ upper case', verdict: 'reject', messageIds: ['protectedPath'], paths: ['TESTS/a.py'], build: (r) => r.commit('t', { 'TESTS/a.py': 'x' }) },
  { name: 'root .gitattributes', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['.gitattributes'], build: (r) => r.commit('t', { '.gitattributes': '* -diff\n' }) },
  { name: 'nested .gitattributes under src/', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['src/.gitattributes'], build: (r) => r.commit('t', { 'src/.gitattributes': '* -diff\n' }) },
  { name: 'root conftest.py', verdict: 'reject', messageIds: ['protectedPath'], paths: ['conftest.py'], build: (r) => r.commit('t', { 'conftest.py': 'x' }) },
  { name: 'package.json', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['package.json'], build: (r) => r.commit('t', { 'package.json': '{}' }) },
  { name: 'pyproject.toml', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['pyproject.toml'], build: (r) => r.commit('t', { 'pyproject.toml': '' }) },
  { name: 'the fixture lock', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['ci/fixtures.lock'], build: (r) => r.commit('t', { 'ci/fixtures.lock': '{}' }) },
  { name: 'the allow file', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['ci/contract.allow'], build: (r) => r.commit('t', { 'ci/contract.allow': 'a'.repeat(64) + '\n' }) },
  { name: 'the ledger', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['ci/flake-ledger.jsonl'], build: (r) => r.commit('t', { 'ci/flake-ledger.jsonl': '' }) },
  { name: 'the policy file', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['ci/patchgate.json'], build: (r) => r.commit('t', { 'ci/patchgate.json': '{"writable":["**"]}' }) },
  { name: 'a GitHub workflow', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['.github/workflows/ci.yml'], build: (r) => r.commit('t', { '.github/workflows/ci.yml': 'on: push' }) },
  { name: 'a test file whose name holds a newline', verdict: 'reject', messageIds: ['protectedPath', 'controlChar'], paths: ['tests/new\nline.py'], build: (r) => r.commit('t', { 'tests/new\nline.py': 'x' }) },
  { name: 'a python test file under src/ with a newline in its name', verdict: 'reject', messageIds: ['protectedPath', 'controlChar'], paths: ['src/test_\nx.py'], build: (r) => r.commit('t', { 'src/test_\nx.py': 'x' }) },
  { name: 'a file outside writable', verdict: 'reject', row: 'outside-writable', messageIds: ['notWritable'], paths: ['README.md'], build: (r) => r.commit('t', { 'README.md': '# changed\n' }) },
  { name: 'a non-ASCII name outside writable', verdict: 'reject', row: 'outside-writable', messageIds: ['notWritable'], paths: ['docs/naïve é.md'], build: (r) => r.commit('t', { 'docs/naïve é.md': 'x' }) },
  {
    name: 'symlink in place of tests/', verdict: 'reject', messageIds: ['protectedPath', 'symlink'], paths: ['tests', 'tests/test_app.py'],
    build: (r) => { r.rm('tests'); r.symlink('tests', 'src'); r.commit('link'); },
  },
  { name: 'symlink under src/', verdict: 'reject', row: 'link-not-allowed', messageIds: ['symlink'], paths: ['src/link.py'], build: (r) => { r.symlink('src/link.py', '../tests/test_app.py'); r.commit('link'); } },
  {
    name: 'submodule in place of tests/', verdict: 'reject', messageIds: ['protectedPath', 'submodule'], paths: ['tests'],
    build: (r) => {
      const sub = r.head();
      r.git('rm', '-q', '-r', 'tests');
      r.git('update-index', '--add', '--cacheinfo', `160000,${sub},tests`);
      r.git('commit', '-q', '-m', 'submodule');
    },
  },
  {
    name: 'edit a test, then revert it', verdict: 'reject', messageIds: ['protectedPath'], paths: ['tests/test_app.py'],
    build: (r) => {
      r.commit('edit', { 'tests/test_app.py': 'def test_add():\n    assert True\n' });
      r.commit('revert', { 'tests/test_app.py': BASE_FILES['tests/test_app.py'] });
      r.commit('src', { 'src/app.py': 'def add(a, b):\n    return a + b + 0\n' });
    },
  },
  {
    name: 'evil merge edits a test', verdict: 'reject', messageIds: ['protectedPath'], paths: ['tests/test_app.py'],
    build: (r) => {
      r.checkout('side', true).commit('side', { 'src/side.py': 'x = 1\n' });
      r.checkout('agent');
      r.commit('agent', { 'src/app.py': 'def add(a, b):\n    return a + b  # agent\n' });
      r.git('merge', '-q', '--no-ff', '--no-commit', 'side');
      r.write('tests/test_app.py', 'def test_add():\n    assert True\n');
      r.git('add', '-A');
      r.git('commit', '-q', '-m', 'evil merge');
    },
  },
  {
    name: 'merging the trusted branch\'s human test edit', verdict: 'accept',
    build: (r) => {
      r.commit('agent work', { 'src/app.py': 'def add(a, b):\n    return a + b  # agent\n' });
      r.checkout('main').commit('human adds a test', { 'tests/test_more.py': 'def test_more():\n    assert 1\n', 'tests/test_app.py': '# human edit\n' });
      r.checkout('agent');
      r.git('merge', '-q', '--no-ff', '-m', 'merge main', 'main');
    },
  },
  { name: 'human edits a test', role: 'human', verdict: 'accept', build: (r) => r.commit('t', { 'tests/test_app.py': '# human\n' }) },
  { name: 'sha256 repo: src change', format: 'sha256', verdict: 'accept', build: (r) => r.commit('fix', { 'src/app.py': 'def add(a, b):\n    return b + a\n' }) },
  { name: 'sha256 repo: test edit', format: 'sha256', verdict: 'reject', messageIds: ['protectedPath'], paths: ['tests/test_app.py'], build: (r) => r.commit('t', { 'tests/test_app.py': 'x' }) },
  {
    name: 'NFD spelling of an NFC protected pattern', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['src/donne\u0301es/a.json'],
    policy: { protected: ['src/donn\u00e9es/**'] },
    build: (r) => r.commit('t', { 'src/donne\u0301es/a.json': '{}' }),
  },
  {
    name: 'policy can widen writable', verdict: 'accept', policy: { writable: ['src/**', 'docs/**'] },
    build: (r) => r.commit('docs', { 'docs/x.md': 'x' }),
  },
  {
    name: 'policy cannot unprotect the oracle files', verdict: 'reject', row: 'protected-path', messageIds: ['protectedPath'], paths: ['ci/fixtures.lock'],
    policy: { writable: ['**'], protected: [] },
    build: (r) => r.commit('t', { 'ci/fixtures.lock': '{}' }),
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const r = TestRepo.init(t, { objectFormat: c.format });
    const files: Record<string, string> = { ...BASE_FILES };
    if (c.policy) files['ci/patchgate.json'] = JSON.stringify(c.policy);
    r.commit('base', files);
    r.checkout('agent', true);
    c.build(r);
    const head = r.git('rev-parse', 'agent');
    const d = await runCheck({ repo: r.dir, base: 'main', head, role: c.role ?? 'agent' });
    const wb = d.outcomes.find((o) => o.rule === 'write-block');
    t.equal(d.verdict, c.verdict, `verdict; reasons: ${d.reasons.map((x) => x.message).join(' | ')}`);
    if (c.verdict === 'reject') {
      t.equal(d.row, c.row ?? 'test-tree-write', 'decision row');
      const ids = new Set(wb!.findings.map((f) => f.messageId));
      t.same([...ids].sort(), [...c.messageIds!].sort(), 'message ids');
      for (const p of c.paths ?? []) t.ok(wb!.findings.some((f) => f.path === p), `finding names ${p}`);
      t.ok(d.reasons.every((x) => x.commit && /^[0-9a-f]{40,64}$/.test(x.commit)), 'every reason names a commit');
      t.match(d.remediation, /^\$ git reset --(soft [0-9a-f]+\n\$ git restore --source=|hard [0-9a-f]+$)/m);
    } else if (c.role === 'human') {
      t.equal(wb!.status, 'waived', 'a person\'s test edit is reported, not refused');
    } else {
      t.equal(wb!.status, 'pass');
    }
  });
}

t.test('the printed remediation, run by the agent, produces an accepted commit', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', BASE_FILES);
  r.checkout('agent', true);
  r.commit('work', { 'src/app.py': 'def add(a, b):\n    return a + b  # fixed\n', 'tests/test_app.py': '# weakened\n', 'tests/test_new.py': 'x' });
  const d = await runCheck({ repo: r.dir, base: 'main', head: 'agent', role: 'agent' });
  t.equal(d.verdict, 'reject');
  const cmd = d.remediation.split('\n').filter((l) => l.startsWith('$ ')).map((l) => l.slice(2)).join(' && ');
  execFileSync('bash', ['-c', cmd], { cwd: r.dir, env: { ...process.env, GIT_AUTHOR_NAME: 'a', GIT_AUTHOR_EMAIL: 'a@b', GIT_COMMITTER_NAME: 'a', GIT_COMMITTER_EMAIL: 'a@b' } });
  const again = await runCheck({ repo: r.dir, base: 'main', head: 'agent', role: 'agent' });
  t.equal(again.verdict, 'accept', again.reasons.map((x) => x.message).join(' | '));
  t.match(r.git('show', 'agent:src/app.py'), /# fixed/, 'the src work survived');
  t.equal(r.git('show', 'agent:tests/test_app.py'), BASE_FILES['tests/test_app.py'].trim(), 'the test is back');
});
