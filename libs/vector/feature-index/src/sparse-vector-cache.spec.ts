import { SparseVectorCache } from './sparse-vector-cache';

describe('SparseVectorCache', () => {
  const scope = { collection: 'c', namespace: 'ns', version: 'e/1/0' };
  const v = (n: number) => ({ indices: Array.from({ length: n }, (_, i) => i), values: Array.from({ length: n }, () => 0.5) });

  it('answers what was stored for the same collection, namespace and version only', () => {
    const cache = new SparseVectorCache(1 << 20, 60_000);
    cache.set(scope, 'a', v(2));
    expect(cache.getMany(scope, ['a', 'b'])).toEqual(new Map([['a', v(2)]]));
    expect(cache.getMany({ ...scope, version: 'e/2/0' }, ['a']).size).toBe(0);
    expect(cache.getMany({ ...scope, namespace: 'other' }, ['a']).size).toBe(0);
    expect(cache.getMany({ ...scope, collection: 'd' }, ['a']).size).toBe(0);
  });

  it('keeps within its byte bound, dropping the least recently used', () => {
    const cache = new SparseVectorCache(3 * (10 * 24 + 200), 60_000); // room for three vectors of 10 entries
    for (const id of ['a', 'b', 'c']) cache.set(scope, id, v(10));
    cache.getMany(scope, ['a']); // a is now more recent than b
    cache.set(scope, 'd', v(10));
    expect([...cache.getMany(scope, ['a', 'b', 'c', 'd']).keys()]).toEqual(['a', 'c', 'd']);
  });

  it('forgets entries after their time to live', () => {
    let now = 5_000; // lru-cache reads a start time of 0 as "none"
    const cache = new SparseVectorCache(1 << 20, 1_000, () => now);
    cache.set(scope, 'a', v(1));
    now = 5_999;
    expect(cache.getMany(scope, ['a']).size).toBe(1);
    now = 6_001;
    expect(cache.getMany(scope, ['a']).size).toBe(0);
  });

  it('holds nothing when its bound is 0', () => {
    const cache = new SparseVectorCache(0, 60_000);
    cache.set(scope, 'a', v(1));
    expect(cache.getMany(scope, ['a']).size).toBe(0);
  });
});
