// Measurement (3): cold contract digest throughput (MB of source per second, a fresh cache
// Map each run, the process already warm) against the parse floor over the same files: bare
// `typescript.createSourceFile` for TypeScript, and a bare tree-sitter parse for Python.

import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import ts from 'typescript';
import { Language, Parser } from 'web-tree-sitter';
import { Git } from '../../dist/git/git.js';
import { contractOf } from '../../dist/contract/digest.js';
import { readBlobs, type GeneratedRepo } from './gen.js';
import { median, nowMs } from './util.js';

export interface LangFigures {
  files: number;
  mb: number;
  /** contractOf, cold cache: MB/s and ms per run. */
  digestMBs: number;
  digestMs: number[];
  /** The parse floor over the same bytes: MB/s and ms per run. */
  floorMBs: number;
  floorMs: number[];
  floor: string;
  ratio: number;
}

export interface DigestBenchResult {
  size: string;
  runs: number;
  ts: LangFigures;
  py: LangFigures;
  /** Both languages under src/, one contractOf call. */
  all: { files: number; mb: number; digestMBs: number; digestMs: number[] };
}

async function pythonParser(): Promise<Parser> {
  await Parser.init();
  const require = createRequire(import.meta.url);
  const wasm = await readFile(require.resolve('tree-sitter-python/tree-sitter-python.wasm'));
  const p = new Parser();
  p.setLanguage(await Language.load(new Uint8Array(wasm.buffer, wasm.byteOffset, wasm.byteLength)));
  return p;
}

export async function digestBench(size: string, gen: GeneratedRepo, runs: number, log: (s: string) => void): Promise<DigestBenchResult> {
  const git = new Git({ dir: gen.dir });
  try {
    const ts0 = gen.srcFiles.filter((f) => f.lang === 'ts');
    const py0 = gen.srcFiles.filter((f) => f.lang === 'py');
    const texts = async (files: typeof ts0) => (await readBlobs(gen.dir, files.map((f) => `${gen.main}:${f.path}`))).map((b) => b.toString('utf8'));
    const tsTexts = await texts(ts0);
    const pyTexts = await texts(py0);
    const mb = (xs: string[]) => xs.reduce((a, s) => a + Buffer.byteLength(s), 0) / 1e6;
    const parser = await pythonParser();

    // Warm the process (module loading, JIT) on a slice, so "cold" means only a cold cache.
    const dirOf = (p: string) => p.slice(0, p.lastIndexOf('/') + 1);
    const warmRoots = [ts0[0], py0[0]].filter((f) => f !== undefined).map((f) => dirOf(f.path));
    await contractOf(git, gen.main, warmRoots, 'v1', new Map());
    for (let i = 0; i < Math.min(50, tsTexts.length); i++) ts.createSourceFile(ts0[i]!.path, tsTexts[i]!, ts.ScriptTarget.Latest, false);
    for (let i = 0; i < Math.min(50, pyTexts.length); i++) parser.parse(pyTexts[i]!)?.delete();

    const timeDigest = async (roots: string[]): Promise<number> => {
      const t0 = nowMs();
      await contractOf(git, gen.main, roots, 'v1', new Map());
      return nowMs() - t0;
    };
    const timeFloor = (fn: () => void): number => {
      const t0 = nowMs();
      fn();
      return nowMs() - t0;
    };
    // Alternate digest and floor runs per language so background load hits both alike.
    const tsDigest: number[] = [];
    const tsFloor: number[] = [];
    const pyDigest: number[] = [];
    const pyFloor: number[] = [];
    const allDigest: number[] = [];
    for (let r = 0; r < runs; r++) {
      tsDigest.push(await timeDigest(['src/app/']));
      tsFloor.push(timeFloor(() => {
        for (let i = 0; i < tsTexts.length; i++) ts.createSourceFile(ts0[i]!.path, tsTexts[i]!, ts.ScriptTarget.Latest, false);
      }));
      pyDigest.push(await timeDigest(['src/engine/']));
      pyFloor.push(timeFloor(() => {
        for (const t of pyTexts) parser.parse(t)?.delete();
      }));
      allDigest.push(await timeDigest(['src/']));
      log(`  [${size}] digest run ${r + 1}/${runs}: ts ${Math.round(tsDigest.at(-1)!)} ms (floor ${Math.round(tsFloor.at(-1)!)} ms), py ${Math.round(pyDigest.at(-1)!)} ms (floor ${Math.round(pyFloor.at(-1)!)} ms), src/ ${Math.round(allDigest.at(-1)!)} ms`);
    }
    parser.delete();
    const fig = (files: number, m: number, d: number[], f: number[], floor: string): LangFigures => {
      const digestMBs = m / (median(d) / 1000);
      const floorMBs = m / (median(f) / 1000);
      return { files, mb: m, digestMBs, digestMs: d, floorMBs, floorMs: f, floor, ratio: digestMBs / floorMBs };
    };
    const tsMb = mb(tsTexts);
    const pyMb = mb(pyTexts);
    return {
      size, runs,
      ts: fig(ts0.length, tsMb, tsDigest, tsFloor, 'typescript.createSourceFile (setParentNodes false)'),
      py: fig(py0.length, pyMb, pyDigest, pyFloor, 'web-tree-sitter parse (tree-sitter-python)'),
      all: { files: gen.srcFiles.length, mb: tsMb + pyMb, digestMBs: (tsMb + pyMb) / (median(allDigest) / 1000), digestMs: allDigest },
    };
  } finally {
    git.close();
  }
}
