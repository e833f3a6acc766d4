// Rule `contract`: the public API of the contract roots may not move without a person.
// The pushed digest must equal the digest at the merge-base with the trusted branch or at
// the trusted tip, or be listed in the allow file read from the trusted tip.

import { ContractParseError, ContractSizeError, ParseWorkerError } from '../../errors.js';
import { CONTRACT_SKIPPED_WHY, contractCached, contractFileCount, contractOf, isContractFile, rootTree, contractRows, diffContracts, parseAllowFile, type Contract, type ContractDiff, type ContractFormat, type ContractLimits } from '../../contract/digest.js';
import { sameContract, type Sameness } from '../../contract/unchanged.js';
import { slowPhase } from '../../progress.js';
import { liveParsedCount } from '../live.js';
import type { Git } from '../../git/git.js';
import { isZeroId } from '../../git/git.js';
import { mergeBaseWithTrusted } from '../ancestry.js';
import type { Finding, Rule } from '../types.js';
import { shq, short } from '../types.js';
import { pushAgain, RUN } from '../remedy.js';

export const contract: Rule = {
  id: 'contract',
  description: 'The public API digest of the contract roots must be unchanged or listed in the allow file on the trusted branch.',
  waivedForHumans: true,
  messages: {
    moved: 'public API of {roots} changed at {commit}: digest {head} is neither the merge-base digest {base} nor listed in {allowFile} on the trusted branch {trusted}{trustedTip}',
    added: '+ {row}',
    removed: '- {row}',
    changed: '~ {from}  =>  {to}',
    parseError: 'commit {commit}: {path}:{line} does not parse ({detail}); the contract cannot be computed, so the push is refused',
    tooLarge: 'commit {commit}: {path} is {size} bytes, over contract.maxSourceBytes ({limit} bytes); the gate does not parse a file that large, so the push is refused',
    parseFailed: 'commit {commit}: {path} could not be parsed ({detail}); the contract cannot be computed, so the push is refused',
  },
  async check(ctx) {
    const r = await checkContract(ctx);
    // In a push: how many files this judgement parsed itself (the rest came from the cache), for the audit row.
    const parsedNow = liveParsedCount();
    return parsedNow === undefined ? r : { ...r, details: { ...r.details, parsedNow } };
  },
  remediation(ctx, findings) {
    return contractRemediation(ctx, findings);
  },
};

async function checkContract(ctx: Parameters<Rule['check']>[0]): Promise<{ findings: Finding[]; details?: Record<string, unknown> }> {
  const { policy, update, git } = ctx;
  if (isZeroId(update.newId)) return { findings: [], details: { skipped: 'delete' } };
  const { roots, format, allowFile, maxSourceBytes } = policy.contract;
  const limits = { maxSourceBytes };
  const headCommit = update.newId;
  const ahead = ctx.mode === 'push' && format === 'v1' ? await judgedOnChangedFiles(ctx, headCommit, roots, limits) : null;
  if (ahead) return ahead;
  let head: Contract;
  try {
    head = await digestOf(ctx, git, headCommit, 'the pushed commit', roots, format, limits);
  } catch (e) {
    if (e instanceof ContractSizeError) {
      return { findings: [{ messageId: 'tooLarge', path: e.path, commit: headCommit, data: { commit: short(headCommit), path: e.path, size: e.size, limit: e.limit } }] };
    }
    if (e instanceof ParseWorkerError) {
      return { findings: [{ messageId: 'parseFailed', path: e.path, commit: headCommit, data: { commit: short(headCommit), path: e.path, detail: e.message.slice(e.path.length + 2) } }] };
    }
    if (e instanceof ContractParseError) {
      return { findings: [{ messageId: 'parseError', path: e.path, commit: headCommit, data: { commit: short(headCommit), path: e.path, line: e.line, detail: e.message.replace(/^.*does not parse: /, '') } }] };
    }
    throw e;
  }
  const trusted = ctx.trustedTip;
  const mergeBase = trusted ? await mergeBaseWithTrusted(ctx, headCommit, trusted) : null;
  const refs: Array<{ name: string; rev: string }> = [];
  if (mergeBase) refs.push({ name: 'merge-base', rev: mergeBase });
  if (trusted && trusted !== mergeBase) refs.push({ name: 'trusted tip', rev: trusted });
  const baseContracts: Array<{ name: string; c: Contract | null }> = [];
  for (const r of refs) {
    let c: Contract | null = null;
    try {
      c = await digestOf(ctx, git, r.rev, `the ${r.name}`, roots, format, limits);
    } catch (e) {
      if (!(e instanceof ContractParseError)) throw e; // a trusted tree that does not parse matches nothing
    }
    baseContracts.push({ name: r.name, c });
  }
  const base = baseContracts[0]?.c ?? null;
  const details = { format, head: head.digest, base: base?.digest ?? null, trusted: baseContracts.find((b) => b.name === 'trusted tip')?.c?.digest ?? base?.digest ?? null, files: head.files };
  if (baseContracts.some((b) => b.c?.digest === head.digest)) return { findings: [], details: { ...details, matched: 'base' } };
  const allowText = trusted ? await git.readBlob(`${trusted}:${allowFile}`) : null;
  const allowed = allowText ? parseAllowFile(allowText.toString('utf8')) : new Set<string>();
  if (allowed.has(head.digest)) return { findings: [], details: { ...details, matched: 'allow' } };

  const findings: Finding[] = [{
    messageId: 'moved', commit: headCommit,
    data: { roots: roots.join(', '), commit: short(headCommit), head: head.digest, base: base?.digest ?? '(none)', allowFile, trusted: policy.trustedBranch, trustedTip: trusted ? ` (its tip ${short(trusted)})` : '' },
  }];
  const baseRev = refs[0]?.rev;
  const baseRows = base && baseRev ? await contractRows(git, base, baseRev, roots, ctx.cache, limits) : [];
  const diff = diffContracts(baseRows, await contractRows(git, head, headCommit, roots, ctx.cache, limits));
  // One by one: a spread of 180k findings overflows the call stack (issue 47).
  for (const f of rowFindings(diff, headCommit)) findings.push(f);
  return { findings, details: { ...details, diff } };
}

