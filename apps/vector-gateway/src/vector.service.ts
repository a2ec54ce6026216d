import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { RegistryReader, type VectorIndexRecord, registryKeys } from '@restash/shared/data-access-registry';
import { CONTROL_REDIS, type Credentials, type Grant, TenantGate } from '@restash/shared/feature-tenancy';
import { Agent } from 'undici';
import { RepeatLimiter, guardedConnector } from '@restash/shared/util-http';
import { type Embedder, EmbedderError, OpenAiEmbedder, refusedAddress } from '@restash/vector/data-access-embedder';
import {
  EngineUnavailableError,
  type QdrantFilter,
  type QdrantIndexStore,
  QdrantStores,
  type ScoredVector,
  type SearchQuery,
  type StoredVector,
  type Want,
} from '@restash/vector/data-access-qdrant';
import { type FilterNode, FilterSyntaxError, matchesFilter, parseFilter, toQdrantFilter } from '@restash/vector/util-filter';
import {
  type Candidate,
  type DeleteInput,
  type FetchInput,
  type Includes,
  type QueryInput,
  QDRANT_DISTANCE,
  type RangeInput,
  type RenameNamespaceInput,
  type ResumableStartInput,
  type SparseVector,
  type UpdateInput,
  type VectorInput,
  VectorError,
  checkDimension,
  checkMetadata,
  exactScore,
  float32Problem,
  float32Score,
  RRF_K,
  fuse,
  idf,
  mergePatch,
  normaliseScore,
  pointId,
  sparseScore,
} from '@restash/vector/util-query';
import { VECTOR_CONFIG, type VectorGatewayConfig } from './config';
import { IndexState } from './index-state';
import { type SparseScope, SparseVectorCache } from './sparse-vector-cache';
import { VectorMetrics } from './vector-metrics';

/** An authenticated request's view of its index. */
export interface Session {
  grant: Grant<'vector'>;
  tenant: string;
  index: VectorIndexRecord;
  store: QdrantIndexStore;
}

/** `/info` (README, "Vector: endpoints"). */
export interface IndexInfo {
  vectorCount: number;
  pendingVectorCount: number;
  indexSize: number;
  dimension: number;
  similarityFunction: VectorIndexRecord['similarityFunction'];
  indexType: VectorIndexRecord['indexType'];
  /** DENSE and HYBRID indexes. */
  denseIndex?: { dimension: number; similarityFunction: VectorIndexRecord['similarityFunction']; embeddingModel?: string };
  /** SPARSE and HYBRID indexes. */
  sparseIndex?: { embeddingModel?: string };
  namespaces: Record<string, { vectorCount: number; pendingVectorCount: number }>;
}

/** Normalised scores this close to 1 or 0 are recomputed exactly (the engine's float32 rounding is about 1e-7 per term). */
const NEAR_EDGE = 1e-4;

/**
 * How deep each side of a hybrid query is searched before fusion: the best `max(topK, 100)` of each
 * (a resumable query fuses the best `topK` of each, then the next ones: see resumableStart).
 */
const FUSION_DEPTH = 100;

/**
 * A one-sided sparse search reads this many times the hits it needs (at least
 * {@link SPARSE_MIN_CANDIDATES}) from Qdrant, then rescores them exactly.
 */
const SPARSE_OVERFETCH = 4;
const SPARSE_MIN_CANDIDATES = 40;

/** Bound on the namespaces whose IDF statistics are cached; past it the cache starts over. */
const MAX_IDF_CACHE = 10_000;

/**
 * A sparse search whose ranking is already exact reads this many hits beyond those it needs, to rescore
 * them in float32 (the engine's summation order may differ in the last bit) before cutting.
 */
const SPARSE_EXACT_MARGIN = 2;
/** How long a cached sparse vector may be used (ms): bounds staleness if a write's version bump was lost (SparseVectorCache). */
const SPARSE_VECTOR_CACHE_TTL_MS = 60_000;

/** What IDF needs of a namespace (upstash-compat.md §2.4), as of one version of its content. */
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
interface IdfWeights {
  weights: Map<number, number>;
  exclusive: boolean;
  version: string;
}

/** Which side(s) of the index a query searches, with what. */
interface Plan {
  dense?: number[];
  sparse?: SearchQuery & ({ sparse: SparseVector } | { sparseText: string });
}

/** A query's filter, parsed once: the exact test and what Qdrant can narrow by. */
interface PreparedFilter {
  node: FilterNode;
  pushdown: QdrantFilter | undefined;
  exact: boolean;
}

/**
 * The Vector API (README, "What the Vector API does") between HTTP and Qdrant: opens a bearer
 * token's index through the tenant gate and runs each operation on the index's store, returning
 * vectors, hits and counts; VectorRoutes encodes them (numbers print as float32) and admits requests.
 *
 * Operations throw {@link VectorError} with the API's status: 400/422 for client mistakes, 404 for
 * unknown namespaces and resumable queries, 502 when the embedding provider fails, 503 when Qdrant
 * cannot be reached; and TenantDenied for credentials, limits and the control Redis.
 */
@Injectable()
export class VectorService implements OnModuleInit {
  private readonly logger = new Logger(VectorService.name);
  /** An engine or provider failing every request alike is logged once per 10 s. */
  private readonly repeats = new RepeatLimiter();
  private readonly state: IndexState;
  private readonly stores: QdrantStores;
  private readonly embedders = new Map<string, Embedder>();
  /**
   * The connections to the embedding providers that indexes name themselves (not the platform's): each new
   * connection passes the SSRF guard (addressVerdict, with EMBEDDING_ALLOWLIST), so that a tenant's URL
   * reaches no internal address (Qdrant, the control plane, cloud metadata).
   */
  private readonly guardedAgent: Agent;
  private readonly storesByRecord = new WeakMap<VectorIndexRecord, QdrantIndexStore>();

