import type { VectorIndexRecord } from '@restash/shared/data-access-registry';
import type { ScoredVector, StoredVector, Want } from '@restash/vector/data-access-qdrant';
import { matchesFilter } from '@restash/vector/util-filter';
import {
  type DeleteInput,
  type DocumentSearchInput,
  type FetchInput,
  type Includes,
  type QueryInput,
  type RangeInput,
  type RenameNamespaceInput,
  type ResumableStartInput,
  type UpdateInput,
  type VectorInput,
  VectorError,
  blendSemantic,
  checkDimension,
  checkMetadata,
  mergePatch,
} from '@restash/vector/util-query';
import { BackendCalls } from './backend-calls';
import { IndexEmbedding } from './embedding';
import { prepareFilter, wantOf } from './filters';
import { IdfStatistics } from './idf';
import type { EmbedderFactory, IndexSession, IndexStatePort, RegistryCall, VectorIndexLimits, VectorObserver } from './ports';
import { SparseVectorCache } from './sparse-vector-cache';
import { VectorSearch } from './search';

/** How long a cached sparse vector may be used (ms): bounds staleness if a write's version bump was lost (SparseVectorCache). */
const SPARSE_VECTOR_CACHE_TTL_MS = 60_000;

/** `/info` (docs/vector.md, "Vector: endpoints"). */
export interface IndexInfo {
  vectorCount: number;
  pendingVectorCount: number;
  indexSize: number;
  dimension: number;
  similarityFunction: VectorIndexRecord['similarityFunction'];
  indexType: VectorIndexRecord['indexType'];
  /** DENSE and HYBRID indexes. */
  denseIndex?: { dimension: number; similarityFunction: VectorIndexRecord['similarityFunction']; embeddingModel: string };
  /** SPARSE and HYBRID indexes. */
  sparseIndex?: { embeddingModel?: string };
  namespaces: Record<string, { vectorCount: number; pendingVectorCount: number }>;
}

/** What VectorIndexService is made of: its ports (ports.ts) and limits. */
export interface VectorIndexDeps {
  state: IndexStatePort;
  embedders: EmbedderFactory;
  observer: VectorObserver;
  registryCall: RegistryCall;
  limits: VectorIndexLimits;
  /** The budget of the per-replica cache of sparse vectors (SPARSE_VECTOR_CACHE_BYTES; 0 turns it off). */
  sparseVectorCacheBytes: number;
}

/**
 * The Vector API (docs/vector.md, "What the Vector API does") between HTTP and Qdrant: runs each operation of an
 * authenticated request on its index's store (IndexSession), returning vectors, hits and counts; the app's routes
 * encode them (numbers print as float32) and admit requests. Queries are VectorSearch's.
 *
 * Operations throw VectorError with the API's status: 400/422 for client mistakes, 404 for unknown namespaces
 * and resumable queries, 502 when the embedding provider fails, 503 when Qdrant cannot be reached; and
 * TenantDenied `registry-unavailable` for the control Redis.
 */
export class VectorIndexService {
  private readonly state: IndexStatePort;
  private readonly calls: BackendCalls;
  private readonly embedding: IndexEmbedding;
  private readonly idf: IdfStatistics;
  private readonly search: VectorSearch;

  constructor(deps: VectorIndexDeps) {
    this.state = deps.state;
    this.calls = new BackendCalls(deps.observer, deps.registryCall);
    this.embedding = new IndexEmbedding(deps.embedders, this.calls);
    this.idf = new IdfStatistics(deps.state, this.calls);
    const sparseVectors = new SparseVectorCache(deps.sparseVectorCacheBytes, SPARSE_VECTOR_CACHE_TTL_MS);
    this.search = new VectorSearch(deps.state, this.calls, this.embedding, this.idf, sparseVectors, deps.limits);
  }

  /** Drops what this replica holds for an index whose registry record changed or went (its embedders). */
  forget(indexId: string): void {
    this.embedding.forget(indexId);
  }

  /** `/query` and `/query-data` (VectorSearch.query). */
  query(session: IndexSession, namespace: string, queries: QueryInput[]): Promise<ScoredVector[][]> {
    return this.search.query(session, namespace, queries);
  }

