// The seed's decision table, extended with the rows patchgate adds (refs, ledger, error).
// A verdict names the first row that fired and its next action; CI prints the whole table
// with that row marked, so reviewers never reconstruct the policy from chat.

export interface TableRow {
  id: string;
  observation: string;
  result: 'fail' | 'skip once' | 'pass';
  action: string;
}

export const DECISION_TABLE: readonly TableRow[] = [
  { id: 'gate-error', observation: 'the gate could not decide (error, timeout, bad policy)', result: 'fail', action: 'nothing was accepted; retry, and if it persists a person reads the audit log' },
  { id: 'push-too-large', observation: 'push over a size limit (objects, bytes, one blob)', result: 'fail', action: 'shrink or split the push; large files stay out of the repository' },
  { id: 'ref-not-allowed', observation: 'agent ref update not allowed (trusted branch, tag, delete, force)', result: 'fail', action: 'push a fast-forward to an agent branch' },
  { id: 'test-tree-write', observation: 'tests/ in the agent diff', result: 'fail', action: 'strip test edits; re-run' },
  // --- issue 11: rows of a run the gate cannot vouch for, and of the src tamper scan (one block).
  { id: 'src-tamper', observation: 'src/ code reaches into the test runner, its environment or process exit', result: 'fail', action: 'remove the construct named; fix the code, not the oracle' },
  { id: 'report-forged', observation: "runner report disagrees with the gate's own stream or exit status, or no stream", result: 'fail', action: 'reject patch; the run is not evidence' },
  { id: 'tree-tampered', observation: 'test tree or fixtures changed during the run', result: 'fail', action: 'reject patch; code under test may not touch the oracle' },
  { id: 'order-dependent', observation: 'a test changed outcome between runs (shuffled order)', result: 'fail', action: 'remove state carried between tests; do not freeze' },
  { id: 'holdout-red', observation: 'a held-out test failed', result: 'fail', action: 'reject patch; fix the bug for every input' },
  // --- end of issue 11 rows
  { id: 'contract-red', observation: 'contract digest unchanged, properties red', result: 'fail', action: 'reject patch; do not freeze' },
  { id: 'contract-moved', observation: 'contract digest changed, no allow-file row', result: 'fail', action: 'human updates allow file and properties' },
  { id: 'fixture-drift', observation: 'fixture bytes ≠ lock', result: 'fail', action: 'human regenerates lock or rejects' },
  { id: 'ledger-invalid', observation: 'flake ledger row invalid (no digest or expiry, too far, revived)', result: 'fail', action: 'human fixes the ledger' },
  { id: 'frozen-flake', observation: 'same nodeid+seed+digest, before expiry', result: 'skip once', action: 'calendar the expiry' },
  { id: 'new-seed', observation: 'same nodeid, new seed', result: 'fail', action: 'treat as new bug' },
  { id: 'accept', observation: 'no row fired', result: 'pass', action: 'merge may proceed' },
];

/** The table row a failing rule maps to. */
export const RULE_ROW: Record<string, string> = {
  error: 'gate-error',
  limits: 'push-too-large',
  refs: 'ref-not-allowed',
  'write-block': 'test-tree-write',
  contract: 'contract-moved',
  fixtures: 'fixture-drift',
  ledger: 'ledger-invalid',
  'tamper-scan': 'src-tamper',
};

export function tableRow(id: string): TableRow {
  const r = DECISION_TABLE.find((x) => x.id === id);
  if (!r) throw new Error(`unknown decision row ${id}`);
  return r;
}

/** The table as text, the fired rows marked with `>>`. */
export function renderTable(fired: string[]): string {
  const w1 = Math.max(...DECISION_TABLE.map((r) => r.observation.length));
  const lines = [`   ${'Observation'.padEnd(w1)}  Gate result  Next action`];
  for (const r of DECISION_TABLE) {
    const mark = fired.includes(r.id) ? '>> ' : '   ';
    lines.push(`${mark}${r.observation.padEnd(w1)}  ${r.result.padEnd(11)}  ${r.action}`);
  }
  return lines.join('\n');
}