  /** IDF statistics per index and namespace, versioned by the namespace's write counter (idfWeights). */
  private readonly idfStats = new Map<string, IdfStats>();
  /** Stored sparse vectors of recent hits, versioned the same way (withSparseVectors). */
  private readonly sparseVectors: SparseVectorCache;

  constructor(
    @Inject(CONTROL_REDIS) control: Redis,
    private readonly registry: RegistryReader,
    private readonly gate: TenantGate,
    @Inject(VECTOR_CONFIG) private readonly config: VectorGatewayConfig,
    private readonly metrics: VectorMetrics,
  ) {
    this.state = new IndexState(control);
    this.stores = new QdrantStores({ timeoutMs: config.qdrantTimeoutMs }, pointId);
    this.sparseVectors = new SparseVectorCache(config.sparseVectorCacheBytes, SPARSE_VECTOR_CACHE_TTL_MS);
    this.guardedAgent = new Agent({ connect: guardedConnector(config.embeddingAllowlist, { timeoutMs: config.embedderTimeoutMs, refuse: refusedAddress }) });
    metrics.trackOpenIndexes(() => this.stores.size);
  }

  onModuleInit(): void {
    const prefix = registryKeys.vectorIndex('');
    this.registry.onChange((key) => {
      if (key.startsWith(prefix)) this.forget(key.slice(prefix.length));
    });
  }

  /**
   * Drops what this replica holds for an index whose registry record changed or went (every replica
   * hears the change on the registry channel): its Qdrant store (and client, when unused) and its
   * embedder. The next request, if the index still exists, opens them again from the new record.
   */
  private forget(indexId: string): void {
    this.stores.drop(indexId);
    for (const key of this.embedders.keys()) if (key.startsWith(`${indexId}\0`)) this.embedders.delete(key);
  }

  /**
   * Finds the index of a bearer token (README, "Vector: requests").
   * @throws TenantDenied for a missing or unknown token, or when the registry cannot be reached
   */
  async authenticate(credentials: Credentials | undefined): Promise<Session> {
    const grant = await this.gate.open('vector', credentials);
    const index = grant.resource;
    return { grant, tenant: index.tenant, index, store: this.storeOf(index) };
  }

  /** The store of an index record; looked up once per record (the registry cache hands out the same object until it changes). */
  private storeOf(index: VectorIndexRecord): QdrantIndexStore {
    let store = this.storesByRecord.get(index);
    if (!store) {
      store = this.stores.get(index.id, {
        url: index.qdrantUrl,
        ...(index.qdrantApiKey ? { apiKey: index.qdrantApiKey } : {}),
        collection: index.collection,
        type: index.indexType,
        dimension: index.dimension,
        distance: QDRANT_DISTANCE[index.similarityFunction],
      });
      this.storesByRecord.set(index, store);
    }
    return store;
  }

  /**
   * `/upsert` and `/upsert-data`: writes the records, embedding `data` where there are no vectors: the
   * dense side with the index's embedding model, the sparse side with BM25 on the engine (README,
   * "Vector: index types").
   */
  async upsert(session: Session, namespace: string, records: VectorInput[]): Promise<void> {
    const { dimension, indexType } = session.index;
    for (const r of records) if (r.vector) checkDimension(r.vector, dimension);
    const toEmbed = records.filter((r) => !r.vector && !r.sparseVector);
    const stored: StoredVector[] = records.map((r) => ({ ...r, seq: 0 }));
    if (toEmbed.length > 0) {
      if (indexType !== 'DENSE') this.sparseModel(session);
      if (indexType !== 'SPARSE') {
        const vectors = await this.embed(session, toEmbed.map((r) => r.data as string));
        toEmbed.forEach((r, i) => (r.vector = vectors[i]));
      }
      stored.forEach((v, i) => {
        const r = records[i] as VectorInput;
        if (indexType !== 'DENSE' && !r.sparseVector && r.data !== undefined) v.sparseText = r.data;
        if (r.vector) v.vector = r.vector;
      });
    }
    const first = await this.stateCall(session, () => this.state.reserve(session.index.id, namespace, records.length));
    stored.forEach((v, i) => (v.seq = first + i));
    await this.engine(session, () => session.store.upsert(namespace, stored));
    await this.wrote(session, namespace);
  }

  /** `/update`: changes the vector, data or metadata of one vector. @returns how many it updated: 0 when it does not exist, else 1 */
  async update(session: Session, namespace: string, input: UpdateInput): Promise<number> {
    const all: Want = { vector: true, metadata: true, data: true };
    const existing = (await this.engine(session, () => session.store.retrieve(namespace, [input.id], all))).get(input.id);
    if (!existing) return 0;
    const next: StoredVector = { ...existing };
    const { indexType } = session.index;
    if (input.vector) {
      checkDimension(input.vector, session.index.dimension);
      next.vector = input.vector;
    } else if (input.data !== undefined && session.index.embedder && indexType !== 'SPARSE') {
      next.vector = (await this.embed(session, [input.data]))[0];
    }
    if (input.sparseVector) {
      next.sparseVector = input.sparseVector;
    } else if (input.data !== undefined && session.index.sparseEmbedding && indexType !== 'DENSE' && !input.vector) {
      delete next.sparseVector;
      next.sparseText = input.data;
    }
    if (input.data !== undefined) next.data = input.data;
    if (input.metadata !== undefined) {
      // The patch passed the limits; what it makes of the stored metadata must too (it can grow).
      next.metadata = input.metadataUpdateMode === 'PATCH' ? checkMetadata(mergePatch(existing.metadata, input.metadata), 'metadata') : input.metadata;
    }
    await this.engine(session, () => session.store.upsert(namespace, [next]));
    await this.wrote(session, namespace);
    return 1;
  }

