import { idf } from '@restash/vector/util-query';
import type { BackendCalls } from './backend-calls';
import type { IndexSession, IndexStatePort } from './ports';

/** Bound on the namespaces whose IDF statistics are cached; past it the cache starts over. */
const MAX_IDF_CACHE = 10_000;

/** What IDF needs of a namespace (docs/vector.md, "Vector: index types"), as of one version of its content. */
interface IdfStats {
  version: string;
  /** Vectors in the namespace (N). */
  total?: number;
  /** Per dimension, the vectors of the namespace where it is non-zero (n). */
  counts: Map<number, number>;
  /** The collection's version when {@link exclusive} was found. */
  collectionVersion?: string;
  /**
   * Whether the namespace holds every vector of the collection: then Qdrant's IDF (over the collection)
   * is Upstash's (over the namespace), and Qdrant's sparse ranking with the IDF modifier is exact.
   */
  exclusive?: boolean;
}

/** A query's IDF weights per dimension, whether the engine's IDF ranking is already Upstash's (IdfStats.exclusive), and the namespace version they are of. */
export interface IdfWeights {
  weights: Map<number, number>;
  exclusive: boolean;
  version: string;
}


/**
 * The IDF statistics of sparse queries (docs/vector.md, "Vector: index types"), per replica, versioned by each namespace's
 * write counter in the control Redis (IndexState.versions), so that a query usually costs one control-Redis read.
 */
export class IdfStatistics {
  /** Per index and namespace. */
  private readonly stats = new Map<string, IdfStats>();

  constructor(
    private readonly state: IndexStatePort,
    private readonly calls: BackendCalls,
  ) {}

  /**
   * Upstash's IDF of each query dimension over the namespace (N its vectors, n those having the
   * dimension: idf), and whether the namespace is the whole collection (IdfStats.exclusive). Both are
   * cached per replica under the versions IndexState keeps, so a query usually costs one control-Redis
   * read; counts missing from the cache are read from the engine.
   */
  async weights(session: IndexSession, namespace: string, dimensions: number[]): Promise<IdfWeights> {
    const key = `${session.index.id}\0${namespace}`;
    const versions = await this.calls.state(session, () => this.state.versions(session.index.id, namespace));
    let stats = this.stats.get(key);
    if (stats?.version !== versions.namespace) {
      if (this.stats.size >= MAX_IDF_CACHE) this.stats.clear();
      stats = { version: versions.namespace, counts: new Map() };
      this.stats.set(key, stats);
    }
    const cached = stats;
    const missing = dimensions.filter((d) => !cached.counts.has(d));
    const known = cached.collectionVersion === versions.collection;
    const [total, counts, collectionTotal] = await Promise.all([
      cached.total ?? this.calls.engine(session, () => session.store.count(namespace)),
      missing.length > 0 ? this.calls.engine(session, () => session.store.countWithDimensions(namespace, missing)) : new Map<number, number>(),
      known ? undefined : this.calls.engine(session, () => session.store.countAll()),
    ]);
    // Kept only for the versions they were read under: a write since then bumped them (wrote).
    cached.total = total;
    for (const [d, n] of counts) cached.counts.set(d, n);
    if (collectionTotal !== undefined) {
      cached.collectionVersion = versions.collection;
      cached.exclusive = collectionTotal === total;
    }
    return { weights: new Map(dimensions.map((d) => [d, idf(total, cached.counts.get(d) ?? 0)])), exclusive: cached.exclusive === true, version: versions.namespace };
  }

  /**
   * After a write to a namespace (`*`: the whole index) of a SPARSE or HYBRID index: bumps its version
   * in the control Redis, so that every replica reads its IDF statistics again (weights). DENSE
   * indexes have no IDF: nothing to do.
   */
  async wrote(session: IndexSession, namespace: string): Promise<void> {
    if (session.index.indexType === 'DENSE') return;
    await this.calls.state(session, () => this.state.wrote(session.index.id, namespace));
  }
}
