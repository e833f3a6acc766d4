// Rule `tamper-scan` (issue 11): the path rules keep an agent off the oracle, but code under
// src/ can still fool the oracle while it runs. This rule reads the blobs an agent's push adds
// or changes under the contract roots (never runs them), parses them with the grammars the
// contract rule uses, and refuses, on the changed lines only, constructs that reach into the
// test runner: runner or assertion internals, interpreter walks, runner/gate environment,
// exits at import or in exit handlers, report file names, constant __eq__, package metadata.

import { isTypeScriptPath } from '../../contract/typescript.js';
import { isZeroId } from '../../git/git.js';
import type { Finding, Rule } from '../types.js';
import { short, shq } from '../types.js';
import { pushAgain, RUN, startingPoint } from '../remedy.js';
import { TAMPER_CHECKS, type TamperCheck } from '../tamper/checks.js';
import { scanBase, tamperHitsOf, underRoots } from '../tamper/scan-file.js';

const ADVICE: Record<TamperCheck, string> = {
  'runner-internals': 'code under test may not import or patch the test runner or assertion library',
  'interpreter-walk': 'code under test may not walk the interpreter or inspect its callers',
  'env-read': 'code under test may not read the test runner\'s or the gate\'s variables',
  exit: 'code under test may not exit the process at import time or in an exit handler',
  'report-write': 'code under test may not name test report files',
  'constant-eq': 'an equality that returns a constant makes every assertion pass',
  'package-metadata': 'package metadata under a source root can register a runner plugin',
};

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
        // Cached by blob ids (../tamper/scan-file.ts), where a push's warm-up may have put it already.
        const r = await tamperHitsOf(ctx.git, memo, ch.path, scanBase(ch), ch.newId, ctx.policy.contract.maxSourceBytes);
        if (r.scanned) scanned++;
        for (const h of r.hits ?? []) add(commit.id, ch.path, h);
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
