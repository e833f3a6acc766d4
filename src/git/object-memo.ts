// The parsed trees, commit headers and object headers a repository's Git keeps (and shares with
// every push's view of that repository), so a push's walks and the next push read each object
// once. Split out of ./git.ts, whose Git facade holds one.

/** How many tree entries (and commit and object headers) a repository's Git keeps (about 1-2 MB; a push reads a few folders). */
const OBJECT_MEMO_ENTRIES = 8192;

/**
 * Parsed trees, commit headers and (for what the store holds) object headers by object id,
 * the most recently read kept up to OBJECT_MEMO_ENTRIES entries in all. An object never changes under its id, and a push's walks
 * (the line of pushed commits, the carried commits, the commit diff, the contract digest, the
 * fixture folders) and the next push read the same ones: each is read once. Sharing it between
 * a push's reader and the repository's store is sound because git checks that a push's objects
 * are all there (connectivity) before any hook runs, and an id names one content wherever it
 * is stored. A read that failed, or found nothing, is not kept.
 */
export class ObjectMemo {
  private readonly map = new Map<string, { value: Promise<unknown>; size: number }>();
  private total = 0;

  async get<T>(key: string, read: () => Promise<T>, size: (v: T) => number): Promise<T> {
    const memo = this.map.get(key);
    if (memo) {
      this.map.delete(key);
      this.map.set(key, memo);
      // A read another reader started may fail for its own reasons (its push was cancelled
      // and its reader closed): this caller then reads for itself.
      return (memo.value as Promise<T>).catch(read);
    }
    const slot = { value: read() as Promise<unknown>, size: 0 };
    this.map.set(key, slot);
    try {
      const v = (await slot.value) as T;
      if (v === null || v === undefined) {
        if (this.map.get(key) === slot) this.map.delete(key);
      } else if (this.map.get(key) === slot) {
        slot.size = size(v);
        this.total += slot.size;
        for (const [k, e] of this.map) {
          if (this.total <= OBJECT_MEMO_ENTRIES || e === slot) break;
          this.map.delete(k);
          this.total -= e.size;
        }
      }
      return v;
    } catch (err) {
      if (this.map.get(key) === slot) this.map.delete(key);
      throw err;
    }
  }
}
