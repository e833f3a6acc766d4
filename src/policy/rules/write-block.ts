// Rule `write-block`: the heart of the gate. Every path changed by every new commit of an
// agent's push must be writable and not protected (protected wins), and no symlink or
// submodule may appear. Each commit is judged on its own, so a test edit that a later
// commit reverts is still a test-tree write.

import { MODE_GITLINK, MODE_SYMLINK, isZeroId } from '../../git/git.js';
import { firstMatch, protectedMatcher, writableMatcher } from '../match.js';
import type { Finding, Rule, RuleContext } from '../types.js';
import { shq, short } from '../types.js';

export const writeBlock: Rule = {
  id: 'write-block',
  description: 'Every path changed by every new commit must match `writable` and not `protected`; no symlinks or submodules.',
  waivedForHumans: true,
  messages: {
    protectedPath: 'commit {commit} {verb} protected path {path} (matches {pattern})',
    notWritable: 'commit {commit} {verb} {path}, which is outside the writable paths ({writable})',
    symlink: 'commit {commit} adds or changes symlink {path}; symlinks are not allowed',
    controlChar: 'commit {commit} {verb} {path}, whose name holds a control character; rename it',
    submodule: 'commit {commit} adds or changes submodule (gitlink) {path}; submodules are not allowed',
  },
  async check(ctx) {
    const { policy } = ctx;
    const protectedPatterns = [...policy.protected, ...policy.oracleFiles];
    const isProtected = protectedMatcher(protectedPatterns);
    const isWritable = writableMatcher(policy.writable);
    const findings: Finding[] = [];
    let paths = 0;
    for (const commit of ctx.newCommits) {
      for (const c of await ctx.changes(commit)) {
        paths++;
        const verb = c.status === 'A' ? 'adds' : c.status === 'D' ? 'deletes' : c.oldMode !== c.newMode && c.oldId === c.newId ? 'changes the mode of' : 'modifies';
        const base = { commit: commit.id, path: c.path };
        const data = { commit: short(commit.id), path: c.path, verb };
        if (isProtected(c.path)) {
          findings.push({ ...base, messageId: 'protectedPath', data: { ...data, pattern: firstMatch(protectedPatterns, c.path, true) ?? '?' } });
        } else if (!isWritable(c.path)) {
          findings.push({ ...base, messageId: 'notWritable', data: { ...data, writable: policy.writable.join(', ') } });
        }
        if (/[\x00-\x1f\x7f]/.test(c.path)) findings.push({ ...base, messageId: 'controlChar', data: { ...data, path: JSON.stringify(c.path) } });
        if (c.newMode === MODE_SYMLINK && !policy.allowSymlinks) findings.push({ ...base, messageId: 'symlink', data });
        if (c.newMode === MODE_GITLINK && !policy.allowSubmodules) findings.push({ ...base, messageId: 'submodule', data });
      }
    }
    return { findings, details: { commits: ctx.newCommits.length, paths } };
  },
  remediation(ctx, findings) {
    return stripCommand(ctx, [...new Set(findings.map((f) => f.path!).filter(Boolean))]);
  },
};

/**
 * The commands that rebuild the agent's work as one commit without the offending paths:
 * go back to where the branch started, keep the rest of the work staged, put the paths
 * back as they were there, commit, and push again.
 */
export function stripCommand(ctx: RuleContext, paths: string[]): string {
  const start = startingPoint(ctx);
  const spec = paths.slice(0, 20).map((p) => shq(`:(literal)${p}`)).join(' ');
  const branch = ctx.update.ref.replace(/^refs\/heads\//, '');
  const push = ctx.mode === 'push' ? ` && git push origin HEAD:${shq(branch)}` : '';
  return `strip the edits and push again: git reset --soft ${start} && git restore --source=${start} --staged --worktree -- ${spec} && git commit -m ${shq('agent patch (protected paths restored)')}${push}`;
}

/** Where the agent's new work begins: the ref's old tip, else the first new commit's parent. */
export function startingPoint(ctx: RuleContext): string {
  if (!isZeroId(ctx.update.oldId)) return ctx.update.oldId;
  const first = ctx.newCommits[0];
  return first?.parents[0] ?? ctx.trustedTip ?? 'HEAD~1';
}
