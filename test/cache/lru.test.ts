// The daemon's bounded cache: evicts the least recently used entry, never more than it must.

import t from 'tap';
import { LruMap } from '../../src/cache/lru.js';

t.test('evicts least recently used', async (t) => {
  const m = new LruMap<string, number>(2);
  m.set('a', 1).set('b', 2);
  t.equal(m.get('a'), 1, 'touch a');
  m.set('c', 3);
  t.same([...m.keys()].sort(), ['a', 'c'], 'b was the least recently used');
  t.equal(m.get('b'), undefined);
  m.set('a', 10);
  t.equal(m.size, 2);
  t.equal(m.get('a'), 10);
  t.throws(() => new LruMap(0));
});
