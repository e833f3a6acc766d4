// `patchgate audit migrate --from sqlite:PATH --to postgres://…`: moves a node's embedded log
// into the shared PostgreSQL log without breaking the chain. The source must verify first
// (a tampered log is not laundered into a fresh database); its rows are copied verbatim (same
// ids, prev_hash and hash) up to the chain head read at the start, in one transaction, into a
// target that must be empty; then the target is verified and its head compared to the source's.
// The source's tokens (each secret's hash, never a secret) move in the same transaction, so
// every token keeps working once the nodes use the shared log. `--to` carries no password on
// the command line: it defaults to PATCHGATE_AUDIT_URL, and PGPASSFILE/PGPASSWORD work too.

import { existsSync } from 'node:fs';
import { AuditStore, type StoredRow } from '../audit/store.js';
import { AUDIT_URL_ENV, describeAudit, parseAuditUrl, refuseSecretInArgv } from '../audit/sink.js';
import type { TokenRow } from '../audit/tokens.js';
import { PgAuditStore } from '../audit/pg-store.js';
import { UsageError } from '../errors.js';
import { slowPhase, stderrProgress, type SlowPhaseOptions } from '../progress.js';
import { verifyWithProgress } from '../audit/verify-progress.js';

export async function runAuditMigrate(args: { from: string; to?: string }, progress: SlowPhaseOptions = stderrProgress()): Promise<{ ok: boolean; lines: string[] }> {
  refuseSecretInArgv(args.to, '--to');
  refuseSecretInArgv(args.from, '--from');
  const toUrl = args.to ?? (process.env[AUDIT_URL_ENV] || undefined);
  if (!toUrl) throw new UsageError(`--to: give the PostgreSQL log to copy into (postgres://USER@HOST/DB), or set ${AUDIT_URL_ENV}`);
  const from = parseAuditUrl(args.from, '.', '--from');
  const to = parseAuditUrl(toUrl, '.', '--to');
  if (!args.from.trim().startsWith('sqlite:') || from.kind !== 'sqlite') throw new UsageError('--from: must be sqlite:PATH (the embedded log to copy)');
  if (to.kind !== 'postgres') throw new UsageError('--to: must be postgres://… (the shared log to copy into)');
  if (!existsSync(from.path)) throw new UsageError(`--from: no audit log at ${from.path}`);
  const lines: string[] = [];
  const source = AuditStore.open(from.path);
  try {
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
      const setTo = args.to ? 'the --to URL' : `the URL ${AUDIT_URL_ENV} holds now`;
      lines.push(`next: start the gate with ${AUDIT_URL_ENV} set to ${setTo} (or --audit without its password); rows written to ${from.path} after this copy are not in it`);
      return { ok: true, lines };
    } finally {
      await target.close();
    }
  } finally {
    source.close();
  }
}
