// The seed's decision table, extended with the rows patchgate adds: one row per kind of
// finding, so a refusal's label says what actually happened (a symlink is not "tests/ in the
// agent diff", a syntax error is not "contract digest changed"). A verdict names the first
// row that fired, in table order, and its next action; CI prints the whole table with the
// fired rows marked, so reviewers never reconstruct the policy from chat.
//
// To add a row: add ONE entry below, at the place its precedence belongs, naming the rule
// and the message ids (finding kinds) it covers. The seed's rows keep their wording.

export interface TableRow {
  id: string;
  observation: string;
  result: 'fail' | 'skip once' | 'pass';
  action: string;
  /** The rule whose findings fire this row (absent: rows CI or the engine fires by id). */
  rule?: string;
  /** The finding kinds (message ids, or `messageId:category` for a finding that carries data.category) of `rule`; absent = any. */
  findings?: readonly string[];
}

/**
 * The stable machine code of each row, for agent harnesses (the `patchgate-json` line, `check
 * --json`, the `ci --report`). Once published a code never changes meaning; a new row gets a new
 * code here (a row without one gets `PG-` and its id in capitals). Listed in docs/policy.md.
 */
export const ROW_CODES: Readonly<Record<string, string>> = {
  'gate-error': 'PG-GATE-ERROR',
  'upstream-refused': 'PG-UPSTREAM',
  'push-too-large': 'PG-PUSH-TOO-LARGE',
  'blob-too-large': 'PG-BLOB-TOO-LARGE',
  'no-trusted-branch': 'PG-NO-TRUSTED-BRANCH',
  'policy-broken': 'PG-POLICY-BROKEN',
  'agent-class': 'PG-AGENT-CLASS',
  'ref-not-allowed': 'PG-REF',
  'test-tree-write': 'PG-TEST-TREE',
  'protected-path': 'PG-PROTECTED-PATH',
  'outside-writable': 'PG-WRITE-BLOCK',
  'link-not-allowed': 'PG-LINK',
  'bad-path-name': 'PG-PATH-NAME',
  'odd-mode': 'PG-ODD-MODE',
  'non-canonical-object': 'PG-OBJECT-FORM',
  'policy-invalid': 'PG-POLICY-INVALID',
  'source-unparsable': 'PG-SOURCE-UNPARSABLE',
  'source-too-large': 'PG-SOURCE-TOO-LARGE',
  'src-tamper': 'PG-SRC-TAMPER',
  'runtime-tamper': 'PG-RUNTIME-TAMPER',
  'sandbox-missing': 'PG-SANDBOX-MISSING',
  'not-the-judged-code': 'PG-NOT-JUDGED-CODE',
  'report-forged': 'PG-REPORT-FORGED',
  'tree-tampered': 'PG-TREE-TAMPERED',
  'order-dependent': 'PG-ORDER-DEPENDENT',
  'environment-dependent': 'PG-ENVIRONMENT-DEPENDENT',
  'holdout-red': 'PG-HOLDOUT',
  'test-weakened': 'PG-TEST-WEAKENED',
  'not-evidence': 'PG-NOT-EVIDENCE',
  'oracle-shrank': 'PG-ORACLE-SHRANK',
  'report-missing': 'PG-REPORT-MISSING',
  'contract-red': 'PG-CONTRACT-RED',
  'contract-moved': 'PG-CONTRACT',
  'fixture-drift': 'PG-FIXTURES',
  'ledger-invalid': 'PG-LEDGER',
  'frozen-flake': 'PG-FROZEN-FLAKE',
  'new-seed': 'PG-NEW-SEED',
  accept: 'PG-ACCEPT',
};

/** The machine code of a decision-table row id. */
export function rowCode(id: string): string {
  return ROW_CODES[id] ?? `PG-${id.toUpperCase()}`;
}

