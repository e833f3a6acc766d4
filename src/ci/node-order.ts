// The shuffled rerun of a node:test suite (issue 11: "node:test by file order"). Node 20's
// `node --test` sorts the files it is given and has no shuffle option (measured on 20.20:
// `node --test c.mjs a.mjs d.mjs b.mjs` runs a, b, c, d, and reports in that order even with
// --test-concurrency=2), so the command-line order cannot carry a shuffle. Instead patchgate
// runs the command once per test file, one file after another, in one sealed tree, in an
// order shuffled from the seed: `node <the command's own options> FILE`. This module plans
// that rerun (which options are kept, which files, in what order) and merges the per-file
// streams into one whose test ids are those of the first run.

import type { Stream, StreamTest } from './stream.js';

/** node options that take their value as the next argument (`--import x`); from `node --help` of Node 20.20. */
const VALUE_OPTS = new Set([
  '--allow-fs-read', '--allow-fs-write', '--build-snapshot-config', '-C', '--conditions', '--cpu-prof-dir', '--cpu-prof-interval',
  '--cpu-prof-name', '--diagnostic-dir', '--disable-proto', '--disable-warning', '--dns-result-order', '--env-file', '--env-file-if-exists',
  '--experimental-default-type', '--experimental-policy', '--experimental-sea-config', '--heap-prof-dir', '--heap-prof-interval',
  '--heap-prof-name', '--heapsnapshot-near-heap-limit', '--heapsnapshot-signal', '--icu-data-dir', '--import', '--input-type',
  '--inspect-publish-uid', '--max-http-header-size', '--network-family-autoselection-attempt-timeout', '--openssl-config',
  '--policy-integrity', '--redirect-warnings', '--report-filename', '--report-signal', '-r', '--require', '--secure-heap',
  '--secure-heap-min', '--snapshot-blob', '--test-concurrency', '--test-name-pattern', '--test-reporter', '--test-reporter-destination',
  '--test-shard', '--test-timeout', '--title', '--tls-cipher-list', '--tls-keylog', '--trace-event-categories',
  '--trace-event-file-pattern', '--trace-require-module', '--unhandled-rejections', '--use-largepages', '--v8-pool-size',
  '--loader', '--experimental-loader',
]);

/** Options after which the argv is not a list of test files (eval, REPL, watch, syntax check). */
const NOT_A_TEST_RUN = new Set(['-e', '--eval', '-p', '--print', '-i', '--interactive', '-c', '--check', '--watch', '--watch-path', '-']);

export type NodeShape = { options: string[]; paths: string[] } | { why: string };

/**
 * Split a `node --test ...` argv into the options to keep and the test paths to replace.
 * `isPath` says whether an argument names a file or folder of the judged tree: an argument
 * that does not is a value of an option patchgate does not know, so the shape is refused
 * rather than guessed.
 */
export async function nodeTestShape(argv: string[], isPath: (arg: string) => Promise<boolean>): Promise<NodeShape> {
  const options: string[] = [];
  const paths: string[] = [];
  let test = false;
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      paths.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith('-') && a.length > 1) {
      const name = a.includes('=') ? a.slice(0, a.indexOf('=')) : a;
      if (NOT_A_TEST_RUN.has(name)) return { why: `the command uses ${name}, which is not a run of test files` };
      if (name === '--test') test = true;
      options.push(a);
      if (!a.includes('=') && VALUE_OPTS.has(a)) {
        if (i + 1 >= argv.length) return { why: `${a} has no value` };
        options.push(argv[++i]!);
      }
      continue;
    }
    if (!(await isPath(a))) return { why: `${JSON.stringify(a)} is neither a node option patchgate knows nor a file or folder of the tree` };
    paths.push(a);
  }
  if (!test) return { why: 'the command is not `node --test ...`: without --test node runs one process whose order is its imports' };
  return { options, paths };
}

/** The test files a node:test run ran, in the order node reported them (tree-relative paths). */
export function filesOf(stream: Stream): { files: string[]; outside: string[] } {
  const files: string[] = [];
  const outside: string[] = [];
  for (const t of stream.tests) {
    const f = t.file;
    if (f === undefined || files.includes(f) || outside.includes(f)) continue;
    (f === '' || f.startsWith('../') || f.startsWith('/') ? outside : files).push(f);
  }
  return { files, outside };
}

/** A small seeded PRNG (mulberry32): the same seed gives the same order on every machine. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * `items` shuffled from `seed` (Fisher-Yates). Deterministic per seed, and never the order it
 * was given when there are two or more items: a shuffle that comes out unchanged is rotated by one.
 */
export function shuffleOrder<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  const r = prng(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  if (out.length >= 2 && out.every((x, i) => x === items[i])) out.push(out.shift()!);
  return out;
}

/**
 * Number repeated test ids as the reports do ("name #2"), in sorted file order (the order
 * node itself reports files in), so a shuffled run's ids are the first run's. Each test also
 * gets a key (file, name, occurrence in that file) that does not depend on the order at all.
 */
export function numberIds(tests: StreamTest[], byFile: boolean): void {
  const order = tests.map((_, i) => i);
  if (byFile) order.sort((x, y) => ((tests[x]!.file ?? '') < (tests[y]!.file ?? '') ? -1 : (tests[x]!.file ?? '') > (tests[y]!.file ?? '') ? 1 : x - y));
  const seen = new Map<string, number>();
  const inFile = new Map<string, number>();
  for (const i of order) {
    const t = tests[i]!;
    const base = t.name ?? t.id;
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    t.id = n > 1 ? `${base} #${n}` : base;
    if (t.file !== undefined) {
      const fk = `${t.file}\0${base}`;
      const m = (inFile.get(fk) ?? 0) + 1;
      inFile.set(fk, m);
      t.key = `${fk}\0${m}`;
    }
  }
}

/** One stream from the streams of the per-file runs: complete only when every part is. */
export function mergeStreams(parts: Stream[]): Stream {
  const s: Stream = { started: parts.length > 0, ended: parts.length > 0, exitstatus: null, collected: [], collectErrors: [], tests: [], problems: [], modules: {}, tampers: parts.flatMap((p) => p.tampers ?? []) };
  for (const p of parts) {
    s.started &&= p.started;
    s.ended &&= p.ended;
    s.collected.push(...p.collected);
    s.collectErrors.push(...p.collectErrors);
    s.tests.push(...p.tests.map((t) => ({ ...t })));
    s.problems.push(...p.problems);
  }
  numberIds(s.tests, true);
  return s;
}
