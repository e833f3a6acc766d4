// Generates the benchmark's repositories with `git fast-import` (a 50k-file repository in
// seconds): TypeScript and Python modules of 1-8 KB nested 3-6 folders deep under src/, a
// tests/ tree, locked fixtures and a flake ledger under ci/ (so every rule of the policy has
// work to do), and a short history. Also makes the one-file src/ edits the agents push.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixtureDigest, sha256Hex } from '../../dist/fixtures/lock.js';
import { git, gitEnv, nowMs, Rng } from './util.js';

export interface SrcFile {
  path: string;
  lang: 'ts' | 'py';
  bytes: number;
}

export interface GeneratedRepo {
  /** A bare repository holding refs/heads/main. */
  dir: string;
  files: number;
  srcFiles: SrcFile[];
  totalBytes: number;
  main: string;
  commits: number;
  genMs: number;
}

const WORDS = [
  'account', 'audit', 'batch', 'billing', 'cache', 'catalog', 'channel', 'config', 'core', 'cursor', 'delta', 'device',
  'event', 'export', 'feature', 'filter', 'gateway', 'graph', 'health', 'index', 'invoice', 'job', 'ledger', 'limit',
  'loader', 'metric', 'model', 'network', 'notice', 'order', 'packet', 'parser', 'payment', 'policy', 'profile', 'queue',
  'quota', 'record', 'region', 'report', 'request', 'router', 'schema', 'search', 'session', 'shard', 'signal', 'source',
  'stream', 'tenant', 'ticket', 'token', 'trace', 'upload', 'user', 'vault', 'widget', 'worker', 'zone', 'summary',
];
const SENTENCES = [
  'Keeps the records of one tenant in memory and flushes them in batches.',
  'Normalises incoming values before they reach the persistence layer.',
  'Computes the derived fields the reporting pages rely on.',
  'Coordinates retries for requests that failed on a transient error.',
  'Validates options supplied by callers and fills in defaults.',
  'Maps external identifiers onto the internal representation.',
];

const pascal = (w: string): string => w[0]!.toUpperCase() + w.slice(1);

class Names {
  private n = 0;
  constructor(private readonly r: Rng) {}
  next(): { N: string; f: string; f2: string; helper: string; UPPER: string; snake: string; snake2: string; w: string } {
    const a = this.r.pick(WORDS);
    const b = this.r.pick(WORDS);
    const i = ++this.n;
    return {
      N: `${pascal(a)}${pascal(b)}${i}`, f: `compute${pascal(a)}${pascal(b)}${i}`, f2: `load${pascal(b)}${pascal(a)}${i}`,
      helper: `score${pascal(a)}${i}`, UPPER: `${a.toUpperCase()}_${b.toUpperCase()}_${i}`, snake: `compute_${a}_${b}_${i}`,
      snake2: `load_${b}_${a}_${i}`, w: a,
    };
  }
}

