import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { RegistryReader, type VectorIndexRecord, registryKeys } from '@restash/shared/data-access-registry';
import { CONTROL_REDIS, type Credentials, type Grant, TenantGate } from '@restash/shared/feature-tenancy';
import { type Embedder, EmbedderError, OpenAiEmbedder } from '@restash/vector/data-access-embedder';
import {
  EngineUnavailableError,
  type QdrantFilter,
  type QdrantIndexStore,
  QdrantStores,
  type ScoredVector,
  type StoredVector,
  type Want,
} from '@restash/vector/data-access-qdrant';
import { type FilterNode, FilterSyntaxError, matchesFilter, parseFilter, toQdrantFilter } from '@restash/vector/util-filter';
import {
  type DeleteInput,
  type FetchInput,
  type Includes,
  type QueryInput,
  QDRANT_DISTANCE,
  type RangeInput,
  type ResumableStartInput,
  type UpdateInput,
  type VectorInput,
  VectorError,
  checkDimension,
  checkMetadata,
  exactScore,
  mergePatch,
  normaliseScore,
  pointId,
} from '@restash/vector/util-query';
import { VECTOR_CONFIG, type VectorGatewayConfig } from './config';
import { IndexState } from './index-state';
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
  denseIndex: { dimension: number; similarityFunction: VectorIndexRecord['similarityFunction']; embeddingModel?: string };
  namespaces: Record<string, { vectorCount: number; pendingVectorCount: number }>;
}

