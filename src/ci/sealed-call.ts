// The sandboxed half of sealed expectations (issue 46): the calls of the held-out
// `*.sealed.json` cases, and nothing else of them, go on stdin to a fresh python3 or node
// process in a sealed copy of the judged tree, under the same bubblewrap as every other
// process of a strict run (strict.ts spawnSealed). Its results come back on the gate's pipe
// and are judged here, in the gate, by sealed-cases.ts.

import { copyFile, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { errorMessage } from '../errors.js';
import { pluginDir, runnerKind } from './channel.js';
import { pythonSourceRoots } from './judged-code.js';
import { judgeSealed, parseResults, type SealedCase, type SealedLanguage } from './sealed-cases.js';
import { unseal, verifySeal } from './sealed.js';
import { sealCopy, spawnSealed, type StrictFinding, type StrictOptions } from './strict.js';

/** The interpreter the project's own command uses: `python3 -m pytest` -> python3; a pytest script -> the python3 beside it. */
export function pythonOf(cmd: string[]): string {
  const first = cmd[0] ?? '';
  if (/^python[\d.]*$/.test(basename(first))) return first;
  const { kind, at } = runnerKind(cmd);
  const bin = kind === 'pytest' ? cmd[at - 1] ?? '' : '';
  if (bin.includes('/') && existsSync(join(dirname(bin), 'python3'))) return join(dirname(bin), 'python3');
  return 'python3';
}

const VALUED = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader', '--conditions', '-C']);

/** node and the options of the project's node command that decide how modules load (a TypeScript loader), without its test options. */
export function nodeOf(cmd: string[]): string[] {
  if (runnerKind(cmd).kind !== 'node') return ['node'];
  const out = [cmd[0]!];
  for (let i = 1; i < cmd.length; i++) {
    const a = cmd[i]!;
    if (!a.startsWith('-')) break;
    if (VALUED.has(a) && cmd[i + 1] !== undefined) out.push(a, cmd[++i]!);
    else if ([...VALUED].some((v) => a.startsWith(`${v}=`)) || /^--(experimental-[\w-]+|no-warnings|enable-source-maps)$/.test(a)) out.push(a);
  }
  return out;
}

export interface SealedOutcome {
  ran: number;
  passed: number;
  findings: StrictFinding[];
}

/** Run every case in the judged tree `rev` (one fresh process per language) and judge the results in the gate. */
export async function runSealedCases(o: StrictOptions, rev: string, cases: SealedCase[]): Promise<SealedOutcome> {
  const out: SealedOutcome = { ran: 0, passed: 0, findings: [] };
  for (const lang of ['python', 'node'] as SealedLanguage[]) {
    const mine = cases.filter((c) => c.language === lang);
    if (!mine.length) continue;
    const name = `sealed-${lang}`;
    const root = join(o.tmp, name, 'tree');
    const dir = join(o.tmp, name, 'plugin');
    await mkdir(root, { recursive: true });
    await mkdir(dir, { recursive: true });
    const seal = await sealCopy(o, rev, root);
    let argv: string[];
    let runEnv: Record<string, string> = {};
    if (lang === 'python') {
      await copyFile(join(pluginDir(), 'patchgate_sealed.py'), join(dir, 'patchgate_sealed.py'));
      // site.py's start-up hooks: patchgate's stand-in, as in the pytest runs (channel/sitecustomize.py).
      for (const f of ['sitecustomize.py', 'usercustomize.py']) await copyFile(join(pluginDir(), 'sitecustomize.py'), join(dir, f));
      argv = [pythonOf(o.cmd), join(dir, 'patchgate_sealed.py')];
      runEnv = { PYTHONPATH: [dir, ...pythonSourceRoots(root)].join(':') };
    } else {
      await copyFile(join(pluginDir(), 'patchgate-sealed.mjs'), join(dir, 'patchgate-sealed.mjs'));
      argv = [...nodeOf(o.cmd), join(dir, 'patchgate-sealed.mjs')];
    }
    // The calls only: a number stands for the case, so not even its name goes in.
    const calls = mine.map((c, i) => ({ i, ...c.call }));
    const quiet = () => {};
    const res = await spawnSealed(o, { root, pluginDir: dir, argv, runEnv, stdin: Buffer.from(JSON.stringify({ cases: calls })), channel: true, onStdout: quiet, onStderr: quiet });
    const changed = await verifySeal(seal).catch((e) => [`(the tree could not be read back: ${errorMessage(e)})`]);
    await unseal(root);
    if (changed.length) out.findings.push({ kind: 'tree-tampered', row: 'tree-tampered', message: `the tests or fixtures changed during the sealed cases (${lang}): ${changed.slice(0, 8).join(', ')}; code under test may not write the oracle` });
    if (res.spawnError) {
      out.findings.push({ kind: 'sealed-missing', row: 'holdout-red', message: `the sealed cases could not run: ${res.spawnError}` });
      continue;
    }
    const parsed = parseResults(res.channel ?? '');
    const judged = judgeSealed(mine, parsed.results);
    out.ran += judged.ran;
    out.passed += judged.passed.length;
    for (const f of judged.failures) out.findings.push({ kind: f.kind, row: 'holdout-red', message: f.message, test: f.test });
    for (const p of parsed.problems.slice(0, 5)) out.findings.push({ kind: 'sealed-extra', row: 'holdout-red', message: `the sealed cases' result pipe (${lang}) is damaged: ${p}: the results are not evidence` });
    const died = res.signal ? `was killed by ${res.signal}` : res.code !== 0 ? `exited ${res.code}` : !parsed.ended ? 'stopped before its end record' : null;
    if (died) {
      const missing = judged.failures.filter((f) => f.kind === 'sealed-missing').map((f) => f.test);
      out.findings.push({ kind: 'sealed-exit', row: 'holdout-red', message: `the sealed cases' process (${lang}) ${died}${missing.length ? `; no result for ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', ...' : ''}` : ''}: the run is not evidence` });
    }
  }
  return out;
}
