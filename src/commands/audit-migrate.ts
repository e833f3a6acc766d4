// `patchgate audit migrate --from sqlite:PATH --to postgres://…`: moves a node's embedded log
// into the shared PostgreSQL log without breaking the chain. The source must verify first
// (a tampered log is not laundered into a fresh database); its rows are copied verbatim (same
// ids, prev_hash and hash) up to the chain head read at the start, in one transaction, into a
// target that must be empty; then the target is verified and its head compared to the source's.
// The source's tokens (each secret's hash, never a secret) move in the same transaction, so
// every token keeps working once the nodes use the shared log. `--to` carries no password on
// the command line: it defaults to PATCHGATE_AUDIT_URL, and PGPASSFILE/PGPASSWORD work too.
//
// The source's writers are held off for the whole copy (an IMMEDIATE transaction on it, and the
// data folder's lock, which a running `serve` or `daemon` holds: it must be stopped first). In
// that same transaction, once the copy verified, the source is marked as moved (./moved.ts): no
// patchgate reads or writes it as the current log again. The data folder (`--data`, else the
// folder of a `--from` named patchgate.db) records the new log (src/audit/location.ts), so every
// command run against it uses the shared log from then on.

import { existsSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { AuditStore, nowIso, type StoredRow } from '../audit/store.js';
import { AUDIT_URL_ENV, describeAudit, parseAuditUrl, refuseSecretInArgv, type AuditLocation } from '../audit/sink.js';
import { describeRecorded, locationFile, readLocation, recordLocation, recordedLocation, sameLocation, withoutPassword } from '../audit/location.js';
import { markMoved } from '../audit/moved.js';
import type { TokenRow } from '../audit/tokens.js';
import { PgAuditStore } from '../audit/pg-store.js';
import { StartupError, UsageError } from '../errors.js';
import { lockDataDir, type DataDirLock } from '../server/datadir-lock.js';
import { slowPhase, stderrProgress, type SlowPhaseOptions } from '../progress.js';
import { verifyWithProgress } from '../audit/verify-progress.js';
import { defaultData } from './args.js';

export interface MigrateArgs {
  /** `sqlite:PATH`; default `sqlite:<data>/patchgate.db`. */
  from?: string;
  to?: string;
  /** The data folder whose log this is (given: it records the new log there). */
  data?: string;
}

/** The data folder to record the new log in: `--data`, else the folder of a source named patchgate.db. */
function folderOf(args: MigrateArgs, from: AuditLocation & { kind: 'sqlite' }): string | null {
  if (args.data !== undefined) return resolve(args.data);
  return basename(from.path) === 'patchgate.db' ? dirname(from.path) : null;
}

/** The folder's lock (no serve or daemon writes to the source meanwhile); refused with one line while one runs. */
function lockFolder(folder: string): DataDirLock {
  try {
    return lockDataDir(folder);
  } catch (err) {
    if (err instanceof StartupError) throw new UsageError(`audit migrate: ${err.message.split(';')[0]}; stop it first (what it wrote during the copy would be left behind)`, { cause: err });
    throw err;
  }
}

export async function runAuditMigrate(args: MigrateArgs, progress: SlowPhaseOptions = stderrProgress()): Promise<{ ok: boolean; lines: string[] }> {
  refuseSecretInArgv(args.to, '--to');
  refuseSecretInArgv(args.from, '--from');
  const toUrl = args.to ?? (process.env[AUDIT_URL_ENV] || undefined);
  if (!toUrl) throw new UsageError(`--to: give the PostgreSQL log to copy into (postgres://USER@HOST/DB), or set ${AUDIT_URL_ENV}`);
  const fromSpec = args.from ?? `sqlite:${resolve(args.data ?? defaultData(), 'patchgate.db')}`;
  const from = parseAuditUrl(fromSpec, '.', '--from');
  const to = parseAuditUrl(toUrl, '.', '--to');
  if (!fromSpec.trim().startsWith('sqlite:') || from.kind !== 'sqlite') throw new UsageError('--from: must be sqlite:PATH (the embedded log to copy)');
  if (to.kind !== 'postgres') throw new UsageError('--to: must be postgres://… (the shared log to copy into)');
  if (!existsSync(from.path)) throw new UsageError(`--from: no audit log at ${from.path}`);
  const folder = folderOf(args, from);
  if (folder) {
    const rec = readLocation(folder);
    // A folder that records the target already: the source's own mark says more (AuditStore.open below).
    const recorded = rec ? recordedLocation(folder, rec) : null;
    if (recorded && !sameLocation(recorded, from) && !sameLocation(recorded, to)) {
      throw new UsageError(`--from: ${from.path} is not the log of the data folder ${folder}, which is ${describeRecorded(folder, rec!)}`);
    }
  }
  const lock = folder ? lockFolder(folder) : null;
  try {
    return await copy(args, from, to, folder, progress);
  } finally {
    lock?.release();
  }
}

async function copy(args: MigrateArgs, from: AuditLocation & { kind: 'sqlite' }, to: AuditLocation & { kind: 'postgres' }, folder: string | null, progress: SlowPhaseOptions): Promise<{ ok: boolean; lines: string[] }> {
  const lines: string[] = [];
  const source = AuditStore.open(from.path); // a source marked as moved already is refused here
  let done = false;
  try {
    // No writer gets in between the head read here and the mark at the end.
    source.db.exec('BEGIN IMMEDIATE');
    // Each phase reports progress on stderr once it has run 2 s (src/progress.ts).
    const before = await verifyWithProgress(source, { ...progress, label: 'patchgate: audit migrate: verifying the source' });
    if (!before.ok) {
      return { ok: false, lines: [`TAMPERED: source ${from.path}: first bad row ${before.firstBadId} of ${before.rows}: ${before.reason}; nothing was copied`] };
    }
    const head = source.lastRow();
    lines.push(`source ${from.path}: ${before.rows} row(s), hash chain intact, head #${head.id} ${head.hash.slice(0, 16)}`);
    const target = await PgAuditStore.open(to.url);
    try {
      // Opened only when the copy starts reading, and always closed (a refused copy leaves no busy statement behind).
      const stmt = source.db.prepare('SELECT * FROM events WHERE id <= ? ORDER BY id');
      const rows = function* (): Generator<StoredRow> {
        const it = stmt.iterate(head.id) as IterableIterator<StoredRow>;
        try {
          yield* it;
        } finally {
          it.return?.();
        }
      };
      const tokens = source.db.prepare('SELECT * FROM tokens ORDER BY id').all() as TokenRow[];
      const copied = await slowPhase({ unit: 'rows', verb: 'copied', ...progress }, 'patchgate: audit migrate: copying', async () => head.id, (tick) => target.importChain((function* () {
        for (const row of rows()) {
          yield row;
          tick();
        }
      })(), head, tokens));
      const after = await verifyWithProgress(target, { ...progress, label: 'patchgate: audit migrate: verifying the copy' });
      const theirs = await target.lastRow();
      if (!after.ok) {
        lines.push(`TAMPERED: target ${describeAudit(to)}: first bad row ${after.firstBadId} of ${after.rows}: ${after.reason}`);
        return { ok: false, lines };
      }
      if (theirs.id !== head.id || theirs.hash !== head.hash || copied !== before.rows) {
        lines.push(`MISMATCH: target ${describeAudit(to)} head #${theirs.id} ${theirs.hash.slice(0, 16)} after copying ${copied} row(s) is not the source's`);
        return { ok: false, lines };
      }
      lines.push(`target ${describeAudit(to)}: ${after.rows} row(s) copied, hash chain intact, same head #${theirs.id} ${theirs.hash.slice(0, 16)}`);
      lines.push(`tokens: ${tokens.length} copied (${tokens.filter((t) => t.revoked === null).length} not revoked); they work on every node that uses the shared log`);
      markMoved(source.db, { to: withoutPassword(to.url), time: nowIso(), headId: head.id, headHash: head.hash });
      source.db.exec('COMMIT');
      done = true;
      lines.push(`source ${from.path}: marked as moved to ${describeAudit(to)}; it is kept as history, and no patchgate reads or writes it as the current log again`);
    } finally {
      await target.close();
    }
  } finally {
    if (!done && source.db.inTransaction) source.db.exec('ROLLBACK');
    source.close();
  }
  const pw = `the password comes from ${AUDIT_URL_ENV} (the same URL with it), PGPASSFILE or PGPASSWORD`;
  if (folder) {
    recordLocation(folder, to, 'audit migrate');
    lines.push(`data folder ${folder}: recorded in ${locationFile(folder)}: serve, token, repo, escalation, audit, checkpoint and ci --data run against it now use ${describeAudit(to)} (${pw})`);
  } else {
    const setTo = args.to ? 'the --to URL' : `the URL ${AUDIT_URL_ENV} holds now`;
    lines.push(`next: start the gate with ${AUDIT_URL_ENV} set to ${setTo} (or --audit without its password); no data folder was recorded: pass --data DIR to record it there`);
  }
  return { ok: true, lines };
}