  /** `/delete`: by ids, id prefix or filter. @returns how many existed */
  async delete(session: Session, namespace: string, input: DeleteInput): Promise<number> {
    const { store } = session;
    let deleted: number;
    if ('ids' in input) {
      const ids = [...new Set(input.ids)];
      const found = await this.engine(session, () => store.retrieve(namespace, ids, { vector: false, metadata: false, data: false }));
      await this.engine(session, () => store.deleteIds(namespace, [...found.keys()]));
      deleted = found.size;
    } else if ('prefix' in input) {
      const ids = await this.collectIds(session, namespace, (v) => v.id.startsWith(input.prefix), false);
      await this.engine(session, () => store.deleteIds(namespace, ids));
      deleted = ids.length;
    } else {
      const filter = prepareFilter(input.filter);
      if (filter.exact) {
        deleted = await this.engine(session, () => store.count(namespace, filter.pushdown));
        await this.engine(session, () => store.deleteWhere(namespace, filter.pushdown));
      } else {
        const ids = await this.collectIds(session, namespace, (v) => matchesFilter(filter.node, v.metadata), true);
        await this.engine(session, () => store.deleteIds(namespace, ids));
        deleted = ids.length;
      }
    }
    if (deleted > 0) await this.wrote(session, namespace);
    return deleted;
  }

  /** `/fetch`: one entry per id in order (null when missing), or up to 1000 vectors by id prefix. */
  async fetch(session: Session, namespace: string, input: FetchInput): Promise<Array<StoredVector | null>> {
    const want = wantOf(input.include);
    if (input.ids) {
      const found = await this.engine(session, () => session.store.retrieve(namespace, [...new Set(input.ids)], want));
      return input.ids.map((id) => found.get(id) ?? null);
    }
    const matches: StoredVector[] = [];
    await this.engine(session, () =>
      session.store.walk(namespace, 0, want, (page) => {
        for (const v of page) if (v.id.startsWith(input.prefix) && matches.length < 1000) matches.push(v);
        return matches.length < 1000;
      }),
    );
    return matches;
  }

  /**
   * `/query` and `/query-data`: the hits of each query, in order. A one-sided query's hits are the first
   * `topK` in the total order (score, then id: searchTotal), so among tied scores the engine does not
   * pick which make the cut, and the hits of a smaller `topK` are the first ones of a larger `topK`.
   */
  query(session: Session, namespace: string, queries: QueryInput[]): Promise<ScoredVector[][]> {
    return Promise.all(
      queries.map(async (q) => {
        const plan = await this.plan(session, q);
        return plan.dense && plan.sparse
          ? this.fused(session, namespace, q, plan, Math.max(q.topK, FUSION_DEPTH), q.topK, new Set())
          : this.searchTotal(session, namespace, q, plan, q.topK);
      }),
    );
  }

  /**
   * `/resumable-query[-data]`: the first `topK` results and a handle for more. A query on both sides
   * of a hybrid index fuses the best `topK` of each side; each later page fuses the vectors not yet
   * handed out among the best `returned + additionalK` of each side (what reproduces the SDK's
   * expected scores: upstash-compat.md §2.4), so no vector comes twice.
   */
  async resumableStart(session: Session, namespace: string, input: ResumableStartInput): Promise<{ uuid: string; hits: ScoredVector[] }> {
    const plan = await this.plan(session, input);
    const both = plan.dense !== undefined && plan.sparse !== undefined;
    const hits = both
      ? await this.fused(session, namespace, input, plan, input.topK, input.topK, new Set())
      : await this.searchTotal(session, namespace, input, plan, input.topK);
    const uuid = randomUUID();
    await this.stateCall(session, () =>
      this.state.saveResumable(uuid, {
        index: session.index.id,
        namespace,
        query: input,
        plan,
        returned: hits.length,
        ...(both ? { seen: hits.map((h) => h.id) } : {}),
        maxIdle: input.maxIdle,
      }),
    );
    return { uuid, hits };
  }

  /** `/resumable-query-next`: the next `additionalK` results, none repeated, and what the query includes of them. */
  async resumableNext(session: Session, uuid: string, additionalK: number): Promise<{ hits: ScoredVector[]; include: Includes }> {
    const state = await this.stateCall(session, () => this.state.loadResumable(uuid));
    if (!state || state.index !== session.index.id) throw new VectorError(404, `Resumable query ${uuid} not found: it ended or idled out`);
    const depth = state.returned + additionalK;
    const hits = state.seen
      ? await this.fused(session, state.namespace, state.query, state.plan, depth, additionalK, new Set(state.seen))
      : (await this.searchTotal(session, state.namespace, state.query, state.plan, depth)).slice(state.returned);
    const seen = state.seen ? { seen: [...state.seen, ...hits.map((h) => h.id)] } : {};
    await this.stateCall(session, () => this.state.saveResumable(uuid, { ...state, ...seen, returned: state.returned + hits.length }));
    return { hits, include: state.query.include };
  }

