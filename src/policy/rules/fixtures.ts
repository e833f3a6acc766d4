// Rule `fixtures`: fixtures are bound by content. Every entry of the lock must exist in the
// pushed tree with the locked sha256, and a file the lock lacks in a locked folder is drift.
// This rule binds humans too: a lock that disagrees with its tree is never accepted.
// The drift is a function of the lock blob and the locked folders' trees, so it is kept by
// their ids (src/cache/rule-results.ts): an unchanged lock and folders cost id lookups.

import { gitSource, lockDirs, readLock, verifyLock, type Drift, type Lock } from '../../fixtures/lock.js';
import { ruleResults } from '../../cache/rule-results.js';
import { isZeroId } from '../../git/git.js';
import type { Rule } from '../types.js';
import { shq, short } from '../types.js';
import { pushAgain, remedy } from '../remedy.js';

export const fixtures: Rule = {
  id: 'fixtures',
  description: 'Every locked fixture exists with its sha256; locked folders hold no unlocked files.',
  waivedForHumans: false,
  messages: {
    missing: 'commit {commit}: locked fixture {path} is missing',
    changed: 'commit {commit}: fixture {path} has sha256 {actual}, the lock says {expected}',
    unlocked: 'commit {commit}: {path} sits in a locked fixture folder but is not in {lock}',
    'not-a-file': 'commit {commit}: locked fixture {path} is not a regular file',
  },
  async check(ctx) {
    const rev = ctx.update.newId;
    if (isZeroId(rev)) return { findings: [] };
    const lockPath = ctx.policy.fixtures.lock;
    const lockId = await ctx.git.pathId(rev, lockPath);
    if (!lockId) return { findings: [], details: { lock: 'absent' } };
    let lock: Lock | null | undefined = lockId.type === 'blob' ? ruleResults.locks.get(lockId.id) : undefined;
    if (!lock) {
      // Parsed (and refused when bad) as before; only a good lock is kept.
      lock = await readLock(ctx.git, rev, lockPath);
      if (!lock) return { findings: [], details: { lock: 'absent' } };
      ruleResults.locks.set(lockId.id, lock);
    }
    const dirs = lockDirs(lock);
    const trees = await Promise.all(dirs.map(async (d) => {
      const t = await ctx.git.pathId(rev, d);
      return `${d}\0${t && t.type === 'tree' ? t.id : '-'}`;
    }));
    const key = `${lockId.id}\n${trees.join('\n')}`;
    let drift = ruleResults.drift.get(key) as Drift[] | undefined;
    if (drift) ruleResults.stats.fixtureHits++;
    else {
      ruleResults.stats.fixtureMisses++;
      drift = await verifyLock(gitSource(ctx.git, rev, ctx.cache), lock);
      ruleResults.drift.set(key, drift);
    }
    return {
      findings: drift.map((d) => ({
        messageId: d.kind, path: d.path, commit: rev,
        data: { commit: short(rev), path: d.path, expected: d.expected ?? '', actual: d.actual ?? '', lock: lockPath },
      })),
      details: { locked: lock.size },
    };
  },
  remediation(ctx, findings) {
    const paths = [...new Set(findings.map((f) => f.path!))];
    if (ctx.role === 'agent' && ctx.trustedTip) {
      const spec = paths.map((p) => shq(`:(literal)${p}`)).join(' ');
      // A fixture the trusted branch lacks is removed; one it has is put back as it was.
      return remedy(
        'put the fixtures back as the trusted branch has them (if a fixture must change, a person regenerates the lock: patchgate fixtures lock DIR):',
        [`git restore --source=${ctx.trustedTip} --staged --worktree -- ${spec}`, `git commit -m ${shq('restore locked fixtures')}`],
        pushAgain(ctx),
      );
    }
    return `regenerate the lock from the fixture folders (a person's step): patchgate fixtures lock ${[...new Set(paths.map((p) => p.slice(0, p.lastIndexOf('/')) || '.'))].join(' ')} && git add ${ctx.policy.fixtures.lock} && git commit -m ${shq('regenerate the fixture lock')}; or restore the fixtures`;
  },
};
