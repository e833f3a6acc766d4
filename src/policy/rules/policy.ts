// Rule `policy`: the gate's own files must still be readable after the push (issue 48). The
// policy (ci/patchgate.json), the allow file and the fixture lock it names (and a flake ledger
// the pushed policy moves, which the ledger rule does not read yet) must parse and validate in
// the pushed tree wherever the push changes them, for people too: a typo that landed used to
// be found only as every later push failing, the fix included. While the trusted branch's own
// policy is broken (./../trusted-policy.ts) every one of them is checked, changed or not, so a
// person's push is accepted only when it fixes the policy; the outcome's details record the
// fallback in the audit row. An agent's push is not judged at all then (brokenPolicyDecision).

import { isZeroId } from '../../git/git.js';
import type { Git } from '../../git/git.js';
import { POLICY_PATH, defaultPolicy, policyFromText, type Policy, type PolicyFallback } from '../config.js';
import { tableRow } from '../decision-table.js';
import { filesOf, problemsOf, type PolicyFile, type PolicyFileProblem } from '../policy-files.js';
import { describeFallback, fallbackUnder } from '../trusted-policy.js';
import type { Finding, RefDecision, RefUpdate, Rule, RuleContext } from '../types.js';
import { formatMessage, shq, short } from '../types.js';
import { pushAgain, remedy } from '../remedy.js';
import { classNames, hasClass, policyForClass, separationProblems, DEFAULT_CLASS } from '../classes.js';

const dirOf = (path: string): string => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '');

/** The fallback as the audit row keeps it (the `policy` outcome's details). */
export function fallbackDetails(f: PolicyFallback): Record<string, unknown> {
  return { brokenTip: f.tip, file: f.path, line: f.line, error: f.error, judgedUnder: f.under ?? 'defaults' };
}

/**
 * Whether `path` differs between `rev` and `base` (null base: everything differs), comparing
 * the folders first: an unchanged `ci/` costs two lookups for all of its files.
 */
function differs(git: Git, rev: string, base: string | null): (path: string) => Promise<boolean> {
  const dirs = new Map<string, Promise<boolean>>();
  const same = async (a: string, p: string | null): Promise<boolean> => {
    const [x, y] = await Promise.all([git.pathId(rev, p), git.pathId(a, p)]);
    return (x?.id ?? null) === (y?.id ?? null);
  };
  return async (path) => {
    if (!base) return true;
    const dir = dirOf(path);
    let d = dirs.get(dir);
    if (!d) dirs.set(dir, (d = same(base, dir || null).catch(() => false)));
    if (await d) return false;
    return !(await same(base, path));
  };
}

/** The problems of one file of `rev` (none when absent), and its text when it is a file. */
async function fileProblems(git: Git, rev: string, file: PolicyFile): Promise<{ problems: PolicyFileProblem[]; text: string | null }> {
  const at = await git.pathId(rev, file.path);
  if (!at) return { problems: [], text: null };
  if (at.type !== 'blob') return { problems: [{ path: file.path, line: null, message: `a ${at.type}, not a file` }], text: null };
  const text = (await git.readBlob(at.id))?.toString('utf8') ?? '';
  return { problems: problemsOf(file, text, `${file.path}@${short(rev)}`), text };
}

export const policyFiles: Rule = {
  id: 'policy',
  description: 'The policy, and the allow file and fixture lock it names, parse and validate in the pushed tree wherever the push changes them (all of them while the trusted branch\'s policy is broken).',
  waivedForHumans: false,
  messages: {
    invalid: 'commit {commit}: {where}: {detail}; the gate reads this file for every later push, so this push is refused (patchgate policy check shows every problem before a push)',
    notFixed: 'commit {commit}: {where}: {detail}; the trusted branch\'s policy is broken and a person\'s push is accepted only once it carries one that validates',
    trustedBroken: '{broken}; no agent push is judged until a person pushes a policy that validates',
    classUnknown: 'this credential is of agent class {class}, which {source} does not define (its classes: {classes}); no push of it is judged until a person defines the class there or gives the credential another',
    classBreach: 'this credential is of agent class {class}, and in {source} {detail}; no push of it is judged until a person fixes the class (patchgate policy check names it)',
  },
  async check(ctx) {
    const rev = ctx.update.newId;
    const fallback = ctx.policy.fallback;
    const details: Record<string, unknown> = fallback ? { fallback: fallbackDetails(fallback) } : {};
    if (isZeroId(rev)) return { findings: [], details };
    // Under the fallback every file counts as changed: the pushed tree must carry a valid policy.
    const changed = differs(ctx.git, rev, fallback ? null : ctx.trustedTip);
    const problems: PolicyFileProblem[] = [];
    const checked: string[] = [];
    // The pushed policy: the trusted one when unchanged, else read and checked.
    let pushed: Policy | null = ctx.policy;
    if (await changed(POLICY_PATH)) {
      const { problems: own, text } = await fileProblems(ctx.git, rev, { kind: 'policy', path: POLICY_PATH });
      if (text !== null || own.length) checked.push(POLICY_PATH);
      problems.push(...own);
      pushed = own.length ? null : text === null ? defaultPolicy() : policyFromText(text, `${POLICY_PATH}@${short(rev)}`);
    }
    // The files the gate will read after the push: those of the policy it judges under, and of the pushed one.
    const files = new Map<string, PolicyFile>();
    for (const p of [ctx.policy, pushed]) {
      if (!p) continue;
      // Every class's allow file and lock too (src/policy/classes.ts).
      for (const f of filesOf(p)) if (f.kind === 'allow' || f.kind === 'lock') files.set(f.path, f);
      files.set(p.contract.allowFile, { kind: 'allow', path: p.contract.allowFile });
      files.set(p.fixtures.lock, { kind: 'lock', path: p.fixtures.lock });
    }
    // The ledger rule reads the ledger the judging policy names; one the pushed policy moves is checked here.
    if (pushed && pushed.ledger.path !== ctx.policy.ledger.path && !files.has(pushed.ledger.path)) files.set(pushed.ledger.path, { kind: 'ledger', path: pushed.ledger.path });
    for (const file of files.values()) {
      if (file.path === POLICY_PATH || !(await changed(file.path))) continue;
      const r = await fileProblems(ctx.git, rev, file);
      if (r.text !== null || r.problems.length) checked.push(file.path);
      problems.push(...r.problems);
    }
    const findings: Finding[] = problems.map((p) => ({
      messageId: fallback ? 'notFixed' : 'invalid', path: p.path, commit: rev,
      data: { commit: short(rev), path: p.path, line: p.line ?? 0, where: p.line !== null ? `${p.path}:${p.line}` : p.path, detail: p.message },
    }));
    return { findings, details: { ...details, checked } };
  },
  remediation(ctx, findings) {
    const paths = [...new Set(findings.map((f) => f.path!))];
    if (ctx.role === 'agent' && ctx.trustedTip) {
      return remedy(
        'the policy, allow file and fixture lock are a person\'s files: put them back as the trusted branch has them:',
        [`git restore --source=${ctx.trustedTip} --staged --worktree -- ${paths.map((p) => shq(`:(literal)${p}`)).join(' ')}`, `git commit -m ${shq('restore the policy files')}`],
        pushAgain(ctx),
      );
    }
    const where = findings.map((f) => String(f.data.where)).join(', ');
    const recover = ctx.policy.fallback ? `; this push was judged under ${fallbackUnder(ctx.policy.fallback)} (docs/policy.md, "Recovering from a broken policy")` : '';
    return `fix ${where} (patchgate policy check --repo . lists every problem of the work tree), commit, and push again${recover}`;
  },
};

