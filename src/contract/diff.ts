// What a contract refusal shows and what lets a moved contract through: the row diff between
// two contracts (removed, added, and changed rows paired on path and name) and the allow file's
// digests. Split out of src/contract/digest.ts, which computes the digests and rows compared here.

export interface ContractDiff {
  added: string[];
  removed: string[];
  changed: Array<{ from: string; to: string }>;
}

/** The key a row is paired on: path and name, up to the signature. */
function rowKey(row: string): string {
  // A Python re-export row pairs on the name it is exported as, too.
  const m = /^(.*?::(?:export \S+ -> )?[^(:<=\s]*)/.exec(row);
  return m ? m[1]! : row;
}

export function diffContracts(before: string[], after: string[]): ContractDiff {
  const b = new Set(before);
  const a = new Set(after);
  const removed = before.filter((r) => !a.has(r));
  const added = after.filter((r) => !b.has(r));
  const changed: ContractDiff['changed'] = [];
  const addedLeft = [...added];
  const removedLeft: string[] = [];
  for (const r of removed) {
    const i = addedLeft.findIndex((x) => rowKey(x) === rowKey(r));
    if (i >= 0) changed.push({ from: r, to: addedLeft.splice(i, 1)[0]! });
    else removedLeft.push(r);
  }
  return { added: addedLeft, removed: removedLeft, changed };
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
