// Where a push's wall time goes on the server side, from git's own trace2 events: the bench's
// (2) gives one ratio (gate / plain node-git-server); this splits the receive-pack side of the
// gate's pushes into git's children (unpack-objects, the connectivity rev-list, each hook), so
// the part a change removes can be seen. `node bench/dist/push-phases.js [--size 1k] [--pushes 12]`
// after `npm run build && npm run build:bench`. The gate runs as a child with GIT_TRACE2_EVENT
// set, so every git process it starts writes its events (that costs a little in each process);
// plain node-git-server runs without it, for the wall times beside. Figures are medians of one
// run, ms; nothing is asserted.

import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateRepo, makeEdits } from './gen.js';
import { agentRepo, prepareGateData, pushOnce, startBaseline, startGate, type Baseline, type Gate } from './push.js';
import { median, phaseFlags, runTool, Rng, stopServeChild, tempDir } from './util.js';

interface Trace2Event {
  event: string;
  sid: string;
  time: string;
  argv?: string[];
  child_id?: number;
  child_class?: string;
  hook_name?: string;
  t_rel?: number;
  t_abs?: number;
}

/** Per receive-pack run (the pack-receiving one, not the ref advertisement): its children's times and its own. */
export function receivePackPhases(events: readonly Trace2Event[]): { total: number[]; children: Map<string, number[]> } {
  const packRuns = new Set<string>();
  const total: number[] = [];
  const started = new Map<string, string>();
  const children = new Map<string, number[]>();
  for (const e of events) {
    if (e.event === 'start' && e.argv?.some((a) => /receive-pack$/.test(a)) && !e.argv.includes('--advertise-refs')) packRuns.add(e.sid);
    else if (e.event === 'atexit' && packRuns.has(e.sid) && e.t_abs !== undefined) total.push(e.t_abs * 1000);
    else if (e.event === 'child_start' && packRuns.has(e.sid)) {
      const name = e.hook_name ? `hook ${e.hook_name}` : (e.argv ?? []).filter((a) => !a.startsWith('--git-dir')).slice(0, 2).join(' ') || '?';
      started.set(`${e.sid}/${e.child_id}`, name);
    } else if (e.event === 'child_exit' && e.t_rel !== undefined) {
      const name = started.get(`${e.sid}/${e.child_id}`);
      if (!name) continue;
      if (!children.has(name)) children.set(name, []);
      children.get(name)!.push(e.t_rel * 1000);
    }
  }
  return { total, children };
}

async function main(): Promise<void> {
  const { files, pushes } = phaseFlags('push-phases.js', 12);
  const gen = await generateRepo(tempDir('gen-'), files, 1);
  const data = tempDir('pgp-', tmpdir());
  const traceFile = join(tempDir('trace2-'), 'events.json');
  const secret = await prepareGateData(gen, data, 'bench-agent');
  let gate: Gate | null = null;
  let base: Baseline | null = null;
  try {
    process.env.GIT_TRACE2_EVENT = traceFile;
    gate = await startGate(data, 'bench-agent', secret);
    delete process.env.GIT_TRACE2_EVENT;
    base = await startBaseline(gen);
    const client = await agentRepo(gen, 'agent-');
    const rng = new Rng(42);
    const warm = await makeEdits(client, 'agent/warm', gen.main, gen.srcFiles, 1, rng, 'warm');
    for (const url of [gate.url, base.url]) {
      const r = await pushOnce(client, url, warm[0]!, 'refs/heads/agent/warm', url === gate.url);
      if (!r.ok) throw new Error(`warm-up push failed: ${r.stderr.split('\n').slice(-3).join(' | ')}`);
    }
    const skip = readFileSync(traceFile, 'utf8').length; // the warm-up's events are left out
    const commits = await makeEdits(client, 'agent/bench', gen.main, gen.srcFiles, pushes, rng, 'bench');
    const gateMs: number[] = [];
    const baseMs: number[] = [];
    for (const c of commits) {
      const g = await pushOnce(client, gate.url, c, 'refs/heads/agent/bench', true);
      const b = await pushOnce(client, base.url, c, 'refs/heads/agent/bench', false);
      if (!g.ok || !b.ok) throw new Error(`a push failed: ${(g.ok ? b : g).stderr.split('\n').slice(-3).join(' | ')}`);
      gateMs.push(g.ms);
      baseMs.push(b.ms);
    }
    const events = readFileSync(traceFile, 'utf8').slice(skip).split('\n').filter(Boolean).map((l) => JSON.parse(l) as Trace2Event);
    const { total, children } = receivePackPhases(events);
    const f = (x: number): string => x.toFixed(1);
    console.log(`push phases, ${gen.files} files, ${pushes} one-file pushes (medians, ms)`);
    console.log(`  git push wall: gate ${f(median(gateMs))}, plain node-git-server ${f(median(baseMs))} (ratio ${(median(gateMs) / median(baseMs)).toFixed(2)})`);
    console.log(`  gate receive-pack (pack run): ${f(median(total))} (n=${total.length})`);
    for (const [name, ms] of children) console.log(`    ${name.padEnd(28)} ${f(median(ms))} (n=${ms.length})`);
  } finally {
    if (base) await base.close();
    if (gate) await stopServeChild(gate.child);
  }
}

runTool('push-phases', main);