function contractRemediation(ctx: Parameters<Rule['remediation']>[0], findings: Parameters<Rule['remediation']>[1]): string {
  const again = pushAgain(ctx);
  const big = findings.find((x) => x.messageId === 'tooLarge');
  if (big) {
    return `shrink or split ${big.path} below ${big.data.limit} bytes (generated code belongs outside ${ctx.policy.contract.roots.join(', ')}), commit (git commit -a --amend if it came in your last commit); if a file that large is intended, a person raises contract.maxSourceBytes in ci/patchgate.json on ${ctx.policy.trustedBranch}\n${again}`;
  }
  const failed = findings.find((x) => x.messageId === 'parseFailed');
  if (failed) return `simplify ${failed.path} (for example less deeply nested code) and commit\n${again}`;
  const syntax = findings.find((x) => x.messageId === 'parseError');
  if (syntax) {
    return [`fix the syntax error in ${syntax.path} line ${syntax.data.line} and commit; the file as pushed:`, `${RUN}git show ${shq(`${syntax.commit ?? 'HEAD'}:${syntax.path ?? ''}`)}`, again].join('\n');
  }
  const files = [...new Set(findings.map((f) => f.path).filter((p): p is string => !!p))];
  const base = ctx.trustedTip ? short(ctx.trustedTip) : 'the trusted branch';
  const spec = files.map((f) => shq(`:(literal)${f}`)).join(' ');
  const steps = [`keep every public signature as it was (the rows above: - removed, + added, ~ changed): restore the old signatures in ${files.join(', ') || 'the changed files'} and commit; compare with:`];
  if (ctx.trustedTip && files.length) steps.push(`${RUN}git diff ${ctx.trustedTip} HEAD -- ${spec}`);
  else steps.push(`compare with the trusted branch ${base}: git diff <its commit> HEAD -- ${ctx.policy.contract.roots.join(' ')}`);
  steps.push(`if the API change is intended, a person must add the new digest to ${ctx.policy.contract.allowFile} on ${ctx.policy.trustedBranch} and write tests for it`, again);
  return steps.join('\n');
}

/**
 * A push whose bases are not cached yet (a never-seen repository, a daemon still warming it)
 * is judged on the files it changes: when every differing contract file gives the rows (and
 * Python links) it gives at the merge-base or the trusted tip, the digests are equal without
 * parsing the rest of the tree (src/contract/unchanged.ts). Rows that moved against every
 * base, with no digest in the allow file, are refused the same way. Any other outcome (a
 * digest the allow file might list, a file that does not parse, a private module added) goes
 * to the full digest, which gives the verdict and its message. Null: not decided here. Only
 * in a push; `check` always computes the digests it prints.
 */
