// Why this exists (issue 49): a suite run of `patchgate ci` on a real project takes minutes
// (click: about 107 s a run, three runs), and it said nothing while it ran. Each sealed run
// is named (run 2 of 2, the trusted tree's run, ...) and, once it has run 2 s, watched: the
// gate's reporter stream (fd 3, channel.ts) says how many tests were collected and how many
// have finished, so the line counts tests; a runner without the stream gets the time alone.
// On a terminal the line updates in place (the form of src/progress.ts); anywhere else it is
// one line when the watch starts, a "still running" line every 30 s, and one at the end.

import { formatDuration, formatProgress } from '../progress.js';

/** Where the watch writes: process.stderr in the CLI (src/progress.ts stderrProgress), a recorder in tests. */
export interface RunProgressOut {
  write(text: string): void;
  isTTY: boolean;
  /** Say nothing unless the run still runs this long after it started (default 2000 ms). */
  delayMs?: number;
  /** Off a terminal: least time between two "still running" lines (default 30 s). */
  beatMs?: number;
  /** On a terminal: least time between two in-place updates (default 250 ms). */
  everyMs?: number;
  now?: () => number;
}

/** How many runs a `patchgate ci` makes: the suite's runs, and one on the trusted tree for the baseline. */
export interface RunPlan {
  runs: number;
  baseline: boolean;
}

/** What a sealed run is called in the log, from its folder name (strict.ts, baseline, holdout-run.ts). */
export function runLabel(name: string, plan?: RunPlan): string {
  // "run 2 of 2" counts the suite's runs, as the "run 2 of 2, order shuffled ..." line after it does;
  // the trusted tree's run is the extra one that the first line's "N run(s) in all" counts.
  const env = /^run(\d+)-env$/.exec(name);
  if (env) return `an extra run: run ${env[1]}'s conditions in run 1's order`;
  const n = /^run(\d+)$/.exec(name);
  if (n) return `run ${n[1]}${plan ? ` of ${plan.runs}` : ''}${n[1] === '1' ? '' : ' (shuffled)'}`;
  if (name === 'baseline') return `the trusted tree's run for the baseline${plan ? ` (${plan.runs + 1} of ${plan.runs + 1} runs in all)` : ''}`;
  const freeze = /^rerun(\d+)$/.exec(name);
  if (freeze) return `ledger freeze's re-run ${freeze[1]} of 2`;
  if (name === 'holdout-ids') return 'listing the held-out tests on the trusted tree';
  if (name === 'holdout') return 'the held-out run';
  return name;
}

/**
 * One watched run. `line` takes each line of the reporter stream as it arrives; a timer
 * (`start`) calls `beat`, which announces the run once it is past the delay and keeps the
 * line alive while no test finishes; `stop` writes the last line (only when one was shown).
 */
export class RunWatch {
  private collected = 0;
  private finished = 0;
  private failed = 0;
  private readonly started: number;
  private shown = false;
  private lastWrite = -Infinity;
  private timer: NodeJS.Timeout | null = null;
  private readonly now: () => number;

  constructor(private readonly label: string, private readonly out: RunProgressOut, private readonly counted: boolean) {
    this.now = out.now ?? (() => Date.now());
    this.started = this.now();
  }

  /** Beat once a second until `stop` (the timer never keeps the process alive); a delay of 0 shows the run at once. */
  start(): this {
    this.timer = setInterval(() => this.beat(), 1000);
    this.timer.unref();
    this.beat();
    return this;
  }

  /** One line of the reporter stream (JSON records; anything else is the stream checker's business). */
  line(text: string): void {
    let r: { t?: unknown; status?: unknown };
    try {
      r = JSON.parse(text) as { t?: unknown; status?: unknown };
    } catch {
      return;
    }
    if (!this.shown) this.beat();
    if (r.t === 'collected') this.collected++;
    else if (r.t === 'test') {
      this.finished++;
      if (r.status === 'failed') this.failed++;
      // On a terminal each finished test may redraw (at most every everyMs); elsewhere the beat writes.
      if (this.shown && this.out.isTTY && this.now() - this.lastWrite >= (this.out.everyMs ?? 250)) this.draw();
    }
  }

  private elapsed(): number {
    return this.now() - this.started;
  }

  /** `LABEL: 12/500 tests finished (1 failed), 4.0 tests/s, about 2 min left; running 30 s`. */
  status(still = false): string {
    const head = `patchgate: ${this.label}: ${still ? 'still running, ' : ''}`;
    const time = `running ${formatDuration(this.elapsed())}`;
    if (!this.counted) return `${head}${time} (this runner has no patchgate reporter, so no per-test count)`;
    const total = this.collected > 0 ? Math.max(this.collected, this.finished) : null;
    // formatProgress's figures without its label: "12/500 tests finished, 4.0 tests/s, about 2 min left".
    const count = formatProgress({ label: '', done: this.finished, total, elapsedMs: this.elapsed(), unit: 'tests', verb: 'finished' }).slice(2);
    return `${head}${count.replace(' tests finished', ` tests finished${this.failed ? ` (${this.failed} failed)` : ''}`)}; ${time}`;
  }

  private draw(): void {
    this.lastWrite = this.now();
    this.out.write(`\r${this.status()}\x1b[K`);
  }

  /** Called by the timer (tests call it with their own clock). */
  beat(): void {
    if (!this.shown) {
      if (this.elapsed() < (this.out.delayMs ?? 2000)) return;
      this.shown = true;
      if (this.out.isTTY) this.draw();
      else {
        this.lastWrite = this.now();
        this.out.write(`${this.status()}\n`);
      }
      return;
    }
    if (this.out.isTTY) {
      if (this.now() - this.lastWrite >= 1000) this.draw();
    } else if (this.now() - this.lastWrite >= (this.out.beatMs ?? 30_000)) {
      this.lastWrite = this.now();
      this.out.write(`${this.status(true)}\n`);
    }
  }

  /** The run ended: its last line when the run was shown (on a terminal it replaces the updating one). */
  stop(how: string): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (!this.shown) return;
    const counts = this.counted ? `, ${this.finished} test(s) finished${this.failed ? ` (${this.failed} failed)` : ''}` : '';
    const line = `patchgate: ${this.label}: ${how} after ${formatDuration(this.elapsed())}${counts}`;
    this.out.write(this.out.isTTY ? `\r${line}\x1b[K\n` : `${line}\n`);
  }
}