  /** `/resumable-query-end`. */
  async resumableEnd(session: Session, uuid: string): Promise<void> {
    const state = await this.stateCall(session, () => this.state.loadResumable(uuid));
    if (!state || state.index !== session.index.id) throw new VectorError(404, `Resumable query ${uuid} not found: it ended or idled out`);
    await this.stateCall(session, () => this.state.endResumable(uuid));
  }

  /** `/range`: a page in insertion order from the cursor (inclusive); `nextCursor` is "" at the end. */
  async range(session: Session, namespace: string, input: RangeInput): Promise<{ nextCursor: string; vectors: StoredVector[] }> {
    const want = wantOf(input.include);
    let page: StoredVector[] = [];
    if (input.prefix === undefined) {
      page = await this.engine(session, () => session.store.scroll(namespace, input.cursor, input.limit + 1, want));
    } else {
      const prefix = input.prefix;
      await this.engine(session, () =>
        session.store.walk(namespace, input.cursor, want, (batch) => {
          for (const v of batch) if (v.id.startsWith(prefix) && page.length <= input.limit) page.push(v);
          return page.length <= input.limit;
        }),
      );
    }
    const nextCursor = page.length > input.limit ? String((page[input.limit] as StoredVector).seq) : '';
    return { nextCursor, vectors: page.slice(0, input.limit) };
  }

  /** `/random`: one vector of the namespace, or null when it is empty (README, "Vector: endpoints"). */
  random(session: Session, namespace: string): Promise<StoredVector | null> {
    return this.engine(session, () => session.store.random(namespace, { vector: true, metadata: false, data: false }));
  }

  /**
   * `/rename-namespace` (Upstash docs): moves every vector of `namespace` to `newNamespace` (point ids
   * hash the namespace, so the points are written anew and the old ones deleted), keeping ids,
   * vectors, metadata, data and insertion order. An existing target is replaced only with
   * `deleteExisting`. Not atomic: writes to either namespace while it runs may land on either side.
   * @returns false when the two names are the same (nothing to do), else true
   * @throws VectorError 404 when `namespace` does not exist, 400 when `newNamespace` exists and `deleteExisting` is false
   */
  async renameNamespace(session: Session, input: RenameNamespaceInput): Promise<boolean> {
    const { namespace, newNamespace } = input;
    const id = session.index.id;
    if (!(await this.stateCall(session, () => this.state.exists(id, namespace)))) throw new VectorError(404, `Namespace ${namespace} does not exist`);
    if (namespace === newNamespace) return false;
    if (await this.stateCall(session, () => this.state.exists(id, newNamespace))) {
      if (!input.deleteExisting) {
        throw VectorError.badRequest(`newNamespace: namespace ${newNamespace} already exists; pass deleteExisting: true to replace it`);
      }
      await this.engine(session, () => session.store.deleteWhere(newNamespace));
    }
    const all: Want = { vector: true, metadata: true, data: true };
    // Page by page: write the page under the new namespace, then delete it from the old one.
    for (;;) {
      const page = await this.engine(session, () => session.store.scroll(namespace, 0, 256, all));
      if (page.length === 0) break;
      await this.engine(session, () => session.store.upsert(newNamespace, page));
      await this.engine(session, () => session.store.deleteIds(namespace, page.map((v) => v.id)));
    }
    await this.stateCall(session, () => this.state.rename(id, namespace, newNamespace));
    await this.wrote(session, namespace);
    await this.wrote(session, newNamespace);
    return true;
  }

  /** `/reset`: empties a namespace (`all`: every namespace); namespaces stay listed. */
  async reset(session: Session, namespace: string, all: boolean): Promise<void> {
    const id = session.index.id;
    if (all) {
      await this.engine(session, () => session.store.deleteAll());
      await this.stateCall(session, async () => this.state.restart(id, await this.state.namespaces(id)));
      await this.wrote(session, '*');
    } else {
      await this.engine(session, () => session.store.deleteWhere(namespace));
      await this.stateCall(session, () => this.state.restart(id, [namespace]));
      await this.wrote(session, namespace);
    }
  }

  /**
   * `/info` (README, "Vector: endpoints"), with the SDK's `namespaces`, `indexType` and `denseIndex`.
   * `namespaces` holds exactly the namespaces `list-namespaces` answers, each with its vector count;
   * `vectorCount` counts every vector of the index's collection.
   */
  async info(session: Session): Promise<IndexInfo> {
    const { index } = session;
    const [counts, names] = await Promise.all([
      this.engine(session, () => session.store.countByNamespace()),
      this.stateCall(session, () => this.state.namespaces(index.id)),
    ]);
    const namespaces: Record<string, { vectorCount: number; pendingVectorCount: number }> = Object.create(null); // tenant names: `__proto__` too
    // Exactly the namespaces list-namespaces lists (an empty one with 0): not those the engine counts, which may
    // name deleted or renamed ones (a facet can keep a value with count 0) or points a concurrent write left behind.
    for (const name of names) namespaces[name] = { vectorCount: counts.get(name) ?? 0, pendingVectorCount: 0 };
    const vectorCount = [...counts.values()].reduce((a, b) => a + b, 0);
    const embeddingModel = index.embedder?.model;
    const sparseModel = index.sparseEmbedding?.model;
    return {
      vectorCount,
      pendingVectorCount: 0,
      // Raw float32 dense vector bytes: Qdrant reports no size; sparse vectors, HNSW links and payload are extra.
      indexSize: vectorCount * index.dimension * 4,
      dimension: index.dimension,
      similarityFunction: index.similarityFunction,
      indexType: index.indexType,
      ...(index.indexType !== 'SPARSE'
        ? { denseIndex: { dimension: index.dimension, similarityFunction: index.similarityFunction, ...(embeddingModel ? { embeddingModel } : {}) } }
        : {}),
      ...(index.indexType !== 'DENSE' ? { sparseIndex: sparseModel ? { embeddingModel: sparseModel } : {} } : {}),
      namespaces,
    };
  }

