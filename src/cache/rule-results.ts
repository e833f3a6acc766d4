// Why this exists (issue 24): the fixtures and ledger rules read and check the same lock, the
// same fixture folders and the same ledger on every push, though almost no push changes
// them. Their results are a function of git objects: the fixtures' drift of the lock blob and
// of the locked folders' tree ids; the ledger's problems of the ledger blob, its history and
// the policy's maximum. So they are kept here, in memory, by those ids (an LRU, so a
// long-running daemon's memory stays flat): an unchanged lock costs a few id lookups and a hit.
// Ids name content, so an entry never goes stale; a miss only costs the work.

import { LRUCache } from 'lru-cache';

const MAX = 1024;

/** Per-process caches; `stats` counts what they answered (tests read it). */
export const ruleResults = {
  /** Parsed fixture locks by lock blob id (the value is shared: never mutate it). */
  locks: new LRUCache<string, Map<string, string>>({ max: MAX }),
  /** Drift lists by `lock blob id + each locked folder's tree id`. */
  drift: new LRUCache<string, ReadonlyArray<unknown>>({ max: MAX }),
  /** Ledger problems by ledger blob id and policy maximum, per history object (a WeakMap: history objects come and go with the content cache). */
  ledger: new WeakMap<object, LRUCache<string, ReadonlyArray<unknown>>>(),
  stats: { fixtureHits: 0, fixtureMisses: 0, ledgerHits: 0, ledgerMisses: 0 },
  /** Empty every cache (tests compare a cached answer with an uncached one). */
  clear(): void {
    this.locks.clear();
    this.drift.clear();
    this.ledger = new WeakMap();
    for (const k of Object.keys(this.stats) as Array<keyof typeof this.stats>) this.stats[k] = 0;
  },
};

/** The ledger cache of one history object. */
export function ledgerResultsOf(history: object): LRUCache<string, ReadonlyArray<unknown>> {
  let c = ruleResults.ledger.get(history);
  if (!c) ruleResults.ledger.set(history, (c = new LRUCache({ max: 64 })));
  return c;
}