  /**
   * `POST /search/<index>` of `@upstash/search` (docs/vector.md, "Vector: Upstash Search"): the `topK` documents of the
   * namespace that best match the query text, the filter applied to their content. A HYBRID index blends its two
   * sides by `semanticWeight` (blendSemantic over the best max(topK, 100) of each side; a side of weight 0 is not
   * searched); a DENSE index ranks by meaning only, a SPARSE one by BM25 only; scores are in [0, 1].
   * @throws VectorError 422 when the index cannot embed text (no model), and as `query` does
   */
  async searchDocuments(session: IndexSession, namespace: string, input: DocumentSearchInput): Promise<ScoredVector[]> {
    const type = session.index.indexType;
    const depth = type === 'HYBRID' ? Math.max(input.topK, 100) : input.topK;
    const side = async (queryMode: 'DENSE' | 'SPARSE'): Promise<ScoredVector[]> => {
      const query: QueryInput = { topK: depth, include: input.include, data: input.query, filterOn: 'content', queryMode, ...(input.filter ? { filter: input.filter } : {}) };
      return (await this.search.query(session, namespace, [query]))[0] as ScoredVector[];
    };
    const weight = type === 'DENSE' ? 1 : type === 'SPARSE' ? 0 : input.semanticWeight;
    // A side of weight 0 is not searched: its documents would only come with score 0.
    const [dense, text] = await Promise.all([weight > 0 ? side('DENSE') : [], weight < 1 ? side('SPARSE') : []]);
    const byId = new Map([...text, ...dense].map((h) => [h.id, h]));
    const candidates = (hits: ScoredVector[]) => hits.map((h) => ({ id: h.id, score: h.rawScore }));
    return blendSemantic(candidates(dense), candidates(text), weight)
      .slice(0, input.topK)
      .map((c) => ({ ...(byId.get(c.id) as ScoredVector), rawScore: c.score }));
  }

  /** `/resumable-query[-data]` (VectorSearch.resumableStart). */
  resumableStart(session: IndexSession, namespace: string, input: ResumableStartInput): Promise<{ uuid: string; hits: ScoredVector[] }> {
    return this.search.resumableStart(session, namespace, input);
  }

  /** `/resumable-query-next` (VectorSearch.resumableNext). */
  resumableNext(session: IndexSession, uuid: string, additionalK: number): Promise<{ hits: ScoredVector[]; include: Includes }> {
    return this.search.resumableNext(session, uuid, additionalK);
  }

  /** `/resumable-query-end` (VectorSearch.resumableEnd). */
  resumableEnd(session: IndexSession, uuid: string): Promise<void> {
    return this.search.resumableEnd(session, uuid);
  }

  /**
   * `/upsert` and `/upsert-data`: writes the records, embedding `data` where there are no vectors: the
   * dense side with the index's embedding model, the sparse side with BM25 on the engine (docs/vector.md,
   * "Vector: index types").
   */
  async upsert(session: IndexSession, namespace: string, records: VectorInput[]): Promise<void> {
    const { dimension, indexType } = session.index;
    for (const r of records) if (r.vector) checkDimension(r.vector, dimension);
    const toEmbed = records.filter((r) => !r.vector && !r.sparseVector);
    const stored: StoredVector[] = records.map((r) => ({ ...r, seq: 0 }));
    if (toEmbed.length > 0) {
      if (indexType !== 'DENSE') this.embedding.sparseModel(session);
      if (indexType !== 'SPARSE') {
        const vectors = await this.embedding.embed(session, toEmbed.map((r) => r.data as string));
        toEmbed.forEach((r, i) => (r.vector = vectors[i]));
      }
      stored.forEach((v, i) => {
        const r = records[i] as VectorInput;
        if (indexType !== 'DENSE' && !r.sparseVector && r.data !== undefined) v.sparseText = r.data;
        if (r.vector) v.vector = r.vector;
      });
    }
    // An Upstash Search document keeps its content; its text was only for embedding.
    for (const v of stored) if (v.content !== undefined) delete v.data;
    const first = await this.calls.state(session, () => this.state.reserve(session.index.id, namespace, records.length));
    stored.forEach((v, i) => (v.seq = first + i));
    await this.calls.engine(session, () => session.store.upsert(namespace, stored));
    await this.idf.wrote(session, namespace);
  }