  /** `/list-namespaces`: every namespace, "" included. */
  listNamespaces(session: Session): Promise<string[]> {
    return this.stateCall(session, () => this.state.namespaces(session.index.id));
  }

  /** `/delete-namespace/<ns>`: removes a namespace and its vectors; the default one cannot go. */
  async deleteNamespace(session: Session, namespace: string): Promise<void> {
    if (namespace === '') throw VectorError.badRequest('The default namespace cannot be deleted');
    const id = session.index.id;
    if (!(await this.stateCall(session, () => this.state.exists(id, namespace)))) throw new VectorError(404, `Namespace ${namespace} does not exist`);
    await this.engine(session, () => session.store.deleteWhere(namespace));
    await this.stateCall(session, () => this.state.remove(id, namespace));
    await this.wrote(session, namespace);
  }

  /**
   * The first `limit` hits of a one-sided query in the total order (score descending, then id
   * ascending), so that a query's hits do not depend on which tied hits the engine keeps (a smaller
   * `topK` gives the first hits of a larger one) and resumable queries hand out every vector exactly
   * once across pages: the engine cuts a page anywhere among tied hits, so this reads one hit more
   * than wanted, and more (doubling, up to `FILTER_SCAN_LIMIT` hits) while the last hit read ties with
   * the last one wanted, until one scores strictly lower or the namespace ends. Without a tie at the
   * cut, that is one search of `limit + 1` hits.
   */
  private async searchTotal(session: Session, namespace: string, q: QueryInput, plan: Plan, limit: number): Promise<ScoredVector[]> {
    const cap = Math.max(limit + 1, this.config.filterScanLimit);
    for (let fetch = limit + 1; ; fetch = Math.min(fetch * 2, cap)) {
      const hits = await this.search(session, namespace, q, plan, fetch);
      const last = hits[limit - 1];
      if (hits.length < fetch || !last || (hits[fetch - 1] as ScoredVector).rawScore < last.rawScore || fetch >= cap) {
        return hits.slice(0, limit);
      }
    }
  }

  /**
   * What a query searches (README, "Vector: index types"): a DENSE index its dense side, a SPARSE index
   * its sparse side, a HYBRID index the sides its vectors (or `queryMode`) name; `data` is embedded for
   * the sides searched, the sparse side by BM25 on the engine.
   * @throws VectorError 400 when `queryMode` names a side the query has no vector for; 422 when data cannot be embedded
   */
  private async plan(session: Session, q: QueryInput): Promise<Plan> {
    const type = session.index.indexType;
    const mode = type === 'HYBRID' ? (q.queryMode ?? 'HYBRID') : type;
    const wantsDense = mode !== 'SPARSE';
    const wantsSparse = mode !== 'DENSE';
    const plan: Plan = {};
    if (q.vector || q.sparseVector) {
      if (wantsDense && q.vector) plan.dense = q.vector;
      if (wantsSparse && q.sparseVector) plan.sparse = { sparse: q.sparseVector };
      if (!plan.dense && !plan.sparse) {
        throw VectorError.badRequest(`queryMode ${mode} searches the ${mode.toLowerCase()} side: give ${mode === 'DENSE' ? 'vector' : 'sparseVector'}`);
      }
    } else {
      if (wantsSparse) {
        this.sparseModel(session);
        plan.sparse = { sparseText: q.data as string };
      }
      if (wantsDense) plan.dense = (await this.embed(session, [q.data as string]))[0] as number[];
    }
    if (plan.dense) checkDimension(plan.dense, session.index.dimension);
    return plan;
  }

  /** The best `limit` hits of a one-sided query, filter applied exactly, scores final; in total order (byScoreThenId). */
  private search(session: Session, namespace: string, q: QueryInput, plan: Plan, limit: number): Promise<ScoredVector[]> {
    const filter = q.filter === undefined ? undefined : prepareFilter(q.filter);
    const want = wantOf(q.include);
    return plan.dense
      ? this.denseSide(session, namespace, plan.dense, filter, limit, want)
      : this.sparseSide(session, namespace, q, plan.sparse as NonNullable<Plan['sparse']>, filter, limit, want);
  }

