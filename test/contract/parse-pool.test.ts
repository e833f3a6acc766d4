// Cold parses run on worker threads (src/contract/parse-pool.ts). The rows, digests and parse
// errors must be exactly those of a parse on the main thread; the pool is only about speed.

import t from 'tap';
import { Git } from '../../src/git/git.js';
import { contractOf } from '../../src/contract/digest.js';
import { parsePool } from '../../src/contract/parse-pool.js';
import { ContractParseError } from '../../src/errors.js';
import { TestRepo } from '../helpers/repo.js';

function tsFile(i: number): string {
  return `export interface Item${i} { id: string; n: number }\n` +
    `export function make${i}(id: string, n = ${i}): Item${i} {\n  const x = [id, n].join(':');\n  return { id: x, n };\n}\n` +
    `export class Store${i} {\n  constructor(private readonly items: Item${i}[]) {}\n  get size(): number { return this.items.length; }\n}\n`;
}

function pyFile(i: number): string {
  return `def f${i}(a: int, b: str = "x") -> list[int]:\n    return [a] * len(b)\n\n\nclass C${i}:\n    def m(self, x: float) -> float:\n        return x * ${i}\n`;
}

t.test('worker threads give the same contract as the main thread, and the same parse errors', async (t) => {
  const repo = TestRepo.init(t);
  const files: Record<string, string> = {};
  for (let i = 0; i < 60; i++) files[`src/m${Math.floor(i / 10)}/f${i}.ts`] = tsFile(i);
  for (let i = 0; i < 20; i++) files[`src/py/p${i}.py`] = pyFile(i);
  const good = repo.commit('files', files);
  const bad = repo.commit('one bad file', { 'src/m3/f33.ts': tsFile(33).replace('n: number }', 'n: number') });
  const git = new Git({ dir: repo.dir });
  t.teardown(() => git.close());
  const saved = process.env.PATCHGATE_PARSE_WORKERS;
  t.teardown(() => {
    if (saved === undefined) delete process.env.PATCHGATE_PARSE_WORKERS;
    else process.env.PATCHGATE_PARSE_WORKERS = saved;
  });

  process.env.PATCHGATE_PARSE_WORKERS = '0';
  const inline = await contractOf(git, good, ['src/'], 'v1', new Map());
  t.equal(parsePool.workers, 0, 'no worker when told to use none');
  const inlineErr = await contractOf(git, bad, ['src/'], 'v1', new Map()).catch((e: unknown) => e);

  process.env.PATCHGATE_PARSE_WORKERS = '2';
  const pooled = await contractOf(git, good, ['src/'], 'v1', new Map());
  t.ok(parsePool.workers > 0, `the cold parse used ${parsePool.workers} worker(s)`);
  t.equal(pooled.digest, inline.digest);
  t.same(pooled.rows, inline.rows);
  t.equal(pooled.files, 80);
  t.ok(pooled.rows.some((r) => r.startsWith('src/py/p7.py::')), 'Python files are parsed in workers too');

  const pooledErr = await contractOf(git, bad, ['src/'], 'v1', new Map()).catch((e: unknown) => e);
  t.ok(pooledErr instanceof ContractParseError, 'a parse error in a worker is a ContractParseError');
  t.ok(inlineErr instanceof ContractParseError);
  if (pooledErr instanceof ContractParseError && inlineErr instanceof ContractParseError) {
    t.equal(pooledErr.path, 'src/m3/f33.ts');
    t.same([pooledErr.path, pooledErr.line, pooledErr.column, pooledErr.message], [inlineErr.path, inlineErr.line, inlineErr.column, inlineErr.message]);
  }
});
