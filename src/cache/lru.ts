// A bounded Map for the daemon's content-keyed caches (contract rows per blob, digests per
// tree, fixture sha256 per blob). Keys are content ids, so an entry is never stale; the bound
// only keeps a long-running daemon's memory flat. Least recently used entries go first.

export class LruMap<K, V> extends Map<K, V> {
  constructor(private readonly max: number) {
    super();
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`LruMap size must be a positive integer, got ${max}`);
  }

  override get(key: K): V | undefined {
    if (!super.has(key)) return undefined;
    const v = super.get(key) as V;
    super.delete(key);
    super.set(key, v);
    return v;
  }

  override set(key: K, value: V): this {
    if (super.has(key)) super.delete(key);
    super.set(key, value);
    while (this.size > this.max) {
      const oldest = this.keys().next().value as K;
      super.delete(oldest);
    }
    return this;
  }
}
