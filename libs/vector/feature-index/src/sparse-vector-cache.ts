import { LRUCache } from 'lru-cache';
import type { SparseVector } from '@restash/vector/util-query';

/** Bytes counted per sparse entry (a 4-byte index and an 8-byte value, as a JS array holds them, plus slack). */
const BYTES_PER_ENTRY = 24;
/** Bytes counted per cached vector beyond its entries (the key, the object, the LRU node). */
const BYTES_PER_VECTOR = 200;

/**
 * The stored sparse vectors of recent sparse-query hits, per replica, so that exact rescoring
 * (docs/vector.md, "Vector: index types": the inner product in float32, IDF-weighted) does not ask Qdrant to send
 * the vectors of candidates it sent before. An entry is keyed by the collection, the namespace, the
 * namespace's content version (IndexState.versions: every write bumps it, after the write reached
 * Qdrant) and the vector id, so a write makes the namespace's entries unreachable; they age out of the
 * LRU. Entries also expire after `ttlMs`, which bounds staleness should a write's version bump be lost
 * (the gateway stopping between the Qdrant write and the bump).
 */
export class SparseVectorCache {
  private readonly cache: LRUCache<string, SparseVector>;
  private readonly enabled: boolean;

  /**
   * @param maxBytes approximate memory bound (entries × 24 B + 200 B per vector); 0 disables the cache
   * @param ttlMs how long an entry may be used, in ms
   * @param now the clock, in ms (tests pass their own)
   */
  constructor(maxBytes: number, ttlMs: number, now: () => number = () => performance.now()) {
    this.cache = new LRUCache<string, SparseVector>({
      maxSize: Math.max(maxBytes, 1),
      sizeCalculation: (v) => v.indices.length * BYTES_PER_ENTRY + BYTES_PER_VECTOR,
      ttl: ttlMs,
      ttlResolution: 0,
      perf: { now },
    });
    this.enabled = maxBytes > 0;
  }

  /** The cached vectors of `ids` at `version` (ids absent from the map are misses). */
  getMany(scope: SparseScope, ids: readonly string[]): Map<string, SparseVector> {
    const found = new Map<string, SparseVector>();
    if (!this.enabled) return found;
    for (const id of ids) {
      const v = this.cache.get(keyOf(scope, id));
      if (v) found.set(id, v);
    }
    return found;
  }

  /** Remembers the stored sparse vector of `id` as read at `scope.version`. */
  set(scope: SparseScope, id: string, vector: SparseVector): void {
    if (this.enabled) this.cache.set(keyOf(scope, id), vector);
  }

  /** Cached vectors (for tests and metrics). */
  get size(): number {
    return this.cache.size;
  }
}

/** Where a cached vector was read: the collection, the namespace and its content version. */
export interface SparseScope {
  collection: string;
  namespace: string;
  version: string;
}

const keyOf = (scope: SparseScope, id: string) => `${scope.collection}\0${scope.namespace}\0${scope.version}\0${id}`;
