// Rule `tamper-scan` (issue 11): the path rules keep an agent off the oracle, but code under
// src/ can still fool the oracle while it runs. This rule reads the blobs an agent's push adds
// or changes under the contract roots (never runs them), parses them with the grammars the
// contract rule uses, and refuses, on the changed lines only, constructs that reach into the
// test runner: runner or assertion internals, interpreter walks, runner/gate environment,
// exits at import or in exit handlers, report file names, constant __eq__, package metadata.

import { ContractParseError } from '../../errors.js';
import { isTypeScriptPath } from '../../contract/typescript.js';
import { isZeroId } from '../../git/git.js';
import type { Finding, Rule } from '../types.js';
import { short, shq } from '../types.js';
import { pushAgain, RUN, startingPoint } from '../remedy.js';
import { TAMPER_CHECKS, type TamperCheck, type TamperHit } from '../tamper/checks.js';
import { scanPython } from '../tamper/scan-python.js';
import { scanTypeScript } from '../tamper/scan-typescript.js';
import { addedLines } from '../tamper/added-lines.js';
import { parsePool } from '../../contract/parse-pool.js';

const ADVICE: Record<TamperCheck, string> = {
  'runner-internals': 'code under test may not import or patch the test runner or assertion library',
  'interpreter-walk': 'code under test may not walk the interpreter or inspect its callers',
  'env-read': 'code under test may not read the test runner\'s or the gate\'s variables',
  exit: 'code under test may not exit the process at import time or in an exit handler',
  'report-write': 'code under test may not name test report files',
  'constant-eq': 'an equality that returns a constant makes every assertion pass',
  'package-metadata': 'package metadata under a source root can register a runner plugin',
};

function underRoots(path: string, roots: string[]): boolean {
  return roots.some((r) => {
    const root = r.endsWith('/') ? r : `${r}/`;
    return root === './' || path.startsWith(root);
  });
}

/** Files up to this many characters are scanned on the calling thread (as parse-pool's inline parses). */
const INLINE_SCAN_CHARS = 16 * 1024;

