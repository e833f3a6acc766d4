// What `patchgate ci` prints at the end. A red run on a real project used to print the whole
// decision table, every line the runner wrote and one line per vanished test (72,670 lines on
// one branch). The summary is the rows that fired, the failures with their first lines, the
// other reasons (a few per row), the verdict and the replay line; `--verbose` shows everything.
// It also owns the deciding row: the first failing row in table order, except that real test
// failures beat `oracle-shrank` (tests that failed say more than tests that did not run).

import { DECISION_TABLE, renderTable, tableRow } from '../policy/decision-table.js';
import { showArgv } from './process.js';

const FAIL_ROWS = new Set(DECISION_TABLE.filter((r) => r.result === 'fail').map((r) => r.id));

/** Reason kinds that are tests that ran and failed (not frozen). */
export const FAILURE_KINDS = new Set(['failed', 'new-seed', 'expired', 'fixture-mismatch']);

/**
 * The deciding row: the first failing row in the table's order, else accept. The most specific
 * row wins over `oracle-shrank`: when tests ran and failed (`failures` names their rows), the
 * failures decide, because the oracle did run, and it said no.
 */
export function decidingRow(fired: string[], failures: string[] = []): string {
  let first = 'accept';
  for (const r of DECISION_TABLE) if (FAIL_ROWS.has(r.id) && fired.includes(r.id)) { first = r.id; break; }
  if (first === 'oracle-shrank') {
    for (const r of DECISION_TABLE) if (failures.includes(r.id)) return r.id;
  }
  return first;
}

/** How many lines of one kind the summary shows. */
export const SHOWN = 10;

export interface Summary {
  out(line: string): void;
}

/** Print `lines`, at most `max` of them unless verbose, then how many more there were. */
export function capped(io: Summary, lines: string[], verbose: boolean, what: string, max = SHOWN): void {
  const shown = verbose ? lines : lines.slice(0, max);
  for (const l of shown) io.out(l);
  if (lines.length > shown.length) io.out(`patchgate: ... and ${lines.length - shown.length} more ${what} (--verbose shows all; the --report JSON lists every one)`);
}

/** The last lines a command wrote, kept while its output is not shown (for a run that died). */
export class Tail {
  private lines: string[] = [];
  constructor(private readonly max = 30) {}
  push = (l: string): void => {
    this.lines.push(l);
    if (this.lines.length > this.max) this.lines.shift();
  };
  take(): string[] {
    const l = this.lines;
    this.lines = [];
    return l;
  }
}

interface VerdictReport {
  verdict: 'green' | 'red' | 'error';
  row: string;
  fired: string[];
  seed: number;
  base: string;
  head: string;
  command: { argv: string[] } | null;
  notRun?: string;
  sandbox?: 'bwrap' | 'none' | null;
  ledger: { applications: Array<{ outcome: string; ledger?: { expires: string } }> } | null;
}

/** The end of the job log: the fired rows (or, verbose, the table with them marked), the verdict, how to replay. */
export function printVerdict(report: VerdictReport, args: { base: string; head: string; cmd: string[]; verbose?: boolean; runs?: number }, io: Summary): void {
  // A command that could not start: one line said why; a table would only repeat "retry".
  if (report.notRun) return;
  io.out('');
  if (args.verbose) for (const l of renderTable(report.fired).split('\n')) io.out(l);
  else for (const l of renderTable(report.fired).split('\n').filter((x) => x.startsWith('>> '))) io.out(l);
  io.out('');
  const row = tableRow(report.row);
  if (report.verdict === 'green') {
    const skipped = report.ledger?.applications.filter((a) => a.outcome === 'frozen') ?? [];
    io.out(`patchgate: GREEN (seed ${report.seed})${report.sandbox === 'none' ? ' NOT SANDBOXED (--sandbox none)' : ''}${skipped.length ? `; ${skipped.length} frozen flake(s) skipped once, expiring ${skipped.map((a) => a.ledger!.expires).join(', ')}` : ''}`);
    return;
  }
  io.out(`patchgate: ${report.verdict === 'error' ? 'ERROR' : 'RED'}: ${row.observation} -> ${row.action} (seed ${report.seed}${report.sandbox === 'none' ? ', not sandboxed' : ''})`);
  if (report.command) {
    const base = /^[0-9a-f]{40,64}$/.test(report.base) ? report.base.slice(0, 12) : args.base;
    const head = /^[0-9a-f]{40,64}$/.test(report.head) ? report.head.slice(0, 12) : args.head;
    io.out(`patchgate: replay: patchgate ci --base ${base} --head ${head} --seed ${report.seed}${args.runs !== undefined ? ` --runs ${args.runs}` : ''} -- ${showArgv(args.cmd)}   (what ran: ${showArgv(report.command.argv)})`);
  }
}
