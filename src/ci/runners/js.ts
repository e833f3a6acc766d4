// vitest and jest, the runners most TypeScript projects use, run directly by `patchgate ci`:
// patchgate's own reporter module (src/ci/channel/patchgate-{vitest,jest}-reporter.*) streams
// each outcome on fd 3, beside the runner's own structured report (vitest's JUnit reporter,
// jest's --json), and the run seed and shuffle go on the command line as each runner spells
// them (vitest --sequence.seed/--sequence.shuffle, jest --seed/--randomize).

import { basename, join } from 'node:path';

export type JsRunner = 'vitest' | 'jest';

/** vitest or jest as argv[0] (a bare name, a path to its bin, or after npx). */
export function jsRunnerAt(argv: string[]): { kind: JsRunner; at: number } | null {
  let i = 0;
  if (argv[0] && /^(npx|pnpx)$/.test(basename(argv[0]))) i = argv[1] === '--no-install' || argv[1] === '--yes' ? 2 : 1;
  const b = argv[i] ? basename(argv[i]!) : '';
  if (b === 'vitest' || b === 'vitest.mjs') return { kind: 'vitest', at: i + 1 };
  if (b === 'jest' || b === 'jest.js') return { kind: 'jest', at: i + 1 };
  return null;
}

/** A bare runner name is the project's own bin, as npm's PATH would find it (run from the tree's root). */
function binOf(argv: string[], at: number, name: string): string {
  const a = argv[at - 1]!;
  return a.includes('/') ? a : `node_modules/.bin/${name}`;
}

export interface JsAttach {
  argv: string[];
  /** The runner's own report: JUnit (vitest) or jest's JSON (`*.jest.json`). */
  report: string | null;
}

/**
 * The argv with patchgate's reporter, the runner's own report in `dir`, and the seed: run 1
 * passes the run seed; a later run (`shuffle`) shuffles the order from its own seed.
 */
export function attachJs(kind: JsRunner, argv: string[], at: number, o: { dir: string; reporter: string; seed: number; shuffle?: number; haveReport: boolean }): JsAttach {
  const bin = binOf(argv, at, kind);
  let rest = argv.slice(at);
  if (kind === 'vitest') {
    // Never watch: `vitest` alone watches on a terminal; `run` runs once.
    if (rest[0] === 'watch' || rest[0] === 'dev') rest = rest.slice(1);
    if (rest[0] !== 'run' && rest[0] !== 'related') rest = ['run', ...rest];
    const report = o.haveReport ? null : join(o.dir, 'junit.xml');
    const extra = [`--reporter=${o.reporter}`, '--reporter=default', ...(report ? ['--reporter=junit', `--outputFile.junit=${report}`] : [])];
    extra.push(...(o.shuffle !== undefined ? ['--sequence.shuffle', `--sequence.seed=${o.shuffle}`] : [`--sequence.seed=${o.seed}`]));
    return { argv: [bin, rest[0]!, ...extra, ...rest.slice(1)], report };
  }
  const report = o.haveReport ? null : join(o.dir, 'report.jest.json');
  const extra = ['--reporters=default', `--reporters=${o.reporter}`, '--watchAll=false', '--ci', ...(report ? ['--json', `--outputFile=${report}`] : [])];
  extra.push(...(o.shuffle !== undefined ? ['--randomize', `--seed=${o.shuffle}`] : [`--seed=${o.seed}`]));
  return { argv: [bin, ...extra, ...rest], report };
}