  /**
   * A query on both sides of a hybrid index: the best `depth` hits of each side, less the ids in
   * `seen`, fused with the query's algorithm (RRF by default; README, "Vector: index types"); the
   * first `take` of the fused list, `rawScore` being the fused score. DBSF fuses dense scores
   * computed in float32 from the stored vectors, as Upstash does (float32Score). An RRF query whose
   * sides the engine ranks as Upstash does (a text query's sparse side, BM25 on the engine, or an IDF
   * query's on a namespace that is the whole collection: IdfStats.exclusive; no `seen`, no filter the
   * gateway must apply itself) is fused by the engine in one request (Qdrant's RRF with k 60 is Upstash's formula;
   * its score is summed in float32, ties in the engine's order).
   */
  private async fused(session: Session, namespace: string, q: QueryInput, plan: Plan, depth: number, take: number, seen: ReadonlySet<string>): Promise<ScoredVector[]> {
    const filter = q.filter === undefined ? undefined : prepareFilter(q.filter);
    const algorithm = q.fusionAlgorithm ?? 'RRF';
    const want = wantOf(q.include);
    const dense = plan.dense as number[];
    const sparse = plan.sparse as NonNullable<Plan['sparse']>;
    const idf = 'sparse' in sparse && q.weightingStrategy === 'IDF' ? await this.idfWeights(session, namespace, sparse.sparse.indices) : undefined;
    const engineRanksSparse = !('sparse' in sparse) || idf?.exclusive === true;
    if (algorithm === 'RRF' && seen.size === 0 && (!filter || filter.exact) && engineRanksSparse) {
      // Both sides' rankings are Upstash's: the engine fuses them with Upstash's RRF, in one request.
      const sides = [{ dense }, 'sparse' in sparse ? { sparse: sparse.sparse } : { sparseText: sparse.sparseText }];
      return this.engine(session, () =>
        session.store.fusedSearch(namespace, sides, { depth, limit: take, k: RRF_K, filter: filter?.pushdown }, want),
      );
    }
    const [denseHits, sparseHits] = await Promise.all([
      this.denseSide(session, namespace, dense, filter, depth, algorithm === 'DBSF' ? { ...want, vector: true } : want),
      // The fused depth is already the margin: no over-fetch on top of it.
      this.sparseSide(session, namespace, q, sparse, filter, depth, want, { depth, ranksOnly: algorithm === 'RRF', idf }),
    ]);
    const similarity = session.index.similarityFunction;
    const byId = new Map<string, ScoredVector>();
    const side = (hits: ScoredVector[], isDense: boolean): Candidate[] =>
      hits
        .filter((h) => !seen.has(h.id))
        .map((h) => {
          const known = byId.get(h.id);
          byId.set(h.id, known ? { ...h, ...known, sparseVector: known.sparseVector ?? h.sparseVector } : h);
          const score = isDense && algorithm === 'DBSF' && h.vector ? float32Score(similarity, h.vector, dense) : h.rawScore;
          return { id: h.id, score };
        });
    const lists = [side(denseHits, true), side(sparseHits, false)];
    // Vectors read for scoring go out only when asked for (vectorJson prints what `include` names).
    return fuse(algorithm, lists)
      .slice(0, take)
      .map((c) => ({ ...(byId.get(c.id) as ScoredVector), rawScore: c.score }));
  }

  /** The best `limit` hits of the dense side, scores normalised (README, "Vector: scores and number formatting"), in total order. */
  private async denseSide(session: Session, namespace: string, vector: number[], filter: PreparedFilter | undefined, limit: number, want: Want): Promise<ScoredVector[]> {
    const hits = await this.rawHits(session, namespace, { dense: vector }, filter, limit, want);
    const similarity = session.index.similarityFunction;
    const scored = hits.map((h) => ({ ...h, rawScore: normaliseScore(similarity, h.rawScore) }));
    return (await this.rescoreNearMatches(session, namespace, vector, scored)).sort(byScoreThenId);
  }

  /**
   * The best `limit` hits of the sparse side, in total order, scored exactly as Upstash does: the inner
   * product over shared dimensions, with `weightingStrategy: "IDF"` each query value times the
   * namespace's IDF of its dimension (upstash-compat.md §2.4). Qdrant ranks with its IDF modifier over
   * the whole collection, so a sparse vector query reads more candidates than it needs and rescores them:
   * {@link SPARSE_OVERFETCH} times more (at least {@link SPARSE_MIN_CANDIDATES}); only
   * {@link SPARSE_EXACT_MARGIN} more when the query asks for IDF and the namespace is the whole collection
   * (Qdrant's ranking is then Upstash's). A side of a fused query reads `fused.depth` candidates; with
   * `ranksOnly` (RRF) and an exact ranking it keeps Qdrant's order without reading sparse vectors, and
   * `fused.idf` is the IDF the fused query read already. A text query (BM25 on the engine) keeps
   * Qdrant's score, the query's sparse vector being the engine's.
   */
  private async sparseSide(
    session: Session,
    namespace: string,
    q: QueryInput,
    query: NonNullable<Plan['sparse']>,
    filter: PreparedFilter | undefined,
    limit: number,
    want: Want,
    fused?: { depth: number; ranksOnly: boolean; idf?: IdfWeights },
  ): Promise<ScoredVector[]> {
    if (!('sparse' in query)) return (await this.rawHits(session, namespace, query, filter, limit, want)).sort(byScoreThenId);
    const idf = q.weightingStrategy !== 'IDF' ? undefined : (fused?.idf ?? (await this.idfWeights(session, namespace, query.sparse.indices)));
    if (idf?.exclusive && fused?.ranksOnly) {
      // RRF needs the ranks only, and the engine's are exact: no vectors to read, no rescoring.
      return (await this.rawHits(session, namespace, query, filter, fused.depth, want)).sort(byScoreThenId);
    }
    const overfetch = Math.min(Math.max(limit * SPARSE_OVERFETCH, SPARSE_MIN_CANDIDATES), this.config.filterScanLimit);
    const fetch = fused?.depth ?? (idf?.exclusive ? limit + SPARSE_EXACT_MARGIN : Math.max(limit, overfetch));
    const version = idf?.version ?? (await this.stateCall(session, () => this.state.versions(session.index.id, namespace))).namespace;
    const scope = { collection: session.index.collection, namespace, version };
    const hits = await this.withSparseVectors(session, scope, await this.rawHits(session, namespace, query, filter, fetch, want));
    return hits
      .filter((h) => h.sparseVector)
      .map((h) => ({ ...h, rawScore: sparseScore(query.sparse, h.sparseVector as SparseVector, idf?.weights) }))
      .sort(byScoreThenId)
      .slice(0, limit);
  }

