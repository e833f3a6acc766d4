// The tamper-scan false-refusal bar (issue 11): judge the src-only commits of a real project's
// history with `patchgate check --role agent` and count tamper-scan refusals. Run after a build:
//   node scripts/tamper-corpus.mjs /path/to/clone src/ 150
import { execFileSync } from 'node:child_process';
import { runCheck } from '../dist/commands/check.js';
const [dir, srcRoot, nStr] = process.argv.slice(2);
const n = Number(nStr);
const log = execFileSync('git', ['-C', dir, 'log', '--no-merges', '--format=%H', '-n', '3000', 'HEAD'], { encoding: 'utf8' }).trim().split('\n');
let judged = 0, refused = 0;
for (const c of log) {
  if (judged >= n) break;
  const files = execFileSync('git', ['-C', dir, 'diff-tree', '--no-commit-id', '--name-only', '-r', c], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  if (!files.length || !files.every((f) => f.startsWith(srcRoot))) continue;
  if (!files.some((f) => /\.(py|ts|tsx|js|mjs)$/.test(f))) continue;
  let parent;
  try { parent = execFileSync('git', ['-C', dir, 'rev-parse', `${c}^`], { encoding: 'utf8' }).trim(); } catch { continue; }
  judged++;
  const d = await runCheck({ repo: dir, base: parent, head: c, role: 'agent' });
  const o = d.outcomes.find((x) => x.rule === 'tamper-scan');
  if (!o || o.status === 'fail' || d.row === 'gate-error') {
    refused++;
    console.log(c.slice(0, 10), o ? o.findings.map((f) => f.message).join(' | ') : d.reasons.map((r) => r.message).join(' | '));
  }
}
console.log(`${dir}: ${judged} src-only commits judged, ${refused} refused by tamper-scan`);
