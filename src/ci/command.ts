// The two entry points src/cli.ts wires into yargs: `patchgate ci` and `patchgate ledger
// freeze`. They own the exit codes (0 green, 1 red, 2 error) and the order of the job log;
// the work itself lives in run.ts and freeze.ts.

import { errorMessage, PatchgateError } from '../errors.js';
import { executeFreeze, type FreezeOptions } from './freeze.js';
import { auditCi, executeCi, printVerdict, writeJsonReport, type CiIo, type CiOptions } from './run.js';

export type CiArgs = CiOptions;
export type FreezeArgs = FreezeOptions;

function usageLine(io: CiIo, err: unknown): void {
  const msg = err instanceof PatchgateError ? err.message : `unexpected error: ${errorMessage(err)}`;
  io.err(`patchgate: ${msg.split('\n')[0]}`);
}

/** `patchgate ci`: 0 green, 1 red, 2 error. */
export async function runCi(args: CiArgs, io: CiIo): Promise<number> {
  let report;
  try {
    // The folder's log is settled before any test runs: a --audit (or variable) that is not the log the folder records refuses now.
    if (args.data) (await import('../commands/folder-log.js')).folderLog({ data: args.data, ...(args.audit !== undefined ? { audit: args.audit } : {}) });
    report = await executeCi(args, io);
  } catch (err) {
    usageLine(io, err);
    return 2;
  }
  printVerdict(report, args, io);
  let code: number = report.exitCode;
  if (args.data) {
    try {
      report.audit = { id: await auditCi(args.data, report, args.audit) };
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