async function judgedOnChangedFiles(ctx: Parameters<Rule['check']>[0], headCommit: string, roots: string[], limits: ContractLimits): Promise<{ findings: Finding[]; details: Record<string, unknown> } | null> {
  const trusted = ctx.trustedTip;
  if (!trusted) return null;
  const mergeBase = await mergeBaseWithTrusted(ctx, headCommit, trusted);
  const bases = [...(mergeBase ? [{ name: 'merge-base', rev: mergeBase }] : []), ...(trusted !== mergeBase ? [{ name: 'trusted tip', rev: trusted }] : [])];
  for (const b of bases) if (await contractCached(ctx.git, b.rev, roots, ctx.cache, limits)) return null; // the digests cost a few lookups
  const moved: Array<Extract<Sameness, { verdict: 'moved' }>> = [];
  for (const b of bases) {
    const same = await sameContract(ctx.git, b.rev, headCommit, roots, ctx.cache, limits);
    if (same.verdict === 'equal') {
      return {
        findings: [],
        details: { format: 'v1', head: null, base: null, trusted: null, matched: 'changed files', against: b.name, againstCommit: b.rev, comparedFiles: same.compared.length, compared: same.compared.slice(0, 20) },
      };
    }
    if (same.verdict === 'unknown') return null;
    moved.push(same);
  }
  // Rows moved against every base: the push is refused unless the allow file lists its digest,
  // which only the full digest gives. With no digest listed the refusal is certain, and its rows
  // are the changed files' (every other row is the same), so it needs no full digest either.
  const { allowFile } = ctx.policy.contract;
  const allowText = await ctx.git.readBlob(`${trusted}:${allowFile}`);
  if (!moved.length || (allowText && parseAllowFile(allowText.toString('utf8')).size)) return null;
  const diff = diffContracts(moved[0]!.before, moved[0]!.after);
  const notComputed = `(not computed: judged on the changed files; patchgate contract --rev ${short(headCommit)} prints it)`;
  return {
    findings: [
      { messageId: 'moved', commit: headCommit, data: { roots: roots.join(', '), commit: short(headCommit), head: notComputed, base: '(not computed)', allowFile, trusted: ctx.policy.trustedBranch } },
      ...rowFindings(diff, headCommit),
    ],
    details: { format: 'v1', head: null, base: null, trusted: null, judgedOn: 'changed files', against: bases[0]!.name, againstCommit: bases[0]!.rev, comparedFiles: moved[0]!.compared.length, diff },
  };
}

/** A refusal's row findings: each removed, added and changed row, with the file it is in. */
function rowFindings(diff: ContractDiff, headCommit: string): Finding[] {
  return [
    ...diff.removed.map((row): Finding => ({ messageId: 'removed', data: { row }, path: row.split('::')[0], commit: headCommit })),
    ...diff.added.map((row): Finding => ({ messageId: 'added', data: { row }, path: row.split('::')[0], commit: headCommit })),
    ...diff.changed.map((ch): Finding => ({ messageId: 'changed', data: { from: ch.from, to: ch.to }, path: ch.to.split('::')[0], commit: headCommit })),
  ];
}

/** A contract walk still running this long (ms) is counted (its files of the revision's total). */
const COUNT_AFTER_MS = 100;

/**
 * contractOf, reporting progress when it runs long: a repository's first push (nothing of its
 * tree cached) parses every contract file, which takes seconds on a large tree. In a push the
 * lines go to the hook's `remote:` output (one when it has run 2 s, one when it ends).
 */
function digestOf(ctx: Parameters<Rule['check']>[0], git: Git, rev: string, what: string, roots: string[], format: ContractFormat, limits: ContractLimits): Promise<Contract> {
  if (!ctx.progress) return contractOf(git, rev, roots, format, ctx.cache, limits);
  const label = `patchgate: contract of ${what} ${short(rev)} (not cached yet: the first push of this repository or of this tree)`;
  // Counted early (one ls-tree, only for a walk still running then), so a refusal for time
  // says how many of the files are kept and how many are left (src/policy/live.ts).
  const phase = { ...ctx.progress, skippedWhy: CONTRACT_SKIPPED_WHY, countAfterMs: Math.min(COUNT_AFTER_MS, ctx.progress.delayMs ?? 2000), what: `${what} ${short(rev)}` };
  return slowPhase(phase, label, () => (format === 'v1' ? treeFileCount(git, rev, roots) : contractFileCount(git, rev, roots, format)), (tick) => contractOf(git, rev, roots, format, ctx.cache, { ...limits, onFile: tick }));
}

/**
 * contractFileCount of a v1 contract through the repository's object reader (its tree objects,
 * which the walk reads next anyway) instead of an ls-tree process: on a busy machine a process
 * started to count could answer after the time limit, and the refusal could not say what is left.
 */
async function treeFileCount(git: Git, rev: string, roots: string[]): Promise<number> {
  const count = async (id: string): Promise<number> => {
    let n = 0;
    const subtrees: Array<Promise<number>> = [];
    for (const e of await git.readTree(id)) {
      if (e.kind === 'tree') subtrees.push(count(e.id));
      else if (isContractFile(e.kind, e.name)) n++;
    }
    for (const k of await Promise.all(subtrees)) n += k;
    return n;
  };
  let n = 0;
  for (const root of roots) {
    const tree = await rootTree(git, rev, root);
    if (tree) n += await count(tree);
  }
  return n;
}
