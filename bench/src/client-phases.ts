// Where a push's wall time goes, seen from the client: the bench's (2) gives one ratio (gate /
// plain node-git-server); this splits each push by the client's own `GIT_TRACE_CURL` timestamps
// (microseconds) into the ref advertisement (its 401 challenge, the answer's head, its last
// byte), the client's pack, the POST (to its answer's head) and the report. push-phases.ts
// splits the server side by git's trace2 instead. `node bench/dist/client-phases.js [--size 1k]
// [--pushes 30]` after `npm run build && npm run build:bench`. Gate and plain pushes alternate;
// figures are medians of one run, ms; nothing is asserted.

import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateRepo, makeEdits } from './gen.js';
import { agentRepo, prepareGateData, pushOnce, startBaseline, startGate, waitWarmed, type Baseline, type Gate } from './push.js';
import { median, phaseFlags, runTool, Rng, stopServeChild, tempDir } from './util.js';

/** One push's marks, ms since midnight (GIT_TRACE_CURL's clock), null where a step did not show. */
export interface ClientMarks {
  start: number;
  /** The first GET sent, and the last one (after a 401 challenge; the first when there was none). */
  firstGet: number;
  lastGet: number;
  /** The last GET's `200` head, and its last data received. */
  getHead: number;
  getEnd: number;
  post: number;
  postHead: number;
  end: number;
}

const STAMP = /^(\d\d):(\d\d):(\d\d\.\d+) /;

function stamp(line: string): number | null {
  const m = STAMP.exec(line);
  return m ? (Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3])) * 1000 : null;
}

/** The marks of one `git push` from its GIT_TRACE_CURL text (data included), or null when a step is missing. */
export function clientMarks(trace: string): ClientMarks | null {
  const lines = trace.split('\n').filter((l) => STAMP.test(l));
  const find = (re: RegExp, from = 0): number => {
    for (let i = from; i < lines.length; i++) if (re.test(lines[i]!)) return i;
    return -1;
  };
  const firstGet = find(/Send header: GET /);
  const post = find(/Send header: POST \S*git-receive-pack/);
  if (firstGet < 0 || post < 0) return null;
  let lastGet = firstGet;
  for (let i = firstGet + 1; i < post; i++) if (/Send header: GET /.test(lines[i]!)) lastGet = i;
  const getHead = find(/Recv header: HTTP\/[\d.]+ 200/, lastGet);
  const postHead = find(/Recv header: HTTP\/[\d.]+ 200/, post);
  if (getHead < 0 || getHead > post || postHead < 0) return null;
  let getEnd = getHead;
  for (let i = getHead; i < post; i++) if (/Recv data/.test(lines[i]!)) getEnd = i;
  const t = (i: number): number => stamp(lines[i]!)!;
  return { start: t(0), firstGet: t(firstGet), lastGet: t(lastGet), getHead: t(getHead), getEnd: t(getEnd), post: t(post), postHead: t(postHead), end: t(lines.length - 1) };
}

/** The steps printed, each from one mark to the next. */
const STEPS: Array<[string, (m: ClientMarks) => number]> = [
  ['401 challenge (first GET to the last)', (m) => m.lastGet - m.firstGet],
  ['GET to its answer\'s head', (m) => m.getHead - m.lastGet],
  ['head to the advertisement\'s last byte', (m) => m.getEnd - m.getHead],
  ['the client\'s pack, to the POST', (m) => m.post - m.getEnd],
  // The POST's answer starts with its first sideband bytes: the gate's are the pre-receive
  // hook's `remote:` lines (before git updates the refs), plain git's its report. Compare the sum.
  ['POST to its answer\'s head (first sideband bytes)', (m) => m.postHead - m.post],
  ['head to the last byte', (m) => m.end - m.postHead],
  ['POST to the last byte', (m) => m.end - m.post],
  ['first trace line to the last', (m) => m.end - m.start],
];

async function main(): Promise<void> {
  const { files, pushes } = phaseFlags('client-phases.js', 30);
  const gen = await generateRepo(tempDir('gen-'), files, 1);
  const data = tempDir('pgc-', tmpdir());
  const traceFile = join(tempDir('curl-'), 'trace.txt');
  const secret = await prepareGateData(gen, data, 'bench-agent');
  let gate: Gate | null = null;
  let base: Baseline | null = null;
  try {
    gate = await startGate(data, 'bench-agent', secret);
    base = await startBaseline(gen);
    await waitWarmed(gate.url);
    const client = await agentRepo(gen, 'agent-');
    const rng = new Rng(42);
    const warm = await makeEdits(client, 'agent/warm', gen.main, gen.srcFiles, 3, rng, 'warm');
    for (const c of warm) {
      for (const url of [gate.url, base.url]) {
        const r = await pushOnce(client, url, c, 'refs/heads/agent/warm', url === gate.url);
        if (!r.ok) throw new Error(`warm-up push failed: ${r.stderr.split('\n').slice(-3).join(' | ')}`);
      }
    }
    const commits = await makeEdits(client, 'agent/bench', gen.main, gen.srcFiles, pushes, rng, 'bench');
    const marks = { gate: [] as ClientMarks[], plain: [] as ClientMarks[] };
    const walls = { gate: [] as number[], plain: [] as number[] };
    for (const c of commits) {
      for (const side of ['gate', 'plain'] as const) {
        rmSync(traceFile, { force: true });
        process.env.GIT_TRACE_CURL = traceFile;
        let r;
        try {
          r = await pushOnce(client, side === 'gate' ? gate.url : base.url, c, 'refs/heads/agent/bench', side === 'gate');
        } finally {
          delete process.env.GIT_TRACE_CURL;
        }
        if (!r.ok) throw new Error(`a push failed: ${r.stderr.split('\n').slice(-3).join(' | ')}`);
        const m = clientMarks(readFileSync(traceFile, 'utf8'));
        if (!m) throw new Error(`the ${side} push's trace lacks a step (${traceFile})`);
        marks[side].push(m);
        walls[side].push(r.ms);
      }
    }
    const f = (x: number): string => x.toFixed(1).padStart(7);
    console.log(`client phases, ${gen.files} files, ${pushes} one-file pushes each, alternating (medians, ms)`);
    console.log(`  ${'step'.padEnd(50)}    gate   plain`);
    console.log(`  ${'git push wall'.padEnd(50)} ${f(median(walls.gate))} ${f(median(walls.plain))}`);
    for (const [name, of] of STEPS) console.log(`  ${name.padEnd(50)} ${f(median(marks.gate.map(of)))} ${f(median(marks.plain.map(of)))}`);
  } finally {
    if (base) await base.close();
    if (gate) await stopServeChild(gate.child);
  }
}

runTool('client-phases', main);
