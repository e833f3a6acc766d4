// What a contract refusal shows and what lets a moved contract through: the row diff between
// two contracts (removed, added, and changed rows paired on path and name) and the allow file's
// digests. Split out of src/contract/digest.ts, which computes the digests and rows compared here.

export interface ContractDiff {
  added: string[];
  removed: string[];
  changed: Array<{ from: string; to: string }>;
}

/** The key a row is paired on: path and name, up to the signature. */
export function rowKey(row: string): string {
  // A Python re-export row pairs on the name it is exported as, too.
  const m = /^(.*?::(?:export \S+ -> )?[^(:<=\s]*)/.exec(row);
  return m ? m[1]! : row;
}

export function diffContracts(before: string[], after: string[]): ContractDiff {
  const b = new Set(before);
  const a = new Set(after);
  const removed = before.filter((r) => !a.has(r));
  const added = after.filter((r) => !b.has(r));
  // A removed row pairs with the first added row of its key still unpaired (a changed
  // signature). By key, not by a scan of the added rows: a contract that moved from nothing
  // to 180k rows, or back, must not take time quadratic in its size (issue 47).
  const byKey = new Map<string, number[]>();
  for (const [i, r] of added.entries()) {
    const k = rowKey(r);
    const list = byKey.get(k);
    if (list) list.push(i);
    else byKey.set(k, [i]);
  }
  const taken = new Uint8Array(added.length);
  const next = new Map<string, number>();
  const changed: ContractDiff['changed'] = [];
  const removedLeft: string[] = [];
  for (const r of removed) {
    const k = rowKey(r);
    const list = byKey.get(k);
    const at = next.get(k) ?? 0;
    if (list && at < list.length) {
      next.set(k, at + 1);
      taken[list[at]!] = 1;
      changed.push({ from: r, to: added[list[at]!]! });
    } else removedLeft.push(r);
  }
  return { added: added.filter((_, i) => !taken[i]), removed: removedLeft, changed };
}

/** Digests listed in an allow file: one hex digest per line, `#` starts a comment. */
export function parseAllowFile(text: string): Set<string> {
  const out = new Set<string>();
  for (const line of text.split(/\r?\n/)) {
    const word = line.replace(/#.*/, '').trim().toLowerCase();
    if (/^[0-9a-f]{64}$/.test(word)) out.add(word);
  }
  return out;
}
