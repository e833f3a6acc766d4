// The two entry points src/cli.ts wires into yargs: `patchgate ci` and `patchgate ledger
// freeze`. They own the exit codes (0 green, 1 red, 2 error) and the order of the job log;
// the work itself lives in run.ts and freeze.ts.

import { errorMessage, PatchgateError } from '../errors.js';
import { executeFreeze } from './freeze.js';
import { auditCi, executeCi, printVerdict, writeJsonReport, type CiIo } from './run.js';

export interface CiArgs {
  /** The repository work tree, checked out at --head. */
  repo: string;
  base: string;
  head: string;
  /** The run seed (0..2^31-1); default: a random one. */
  seed?: string;
  /** The JUnit XML file CMD writes; relative paths are resolved against `repo` (CMD runs there). Without it, TAP is read from CMD's stdout. */
  junit?: string;
  /** Write the JSON report here (relative to the current directory). */
  report?: string;
  /** The trusted baseline {"tests": [...]} of the base's last green run. */
  baseline?: string;
  /** After a green run, write the baseline of this run here. */
  writeBaseline?: string;
  /** The data directory whose audit log (`<data>/patchgate.db`) records the run. */
  data?: string;
  /** The test command, spawned without a shell; `{seed}` in an argument becomes the seed. */
  cmd: string[];
  /** YYYY-MM-DD, for ledger expiry (default: today, UTC). */
  today?: string;
}

export interface FreezeArgs {
  repo: string;
  nodeid: string;
  seed: string;
  expires?: string;
  reason: string;
  /** The command that re-runs the failing test, spawned without a shell. */
  rerun: string[];
  today?: string;
}

function usageLine(io: CiIo, err: unknown): void {
  const msg = err instanceof PatchgateError ? err.message : `unexpected error: ${errorMessage(err)}`;
  io.err(`patchgate: ${msg.split('\n')[0]}`);
}

/** `patchgate ci`: 0 green, 1 red, 2 error. */
export async function runCi(args: CiArgs, io: CiIo): Promise<number> {
  let report;
  try {
    report = await executeCi(args, io);
  } catch (err) {
    usageLine(io, err);
    return 2;
  }
  printVerdict(report, args, io);
  let code: number = report.exitCode;
  if (args.data) {
    try {
      report.audit = { id: await auditCi(args.data, report) };
      io.out(`patchgate: recorded in the audit log as row ${report.audit.id}`);
    } catch (err) {
      io.err(`patchgate: the run could not be added to the audit log: ${errorMessage(err).split('\n')[0]}`);
      code = 2;
    }
  }
  if (args.report) {
    try {
      await writeJsonReport(args.report, { ...report, exitCode: code as 0 | 1 | 2 });
    } catch (err) {
      io.err(`patchgate: cannot write the report ${args.report}: ${errorMessage(err)}`);
      code = 2;
    }
  }
  return code;
}

/** `patchgate ledger freeze`: 0 frozen, 1 refused, 2 error. */
export async function runLedgerFreeze(args: FreezeArgs, io: CiIo): Promise<number> {
  try {
    return await executeFreeze(args, io);
  } catch (err) {
    usageLine(io, err);
    return 2;
  }
}
