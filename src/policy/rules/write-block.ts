// Rule `write-block`: the heart of the gate. Every path changed by every judged commit of an
// agent's push (all it carries off the trusted branch, src/policy/carried.ts) must be
// writable and not protected (protected wins), and no symlink or submodule may appear. Each commit is judged on its own, so a test edit that a later
// commit reverts is still a test-tree write. What an entry is (folder, file, symlink,
// submodule) comes from git's own reading of its mode (src/git/modes.ts), and an entry
// stored with mode digits git never writes is refused: it only serves to hide something. So is
// any commit, tree or tag the push brings in a form git never writes (src/git/object-format.ts):
// the gate reads it as git does, but a second reader might not, and no agent needs one.

import { WRITTEN_MODE } from '../../git/modes.js';
import { parseTag } from '../../git/object-format.js';
import { errorMessage } from '../../errors.js';
import { firstMatch, protectedMatcher, writableMatcher } from '../match.js';
import type { Finding, Rule, RuleContext } from '../types.js';
import { shq, short } from '../types.js';
import { fetchTrusted, noTrustedBranch, pushAgain, remedy, startingPoint, trustedRev, unrelatedStart } from '../remedy.js';

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
    oddMode: 'commit {commit} stores {path} with tree mode {mode}, which git itself never writes (git checks it out as a {kind}; git writes {written}); rebuild the commit with git add/commit, not hand-made trees',
    badCommit: 'commit {commit} is not in the form git writes: it {problem}; rebuild it with git commit, not a hand-made object',
    badTree: 'commit {commit} brings tree {tree} whose entry {path} {problem}; rebuild the commit with git add/commit, not a hand-made tree',
    badTag: 'tag {tag} pushed to {ref} is not in the form git writes: it {problem}; make it again with git tag -a',
  },
  async check(ctx) {
    const { policy } = ctx;
    const protectedPatterns = [...policy.protected, ...policy.oracleFiles];
    const isProtected = protectedMatcher(protectedPatterns);
    const isWritable = writableMatcher(policy.writable);
    // The gate's own files (policy, allow file, fixture lock, ledger): evaluate mode still
    // refuses an agent's write to them (src/upstream/evaluate.ts), so their findings say so.
    const isPolicyFile = protectedMatcher(policy.oracleFiles);
    const findings: Finding[] = [];
    let paths = 0;
    const touched = new Set<string>();
    for (const commit of ctx.newCommits) {
      for (const c of await ctx.changes(commit)) {
        paths++;
        const verb = c.status === 'A' ? 'adds' : c.status === 'D' ? 'deletes' : c.oldMode !== c.newMode && c.oldId === c.newId ? 'changes the mode of' : 'modifies';
        const base = { commit: commit.id, path: c.path };
        const data = { commit: short(commit.id), path: c.path, verb, ...(isPolicyFile(c.path) ? { policyFile: 1 } : {}) };
        touched.add(c.path);
        if (isProtected(c.path)) {
          findings.push({ ...base, messageId: 'protectedPath', data: { ...data, pattern: firstMatch(protectedPatterns, c.path, true) ?? '?', category: isTestPath(c.path) ? 'test' : 'config' } });
        } else if (!isWritable(c.path)) {
          findings.push({ ...base, messageId: 'notWritable', data: { ...data, writable: policy.writable.join(', ') } });
        }
        if (/[\x00-\x1f\x7f]/.test(c.path)) findings.push({ ...base, messageId: 'controlChar', data: { ...data, path: JSON.stringify(c.path) } });
        if (c.newKind === 'symlink' && !policy.allowSymlinks) findings.push({ ...base, messageId: 'symlink', data });
        if (c.newKind === 'gitlink' && !policy.allowSubmodules) findings.push({ ...base, messageId: 'submodule', data });
      }
      const header = await ctx.git.commitHeader(commit.id);
      for (const problem of header?.problems ?? []) findings.push({ commit: commit.id, messageId: 'badCommit', data: { commit: short(commit.id), problem } });
      for (const f of await ctx.forms(commit)) {
        findings.push({ commit: commit.id, path: f.path, messageId: 'badTree', data: { commit: short(commit.id), tree: short(f.tree), path: JSON.stringify(f.path), problem: f.problem } });
      }
      for (const o of await ctx.oddModes(commit)) {
        const kind = o.kind === 'tree' ? 'folder' : o.kind === 'gitlink' ? 'submodule' : o.kind === 'executable' ? 'executable file' : o.kind === 'regular' ? 'file' : o.kind;
        findings.push({ commit: commit.id, path: o.path, messageId: 'oddMode', data: { commit: short(commit.id), path: o.path, mode: o.mode, kind, written: WRITTEN_MODE[o.kind], ...(isPolicyFile(o.path) ? { policyFile: 1 } : {}) } });
      }
    }
    findings.push(...(await tagFindings(ctx)));
    const blocked = new Set(findings.map((f) => f.path));
    if (findings.length && [...touched].every((p) => blocked.has(p))) for (const f of findings) f.data.onlyBlocked = 1;
    // commits: judged now; reused: carried commits whose accept for an agent the cache held.
    return { findings, details: { commits: ctx.newCommits.length, reused: ctx.reusedCommits ?? 0, paths } };
  },
  remediation(ctx, findings) {
    if (findings.every((f) => REBUILT.has(f.messageId))) return rebuildCommand(ctx);
    const paths = [...new Set(findings.map((f) => f.path!).filter(Boolean))];
    // Every path the new commits touch is blocked: after stripping there is nothing to commit.
    if (findings.some((f) => f.data.onlyBlocked === 1)) return dropCommand(ctx);
    return stripCommand(ctx, paths);
  },
};