function tsUnits(r: Rng, x: ReturnType<Names['next']>): string[] {
  const { N, f, f2, helper, UPPER, w } = x;
  const k = r.int(2, 99);
  const k2 = r.int(2, 9);
  const s = r.pick(SENTENCES);
  const types = `export type ${N}Mode = 'fast' | 'safe' | 'off';

export interface ${N}Options {
  id: string;
  limit?: number;
  tags: readonly string[];
  mode: ${N}Mode;
  onChange?: (next: ${N}Record, previous?: ${N}Record) => void;
}

export interface ${N}Record {
  readonly key: string;
  value: number;
  updatedAt: Date;
  meta: Record<string, unknown>;
}

`;
  const fn = `/**
 * ${s}
 */
export function ${f}(input: ${N}Options, records: ${N}Record[], threshold = ${k}): ${N}Record[] {
  const out: ${N}Record[] = [];
  const seen = new Set<string>();
  for (const record of records) {
    if (seen.has(record.key)) continue;
    seen.add(record.key);
    if (record.value > threshold && input.tags.includes(record.key)) {
      out.push({ ...record, value: record.value * ${k2}, updatedAt: new Date() });
    } else if (input.mode === 'safe') {
      out.push(record);
    }
  }
  input.onChange?.(out[0] ?? records[0]!, records[1]);
  return out.slice(0, input.limit ?? ${k + 10});
}

`;
  const cls = `// ${s}
export class ${N}Store {
  private readonly items = new Map<string, ${N}Record>();
  protected hits = 0;
  static readonly DEFAULT_LIMIT = ${k};

  constructor(private readonly options: ${N}Options, public name: string = '${w}') {}

  get size(): number {
    return this.items.size;
  }

  add(record: ${N}Record): void {
    this.items.set(record.key, record);
  }

  find(key: string): ${N}Record | undefined {
    this.hits++;
    return this.items.get(key);
  }

  async flush(sink: (batch: ${N}Record[]) => Promise<number>): Promise<number> {
    const batch = [...this.items.values()].sort((a, b) => a.value - b.value);
    this.items.clear();
    return sink(batch.slice(0, ${N}Store.DEFAULT_LIMIT));
  }

  protected describe(): string {
    return \`\${this.name}: \${this.items.size} item(s), \${this.hits} hit(s), mode \${this.options.mode}\`;
  }
}

`;
  const misc = `export enum ${N}Kind {
  Alpha = '${w}-alpha',
  Beta = '${w}-beta',
  Gamma = '${w}-gamma',
}

export const ${UPPER}_DEFAULTS: Readonly<Partial<${N}Options>> = Object.freeze({ limit: ${k}, mode: 'safe' });

function ${helper}(values: number[]): number {
  let total = 0;
  for (const v of values) total += Math.abs(v) % ${k2};
  return total / Math.max(1, values.length);
}

export const ${f2} = async (store: ${N}Store, keys: string[]): Promise<number> => {
  const found = keys.map((k) => store.find(k)).filter((r): r is ${N}Record => r !== undefined);
  return ${helper}(found.map((r) => r.value));
};

`;
  // misc refers to the Store class, so it only follows it.
  return r.chance(0.5) ? [types, fn, cls, misc] : [types, cls, misc, fn];
}

function pyUnits(r: Rng, x: ReturnType<Names['next']>): string[] {
  const { N, snake, snake2, helper, UPPER } = x;
  const k = r.int(2, 99);
  const k2 = r.int(2, 9);
  const s = r.pick(SENTENCES);
  const config = `@dataclass
class ${N}Config:
    """${s}"""

    name: str
    limit: int = ${k}
    tags: list[str] = field(default_factory=list)
    ratio: float = 0.${k2}


`;
  const fn = `def ${snake}(items: Sequence[str], config: ${N}Config, *, strict: bool = False) -> list[str]:
    """${s}"""
    out: list[str] = []
    for index, item in enumerate(items):
        if index >= config.limit:
            break
        if strict and not item:
            raise ValueError(f"empty item at {index} in {config.name}")
        if item in config.tags or index % ${k2} == 0:
            out.append(item.strip().lower())
    return out


`;
  const cls = `class ${N}Service:
    """${s}"""

    default_limit: int = ${k}

    def __init__(self, config: ${N}Config, cache: Optional[dict[str, int]] = None) -> None:
        self.config = config
        self._cache = cache or {}
        self._hits = 0

    @property
    def size(self) -> int:
        return len(self._cache)

    def lookup(self, key: str, default: int = 0) -> int:
        self._hits += 1
        return self._cache.get(key, default)

    async def refresh(self, keys: Iterable[str]) -> dict[str, int]:
        result: dict[str, int] = {}
        for key in keys:
            result[key] = len(key) * ${k2}
            await asyncio.sleep(0)
        self._cache.update(result)
        return result

    @classmethod
    def from_names(cls, names: Sequence[str]) -> "${N}Service":
        return cls(${N}Config(name=",".join(names)))

    def _describe(self) -> str:
        return f"{self.config.name}: {len(self._cache)} entries"


`;
  const misc = `${UPPER}_LIMIT: int = ${k}


def _${helper}(values: Sequence[float]) -> float:
    total = 0.0
    for v in values:
        total += abs(v) % ${k2}
    return total / max(1, len(values))


async def ${snake2}(service: ${N}Service, keys: list[str]) -> float:
    found = [service.lookup(k) for k in keys]
    return _${helper}([float(x) for x in found if x])


`;
  return r.chance(0.5) ? [config, fn, cls, misc] : [config, cls, misc, fn];
}