export const DECISION_TABLE: readonly TableRow[] = [
  { id: 'gate-error', observation: 'the gate could not decide (error, timeout, bad policy)', result: 'fail', action: 'nothing was accepted; retry, and if it persists a person reads the audit log', rule: 'error' },
  { id: 'upstream-refused', observation: 'upstream refused the forward, or could not be reached', result: 'fail', action: 'nothing moved on the gate or upstream; do what upstream says, then push again', rule: 'upstream' },
  { id: 'push-too-large', observation: 'push over a size limit (objects or bytes)', result: 'fail', action: 'split the push; generated or vendored files stay out of it', rule: 'limits', findings: ['tooManyObjects', 'tooManyBytes'] },
  { id: 'blob-too-large', observation: 'a new file over limits.maxBlobBytes', result: 'fail', action: 'take the large file out of every new commit; re-push', rule: 'limits', findings: ['blobTooLarge'] },
  { id: 'object-too-large', observation: 'the pack carries an object over limits.maxBlobBytes that no new commit names', result: 'fail', action: 'push with plain git push; re-push', rule: 'limits', findings: ['objectTooLarge'] },
  { id: 'no-trusted-branch', observation: 'the trusted branch does not exist on the gate yet', result: 'fail', action: 'a person pushes the trusted branch first; then re-push', rule: 'trusted' },
  { id: 'policy-broken', observation: "the trusted branch's policy does not parse or validate", result: 'fail', action: 'nothing an agent can do: a person pushes a policy that validates (docs/policy.md, Recovering from a broken policy)', rule: 'policy', findings: ['trustedBroken'] },
  { id: 'agent-class', observation: "the credential's agent class is not in the trusted policy, or that class may write both code and tests", result: 'fail', action: 'nothing an agent can do: a person defines the class in the policy (or gives the credential another class)', rule: 'policy', findings: ['classUnknown', 'classBreach'] },
  { id: 'ref-not-allowed', observation: 'agent ref update not allowed (trusted branch, tag, delete, force)', result: 'fail', action: 'push a fast-forward to an agent branch', rule: 'refs' },
  { id: 'test-tree-write', observation: 'tests/ in the agent diff', result: 'fail', action: 'strip test edits; re-run', rule: 'write-block', findings: ['protectedPath:test'] },
  { id: 'protected-path', observation: 'policy, CI, lock or runner file in the agent diff', result: 'fail', action: 'strip those edits; a person changes them', rule: 'write-block', findings: ['protectedPath'] },
  { id: 'outside-writable', observation: 'path outside `writable` in the agent diff', result: 'fail', action: 'strip those edits or move the change under `writable`', rule: 'write-block', findings: ['notWritable'] },
  { id: 'link-not-allowed', observation: 'symlink or submodule in the agent diff', result: 'fail', action: 'replace it with a regular file or drop it', rule: 'write-block', findings: ['symlink', 'submodule'] },
  { id: 'bad-path-name', observation: 'path name with a control character', result: 'fail', action: 'rename the file; re-push', rule: 'write-block', findings: ['controlChar'] },
  { id: 'odd-mode', observation: 'tree entry with mode digits git never writes', result: 'fail', action: 'commit the work again through git add; re-push', rule: 'write-block', findings: ['oddMode'] },
  { id: 'non-canonical-object', observation: 'a commit, tree or tag in a form git never writes (git and other readers may read it differently)', result: 'fail', action: 'rebuild the commits with stock git; re-push', rule: 'write-block', findings: ['badCommit', 'badTree', 'badTag'] },
  { id: 'policy-invalid', observation: 'the pushed policy, allow file or fixture lock does not parse or validate', result: 'fail', action: 'fix the file at the line named (patchgate policy check); re-push', rule: 'policy', findings: ['invalid', 'notFixed'] },
  { id: 'source-unparsable', observation: 'contract source does not parse', result: 'fail', action: 'fix the syntax error; re-push', rule: 'contract', findings: ['parseError'] },
  { id: 'source-too-large', observation: 'contract source too large or too slow to parse', result: 'fail', action: 'shrink or split the file; re-push', rule: 'contract', findings: ['tooLarge', 'parseFailed'] },
  // --- issue 11: rows of a run the gate cannot vouch for, and of the src tamper scan (one block).
  { id: 'src-tamper', observation: 'src/ code reaches into the test runner, its environment or process exit', result: 'fail', action: 'remove the construct named; fix the code, not the oracle', rule: 'tamper-scan' },
  { id: 'runtime-tamper', observation: "a tripwire fired while the tests ran: tested code read the runner's frames or files, or patched the runner, its assertions or builtins", result: 'fail', action: 'remove the code named (event, file, line); fix the code, not the oracle' },
  { id: 'sandbox-missing', observation: 'the strict run could not be sandboxed (bubblewrap missing or refused its namespaces)', result: 'fail', action: 'install the Debian package bubblewrap, or opt out with --sandbox none (reported as not sandboxed)' },
  { id: 'report-forged', observation: "runner report disagrees with the gate's own stream or exit status, or no stream", result: 'fail', action: 'reject patch; the run is not evidence' },
  { id: 'tree-tampered', observation: 'test tree or fixtures changed during the run', result: 'fail', action: 'reject patch; code under test may not touch the oracle' },
  { id: 'not-the-judged-code', observation: 'a project module was imported from outside the sealed tree (an installed copy, another checkout)', result: 'fail', action: 'put the sealed source roots first on the import path (no sys.path or pythonpath edits that put another copy first; uninstall the installed copy); the run judged other code' },
  { id: 'order-dependent', observation: 'a test changed outcome between runs (shuffled order)', result: 'fail', action: 'remove state carried between tests; do not freeze' },
  { id: 'environment-dependent', observation: 'a test changed outcome between runs under varied conditions (clock, uid, HOME, temp folder, hostname, hash seed, variable order), also in the same order', result: 'fail', action: 'compute the result from the inputs, not from the date, user, paths, host or hash order; do not freeze' },
  { id: 'holdout-red', observation: 'a held-out test failed', result: 'fail', action: 'reject patch; fix the bug for every input' },
  // --- issue 50: `patchgate ci --evidence`, a test author's push (src/ci/evidence.ts).
  { id: 'test-weakened', observation: "a test author's push deletes a test or removes assertions from one (ci --evidence)", result: 'fail', action: 'put the test or its assertions back; a test author adds and strengthens tests, never weakens one' },
  { id: 'not-evidence', observation: 'a new or changed test already passes (or is skipped) on the trusted tip, or the push adds no test (ci --evidence)', result: 'fail', action: 'make the test assert what the change to come must do: it must fail on the trusted tip' },
  { id: 'oracle-shrank', observation: 'a trusted test vanished, or became skipped or xfailed', result: 'fail', action: 'reject patch; the tests the trusted branch has must run and pass' },
  { id: 'report-missing', observation: 'no usable test report (missing, stale, unreadable, incomplete or empty)', result: 'fail', action: 'run the command that writes the report; a run without one is not evidence' },
  // --- end of issue 11 rows
  { id: 'contract-red', observation: 'contract digest unchanged, properties red', result: 'fail', action: 'reject patch; do not freeze' },
  { id: 'contract-moved', observation: 'contract digest changed, no allow-file row', result: 'fail', action: 'human updates allow file and properties', rule: 'contract' },
  { id: 'fixture-drift', observation: 'fixture bytes ≠ lock', result: 'fail', action: 'human regenerates lock or rejects', rule: 'fixtures' },
  { id: 'ledger-invalid', observation: 'flake ledger row invalid (no digest or expiry, too far, revived)', result: 'fail', action: 'human fixes the ledger', rule: 'ledger' },
  { id: 'frozen-flake', observation: 'same nodeid+seed+digest, before expiry', result: 'skip once', action: 'calendar the expiry' },
  { id: 'new-seed', observation: 'same nodeid, new seed', result: 'fail', action: 'treat as new bug' },
  { id: 'accept', observation: 'no row fired', result: 'pass', action: 'merge may proceed' },
];

/** The row a rule maps to when nothing more specific is known (kept for callers that name a rule only). */
export const RULE_ROW: Record<string, string> = {
  error: 'gate-error',
  upstream: 'upstream-refused',
  limits: 'push-too-large',
  refs: 'ref-not-allowed',
  'write-block': 'test-tree-write',
  policy: 'policy-invalid',
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

/**
 * The row one finding fires: the first row of its rule that lists the finding's kind
 * (`messageId:category` before `messageId`), else the rule's catch-all row, else the rule's
 * first row. A rule without rows is a gate error: a refusal never goes unlabelled.
 */
export function rowForFinding(rule: string, messageId: string, category?: string): TableRow {
  const own = DECISION_TABLE.filter((r) => r.rule === rule);
  const keyed = category ? own.find((r) => r.findings?.includes(`${messageId}:${category}`)) : undefined;
  return keyed ?? own.find((r) => r.findings?.includes(messageId)) ?? own.find((r) => !r.findings) ?? own[0] ?? tableRow('gate-error');
}

/** Of several fired row ids, the one that decides: the first in table order. */
export function decidingRow(fired: readonly string[]): TableRow {
  return DECISION_TABLE.find((r) => fired.includes(r.id)) ?? tableRow('accept');
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