export const tamperScan: Rule = {
  id: 'tamper-scan',
  description: 'New or changed code under the contract roots may not reach into the test runner, its environment, process exit or report files.',
  waivedForHumans: true,
  messages: {
    hit: 'commit {commit}: {path}:{line}: {construct} ({check}): {advice}',
    metadata: 'commit {commit}: {path}: package metadata under a source root ({check}): {advice}',
  },
  async check(ctx) {
    if (isZeroId(ctx.update.newId) || ctx.role !== 'agent') return { findings: [], details: { skipped: ctx.role !== 'agent' ? 'not an agent' : 'delete' } };
    const mode = (c: TamperCheck) => ctx.policy.tamperScan.checks[c] ?? 'refuse';
    const roots = ctx.policy.contract.roots;
    const findings: Finding[] = [];
    const advisory: Array<Record<string, string | number>> = [];
    const memo = ctx.cache;
    const add = (commit: string, path: string, h: { check: TamperCheck; line?: number; construct?: string; covered?: boolean }) => {
      // What the strict run's tripwire and cross-checks cover is advisory here (TamperHit.covered).
      const m = h.covered && mode(h.check) === 'refuse' ? 'advisory' : mode(h.check);
      if (m === 'off') return;
      const data = { commit: short(commit), path, line: h.line ?? 0, construct: h.construct ?? '', check: h.check, advice: ADVICE[h.check], ...(h.covered ? { covered: 'by the strict run of patchgate ci (tripwire, exit-status cross-check)' } : {}) };
      if (m === 'advisory') advisory.push(data);
      else findings.push({ messageId: h.line === undefined ? 'metadata' : 'hit', path, commit, data });
    };
    let scanned = 0;
    for (const commit of ctx.newCommits) {
      for (const ch of await ctx.changes(commit)) {
        if (ch.status === 'D' || !underRoots(ch.path, roots)) continue;
        if (/(^|\/)[^/]+\.(dist-info|egg-info)(\/|$)|\.pth$/i.test(ch.path)) {
          add(commit.id, ch.path, { check: 'package-metadata' });
          continue;
        }
        const py = ch.path.endsWith('.py');
        if ((!py && !isTypeScriptPath(ch.path)) || (ch.newKind !== 'regular' && ch.newKind !== 'executable')) continue;
        const oldId = ch.status === 'A' || ch.oldKind === 'symlink' || !ch.oldId || isZeroId(ch.oldId) ? null : ch.oldId;
        // The daemon keeps this cache across restarts (src/cache/content-cache.ts): bump the
        // version whenever a check changes what it finds (2: raise SystemExit, corpus narrowings;
        // 3: caller frames' f_globals, f_code/f_lineno, frame source lookups, settrace; 4: JS Error
        // stacks, captureStackTrace, CallSite methods, inspector/v8, getBuiltinModule).
        const key = `tamper:4:${oldId}:${ch.newId}:${py ? 'py' : 'ts'}`;
        let hits = memo.get(key) as TamperHit[] | undefined;
        if (!hits) {
          // A file over contract.maxSourceBytes is never read or parsed here: the contract rule
          // (same roots) refuses it from its size, and parsing it would hold the event loop.
          const size = (await ctx.git.pathId(ch.newId, null))?.size ?? Infinity;
          if (size > ctx.policy.contract.maxSourceBytes) continue;
          const blob = await ctx.git.readBlob(ch.newId);
          const text = blob ? blob.toString('utf8') : '';
          // A new file is new on every line; a changed one is diffed against its old blob, in
          // process (../tamper/added-lines.ts: the lines `git diff` reports, no process per file).
          let lines: Set<number>;
          if (oldId === null) lines = new Set(text.split('\n').map((_, i) => i + 1));
          else {
            // An old blob over the size limit is not read: every line of the new one is scanned.
            const oldSize = (await ctx.git.pathId(oldId, null))?.size ?? Infinity;
            const old = oldSize > ctx.policy.contract.maxSourceBytes ? null : await ctx.git.readBlob(oldId);
            lines = old ? addedLines(old.toString('utf8'), text) : new Set(text.split('\n').map((_, i) => i + 1));
          }
          try {
            // In the daemon a file above the inline size is scanned on a parse worker, which the
            // hook time limit can stop: a large file never holds the event loop.
            const onWorker = parsePool.isolated && text.length > INLINE_SCAN_CHARS;
            hits = lines.size === 0 ? []
              : onWorker ? (await parsePool.tamperScan(ch.path, text, lines)).map((r: string) => JSON.parse(r) as TamperHit)
                : py ? await scanPython(text, ch.path, lines) : scanTypeScript(text, ch.path, lines);
          } catch (e) {
            // Source that does not parse is the contract rule's refusal (same roots, same grammars).
            // typescript-estree's syntax errors are TSError; the contract rule refuses that file with its line.
            if (e instanceof ContractParseError || (e as Error)?.name === 'TSError') hits = [];
            else throw new Error(`${ch.path} could not be scanned: ${(e as Error).message}`, { cause: e });
          }
          memo.set(key, hits);
          scanned++;
        }
        for (const h of hits) add(commit.id, ch.path, h);
      }
    }
    return { findings, details: { scanned, advisory, checks: Object.fromEntries(TAMPER_CHECKS.map((c) => [c, mode(c)])) } };
  },
  remediation(ctx, findings) {
    const where = [...new Set(findings.map((f) => (f.data.line ? `${f.path}:${f.data.line}` : f.path!)))].slice(0, 6).join(', ');
    const files = [...new Set(findings.map((f) => f.path!))].slice(0, 6);
    // Every new commit is scanned, so a later commit that removes a construct does not help:
    // the commits are folded into one first, then edited and committed.
    const start = startingPoint(ctx);
    const steps = [`remove the constructs named above (${where}) from your new commits: fold them into one, edit, commit:`];
    if (start) steps.push(`${RUN}git reset --soft ${start}`);
    steps.push(
      `then delete those constructs and fix the behaviour the tests check instead of the tests' view of it, and commit (git commit -am ${shq('agent patch')}); the lines in question:`,
      ctx.trustedTip ? `${RUN}git diff ${ctx.trustedTip} -- ${files.map((f) => shq(`:(literal)${f}`)).join(' ')}` : `compare with the trusted branch: git diff <its commit> -- ${files.join(' ')}`,
      `if one is truly needed, a person can make that check advisory in ci/patchgate.json (tamperScan.checks) on ${ctx.policy.trustedBranch}`,
      pushAgain(ctx, true),
    );
    return steps.join('\n');
  },
};