/** Normalised scores this close to 1 or 0 are recomputed exactly (the engine's float32 rounding is about 1e-7 per term). */
const NEAR_EDGE = 1e-4;

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
  private readonly state: IndexState;
  private readonly stores: QdrantStores;
  private readonly embedders = new Map<string, Embedder>();
  private readonly storesByRecord = new WeakMap<VectorIndexRecord, QdrantIndexStore>();

  constructor(
    @Inject(CONTROL_REDIS) control: Redis,
    private readonly registry: RegistryReader,
    private readonly gate: TenantGate,
    @Inject(VECTOR_CONFIG) private readonly config: VectorGatewayConfig,
    private readonly metrics: VectorMetrics,
  ) {
    this.state = new IndexState(control);
    this.stores = new QdrantStores({ timeoutMs: config.qdrantTimeoutMs }, pointId);
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
        dimension: index.dimension,
        distance: QDRANT_DISTANCE[index.similarityFunction],
      });
      this.storesByRecord.set(index, store);
    }
    return store;
  }

  /** `/upsert` and `/upsert-data`: writes the records, embedding `data` where there is no vector. */
  async upsert(session: Session, namespace: string, records: VectorInput[]): Promise<void> {
    const { dimension } = session.index;
    for (const r of records) if (r.vector) checkDimension(r.vector, dimension);
    const toEmbed = records.filter((r) => !r.vector);
    if (toEmbed.length > 0) {
      const vectors = await this.embed(session, toEmbed.map((r) => r.data as string));
      toEmbed.forEach((r, i) => (r.vector = vectors[i]));
    }
    const first = await this.stateCall(session, () => this.state.reserve(session.index.id, namespace, records.length));
    await this.engine(session, () => session.store.upsert(namespace, records.map((r, i) => ({ ...r, seq: first + i }))));
  }

  /** `/update`: changes the vector, data or metadata of one vector. @returns how many it updated: 0 when it does not exist, else 1 */
  async update(session: Session, namespace: string, input: UpdateInput): Promise<number> {
    const all: Want = { vector: true, metadata: true, data: true };
    const existing = (await this.engine(session, () => session.store.retrieve(namespace, [input.id], all))).get(input.id);
    if (!existing) return 0;
    const next: StoredVector = { ...existing };
    if (input.vector) {
      checkDimension(input.vector, session.index.dimension);
      next.vector = input.vector;
    } else if (input.data !== undefined && session.index.embedder) {
      next.vector = (await this.embed(session, [input.data]))[0];
    }
    if (input.data !== undefined) next.data = input.data;
    if (input.metadata !== undefined) {
      // The patch passed the limits; what it makes of the stored metadata must too (it can grow).
      next.metadata = input.metadataUpdateMode === 'PATCH' ? checkMetadata(mergePatch(existing.metadata, input.metadata), 'metadata') : input.metadata;
    }
    await this.engine(session, () => session.store.upsert(namespace, [next]));
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

  /** `/query` and `/query-data`: the hits of each query, in order. */
  query(session: Session, namespace: string, queries: QueryInput[]): Promise<ScoredVector[][]> {
    return Promise.all(queries.map((q) => this.search(session, namespace, q, q.topK)));
  }

  /** `/resumable-query[-data]`: the first `topK` results and a handle for more. */
  async resumableStart(session: Session, namespace: string, input: ResumableStartInput): Promise<{ uuid: string; hits: ScoredVector[] }> {
    const vector = input.vector ?? (await this.embed(session, [input.data as string]))[0] as number[];
    const query = { ...input, vector };
    const hits = await this.searchTotal(session, namespace, query, input.topK);
    const uuid = randomUUID();
    await this.stateCall(session, () =>
      this.state.saveResumable(uuid, { index: session.index.id, namespace, query, returned: hits.length, maxIdle: input.maxIdle }),
    );
    return { uuid, hits };
  }

  /** `/resumable-query-next`: the next `additionalK` results, none repeated, and what the query includes of them. */
  async resumableNext(session: Session, uuid: string, additionalK: number): Promise<{ hits: ScoredVector[]; include: Includes }> {
    const state = await this.stateCall(session, () => this.state.loadResumable(uuid));
    if (!state || state.index !== session.index.id) throw new VectorError(404, `Resumable query ${uuid} not found: it ended or idled out`);
    const hits = (await this.searchTotal(session, state.namespace, state.query, state.returned + additionalK)).slice(state.returned);
    await this.stateCall(session, () => this.state.saveResumable(uuid, { ...state, returned: state.returned + hits.length }));
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

  /** `/reset`: empties a namespace (`all`: every namespace); namespaces stay listed. */
  async reset(session: Session, namespace: string, all: boolean): Promise<void> {
    const id = session.index.id;
    if (all) {
      await this.engine(session, () => session.store.deleteAll());
      await this.stateCall(session, async () => this.state.restart(id, await this.state.namespaces(id)));
    } else {
      await this.engine(session, () => session.store.deleteWhere(namespace));
      await this.stateCall(session, () => this.state.restart(id, [namespace]));
    }
  }

  /** `/info` (README, "Vector: endpoints"), with the SDK's `namespaces`, `indexType` and `denseIndex`. */
  async info(session: Session): Promise<IndexInfo> {
    const { index } = session;
    const [counts, names] = await Promise.all([
      this.engine(session, () => session.store.countByNamespace()),
      this.stateCall(session, () => this.state.namespaces(index.id)),
    ]);
    const namespaces: Record<string, { vectorCount: number; pendingVectorCount: number }> = Object.create(null); // tenant names: `__proto__` too
    for (const name of new Set([...names, ...counts.keys()])) namespaces[name] = { vectorCount: counts.get(name) ?? 0, pendingVectorCount: 0 };
    const vectorCount = [...counts.values()].reduce((a, b) => a + b, 0);
    const embeddingModel = index.embedder?.model;
    return {
      vectorCount,
      pendingVectorCount: 0,
      // Raw float32 vector bytes: Qdrant reports no size, and its HNSW links and payload are extra.
      indexSize: vectorCount * index.dimension * 4,
      dimension: index.dimension,
      similarityFunction: index.similarityFunction,
      indexType: index.indexType,
      denseIndex: { dimension: index.dimension, similarityFunction: index.similarityFunction, ...(embeddingModel ? { embeddingModel } : {}) },
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
  }

  /**
   * The first `limit` hits of a query in the total order (score descending, then id ascending), so
   * that resumable queries hand out every vector exactly once across pages even when scores tie:
   * the engine cuts a page anywhere among tied hits, so this reads more until the hit after the
   * last one wanted scores strictly lower (or the namespace ends).
   */
  private async searchTotal(session: Session, namespace: string, q: QueryInput, limit: number): Promise<ScoredVector[]> {
    for (let fetch = limit + 1; ; fetch *= 2) {
      const hits = await this.search(session, namespace, q, fetch);
      const last = hits[limit - 1];
      if (hits.length < fetch || !last || (hits[fetch - 1] as ScoredVector).rawScore < last.rawScore || fetch >= this.config.filterScanLimit) {
        return hits.slice(0, limit);
      }
    }
  }

  /** The best `limit` hits of a query, filter applied exactly; scores normalised; in total order (byScoreThenId). */
  private async search(session: Session, namespace: string, q: QueryInput, limit: number): Promise<ScoredVector[]> {
    const vector = q.vector ?? ((await this.embed(session, [q.data as string]))[0] as number[]);
    checkDimension(vector, session.index.dimension);
    const filter = q.filter === undefined ? undefined : prepareFilter(q.filter);
    const want = wantOf(q.include);
    let hits: ScoredVector[];
    if (!filter || filter.exact) {
      hits = await this.engine(session, () => session.store.search(namespace, vector, { limit, offset: 0, filter: filter?.pushdown }, want));
    } else {
      // Qdrant narrows; the exact filter decides. Read pages until enough hits pass or the budget is spent.
      hits = [];
      const page = Math.max(limit * 4, 100);
      for (let offset = 0; hits.length < limit && offset < this.config.filterScanLimit; offset += page) {
        const batch = await this.engine(session, () =>
          session.store.search(namespace, vector, { limit: page, offset, filter: filter.pushdown }, { ...want, metadata: true }),
        );
        for (const hit of batch) if (hits.length < limit && matchesFilter(filter.node, hit.metadata)) hits.push(hit);
        if (batch.length < page) break;
      }
    }
    const similarity = session.index.similarityFunction;
    const scored = hits.map((h) => ({ ...h, rawScore: normaliseScore(similarity, h.rawScore) }));
    return (await this.rescoreNearMatches(session, namespace, vector, scored)).sort(byScoreThenId);
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
   * Embeds texts with the index's model.
   * @throws VectorError 422 when the index has no embedding model, 502 when the provider fails
   */
  private async embed(session: Session, texts: string[]): Promise<number[][]> {
    const { index } = session;
    if (!index.embedder) {
      throw new VectorError(422, 'Embedding data for this index is not allowed. The index must be created with an embedding model to use it.');
    }
    const key = `${index.id}\0${JSON.stringify(index.embedder)}`;
    let embedder = this.embedders.get(key);
    if (!embedder) {
      const { url, model, apiKey } = index.embedder;
      embedder = new OpenAiEmbedder({ url, model, ...(apiKey ? { apiKey } : {}), timeoutMs: this.config.embedderTimeoutMs });
      this.embedders.set(key, embedder);
    }
    let vectors: number[][];
    try {
      vectors = await embedder.embed(texts);
    } catch (error) {
      if (!(error instanceof EmbedderError)) throw error;
      this.metrics.backendError(session.tenant, 'embedder');
      this.logger.warn(`index ${index.id}: ${error.message}`);
      // The provider's own text stays in the log: it may quote internals (stack traces, keys, hosts).
      const answered = error.status === undefined ? 'could not be reached or gave no usable answer' : `answered HTTP ${error.status}`;
      throw new VectorError(502, `Embedding failed: the embedding provider ${answered}`);
    }
    const wrong = vectors.find((v) => v.length !== index.dimension);
    if (wrong) throw new VectorError(502, `The embedding model returned ${wrong.length} dimensions; this index has ${index.dimension}`);
    return vectors;
  }

  /** Runs a Qdrant call; an unreachable or failing engine becomes 503. */
  private async engine<T>(session: Session, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (!(error instanceof EngineUnavailableError)) throw error;
      this.metrics.backendError(session.tenant, 'engine');
      this.logger.warn(`index ${session.index.id}: ${error.message}`);
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

