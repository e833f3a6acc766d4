// Table tests for the contract rule, through the engine: API moves need a person's allow
// entry on the trusted tip; bodies and formatting never count; unparsable files refuse.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { runCheck } from '../../src/commands/check.js';
import { TestRepo } from '../helpers/repo.js';

const TS = 'export function add(a: number, b: number): number {\n  return a + b;\n}\n\nexport class Box<T> {\n  constructor(public value: T) {}\n  get(): T { return this.value; }\n  private secret = 1;\n}\n';
const PY = 'def area(w: float, h: float = 1.0) -> float:\n    return w * h\n\n\nclass Shape:\n    def scale(self, k: int) -> "Shape":\n        return self\n';

interface Case { name: string; files: Record<string, string | null>; verdict: 'accept' | 'reject'; ids?: string[]; format?: 'sha256' }
const cases: Case[] = [
  { name: 'body-only edit (TS and Python)', verdict: 'accept', files: { 'src/lib.ts': TS.replace('return a + b;', 'return b + a;'), 'src/geo.py': PY.replace('return w * h', 'return h * w') } },
  {
    name: 'formatting-only edits: reindent, comments, trailing commas, quotes', verdict: 'accept',
    files: {
      'src/lib.ts': '// a comment\nexport function add(\n    a: number,\n    b: number,   // trailing comma next\n): number { return a+b }\nexport class Box<T> {\n  /** doc */ constructor(public value: T,) {}\n  get(): T {\n    return this.value\n  }\n  private secret = 2;\n}\n',
      'src/geo.py': 'def area(\n    w: float,\n    h: float = 1.0,  # default\n) -> float:\n    return w * h\n\n\nclass Shape:\n    def scale(\n        self, k: int,\n    ) -> \'Shape\':\n        return self\n',
    },
  },
  { name: 'a private member changes', verdict: 'accept', files: { 'src/lib.ts': TS.replace('private secret = 1;', 'private secret: string = "x";') } },
  { name: 'a parameter renamed', verdict: 'reject', ids: ['moved', 'changed'], files: { 'src/lib.ts': TS.replace('add(a: number, b: number)', 'add(x: number, b: number)') } },
  { name: 'a return type changed', verdict: 'reject', ids: ['moved', 'changed'], files: { 'src/lib.ts': TS.replace('): number {', '): string {') } },
  { name: 'a Python default changed', verdict: 'reject', ids: ['moved', 'changed'], files: { 'src/geo.py': PY.replace('h: float = 1.0', 'h: float = 2.0') } },
  { name: 'a public function added', verdict: 'reject', ids: ['moved', 'added'], files: { 'src/more.py': 'def extra(x):\n    return x\n' } },
  { name: 'a public function removed', verdict: 'reject', ids: ['moved', 'removed'], files: { 'src/geo.py': 'class Shape:\n    def scale(self, k: int) -> "Shape":\n        return self\n' } },
  { name: 'a TS file that does not parse', verdict: 'reject', ids: ['parseError'], files: { 'src/lib.ts': TS + '\nexport function broken(: {\n' } },
  { name: 'a Python file that does not parse', verdict: 'reject', ids: ['parseError'], files: { 'src/geo.py': PY + '\ndef broken(:\n    pass\n' } },
  { name: 'sha256 repository: signature change', verdict: 'reject', ids: ['moved', 'changed'], format: 'sha256', files: { 'src/lib.ts': TS.replace('b: number)', 'b?: number)') } },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const r = TestRepo.init(t, { objectFormat: c.format });
    r.commit('base', { 'src/lib.ts': TS, 'src/geo.py': PY });
    r.checkout('agent', true).commit('change', c.files);
    const d = await runCheck({ repo: r.dir, base: 'main', head: 'agent', role: 'agent' });
    const o = d.outcomes.find((x) => x.rule === 'contract')!;
    t.equal(d.verdict, c.verdict, d.reasons.map((x) => x.message).join(' | '));
    if (c.verdict === 'reject') {
      t.equal(d.row, c.ids!.includes('parseError') ? 'source-unparsable' : 'contract-moved');
      t.same([...new Set(o.findings.map((f) => f.messageId))].sort(), [...c.ids!].sort());
      if (c.ids!.includes('parseError')) {
        const f = o.findings[0]!;
        t.match(f.message, new RegExp(`${Object.keys(c.files)[0]!.replace('.', '\\.')}:\\d+ does not parse`));
        t.ok(Number(f.data.line) > 5, `names the line (${f.data.line})`);
      }
    }
  });
}

t.test('the allow file on the trusted tip accepts a new digest; one on the agent branch does not count', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'src/lib.ts': TS });
  r.checkout('agent', true);
  const head = r.commit('api change', { 'src/lib.ts': TS.replace('b: number)', 'b: number, c = 0)') });
  const d1 = await runCheck({ repo: r.dir, base: 'main', head: 'agent', role: 'agent' });
  t.equal(d1.verdict, 'reject');
  const digest = d1.contract.head!;
  t.match(digest, /^[0-9a-f]{64}$/);
  t.match(d1.reasons.map((x) => x.message).join('\n'), /~ src\/lib.ts::function add\(a: number, b: number\): number {2}=> {2}src\/lib.ts::function add\(a: number, b: number, c = 0\): number/);
  r.checkout('main').commit('person approves', { 'ci/contract.allow': `# approved API change\n${digest}\n` });
  const d2 = await runCheck({ repo: r.dir, base: 'main', head, role: 'agent' });
  t.equal(d2.verdict, 'accept', d2.reasons.map((x) => x.message).join(' | '));
  t.equal(d2.outcomes.find((x) => x.rule === 'contract')!.details!.matched, 'allow');
});

t.test('the trusted tip\'s own API is accepted after merging it', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'src/lib.ts': TS });
  r.checkout('agent', true).commit('agent body edit', { 'src/geo.py': '' });
  r.checkout('main').commit('person changes the API', { 'src/lib.ts': TS.replace('b: number)', 'b: number, c = 0)') });
  r.checkout('agent');
  execFileSync('git', ['merge', '-q', '--no-edit', 'main'], { cwd: r.dir, env: { ...process.env, GIT_AUTHOR_NAME: 'a', GIT_AUTHOR_EMAIL: 'a@b', GIT_COMMITTER_NAME: 'a', GIT_COMMITTER_EMAIL: 'a@b' } });
  const d = await runCheck({ repo: r.dir, base: 'main', head: 'agent', role: 'agent' });
  t.equal(d.verdict, 'accept', d.reasons.map((x) => x.message).join(' | '));
});

t.test('format seed from the policy', async (t) => {
  const r = TestRepo.init(t);
  r.commit('base', { 'src/geo.py': PY, 'ci/patchgate.json': JSON.stringify({ contract: { format: 'seed' } }) });
  r.checkout('agent', true).commit('class change only', { 'src/geo.py': PY.replace('k: int', 'k: float') });
  const d = await runCheck({ repo: r.dir, base: 'main', head: 'agent', role: 'agent' });
  t.equal(d.verdict, 'accept', 'the seed format sees only top-level functions');
  r.commit('function change', { 'src/geo.py': PY.replace('-> float', '-> int') });
  const d2 = await runCheck({ repo: r.dir, base: 'main', head: 'agent', role: 'agent' });
  t.equal(d2.verdict, 'reject');
  t.match(d2.reasons.map((x) => x.message).join('\n'), /src\/geo.py::area\(w,h\)->int/);
});