/** Findings that git's own index and commit clear: the objects are written again in git's form. */
const REBUILT = new Set(['oddMode', 'badCommit', 'badTree', 'badTag']);

/** A pushed tip that is a tag object: its form (object-format.ts parseTag), read only when the tip is not a commit. */
async function tagFindings(ctx: RuleContext): Promise<Finding[]> {
  if (ctx.kind === 'delete' || (await ctx.git.commitHeader(ctx.update.newId))) return [];
  const o = await ctx.git.readObject(ctx.update.newId);
  if (!o || o.type !== 'tag') return [];
  let problems: string[];
  try {
    problems = parseTag(ctx.update.newId, o.data).problems;
  } catch (e) {
    problems = [errorMessage(e).replace(/^tag \S+ /, '')];
  }
  return problems.map((problem) => ({ messageId: 'badTag', data: { tag: short(ctx.update.newId), ref: ctx.update.ref, problem } }));
}

/** Test trees and test or runner files: the seed's "tests/ in the agent diff" row. Other protected paths are policy, CI, lock or config files. */
const TEST_PATTERNS = [
  'tests/**', 'test/**', '**/tests/**', '**/test/**', 'conftest.py', '**/conftest.py', '**/*.test.*', '**/*.spec.*',
  '**/__tests__/**', '**/__mocks__/**', '**/test_*.py', '**/*_test.py', '**/setupTests.*',
];

export function isTestPath(path: string): boolean {
  return protectedMatcher(TEST_PATTERNS)(path);
}

/**
 * The commands that rebuild the agent's work as one commit without the offending paths:
 * go back to where the branch started, keep the rest of the work staged, put the paths
 * back as they were there, commit, and push again.
 */
export function stripCommand(ctx: RuleContext, paths: string[], what = 'the edits listed above'): string {
  const start = startingPoint(ctx);
  if (!start) return noTrustedBranch(ctx.policy.trustedBranch, ctx.mode, ctx.pushTarget);
  if (unrelatedStart(ctx)) return rebaseOnTrusted(ctx, paths);
  const spec = paths.slice(0, 20).map((p) => shq(`:(literal)${p}`)).join(' ');
  const more = paths.length > 20 ? ` (then the same for the other ${paths.length - 20} paths listed above)` : '';
  return remedy(
    `take ${what} out of your new commits, keeping the rest of the work as one commit on ${short(start)}${more}:`,
    [`git reset --soft ${start}`, `git restore --source=${start} --staged --worktree -- ${spec}`, `git commit -m ${shq('agent patch (protected paths restored)')}`],
    pushAgain(ctx, true),
  );
}

/**
 * A root commit on a new branch: rebuild it on the trusted branch, keeping only what the
 * agent wrote under `writable` (and not the blocked paths listed).
 */
function rebaseOnTrusted(ctx: RuleContext, paths: string[]): string {
  const isWritable = writableMatcher(ctx.policy.writable);
  const excludes = ctx.policy.writable.map((w) => shq(`:(exclude,glob)${w}`)).join(' ');
  const inside = paths.filter((p) => isWritable(p)).slice(0, 20).map((p) => shq(`:(literal)${p}`));
  const rev = trustedRev(ctx);
  const cmds = [`git reset -q --soft ${rev}`, `git restore --source=${rev} --staged --worktree -- . ${excludes}`];
  if (inside.length) cmds.push(`git restore --source=${rev} --staged --worktree -- ${inside.join(' ')}`);
  cmds.push(`git commit -m ${shq('agent patch (on the trusted branch)')}`);
  return [fetchTrusted(ctx), ...remedy('then keep only your work under `writable`, minus the paths listed above, as one commit on it:', cmds, pushAgain(ctx, true)).split('\n')].join('\n');
}

/** Every change of the push is blocked: drop the commits (a strip would leave nothing to commit). */
export function dropCommand(ctx: RuleContext): string {
  const start = startingPoint(ctx);
  if (!start) return noTrustedBranch(ctx.policy.trustedBranch, ctx.mode, ctx.pushTarget);
  const pre = unrelatedStart(ctx) ? `${fetchTrusted(ctx)}\n` : '';
  return pre + remedy(
    `every change in your new commits is to a path you may not write, so there is nothing to keep: drop those commits (a person makes such changes):`,
    [`git reset --hard ${unrelatedStart(ctx) ? trustedRev(ctx) : start}`],
    pushAgain(ctx, true),
  );
}

/**
 * For entries with odd mode digits only: commit the same work again through git's own index,
 * which reads every mode as checkout does and writes only the digits git writes.
 */
export function rebuildCommand(ctx: RuleContext): string {
  const start = startingPoint(ctx);
  if (!start) return noTrustedBranch(ctx.policy.trustedBranch, ctx.mode, ctx.pushTarget);
  return remedy(
    `commit the work again through git's own index, which writes objects only in git's own form (modes included):`,
    [`git reset -q ${start}`, 'git add -A', `git commit -m ${shq('agent patch (objects as git writes them)')}`],
    pushAgain(ctx, true),
  );
}

export { startingPoint };