  /** `/update`: changes the vector, data or metadata of one vector. @returns how many it updated: 0 when it does not exist, else 1 */
  async update(session: IndexSession, namespace: string, input: UpdateInput): Promise<number> {
    const all: Want = { vector: true, metadata: true, data: true };
    const existing = (await this.calls.engine(session, () => session.store.retrieve(namespace, [input.id], all))).get(input.id);
    if (!existing) return 0;
    const next: StoredVector = { ...existing };
    const { indexType } = session.index;
    if (input.vector) {
      checkDimension(input.vector, session.index.dimension);
      next.vector = input.vector;
    } else if (input.data !== undefined && session.index.embedder && indexType !== 'SPARSE') {
      next.vector = (await this.embedding.embed(session, [input.data]))[0];
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
    await this.calls.engine(session, () => session.store.upsert(namespace, [next]));
    await this.idf.wrote(session, namespace);
    return 1;
  }

  /** `/delete`: by ids, id prefix or filter. @returns how many existed */
  async delete(session: IndexSession, namespace: string, input: DeleteInput): Promise<number> {
    const { store } = session;
    let deleted: number;
    if ('ids' in input) {
      const ids = [...new Set(input.ids)];
      const found = await this.calls.engine(session, () => store.retrieve(namespace, ids, { vector: false, metadata: false, data: false }));
      await this.calls.engine(session, () => store.deleteIds(namespace, [...found.keys()]));
      deleted = found.size;
    } else if ('prefix' in input) {
      const ids = await this.collectIds(session, namespace, (v) => v.id.startsWith(input.prefix), false);
      await this.calls.engine(session, () => store.deleteIds(namespace, ids));
      deleted = ids.length;
    } else {
      const filter = prepareFilter(input.filter);
      if (filter.exact) {
        deleted = await this.calls.engine(session, () => store.count(namespace, filter.pushdown));
        await this.calls.engine(session, () => store.deleteWhere(namespace, filter.pushdown));
      } else {
        const ids = await this.collectIds(session, namespace, (v) => matchesFilter(filter.node, v.metadata), true);
        await this.calls.engine(session, () => store.deleteIds(namespace, ids));
        deleted = ids.length;
      }
    }
    if (deleted > 0) await this.idf.wrote(session, namespace);
    return deleted;
  }

  /** `/fetch`: one entry per id in order (null when missing), or up to 1000 vectors by id prefix. */
  async fetch(session: IndexSession, namespace: string, input: FetchInput): Promise<Array<StoredVector | null>> {
    const want = wantOf(input.include);
    if (input.ids) {
      const found = await this.calls.engine(session, () => session.store.retrieve(namespace, [...new Set(input.ids)], want));
      return input.ids.map((id) => found.get(id) ?? null);
    }
    const matches: StoredVector[] = [];
    await this.calls.engine(session, () =>
      session.store.walk(namespace, 0, want, (page) => {
        for (const v of page) if (v.id.startsWith(input.prefix) && matches.length < 1000) matches.push(v);
        return matches.length < 1000;
      }),
    );
    return matches;
  }

  /** `/range`: a page in insertion order from the cursor (inclusive); `nextCursor` is "" at the end. */
  async range(session: IndexSession, namespace: string, input: RangeInput): Promise<{ nextCursor: string; vectors: StoredVector[] }> {
    const want = wantOf(input.include);
    let page: StoredVector[] = [];
    if (input.prefix === undefined) {
      page = await this.calls.engine(session, () => session.store.scroll(namespace, input.cursor, input.limit + 1, want));
    } else {
      const prefix = input.prefix;
      await this.calls.engine(session, () =>
        session.store.walk(namespace, input.cursor, want, (batch) => {
          for (const v of batch) if (v.id.startsWith(prefix) && page.length <= input.limit) page.push(v);
          return page.length <= input.limit;
        }),
      );
    }
    const nextCursor = page.length > input.limit ? String((page[input.limit] as StoredVector).seq) : '';
    return { nextCursor, vectors: page.slice(0, input.limit) };
  }

  /** `/random`: one vector of the namespace, or null when it is empty (docs/vector.md, "Vector: endpoints"). */
  random(session: IndexSession, namespace: string): Promise<StoredVector | null> {
    return this.calls.engine(session, () => session.store.random(namespace, { vector: true, metadata: false, data: false }));
  }

  /**
   * `/rename-namespace` (Upstash docs): moves every vector of `namespace` to `newNamespace` (point ids
   * hash the namespace, so the points are written anew and the old ones deleted), keeping ids,
   * vectors, metadata, data and insertion order. An existing target is replaced only with
   * `deleteExisting`. Not atomic: writes to either namespace while it runs may land on either side.
   * @returns false when the two names are the same (nothing to do), else true
   * @throws VectorError 404 when `namespace` does not exist, 400 when `newNamespace` exists and `deleteExisting` is false
   */
  async renameNamespace(session: IndexSession, input: RenameNamespaceInput): Promise<boolean> {
    const { namespace, newNamespace } = input;
    const id = session.index.id;
    if (!(await this.calls.state(session, () => this.state.exists(id, namespace)))) throw new VectorError(404, `Namespace ${namespace} does not exist`);
    if (namespace === newNamespace) return false;
    if (await this.calls.state(session, () => this.state.exists(id, newNamespace))) {
      if (!input.deleteExisting) {
        throw VectorError.badRequest(`newNamespace: namespace ${newNamespace} already exists; pass deleteExisting: true to replace it`);
      }
      await this.calls.engine(session, () => session.store.deleteWhere(newNamespace));
    }
    const all: Want = { vector: true, metadata: true, data: true };
    // Page by page: write the page under the new namespace, then delete it from the old one.
    for (;;) {
      const page = await this.calls.engine(session, () => session.store.scroll(namespace, 0, 256, all));
      if (page.length === 0) break;
      await this.calls.engine(session, () => session.store.upsert(newNamespace, page));
      await this.calls.engine(session, () => session.store.deleteIds(namespace, page.map((v) => v.id)));
    }
    await this.calls.state(session, () => this.state.rename(id, namespace, newNamespace));
    await this.idf.wrote(session, namespace);
    await this.idf.wrote(session, newNamespace);
    return true;
  }


  /** `/reset`: empties a namespace (`all`: every namespace); namespaces stay listed. */
  async reset(session: IndexSession, namespace: string, all: boolean): Promise<void> {
    const id = session.index.id;
    if (all) {
      await this.calls.engine(session, () => session.store.deleteAll());
      await this.calls.state(session, async () => this.state.restart(id, await this.state.namespaces(id)));
      await this.idf.wrote(session, '*');
    } else {
      await this.calls.engine(session, () => session.store.deleteWhere(namespace));
      await this.calls.state(session, () => this.state.restart(id, [namespace]));
      await this.idf.wrote(session, namespace);
    }
  }

  /**
   * `/info` (docs/vector.md, "Vector: endpoints"), with the SDK's `namespaces`, `indexType` and `denseIndex`.
   * `namespaces` holds exactly the namespaces `list-namespaces` answers, each with its vector count;
   * `vectorCount` counts every vector of the index's collection.
   */
  async info(session: IndexSession): Promise<IndexInfo> {
    const { index } = session;
    const [counts, names] = await Promise.all([
      this.calls.engine(session, () => session.store.countByNamespace()),
      this.calls.state(session, () => this.state.namespaces(index.id)),
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
        ? // `embeddingModel` always, "" without a model: upstash-vector for Python reads the key unconditionally.
          { denseIndex: { dimension: index.dimension, similarityFunction: index.similarityFunction, embeddingModel: embeddingModel ?? '' } }
        : {}),
      ...(index.indexType !== 'DENSE' ? { sparseIndex: sparseModel ? { embeddingModel: sparseModel } : {} } : {}),
      namespaces,
    };
  }

  /** `/list-namespaces`: every namespace, "" included. */
  listNamespaces(session: IndexSession): Promise<string[]> {
    return this.calls.state(session, () => this.state.namespaces(session.index.id));
  }

  /** `/delete-namespace/<ns>`: removes a namespace and its vectors; the default one cannot go. */
  async deleteNamespace(session: IndexSession, namespace: string): Promise<void> {
    if (namespace === '') throw VectorError.badRequest('The default namespace cannot be deleted');
    const id = session.index.id;
    if (!(await this.calls.state(session, () => this.state.exists(id, namespace)))) throw new VectorError(404, `Namespace ${namespace} does not exist`);
    await this.calls.engine(session, () => session.store.deleteWhere(namespace));
    await this.calls.state(session, () => this.state.remove(id, namespace));
    await this.idf.wrote(session, namespace);
  }

  /** Ids of the namespace's vectors that pass `keep`, walking it in insertion order. */
  private async collectIds(session: IndexSession, namespace: string, keep: (v: StoredVector) => boolean, metadata: boolean): Promise<string[]> {
    const ids: string[] = [];
    await this.calls.engine(session, () =>
      session.store.walk(namespace, 0, { vector: false, metadata, data: false }, (page) => {
        for (const v of page) if (keep(v)) ids.push(v.id);
        return true;
      }),
    );
    return ids;
  }
}
