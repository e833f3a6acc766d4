// The parsers' JIT warm-up at start. A daemon restarted on a filled cache.db parses nothing
// until a push comes, so the first pushes after a restart ran the TypeScript, typescript-estree
// and Python code cold: a bench file's contract rows took 7.3 ms (median of 20) on a fresh
// process, 1.7 ms after 100 other files and 1.0 ms after 400 (issue 24). Once per process, in
// the background, this runs the same code (the contract extractor and the tamper scans) over
// patchgate's own sources: never anything pushed, and no result is kept anywhere. A file at a
// time, giving way to any push being received or judged; a failure only ends the warm-up.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setImmediate as turn } from 'node:timers/promises';
import { extractRows } from '../../contract/extract.js';
import { initPython } from '../../contract/python.js';
import { isTypeScriptPath } from '../../contract/typescript.js';
import { scanTypeScript } from '../../policy/tamper/scan-typescript.js';
import { scanPython } from '../../policy/tamper/scan-python.js';

/** The package's root: this file is src/server/hook/ or dist/server/hook/ under it. */
const PACKAGE_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

export interface ParserWarmOptions {
  /** Ends the warm-up (the server is stopping). */
  signal: AbortSignal;
  /** True while a push is being received or judged: the warm-up waits. */
  busy: () => boolean;
  /** At most this many files (defaultWarmFiles: 400). */
  maxFiles?: number;
  /** At most this much time spent parsing, in ms (1500). */
  budgetMs?: number;
  /** Wait this long before the first parse, in ms (1000). */
  startDelayMs?: number;
  /** Where the sources are read (the package's root). */
  root?: string;
}

/** Files up to this size: larger ones are parsed on worker threads in the daemon (parse-pool.ts), and each is one longer stall here. */
const WARM_MAX_BYTES = 16 * 1024;

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

export interface ParserWarmResult {
  files: number;
  ms: number;
}

/** Source files of ours to parse: `src/` (TypeScript and Python) when it is there, else `dist/` (JavaScript). */
export function warmSources(root: string = PACKAGE_ROOT, max = 400): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (out.length >= max) return;
      const p = join(dir, name);
      let st;
      try {
        st = statSync(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(p);
      else if (st.isFile() && st.size <= WARM_MAX_BYTES && (isTypeScriptPath(name) || name.endsWith('.py'))) out.push(p);
    }
  };
  walk(join(root, 'src'));
  if (!out.length) walk(join(root, 'dist'));
  return out;
}

/** PATCHGATE_PARSER_WARM_FILES=N: at most N files (0: no warm-up); default 400. */
export function defaultWarmFiles(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.PATCHGATE_PARSER_WARM_FILES;
  return raw !== undefined && /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : 400;
}

let once: Promise<ParserWarmResult> | null = null;

/** Runs the warm-up once per process (later calls get the first one's result). */
export function warmParsers(opts: ParserWarmOptions): Promise<ParserWarmResult> {
  once ??= runWarm(opts).catch(() => ({ files: 0, ms: 0 }));
  return once;
}

/** One warm-up now (warmParsers runs it once per process). */
export async function runWarm(opts: ParserWarmOptions): Promise<ParserWarmResult> {
  const root = opts.root ?? PACKAGE_ROOT;
  const budget = opts.budgetMs ?? 1500;
  const max = opts.maxFiles ?? defaultWarmFiles();
  const sources = warmSources(root, max);
  // patchgate has few Python files of its own: each is parsed several times.
  const py = sources.filter((f) => f.endsWith('.py'));
  const files = [...sources, ...Array.from({ length: 15 }, () => py).flat()].slice(0, max);
  if (!files.length) return { files: 0, ms: 0 };
  // Not at once: a push that comes right at start is received before anything here runs.
  await abortableSleep(opts.startDelayMs ?? 1000, opts.signal);
  let spent = 0;
  let done = 0;
  /** Waits for a turn of the event loop, then while a push is received or judged; false: stop. */
  const mayGo = async (): Promise<boolean> => {
    await turn();
    while (opts.busy() && !opts.signal.aborted) await abortableSleep(50, opts.signal);
    return !opts.signal.aborted && spent < budget;
  };
  if (!(await mayGo())) return { files: 0, ms: 0 };
  await initPython();
  for (const file of files) {
    if (!(await mayGo())) break;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    const path = relative(root, file);
    const lines = new Set(text.split('\n').map((_, i) => i + 1));
    // Two steps, each of one parse, with a chance to give way between them.
    const steps: Array<() => unknown> = [
      () => extractRows('v1', path, text),
      () => (path.endsWith('.py') ? scanPython(text, path, lines) : scanTypeScript(text, path, lines)),
    ];
    for (const [i, step] of steps.entries()) {
      if (i > 0 && !(await mayGo())) break;
      const t0 = performance.now();
      try {
        await step();
      } catch {
        // A file of ours that does not parse only warms less.
      }
      spent += performance.now() - t0;
    }
    done++;
  }
  return { files: done, ms: Math.round(spent) };
}
