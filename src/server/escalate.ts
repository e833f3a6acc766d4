// The escalation of one push (issue 21), kept out of the pre-receive flow
// (./hook/pre-receive.ts): after the push was judged and its decision recorded as usual,
// `git push -o patchgate.escalate="TEXT"` becomes an `escalation` row (text sanitised and
// bounded by src/audit/escalation.ts; the first ref, its commit and verdict; every ref in
// `detail`), awaited before the hook answers, then a notify event in the background
// (./notify.ts). A failed write changes no verdict: the agent is told nothing was recorded,
// and to push again.

import { errorMessage } from '../errors.js';
import { sanitizeText } from '../audit/escalation.js';
import type { AuditSink } from '../audit/sink.js';
import type { Verdict } from '../audit/store.js';
import type { RefDecision } from '../policy/types.js';
import type { PushSession } from './hook/session.js';
import type { Notifier } from './notify.js';

export interface EscalationDeps {
  audit: AuditSink;
  notifier: Notifier | null;
  log: (line: string) => void;
  /** The data folder and the log (`--audit`, no secret) the printed close command names. */
  where?: EscalationWhere;
}

export interface EscalationWhere {
  dataDir?: string;
  /** A PostgreSQL log's URL without its password (the person's PGPASSWORD or PGPASSFILE gives it). */
  audit?: string;
}

/** A log's URL for a printed command: never its password (null when it cannot be read as a URL). */
export function auditArg(url: string | undefined): string | undefined {
  if (!url || !/^postgres(?:ql)?:\/\//i.test(url)) return undefined;
  try {
    const u = new URL(url);
    u.password = '';
    u.searchParams.delete('password');
    return u.toString();
  } catch {
    return undefined;
  }
}

const shq = (v: string): string => (/^[A-Za-z0-9_./:@%+=,-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);

const whereArgs = (where: EscalationWhere | undefined): string[] => [...(where?.dataDir ? ['--data', shq(where.dataDir)] : []), ...(where?.audit ? ['--audit', shq(where.audit)] : [])];

/** The command that prints escalation `id` and the diff of the commits it kept. */
export function showCommand(id: number, where: EscalationWhere | undefined): string {
  return ['patchgate escalation show', String(id), ...whereArgs(where)].join(' ');
}

/** The command that closes escalation `id`, runnable as printed against the gate's own data folder and log. */
export function closeCommand(id: number, where: EscalationWhere | undefined): string {
  return ['patchgate escalation close', String(id), ...whereArgs(where), '--as "$USER" --note "what was decided"'].join(' ');
}

/** Writes the row and adds the agent's `remote:` lines; returns the escalation's id, or null when it could not be written. */
export async function recordEscalation(deps: EscalationDeps, s: PushSession, decisions: RefDecision[], verdictOf: (d: RefDecision) => Verdict, raw: string | null, lines: string[]): Promise<{ id: number } | null> {
  const text = sanitizeText(raw ?? '');
  const first = decisions[0]!;
  const row = {
    pushId: s.pushId, repo: s.repo, actor: s.actor, role: s.role, remoteAddr: s.remoteAddr, userAgent: s.userAgent,
    ref: first.ref, old: first.oldId, new: first.newId, verdict: verdictOf(first), text,
    detail: { refs: decisions.slice(0, 50).map((d) => ({ ref: d.ref, old: d.oldId, new: d.newId, verdict: verdictOf(d), row: d.row })) },
  };
  let id: number;
  try {
    id = await deps.audit.appendEscalation(row);
  } catch (err) {
    deps.log(`patchgate: audit: the escalation of push ${s.pushId} could not be written: ${errorMessage(err).split('\n')[0]}`);
    lines.push('patchgate: your escalation could NOT be recorded (the audit log did not take it), so nobody has seen it; push again with the same -o patchgate.escalate option, and if this repeats ask a person directly');
    return null;
  }
  const quoted = text.length > 200 ? `${text.slice(0, 199)}…` : text;
  lines.push(`patchgate: escalation ${id} recorded: a person will look at it ("${quoted}").`);
  lines.push('  Your push was judged as usual (above); the escalation does not change its verdict. Leave the test, contract and fixtures as they are; a person answers in the audit log (patchgate escalation list).');
  deps.notifier?.send({
    type: 'patchgate.escalation', v: 1, id, time: new Date().toISOString(), repo: s.repo, actor: s.actor, role: s.role,
    ref: first.ref, old: first.oldId, new: first.newId, verdict: row.verdict, pushId: s.pushId, text, close: closeCommand(id, deps.where),
  });
  return { id };
}