/** One source module of roughly `target` bytes. */
export function sourceFile(r: Rng, lang: 'ts' | 'py', target: number): string {
  const names = new Names(r);
  const parts: string[] = [];
  let size = 0;
  const push = (s: string) => {
    parts.push(s);
    size += s.length;
  };
  if (lang === 'ts') {
    push(`// ${r.pick(SENTENCES)}\nimport { readFile } from 'node:fs/promises';\nimport type { ${pascal(r.pick(WORDS))}Context } from '../${r.pick(WORDS)}/context.js';\n\n`);
  } else {
    push(`"""${r.pick(SENTENCES)}"""\nfrom __future__ import annotations\n\nimport asyncio\nimport os\nfrom dataclasses import dataclass, field\nfrom typing import Iterable, Optional, Sequence\n\n\n`);
  }
  outer: while (size < target) {
    const units = lang === 'ts' ? tsUnits(r, names.next()) : pyUnits(r, names.next());
    for (const u of units) {
      push(u);
      if (size >= target) break outer;
    }
  }
  return parts.join('');
}

function testFile(r: Rng, lang: 'ts' | 'py', target: number): string {
  const parts: string[] = [];
  let size = 0;
  let i = 0;
  if (lang === 'ts') parts.push(`import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n\n`);
  else parts.push('import pytest\n\n\n');
  while (size < target) {
    const w = r.pick(WORDS);
    const k = r.int(1, 99);
    const s =
      lang === 'ts'
        ? `test('${w} case ${++i} keeps its value', () => {\n  const value = [${k}, ${k + 1}, ${k + 2}].map((x) => x * 2);\n  assert.equal(value.length, 3);\n  assert.deepEqual(value[0], ${k * 2});\n});\n\n`
        : `def test_${w}_case_${++i}() -> None:\n    value = [x * 2 for x in (${k}, ${k + 1}, ${k + 2})]\n    assert len(value) == 3\n    assert value[0] == ${k * 2}\n\n\n`;
    parts.push(s);
    size += s.length;
  }
  return parts.join('');
}

/** Folders and how many files each holds, nested `minDepth..maxDepth` deep (counting every path segment but the file). */
function layout(r: Rng, prefix: string, depth: number, n: number, out: Array<{ dir: string; n: number }>): void {
  if (n <= 0) return;
  const leaf = depth >= 6 || (depth >= 3 && (n <= 24 || r.chance(0.12)));
  if (leaf) {
    out.push({ dir: prefix, n });
    return;
  }
  const here = depth >= 3 ? Math.min(n, r.int(0, 6)) : 0;
  if (here) out.push({ dir: prefix, n: here });
  let rest = n - here;
  const k = Math.max(2, Math.min(r.int(2, 7), Math.ceil(rest / 8)));
  const weights = Array.from({ length: k }, () => 0.3 + r.next());
  const sum = weights.reduce((a, b) => a + b, 0);
  const used = new Set<string>();
  for (let i = 0; i < k && rest > 0; i++) {
    const share = i === k - 1 ? rest : Math.min(rest, Math.round((n - here) * (weights[i]! / sum)));
    let name = r.pick(WORDS);
    while (used.has(name)) name = `${r.pick(WORDS)}-${r.pick(WORDS)}`;
    used.add(name);
    layout(r, `${prefix}/${name}`, depth + 1, share, out);
    rest -= share;
  }
}

/** Paths for `n` files of one kind under `root` (e.g. "src/app", 2 segments deep). */
function paths(r: Rng, root: string, n: number, name: (i: number) => string): string[] {
  const dirs: Array<{ dir: string; n: number }> = [];
  layout(r, root, root.split('/').length, n, dirs);
  const out: string[] = [];
  let i = 0;
  for (const d of dirs) for (let j = 0; j < d.n; j++) out.push(`${d.dir}/${name(i++)}`);
  return out;
}

