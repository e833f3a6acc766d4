// Issue 22's structural checks, kept from sliding back: no import cycle in src/ (the last one,
// server/escalate.ts <-> server/hook-service.ts, went with the hook-service split into
// src/server/hook/), no source file past about 600 lines (src/git/git.ts is split into
// src/git/, src/server/hook-service.ts into src/server/hook/), and the benchmark outside the
// shipped source (bench/src/, its own tsconfig: the product build sees none of it).

import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const KNOWN_CYCLES = new Set<string>([]);
const KNOWN_LONG = new Set<string>([]);

t.test('import cycles: none', async (t) => {
  const out = await new Promise<string>((resolve) =>
    execFile('node', [join(ROOT, 'scripts/import-cycles.mjs'), join(ROOT, 'src')], (_err, stdout) => resolve(stdout)),
  );
  const cycles = out.split('\n').filter((l) => l.startsWith('cycle: ')).map((l) => l.slice('cycle: '.length));
  t.ok(/\d+ files, \d+ cycle\(s\)/.test(out), 'the walker ran');
  t.same(cycles.filter((c) => !KNOWN_CYCLES.has(c)), [], 'no new cycle');
  t.match(out, /\b0 cycle\(s\)/, 'none at all');
  for (const gone of ['audit/pg-store.ts', 'ci/channel.ts', 'contract/python/annotations.ts', 'web/escalations.ts', 'git/', 'server/escalate.ts', 'server/hook-service.ts', 'server/hook/']) {
    t.notOk(cycles.some((c) => c.includes(gone)), `${gone} is in no cycle`);
  }
});

t.test('the hook service is a facade: nothing under src/server/hook/ imports it', async (t) => {
  const dir = join(ROOT, 'src/server/hook');
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
  t.ok(files.includes('endpoint.ts') && files.includes('pre-receive.ts'), 'the parts are there');
  for (const f of files) t.notMatch(readFileSync(join(dir, f), 'utf8'), /from '\.\.\/hook-service\.js'/, `${f} does not import the facade`);
});

t.test('the walker sees a cycle when there is one', async (t) => {
  const dir = t.testdir({ 'a.ts': "import { b } from './b.js';\nexport const a = 1;\n", 'b.ts': "import type { a } from './a.js';\nexport const b = 2;\n", 'c.ts': "export const c = await import('./a.js');\n" });
  const out = await new Promise<{ code: number; stdout: string }>((resolve) =>
    execFile('node', [join(ROOT, 'scripts/import-cycles.mjs'), dir], (err, stdout) => resolve({ code: err ? Number(err.code) : 0, stdout })),
  );
  t.equal(out.code, 1);
  t.match(out.stdout, /cycle: a\.ts <-> b\.ts/);
});

t.test('no source file past about 600 lines', async (t) => {
  const long: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|mjs|cjs|py)$/.test(e.name) && readFileSync(p, 'utf8').split('\n').length > 620) long.push(relative(ROOT, p));
    }
  };
  walk(join(ROOT, 'src'));
  t.same(long.filter((f) => !KNOWN_LONG.has(f)).sort(), []);
});

/** The files `tsc -p <tsconfig>` compiles (its own .ts files, not declarations), relative to the tsconfig's folder. */
async function compiledFiles(tsconfig: string): Promise<string[]> {
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  const out = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, [tsc, '-p', tsconfig, '--listFilesOnly'], { maxBuffer: 16 << 20 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
  );
  const top = join(tsconfig, '..');
  return out.split('\n').filter((l) => l.endsWith('.ts') && !l.endsWith('.d.ts')).map((l) => relative(top, l));
}

t.test('the bench is not in the shipped source: no src/bench, and the product build sees no bench file', async (t) => {
  t.notOk(existsSync(join(ROOT, 'src/bench')), 'src/bench does not exist');
  t.ok(existsSync(join(ROOT, 'bench/src/run.ts')), 'the bench lives in bench/src/');
  const product = await compiledFiles(join(ROOT, 'tsconfig.json'));
  t.ok(product.includes('src/cli.ts'), 'the product build was listed');
  t.same(product.filter((f) => !f.startsWith('src/') || /(^|\/)bench(\/|$)/.test(f)), [], 'the product build compiles src/ only, and nothing named bench');
  const bench = await compiledFiles(join(ROOT, 'bench/tsconfig.json'));
  t.ok(bench.includes('src/run.ts'), 'the bench has its own build');
  t.same(bench.filter((f) => !f.startsWith('src/')), [], 'the bench build compiles only bench/src/ (the product comes in as dist/ declarations)');
});

t.test('the tsconfig check sees a bench file when a tsconfig takes one in', async (t) => {
  const dir = t.testdir({
    'tsconfig.json': JSON.stringify({ compilerOptions: { rootDir: '.', noEmit: true, types: [] }, include: ['src/**/*.ts'] }),
    src: { 'cli.ts': "import './bench/run.js';\nexport const x = 1;\n", bench: { 'run.ts': 'export const y = 2;\n' } },
  });
  const files = await compiledFiles(join(dir, 'tsconfig.json'));
  t.same(files.filter((f) => /(^|\/)bench(\/|$)/.test(f)), ['src/bench/run.ts']);
});