  /**
   * Gives every hit its stored sparse vector, for exact rescoring: the one Qdrant sent (includeVectors),
   * else this replica's copy (SparseVectorCache, under the namespace's version), else the one Qdrant
   * holds, read in one request for all the misses; remembers what it read. A hit whose vector has gone
   * (deleted since the search) gets none, and sparseSide drops it.
   */
  private async withSparseVectors(session: Session, scope: SparseScope, hits: ScoredVector[]): Promise<ScoredVector[]> {
    const cached = this.sparseVectors.getMany(scope, hits.filter((h) => !h.sparseVector).map((h) => h.id));
    const missing = hits.filter((h) => !h.sparseVector && !cached.has(h.id)).map((h) => h.id);
    const read =
      missing.length > 0
        ? await this.engine(session, () => session.store.retrieve(scope.namespace, missing, { vector: false, metadata: false, data: false, sparse: true }))
        : new Map<string, StoredVector>();
    return hits.map((h) => {
      const sparseVector = h.sparseVector ?? cached.get(h.id) ?? read.get(h.id)?.sparseVector;
      if (sparseVector && !cached.has(h.id)) this.sparseVectors.set(scope, h.id, sparseVector);
      return sparseVector ? { ...h, sparseVector } : h;
    });
  }

  /**
   * Upstash's IDF of each query dimension over the namespace (N its vectors, n those having the
   * dimension: idf), and whether the namespace is the whole collection (IdfStats.exclusive). Both are
   * cached per replica under the versions IndexState keeps, so a query usually costs one control-Redis
   * read; counts missing from the cache are read from the engine.
   */
  private async idfWeights(session: Session, namespace: string, dimensions: number[]): Promise<IdfWeights> {
    const key = `${session.index.id}\0${namespace}`;
    const versions = await this.stateCall(session, () => this.state.versions(session.index.id, namespace));
    let stats = this.idfStats.get(key);
    if (stats?.version !== versions.namespace) {
      if (this.idfStats.size >= MAX_IDF_CACHE) this.idfStats.clear();
      stats = { version: versions.namespace, counts: new Map() };
      this.idfStats.set(key, stats);
    }
    const cached = stats;
    const missing = dimensions.filter((d) => !cached.counts.has(d));
    const known = cached.collectionVersion === versions.collection;
    const [total, counts, collectionTotal] = await Promise.all([
      cached.total ?? this.engine(session, () => session.store.count(namespace)),
      missing.length > 0 ? this.engine(session, () => session.store.countWithDimensions(namespace, missing)) : new Map<number, number>(),
      known ? undefined : this.engine(session, () => session.store.countAll()),
    ]);
    // Kept only for the versions they were read under: a write since then bumped them (wrote()).
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
   * in the control Redis, so that every replica reads its IDF statistics again (idfWeights). DENSE
   * indexes have no IDF: nothing to do.
   */
  private async wrote(session: Session, namespace: string): Promise<void> {
    if (session.index.indexType === 'DENSE') return;
    await this.stateCall(session, () => this.state.wrote(session.index.id, namespace));
  }

  /** Qdrant's best `limit` hits of one side with its raw scores, the filter applied exactly. */
  private async rawHits(session: Session, namespace: string, query: SearchQuery, filter: PreparedFilter | undefined, limit: number, want: Want): Promise<ScoredVector[]> {
    if (!filter || filter.exact) {
      return this.engine(session, () => session.store.search(namespace, query, { limit, offset: 0, filter: filter?.pushdown }, want));
    }
    // Qdrant narrows; the exact filter decides. Read pages until enough hits pass or the budget is spent.
    const hits: ScoredVector[] = [];
    const page = Math.max(limit * 4, 100);
    for (let offset = 0; hits.length < limit && offset < this.config.filterScanLimit; offset += page) {
      const batch = await this.engine(session, () =>
        session.store.search(namespace, query, { limit: page, offset, filter: filter.pushdown }, { ...want, metadata: true }),
      );
      for (const hit of batch) if (hits.length < limit && matchesFilter(filter.node, hit.metadata)) hits.push(want.metadata ? hit : { ...hit, metadata: undefined });
      if (batch.length < page) break;
    }
    return hits;
  }

  /**
   * The sparse model of the index's `*-data` endpoints.
   * @throws VectorError 422 when the index has none
   */
  private sparseModel(session: Session): string {
    const model = session.index.sparseEmbedding?.model;
    if (!model) {
      throw new VectorError(422, 'Embedding data for this index is not allowed. The index must be created with a sparse embedding model (sparseEmbedding: BM25) to use it.');
    }
    return model;
  }

  /**
   * Recomputes in float64 the scores of hits within float32 noise of either end of [0, 1], so that
   * a vector identical to the query scores exactly 1 (and an opposite one exactly 0) as on Upstash
   * (README, "Vector: scores and number formatting"): Qdrant's float32 cosine of a vector with
   * itself comes out as 0.9999999. Costs one extra read, and only when such a hit exists.
   */
  private async rescoreNearMatches(session: Session, namespace: string, query: number[], hits: ScoredVector[]): Promise<ScoredVector[]> {
    const extreme = (score: number) => score > 1 - NEAR_EDGE || score < NEAR_EDGE;
    const near = hits.filter((h) => extreme(h.rawScore));
    if (near.length === 0) return hits;
    const want: Want = { vector: true, metadata: false, data: false };
    const stored = await this.engine(session, () => session.store.retrieve(namespace, near.map((h) => h.id), want));
    const similarity = session.index.similarityFunction;
    return hits
      .map((h) => {
        const v = extreme(h.rawScore) ? stored.get(h.id)?.vector : undefined;
        return v ? { ...h, rawScore: exactScore(similarity, v, query) } : h;
      });
  }

  /** Ids of the namespace's vectors that pass `keep`, walking it in insertion order. */
  private async collectIds(session: Session, namespace: string, keep: (v: StoredVector) => boolean, metadata: boolean): Promise<string[]> {
    const ids: string[] = [];
    await this.engine(session, () =>
      session.store.walk(namespace, 0, { vector: false, metadata, data: false }, (page) => {
        for (const v of page) if (keep(v)) ids.push(v.id);
        return true;
      }),
    );
    return ids;
  }

  /**
   * Embeds texts with the index's model: one vector per text, each checked as a request's vector is
   * (the index's dimension, every component a number that rounds to a finite float32: float32Problem).
   * @throws VectorError 422 when the index has no embedding model; 502 when the provider fails or
   *   answers a vector of the wrong dimension or one the index cannot store
   */
  private async embed(session: Session, texts: string[]): Promise<number[][]> {
    const { index } = session;
    if (!index.embedder) {
      throw new VectorError(422, 'Embedding data for this index is not allowed. The index must be created with an embedding model to use it.');
    }
    const key = `${index.id}\0${JSON.stringify(index.embedder)}`;
    let embedder = this.embedders.get(key);
    if (!embedder) {
      const { url, model, apiKey, platform } = index.embedder;
      const dispatcher = platform ? {} : { dispatcher: this.guardedAgent };
      embedder = new OpenAiEmbedder({ url, model, ...(apiKey ? { apiKey } : {}), timeoutMs: this.config.embedderTimeoutMs, ...dispatcher });
      this.embedders.set(key, embedder);
    }
    let vectors: number[][];
    try {
      vectors = await embedder.embed(texts);
    } catch (error) {
      if (!(error instanceof EmbedderError)) throw error;
      this.metrics.backendError(session.tenant, 'embedder');
      this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'embedder', tenant: session.tenant, index: index.id, status: error.status, error });
      // The provider's own text stays in the log: it may quote internals (stack traces, keys, hosts).
      // The range only: the address a name resolved to would make this a lookup of internal DNS names.
      if (error.refused) {
        const range = error.refused.replace(/ address .*$/, ' address');
        throw new VectorError(502, `Embedding failed: the embedding provider's address is not allowed (${range}): an index's own embedding URL must be public`);
      }
      const answered = error.status === undefined ? 'could not be reached or gave no usable answer' : `answered HTTP ${error.status}`;
      throw new VectorError(502, `Embedding failed: the embedding provider ${answered}`);
    }
    // The provider's vectors pass the rules a request's vectors pass (README, "Vector: errors"), or
    // nothing is written: the provider's fault (502), not the engine's (503) nor the client's.
    const wrong = vectors.find((v) => v.length !== index.dimension);
    if (wrong) throw new VectorError(502, `The embedding model returned ${wrong.length} dimensions; this index has ${index.dimension}`);
    for (const v of vectors) {
      const problem = float32Problem(v);
      if (problem) {
        this.metrics.backendError(session.tenant, 'embedder');
        this.repeats.logEvent(this.logger, 'warn', 'embedder.invalid-vector', {
          engine: 'embedder',
          tenant: session.tenant,
          index: index.id,
          problem: `vector${problem}`,
          text: 'the embedding provider answered an unusable vector',
        });
        throw new VectorError(502, `Embedding failed: the embedding provider answered a vector this index cannot store (vector${problem})`);
      }
    }
    return vectors;
  }

  /** Runs a Qdrant call; an unreachable or failing engine becomes 503. */
  private async engine<T>(session: Session, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (!(error instanceof EngineUnavailableError)) throw error;
      this.metrics.backendError(session.tenant, 'engine');
      this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'qdrant', tenant: session.tenant, index: session.index.id, status: error.status, error });
      const what = error.status === undefined ? 'cannot be reached' : 'failed on this index';
      throw new VectorError(503, `Service unavailable: the vector engine ${what}; retry later`);
    }
  }

  /** Runs a call on the index state in the control Redis. @throws TenantDenied `registry-unavailable` */
  private stateCall<T>(session: Session, run: () => Promise<T>): Promise<T> {
    return this.gate.registryCall(session.tenant, run);
  }
}

/** The total order of hits: score descending, then id ascending (ids are unique in a namespace). */
function byScoreThenId(a: ScoredVector, b: ScoredVector): number {
  return b.rawScore - a.rawScore || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Parses a filter; its errors are 400s that say where. */
function prepareFilter(text: string): PreparedFilter {
  let node: FilterNode | undefined;
  try {
    node = parseFilter(text);
  } catch (error) {
    if (error instanceof FilterSyntaxError) throw VectorError.badRequest(error.message);
    throw error;
  }
  if (!node) throw VectorError.badRequest('Invalid filter: it is empty');
  const { filter, exact } = toQdrantFilter(node, 'metadata');
  return { node, pushdown: filter as QdrantFilter | undefined, exact };
}

function wantOf(include: Includes): Want {
  return { vector: include.vectors, metadata: include.metadata, data: include.data };
}