/** Writes a fast-import stream with backpressure. */
class Importer {
  private readonly child;
  private readonly done: Promise<void>;
  private stderr = '';
  constructor(dir: string, extra: string[] = []) {
    this.child = spawn('git', ['fast-import', '--quiet', '--done', ...extra], { cwd: dir, env: gitEnv(), stdio: ['pipe', 'ignore', 'pipe'] });
    this.child.stderr.on('data', (b: Buffer) => (this.stderr += b.toString('utf8')));
    this.done = new Promise((resolve, reject) => {
      this.child.on('error', reject);
      this.child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git fast-import failed (${code}): ${this.stderr.trim()}`))));
    });
  }
  async write(s: string): Promise<void> {
    if (!this.child.stdin.write(s)) await new Promise<void>((r) => this.child.stdin.once('drain', () => r()));
  }
  async file(path: string, content: string): Promise<void> {
    await this.write(`M 100644 inline ${path}\ndata ${Buffer.byteLength(content)}\n${content}\n`);
  }
  async commit(ref: string, mark: number, when: number, message: string, from?: string): Promise<void> {
    await this.write(`commit ${ref}\nmark :${mark}\ncommitter Bench Agent <bench@example.test> ${when} +0000\ndata ${Buffer.byteLength(message)}\n${message}\n${from ? `from ${from}\n` : ''}`);
  }
  async finish(): Promise<void> {
    this.child.stdin.end('done\n');
    await this.done;
  }
}

/** A repository of about `total` files. Deterministic for a given total and seed. */
export async function generateRepo(dir: string, total: number, seed = 1): Promise<GeneratedRepo> {
  const t0 = nowMs();
  const r = new Rng(seed * 7919 + total);
  await git(dir, ['init', '-q', '--bare', '--initial-branch=main', '.']);
  const other = Math.max(12, Math.round(total * 0.01));
  const tests = Math.round(total * 0.1);
  const src = total - tests - other;
  const ts = Math.round(src * 0.6);
  const py = src - ts;
  const srcFiles: SrcFile[] = [];
  const tsPaths = paths(r, 'src/app', ts, (i) => `${r.pick(WORDS)}-${r.pick(WORDS)}-${i}.ts`);
  const pyPaths = paths(r, 'src/engine', py, (i) => `${r.pick(WORDS)}_${r.pick(WORDS)}_${i}.py`);
  const testPaths = [
    ...paths(r, 'tests/app', Math.round(tests * 0.6), (i) => `${r.pick(WORDS)}-${i}.test.ts`),
    ...paths(r, 'tests/engine', tests - Math.round(tests * 0.6), (i) => `test_${r.pick(WORDS)}_${i}.py`),
  ];
  const fixtures = Array.from({ length: 10 }, (_, i) => `tests/fixtures/${WORDS[i]}.json`);

  const base = Math.floor(Date.now() / 1000) - 5 * 86400;
  const imp = new Importer(dir);
  let totalBytes = 0;
  const add = async (path: string, content: string) => {
    totalBytes += content.length;
    await imp.file(path, content);
  };
  await imp.commit('refs/heads/main', 1, base, 'initial import\n');
  const size = () => Math.round(1024 * 8 ** r.next());
  for (const p of tsPaths) {
    const c = sourceFile(r, 'ts', size());
    srcFiles.push({ path: p, lang: 'ts', bytes: c.length });
    await add(p, c);
  }
  for (const p of pyPaths) {
    const c = sourceFile(r, 'py', size());
    srcFiles.push({ path: p, lang: 'py', bytes: c.length });
    await add(p, c);
  }
  for (const p of testPaths) await add(p, testFile(r, p.endsWith('.py') ? 'py' : 'ts', r.int(1024, 4096)));
  const lock = new Map<string, string>();
  for (const p of fixtures) {
    const c = JSON.stringify({ name: p, values: Array.from({ length: 20 }, () => r.int(0, 1000)) }, null, 2) + '\n';
    lock.set(p, sha256Hex(c));
    await add(p, c);
  }
  await add('ci/fixtures.lock', JSON.stringify(Object.fromEntries([...lock].sort()), null, 2) + '\n');
  await add('README.md', `# bench project\n\n${SENTENCES.join('\n')}\n`);
  await add('package.json', JSON.stringify({ name: 'bench-project', private: true, type: 'module', scripts: { test: 'node --test' } }, null, 2) + '\n');
  await add('tsconfig.json', JSON.stringify({ compilerOptions: { strict: true, module: 'NodeNext', target: 'ES2022' } }, null, 2) + '\n');
  await add('pyproject.toml', '[project]\nname = "bench-engine"\nversion = "0.1.0"\n');
  const docs = other - fixtures.length - 5;
  for (let i = 0; i < docs; i++) await add(`docs/${WORDS[i % WORDS.length]}-${i}.md`, `# ${WORDS[i % WORDS.length]}\n\n${SENTENCES.join(' ')}\n`.repeat(r.int(2, 20)));

  // A short history: a flake ledger arrives, then a few rounds of src/ edits.
  const commits = 4;
  for (let c = 2; c <= commits; c++) {
    const when = base + (c - 1) * 86400;
    await imp.commit('refs/heads/main', c, when, `round ${c}\n`);
    if (c === 2) {
      const expires = new Date((when + 14 * 86400) * 1000).toISOString().slice(0, 10);
      const digest = fixtureDigest(lock);
      const rows = [
        { nodeid: 'tests/engine/test_flaky.py::test_timeout', seed: 1234, fixture_digest: digest, expires, reason: 'network timeout on CI runners' },
        { nodeid: 'tests/app/flaky.test.ts::retries', seed: 99, fixture_digest: digest, expires, reason: 'clock skew in the retry test' },
      ];
      await add('ci/flake-ledger.jsonl', rows.map((x) => JSON.stringify(x)).join('\n') + '\n');
    }
    const edits = Math.max(3, Math.round(srcFiles.length * 0.005));
    for (let e = 0; e < edits; e++) {
      const f = srcFiles[r.int(0, srcFiles.length - 1)]!;
      const content = sourceFile(r, f.lang, f.bytes);
      f.bytes = content.length;
      await add(f.path, content);
    }
  }
  await imp.finish();
  const main = (await git(dir, ['rev-parse', 'refs/heads/main'])).trim();
  const files = tsPaths.length + pyPaths.length + testPaths.length + fixtures.length + 5 + docs;
  return { dir, files, srcFiles, totalBytes, main, commits, genMs: nowMs() - t0 };
}

/** Read blobs (`rev:path` specs) with one `git cat-file --batch`. */
export async function readBlobs(dir: string, specs: string[]): Promise<Buffer[]> {
  const out = await new Promise<Buffer>((resolve, reject) => {
    const child = spawn('git', ['cat-file', '--batch'], { cwd: dir, env: gitEnv(), stdio: ['pipe', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => chunks.push(b));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`cat-file exited ${code}`))));
    child.stdin.end(specs.map((s) => s + '\n').join(''));
  });
  const blobs: Buffer[] = [];
  let pos = 0;
  for (const spec of specs) {
    const nl = out.indexOf(10, pos);
    const head = out.subarray(pos, nl).toString('utf8');
    const m = /^[0-9a-f]+ blob (\d+)$/.exec(head);
    if (!m) throw new Error(`cannot read ${spec}: ${head}`);
    const size = Number(m[1]);
    blobs.push(out.subarray(nl + 1, nl + 1 + size));
    pos = nl + 1 + size + 1;
  }
  return blobs;
}

/**
 * A chain of one-file src/ edits on `branch` in the bare repo `dir`, starting from `from`:
 * commit i appends a comment to one file (a body change that leaves the public API as it
 * was, so the gate accepts it). Files are distinct, so every edit starts from `from`'s copy.
 * Returns the commit ids, oldest first.
 */
export async function makeEdits(dir: string, branch: string, from: string, files: readonly SrcFile[], count: number, rng: Rng, tag: string): Promise<string[]> {
  const chosen: SrcFile[] = [];
  const used = new Set<number>();
  while (chosen.length < count) {
    const i = rng.int(0, files.length - 1);
    if (used.has(i) && used.size < files.length) continue;
    used.add(i);
    chosen.push(files[i]!);
  }
  const blobs = await readBlobs(dir, chosen.map((f) => `${from}:${f.path}`));
  const marks = join(dir, `marks-${branch.replace(/\W/g, '_')}.txt`);
  const imp = new Importer(dir, [`--export-marks=${marks}`]);
  let when = Math.floor(Date.now() / 1000);
  for (let i = 0; i < count; i++) {
    const f = chosen[i]!;
    await imp.commit(`refs/heads/${branch}`, i + 1, when++, `${tag}: edit ${f.path}\n`, i === 0 ? from : undefined);
    const note = f.lang === 'ts' ? `// ${tag} edit ${i}: tightened the loop above\n` : `# ${tag} edit ${i}: tightened the loop above\n`;
    await imp.file(f.path, blobs[i]!.toString('utf8') + note);
  }
  await imp.finish();
  const ids = new Map<number, string>();
  for (const line of readFileSync(marks, 'utf8').split('\n')) {
    const m = /^:(\d+) ([0-9a-f]+)$/.exec(line);
    if (m) ids.set(Number(m[1]), m[2]!);
  }
  return Array.from({ length: count }, (_, i) => ids.get(i + 1)!);
}
