// The one line per ref that an agent harness parses instead of the human lines above it:
// `patchgate-json {"v":1,…}` (git relays it as `remote: patchgate-json …`). It carries the
// verdict, the mode, the push id, every reason with its stable decision-table code, and the fix
// commands exactly as the human lines print them. One line of valid JSON, at most 4 KiB: when the
// reasons do not fit, the first ones are kept and `"cut"` says how many there were.

import type { RefDecision, Reason } from './types.js';
import { rowCode, rowForFinding } from './decision-table.js';

export const MACHINE_PREFIX = 'patchgate-json ';
/** Bytes of one machine line, prefix included. */
export const MACHINE_LINE_MAX = 4096;

export interface MachineReason {
  code: string;
  rule: string;
  commit?: string;
  path?: string;
  message: string;
}

export interface MachineLine {
  v: 1;
  ref: string;
  old: string;
  new: string;
  verdict: 'accept' | 'reject' | 'would-reject';
  mode: 'enforce' | 'evaluate';
  pushId: string;
  /** The code of the decision-table row that decided (the first that fired). */
  code: string;
  reasons: MachineReason[];
  fix: string[];
  /** Present when reasons were left out to stay under the size cap: how many there were in all. */
  cut?: { reasons: number };
  /** A refusal a wrong oracle could cause: the command that asks a person instead (not a fix step). */
  escalate?: string;
  /** This push carried `-o patchgate.escalate=…`: the escalation's id (a person will look). */
  escalation?: { id: number };
  /** An agent's push: the class of the policy it was judged under (src/policy/classes.ts). */
  class?: string;
}

/** The code of one reason: its own row when known, else its rule's row for its finding kind, else the decision's row. */
export function reasonCode(r: Reason, decisionRow: string): string {
  if (r.row) return rowCode(r.row);
  if (r.messageId && r.rule !== 'error' && r.rule !== 'upstream') return rowCode(rowForFinding(r.rule, r.messageId).id);
  if (r.rule === 'error') return rowCode('gate-error');
  if (r.rule === 'upstream') return rowCode('upstream-refused');
  return rowCode(decisionRow);
}

/** The commands of a remediation text: its `$ ` lines, as printed. */
export function fixCommands(remediation: string): string[] {
  return remediation.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('$ ')).map((l) => l.slice(2));
}

const clip = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

export interface MachineLineInput {
  verdict: 'accept' | 'reject' | 'would-reject';
  mode: 'enforce' | 'evaluate';
  pushId: string;
  /** Fix commands; default: those of the decision's remediation (none for an accepted push). */
  fix?: string[];
  /** The escalation this push recorded. */
  escalation?: { id: number };
}

/** The machine line of one decision (without the `remote: ` git adds). */
export function machineLine(d: RefDecision, input: MachineLineInput): string {
  const all: MachineReason[] = d.reasons.map((r) => ({
    code: reasonCode(r, d.row),
    rule: r.rule,
    ...(r.commit ? { commit: r.commit } : {}),
    ...(r.path ? { path: r.path } : {}),
    message: clip(r.message, 400),
  }));
  if (!all.length && input.verdict !== 'accept') all.push({ code: rowCode(d.row), rule: 'error', message: clip(d.action, 400) });
  const fix = input.fix ?? (input.verdict === 'reject' ? fixCommands(d.remediation) : []);
  const base: MachineLine = {
    v: 1, ref: d.ref, old: d.oldId, new: d.newId, verdict: input.verdict, mode: input.mode, pushId: input.pushId, code: rowCode(d.row), reasons: all, fix,
    ...(d.escalate && input.verdict === 'reject' ? { escalate: clip(d.escalate.command, 1000) } : {}),
    ...(input.escalation ? { escalation: input.escalation } : {}),
    ...(d.agentClass ? { class: d.agentClass } : {}),
  };
  const text = (o: MachineLine): string => MACHINE_PREFIX + JSON.stringify(o);
  let line = text(base);
  if (bytes(line) <= MACHINE_LINE_MAX) return line;
  // Keep as many reasons as fit (at least none): sizes are added up once per reason (linear in
  // the number of findings; a contract change can have tens of thousands), then checked.
  const room = MACHINE_LINE_MAX - bytes(text({ ...base, reasons: [], cut: { reasons: all.length } }));
  let used = 0;
  let n = 0;
  while (n < all.length) {
    const add = bytes(JSON.stringify(all[n])) + (n ? 1 : 0);
    if (used + add > room) break;
    used += add;
    n++;
  }
  line = text({ ...base, reasons: all.slice(0, n), cut: { reasons: all.length } });
  if (bytes(line) <= MACHINE_LINE_MAX) return line;
  const short = all.slice(0, 1).map((r) => ({ ...r, message: clip(r.message, 120), path: r.path ? clip(r.path, 200) : undefined }));
  for (let k = fix.length; k >= 0; k--) {
    line = text({ ...base, reasons: short, fix: fix.slice(0, k).map((c) => clip(c, 1000)), cut: { reasons: all.length } });
    if (bytes(line) <= MACHINE_LINE_MAX) return line;
  }
  return text({ v: 1, ref: clip(d.ref, 200), old: d.oldId, new: d.newId, verdict: input.verdict, mode: input.mode, pushId: input.pushId, code: rowCode(d.row), reasons: [], fix: [], cut: { reasons: all.length } });
}
