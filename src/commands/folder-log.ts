// The one way a command run against a data folder opens its audit log (issue 48): token, repo,
// escalation, audit, checkpoint and `ci --data` all come here. `--audit` (refused with a
// password: argv is public), else PATCHGATE_AUDIT_URL, must agree with the log the folder
// records (src/audit/location.ts); with neither, the recorded log, else `<data>/patchgate.db`.
// A log that cannot be reached refuses the command with one line before it changes anything.

import { existsSync } from 'node:fs';
import { AuditError } from '../errors.js';
import { openAuditSink, refuseSecretInArgv, AUDIT_URL_ENV, type AuditSink } from '../audit/sink.js';
import { folderAudit, type FolderAudit, type GivenAudit } from '../audit/location.js';
import { NoDataError } from './args.js';

/** `--audit` (a command-line flag, so refused when it carries a password), else PATCHGATE_AUDIT_URL, else nothing. */
export function givenAudit(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): GivenAudit | null {
  refuseSecretInArgv(flag, '--audit');
  if (flag !== undefined) return { value: flag, from: '--audit' };
  const v = env[AUDIT_URL_ENV];
  return v ? { value: v, from: AUDIT_URL_ENV } : null;
}

/** The log of `data` for a command given `--audit flag` (checked, not opened). */
export function folderLog(args: { data: string; audit?: string }): FolderAudit {
  return folderAudit(args.data, givenAudit(args.audit));
}

/**
 * Opens the folder's log. `existing`: a command that only reads must not create an empty log
 * where none was (a mistyped --data). A log that does not open is one line saying so, naming
 * the record when the folder has one; nothing was done.
 */
export async function openFolderLog(args: { data: string; audit?: string }, existing = false): Promise<{ sink: AuditSink; where: FolderAudit }> {
  const where = folderLog(args);
  const loc = where.location;
  if (existing && loc.kind === 'sqlite' && !existsSync(loc.path)) throw new NoDataError(args.data);
  try {
    return { sink: await openAuditSink(loc), where };
  } catch (err) {
    if (!(err instanceof AuditError) || !where.recorded || loc.kind !== 'postgres') throw err;
    const pw = /password|authentication/i.test(err.message) ? `; the password comes from ${AUDIT_URL_ENV} (the same URL with it), PGPASSFILE or PGPASSWORD` : '';
    throw new AuditError(`${err.message} (this data folder's log, recorded in ${where.file}); nothing was done${pw}`, { cause: err });
  }
}

/** The folder's log, open for `fn`, closed after. */
export async function withFolderLog<T>(args: { data: string; audit?: string }, fn: (s: AuditSink, where: FolderAudit) => Promise<T> | T, existing = false): Promise<T> {
  const { sink, where } = await openFolderLog(args, existing);
  try {
    return await fn(sink, where);
  } finally {
    await sink.close();
  }
}
