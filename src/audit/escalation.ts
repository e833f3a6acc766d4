// Escalations (issue 21): an agent that believes the oracle is wrong (a test, the contract, a
// fixture) says so with `git push -o patchgate.escalate="TEXT"` instead of editing it. The push
// is judged as usual; the note becomes an `escalation` row of the audit log, which a person
// lists (`patchgate escalation list --open`) and closes (`escalation close ID --note …`, an
// audited row too). This file reads the push options the hook forwarded, makes the agent's
// text safe to store and show (bounded, control characters out, anything that looks like a
// secret redacted), and reads escalations back from either store (SQLite or PostgreSQL).

import { ESCALATION_TEXT_MAX, toAuditRow, type AuditRow } from './store.js';
import type { AuditSink } from './sink.js';

/** The push option that escalates (`git push -o patchgate.escalate="…"`). */
export const ESCALATE_OPTION = 'patchgate.escalate';
/** Push options the hooks forward at most (GIT_PUSH_OPTION_0 .. _15), and bytes kept of each. */
export const MAX_PUSH_OPTIONS = 16;
export const MAX_PUSH_OPTION_BYTES = 8192;
/** Escalation rows read back at most by `escalation list` and the page. */
export const ESCALATION_READ_LIMIT = 10_000;

export interface PushOptions {
  /** The escalation's text as given (joined when repeated), or null when the push has none. */
  escalate: string | null;
  /** `patchgate.*` options patchgate does not know (named back to the agent, otherwise ignored). */
  unknown: string[];
}

/**
 * The push options of a hook request (`env GIT_PUSH_OPTION_COUNT` and `_0` … `_N`, at most
 * MAX_PUSH_OPTIONS). Options of other tools (`ci.skip`, `merge_request.create`) are ignored.
 * Never throws: a missing or odd count reads as no options.
 */
export function readPushOptions(env: Readonly<Record<string, string>>): PushOptions {
  const count = /^\d{1,4}$/.test(env.GIT_PUSH_OPTION_COUNT ?? '') ? Math.min(Number(env.GIT_PUSH_OPTION_COUNT), MAX_PUSH_OPTIONS) : 0;
  const texts: string[] = [];
  const unknown: string[] = [];
  for (let i = 0; i < count; i++) {
    const raw = env[`GIT_PUSH_OPTION_${i}`];
    if (raw === undefined) continue;
    const eq = raw.indexOf('=');
    const name = (eq < 0 ? raw : raw.slice(0, eq)).trim();
    if (name.toLowerCase() === ESCALATE_OPTION) texts.push(eq < 0 ? '' : raw.slice(eq + 1));
    else if (/^patchgate\./i.test(name) && unknown.length < 5) unknown.push(sanitizeText(name, 80));
  }
  return { escalate: texts.length ? texts.join(' / ') : null, unknown };
}

/** Controls (C0, C1, DEL), line and paragraph separators, zero-width and bidirectional marks. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/** Shapes of secrets: known token formats, credentials in URLs, `password=…`, long random-looking words. */
const SECRETS: ReadonlyArray<[RegExp, string]> = [
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, '$1[redacted]@'],
  [/\bpg_[A-Za-z0-9_-]{16,}/g, '[redacted token]'],
  [/\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}|sk-[A-Za-z0-9_-]{16,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b/g, '[redacted token]'],
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, '[redacted token]'],
  [/\b(password|passwd|pwd|secret|token|api[_-]?key|authorization)(\s*[:=]\s*)(?:bearer\s+|basic\s+)?\S+/gi, '$1$2[redacted]'],
];

/** A word of 32+ token characters with upper case, lower case and digits: random, so redacted (commit ids are lower-case hex and stay). */
function randomWord(w: string): boolean {
  return w.length >= 32 && /[A-Z]/.test(w) && /[a-z]/.test(w) && /\d/.test(w);
}

/**
 * The text as stored and shown: unsafe characters become spaces, whitespace runs one space,
 * secrets `[redacted]`, at most `max` characters (a cut ends in `…`). Empty: `(no reason given)`.
 */
export function sanitizeText(raw: string, max = ESCALATION_TEXT_MAX): string {
  let s = String(raw).slice(0, max * 4).normalize('NFC').replace(UNSAFE, ' ');
  for (const [re, to] of SECRETS) s = s.replace(re, to);
  s = s.replace(/[A-Za-z0-9+/_=-]{32,}/g, (w) => (randomWord(w) ? '[redacted]' : w));
  s = s.replace(/\s+/g, ' ').trim();
  if (s.length > max) s = `${s.slice(0, max - 1)}…`;
  return s || '(no reason given)';
}

export interface Escalation {
  /** The row number of its `escalation.open` row: what `escalation close ID` takes. */
  id: number;
  time: string;
  repo: string | null;
  actor: string | null;
  role: string | null;
  ref: string | null;
  old: string | null;
  new: string | null;
  /** The verdict the push got for that ref (the escalation does not change it). */
  verdict: string | null;
  pushId: string | null;
  text: string;
  open: boolean;
  closed?: { row: number; time: string; actor: string | null; note: string };
}

/** Escalation and closing rows to escalations, open ones first, each group newest first. */
export function escalationsOf(rows: readonly AuditRow[]): Escalation[] {
  const closes = new Map<number, AuditRow>();
  for (const r of rows) if (r.action === 'escalation.close' && r.subject && /^\d+$/.test(r.subject) && !closes.has(Number(r.subject))) closes.set(Number(r.subject), r);
  const out: Escalation[] = rows.filter((r) => r.action === 'escalation.open').map((r) => {
    const c = closes.get(r.id);
    return {
      id: r.id, time: r.time, repo: r.repo, actor: r.actor, role: r.role, ref: r.ref, old: r.old, new: r.new, verdict: r.verdict, pushId: r.pushId,
      text: r.reason ?? '', open: !c,
      ...(c ? { closed: { row: c.id, time: c.time, actor: c.actor, note: c.reason ?? '' } } : {}),
    };
  });
  return out.sort((a, b) => Number(b.open) - Number(a.open) || b.id - a.id);
}

/**
 * The escalations in the log (the newest ESCALATION_READ_LIMIT rows of kind escalation), open
 * first. `repos`: only those of these repositories (a token's grant); `open`: only open ones.
 */
export async function listEscalations(sink: Pick<AuditSink, 'select'>, opts: { open?: boolean; repos?: readonly string[]; limit?: number } = {}): Promise<Escalation[]> {
  const rows = (await sink.select("SELECT * FROM events WHERE kind = 'escalation' ORDER BY id DESC LIMIT ?", [ESCALATION_READ_LIMIT])).map(toAuditRow);
  let list = escalationsOf(rows);
  if (opts.repos) list = list.filter((e) => e.repo !== null && opts.repos!.includes(e.repo));
  if (opts.open) list = list.filter((e) => e.open);
  return opts.limit ? list.slice(0, opts.limit) : list;
}

/** One line for people: id, state, when, who, where, the text. */
export function escalationLine(e: Escalation): string {
  const where = `${e.repo ?? '?'} ${e.ref ?? '?'} ${e.new ? e.new.slice(0, 12) : '?'}`;
  const state = e.open ? 'OPEN' : `closed ${e.closed!.time} by ${e.closed!.actor ?? '?'}: ${e.closed!.note}`;
  return `#${e.id}  ${e.time}  ${state}  ${e.actor ?? '?'}${e.role ? `(${e.role})` : ''}  ${where}  verdict=${e.verdict ?? '?'}  push=${e.pushId ?? '?'}\n    ${e.text}`;
}
