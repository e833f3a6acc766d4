// The tamper-scan false-refusal bar (issue 11): judge the src-only commits of a real project's
// history with the same engine call as `patchgate check --role agent` and count tamper-scan
// refusals, with a summary per check and a tally of other rules that refused. Run after a build:
//   node scripts/tamper-corpus.mjs /path/to/clone src/ 150 [--roots src/,lib/] [--touching]
// SRCROOT picks the commits (every changed path under it). The rules judge with the policy the
// commit's parent holds (ci/patchgate.json, usually absent: defaults, contract.roots = src/);
// --roots replaces contract.roots in that policy (for a project whose code lives elsewhere).
import { execFileSync } from 'node:child_process';
import { Git } from '../dist/git/git.js';
import { judgeUpdate } from '../dist/policy/engine.js';
import { loadPolicy, parsePolicy } from '../dist/policy/config.js';

const argv = process.argv.slice(2);
const ri = argv.indexOf('--roots');
const roots = ri >= 0 ? argv.splice(ri, 2)[1].split(',').filter(Boolean) : null;
// --touching: every commit that changes a file under SRCROOT (tests, docs beside it too); the
// scan judges only the contract roots, so this is the same bar on a larger sample.
const ti = argv.indexOf('--touching');
const touching = ti >= 0 && !!argv.splice(ti, 1);
const [dir, srcRoot, nStr] = argv;
if (!dir || !srcRoot) {
  console.error('usage: node scripts/tamper-corpus.mjs CLONE SRCROOT/ [N] [--roots a/,b/] [--touching]');
  process.exit(2);
}
const n = Number(nStr ?? 150);
const git1 = (args) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
const log = git1(['log', '--no-merges', '--format=%H', 'HEAD']).trim().split('\n');
let judged = 0, refused = 0, scanned = 0;
const perCheck = new Map();
const otherRules = new Map();
const cache = new Map();
for (const c of log) {
  if (judged >= n) break;
  const files = git1(['diff-tree', '--no-commit-id', '--name-only', '-r', c]).trim().split('\n').filter(Boolean);
  if (!files.length || !(touching ? files.some((f) => f.startsWith(srcRoot)) : files.every((f) => f.startsWith(srcRoot)))) continue;
  if (!files.some((f) => f.startsWith(srcRoot) && /\.(py|ts|tsx|js|mjs|cjs|jsx|mts|cts)$/.test(f))) continue;
  let parent;
  try { parent = git1(['rev-parse', `${c}^`]).trim(); } catch { continue; }
  judged++;
  const git = new Git({ dir });
  let d;
  try {
    let policy;
    if (roots) {
      const base = await loadPolicy(git, parent);
      const { oracleFiles, source, ...raw } = base;
      policy = parsePolicy({ ...raw, contract: { ...raw.contract, roots } }, '(tamper-corpus --roots)');
    }
    d = await judgeUpdate({ git, role: 'agent', mode: 'check', trustedTip: parent, exclude: [parent], checkRefs: false, cache, policy }, { ref: 'HEAD', oldId: parent, newId: c });
  } finally {
    git.close();
  }
  const o = d.outcomes.find((x) => x.rule === 'tamper-scan');
  scanned += Number(o?.details?.scanned ?? 0);
  for (const x of d.outcomes) {
    if (x.rule === 'tamper-scan' || x.status !== 'fail') continue;
    for (const k of new Set(x.findings.length ? x.findings.map((f) => `${x.rule}:${f.messageId}`) : [`${x.rule}:error`])) otherRules.set(k, (otherRules.get(k) ?? 0) + 1);
  }
  if (!o || o.status === 'fail' || d.row === 'gate-error') {
    refused++;
    const checks = o ? [...new Set(o.findings.map((f) => f.data?.check ?? '?'))] : [d.row];
    for (const k of checks) perCheck.set(k, (perCheck.get(k) ?? 0) + 1);
    console.log(c.slice(0, 10), `[${checks.join(',')}]`, o ? o.findings.map((f) => f.message).join(' | ') : d.reasons.map((r) => r.message).join(' | '));
  }
}
console.log(`${dir}: ${judged} ${touching ? 'src-touching' : 'src-only'} commits judged (${scanned} file versions scanned), ${refused} refused by tamper-scan`);
if (perCheck.size) console.log('  refused commits per check:', Object.fromEntries(perCheck));
if (otherRules.size) console.log('  commits other rules refused (not tamper-scan):', Object.fromEntries(otherRules));