/**
 * An agent's ref update while the trusted branch's policy does not validate: refused without
 * running any rule (nothing can say what the policy is), with the file and line at fault.
 */
export function brokenPolicyDecision(update: RefUpdate, f: PolicyFallback, mode: RuleContext['mode'], started: number): RefDecision {
  const row = tableRow('policy-broken');
  const data = { broken: describeFallback(f), path: f.path, line: f.line ?? 0 };
  const message = formatMessage(policyFiles.messages.trustedBroken!, data);
  return {
    ref: update.ref, oldId: update.oldId, newId: update.newId, verdict: 'reject', row: row.id, action: row.action,
    remediation: [
      `no command of yours can fix this: a person must push a ${f.path} that validates to the trusted branch (patchgate policy check shows the problem; docs/policy.md, "Recovering from a broken policy")`,
      mode === 'push' ? 'then push again exactly as you did' : 'then re-run the check',
    ].join('\n'),
    reasons: [{ rule: 'policy', message, messageId: 'trustedBroken', ref: update.ref, row: row.id, path: f.path }],
    outcomes: [{ rule: 'policy', status: 'fail', findings: [{ messageId: 'trustedBroken', path: f.path, data, message }], details: { fallback: fallbackDetails(f) }, ms: 0 }],
    contract: { base: null, head: null },
    ms: Date.now() - started,
  };
}

/**
 * The policy an agent of class `agentClass` is judged under (src/policy/classes.ts), or the
 * refusal when it cannot be: the class is not defined in the trusted policy, or that class may
 * write both a contract root and a test or oracle path (a trusted policy that got past the
 * `policy` rule, moved by hand or older than it). Fail closed: such a credential moves nothing.
 * The default class (none) is the policy itself, judged as before (policy check names a breach).
 */
export function classPolicy(policy: Policy, agentClass: string | undefined, update: RefUpdate, mode: RuleContext['mode'], started: number): { policy: Policy } | { decision: RefDecision } {
  const name = agentClass && agentClass !== DEFAULT_CLASS ? agentClass : null;
  if (!name) return { policy };
  const refuse = (messageId: 'classUnknown' | 'classBreach', data: Record<string, string>): { decision: RefDecision } => {
    const row = tableRow('agent-class');
    const message = formatMessage(policyFiles.messages[messageId]!, data);
    return {
      decision: {
        ref: update.ref, oldId: update.oldId, newId: update.newId, verdict: 'reject', row: row.id, action: row.action,
        remediation: [
          `no command of yours can fix this: a person defines class ${name} in ${POLICY_PATH} on the trusted branch, so that it may not write both the code and its tests (docs/policy.md, "Agent classes"), or gives you a credential of another class`,
          mode === 'push' ? 'then push again exactly as you did' : 'then re-run the check',
        ].join('\n'),
        reasons: [{ rule: 'policy', message, messageId, ref: update.ref, row: row.id, path: POLICY_PATH }],
        outcomes: [{ rule: 'policy', status: 'fail', findings: [{ messageId, path: POLICY_PATH, data, message }], details: { class: name }, ms: 0 }],
        contract: { base: null, head: null },
        ms: Date.now() - started,
        agentClass: name,
      },
    };
  };
  if (!hasClass(policy, name)) return refuse('classUnknown', { class: name, source: policy.source, classes: classNames(policy).join(', ') });
  const breach = separationProblems(policy).find((p) => p.className === name);
  if (breach) return refuse('classBreach', { class: name, source: policy.source, detail: breach.message });
  return { policy: policyForClass(policy, name) };
}
