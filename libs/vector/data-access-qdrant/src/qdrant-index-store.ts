import { QdrantClient } from '@qdrant/js-client-rest';
import { Agent, request } from 'undici';
import { EngineUnavailableError, type IndexLocation, type QdrantFilter, type ScoredVector, type SearchQuery, type SparseVector, type StoredVector, type Want, BM25_MODEL } from './vectors';

/**
 * Payload layout of a point (docs/vector.md, "Vector: storage in Qdrant"): the namespace is a keyword-indexed partition, the
 * string id and the insertion number are kept beside metadata and data. For COSINE indexes Qdrant
 * stores the vector normalised, so the vector as given is kept in the payload too: `fetch` must
 * give back what was upserted.
 */
const KEY = { namespace: 'ns', id: 'id', seq: 'seq', metadata: 'metadata', data: 'data', content: 'content', vector: 'vector', sparseDims: 'sd' } as const;

/** Names of the vectors of SPARSE and HYBRID collections (DENSE collections keep one unnamed vector). */
const NAMED = { dense: 'dense', sparse: 'sparse' } as const;

/** Size of a scroll page when the store walks a namespace (prefix reads and deletes). */
const WALK_PAGE = 1000;

interface Point {
  id: string | number;
  score?: number;
  payload?: Record<string, unknown> | null;
  vector?: unknown;
}

/**
 * One vector index over one Qdrant collection: the Upstash model (namespaces, string ids,
 * insertion order) mapped onto points and payload. Every write waits for Qdrant to apply it, so a
 * read after an acknowledged write sees it.
 *
 * Every method throws {@link EngineUnavailableError} when Qdrant cannot be reached or fails.
 */
export class QdrantIndexStore {
  private ensured: Promise<void> | undefined;

  /**
   * @param http the connection pool of the searches (postJson) and how long one may wait for Qdrant's
   *   headers or body, in ms (the client's own timeout covers the other calls)
   */
  constructor(
    private readonly client: QdrantClient,
    readonly location: IndexLocation,
    private readonly pointId: (namespace: string, id: string) => string,
    private readonly http: { agent: Agent; timeoutMs: number } = { agent: new Agent(), timeoutMs: 30_000 },
  ) {}

  /**
   * Creates the collection (vectors of the index's size and distance; keyword index on the namespace,
   * integer index on the insertion number) unless it exists. Memoised; retried after a failure.
   */
  ensureCollection(): Promise<void> {
    this.ensured ??= this.call(async () => {
      const { collection, dimension, distance } = this.location;
      const type = this.type;
      if (!(await this.client.collectionExists(collection)).exists) {
        const shape =
          type === 'DENSE'
            ? { vectors: { size: dimension, distance } }
            : {
                vectors: type === 'HYBRID' ? { [NAMED.dense]: { size: dimension, distance } } : {},
                sparse_vectors: { [NAMED.sparse]: { modifier: 'idf' as const } },
              };
        try {
          await this.client.createCollection(collection, shape);
        } catch (error) {
          if (status(error) !== 409) throw error; // another replica created it first
        }
      }
      await this.client.createPayloadIndex(collection, { field_name: KEY.namespace, field_schema: 'keyword', wait: true });
      await this.client.createPayloadIndex(collection, { field_name: KEY.seq, field_schema: 'integer', wait: true });
      if (type !== 'DENSE') await this.client.createPayloadIndex(collection, { field_name: KEY.sparseDims, field_schema: 'integer', wait: true });
    });
    this.ensured.catch(() => (this.ensured = undefined));
    return this.ensured;
  }

  /**
   * Inserts or replaces vectors of one namespace. Each carries its sequence number and the vectors of
   * the index type: `vector` (DENSE, HYBRID) and `sparseVector` or `sparseText` (SPARSE, HYBRID). The
   * dimensions of each sparse vector are kept in the payload (integer-indexed) so that IDF can count
   * the vectors having a dimension; vectors embedded by the engine (`sparseText`) are read back and
   * written again with their dimensions.
   */
  async upsert(namespace: string, vectors: StoredVector[]): Promise<void> {
    await this.op(() => this.client.upsert(this.location.collection, { wait: true, points: vectors.map((v) => this.toPoint(namespace, v)) }));
    const embedded = vectors.filter((v) => v.sparseText !== undefined && v.sparseVector === undefined);
    if (embedded.length === 0) return;
    const read = await this.retrieve(namespace, embedded.map((v) => v.id), { vector: false, metadata: false, data: false, sparse: true });
    const concrete = embedded.map(({ sparseText: _, ...v }) => ({ ...v, sparseVector: read.get(v.id)?.sparseVector ?? { indices: [], values: [] } }));
    await this.op(() => this.client.upsert(this.location.collection, { wait: true, points: concrete.map((v) => this.toPoint(namespace, v)) }));
  }

  /** The index type (DENSE when the location does not say). */
  get type(): 'DENSE' | 'SPARSE' | 'HYBRID' {
    return this.location.type ?? 'DENSE';
  }

  private toPoint(namespace: string, v: StoredVector) {
    const cosine = this.location.distance === 'Cosine';
    const type = this.type;
    const sparse = v.sparseVector ?? (v.sparseText !== undefined ? { text: v.sparseText, model: BM25_MODEL } : undefined);
    const vector = type === 'DENSE' ? (v.vector as number[]) : { ...(type === 'HYBRID' ? { [NAMED.dense]: v.vector as number[] } : {}), [NAMED.sparse]: sparse };
    return {
      id: this.pointId(namespace, v.id),
      vector: vector as number[],
      payload: {
        [KEY.namespace]: namespace,
        [KEY.id]: v.id,
        [KEY.seq]: v.seq,
        ...(v.metadata !== undefined ? { [KEY.metadata]: v.metadata } : {}),
        ...(v.data !== undefined ? { [KEY.data]: v.data } : {}),
        ...(v.content !== undefined ? { [KEY.content]: v.content } : {}),
        ...(cosine && type !== 'SPARSE' ? { [KEY.vector]: v.vector } : {}),
        ...(v.sparseVector ? { [KEY.sparseDims]: v.sparseVector.indices } : {}),
      },
    };
  }

  /** The vectors with these ids that exist, by id. */
  async retrieve(namespace: string, ids: string[], want: Want): Promise<Map<string, StoredVector>> {
    const points = await this.op(() =>
      this.client.retrieve(this.location.collection, {
        ids: ids.map((id) => this.pointId(namespace, id)),
        with_payload: this.payloadKeys(want),
        with_vector: this.wantsQdrantVector(want),
      }),
    );
    return new Map(points.map((p) => [String(p.payload?.[KEY.id]), this.toStored(p as Point)]));
  }

  /**
   * The nearest vectors in a namespace, best first, on the side the query names: Qdrant's raw score of
   * that side (a sparse side's score carries Qdrant's IDF over the whole collection; callers rescore).
   * @param query a dense vector (`number[]` as before, or `{dense}`), a sparse vector, or text to embed with BM25
   * @param page `limit` and `offset` in results; `filter` narrows further (a Qdrant filter)
   */
  async search(namespace: string, query: number[] | SearchQuery, page: { limit: number; offset: number; filter?: QdrantFilter }, want: Want): Promise<ScoredVector[]> {
    const q: SearchQuery = Array.isArray(query) ? { dense: query } : query;
    const { points } = await this.op(() =>
      this.postJson<{ points: Array<Point & { score: number }> }>('points/query', {
        ...this.queryBody(q),
        filter: this.inNamespace(namespace, page.filter),
        limit: page.limit,
        offset: page.offset,
        with_payload: this.payloadKeys(want),
        with_vector: this.wantsQdrantVector(want),
      }),
    );
    return points.map((p) => ({ ...this.toStored(p), rawScore: p.score }));
  }

  /**
   * A hybrid search fused by the engine: each side's best `depth` hits (prefetches), fused with Qdrant's
   * RRF at constant `k` (Σ 1 / (k + rank), rank 0-based), the best `limit` of the fused list with
   * their fused scores. Only the final hits carry payload and vectors.
   * @param filter narrows both sides (a Qdrant filter)
   */
  async fusedSearch(
    namespace: string,
    sides: SearchQuery[],
    options: { depth: number; limit: number; k: number; filter?: QdrantFilter },
    want: Want,
  ): Promise<ScoredVector[]> {
    const filter = this.inNamespace(namespace, options.filter);
    const { points } = await this.op(() =>
      this.postJson<{ points: Array<Point & { score: number }> }>('points/query', {
        prefetch: sides.map((side) => ({ ...this.queryBody(side), filter, limit: options.depth })),
        query: { rrf: { k: options.k } },
        filter,
        limit: options.limit,
        with_payload: this.payloadKeys(want),
        with_vector: this.wantsQdrantVector(want),
      }),
    );
    return points.map((p) => ({ ...this.toStored(p), rawScore: p.score }));
  }

  /** One vector of the namespace picked at random, or null when it is empty. */
  async random(namespace: string, want: Want): Promise<StoredVector | null> {
    const { points } = await this.op(() =>
      this.client.query(this.location.collection, {
        query: { sample: 'random' },
        filter: this.inNamespace(namespace),
        limit: 1,
        with_payload: this.payloadKeys(want),
        with_vector: this.wantsQdrantVector(want),
      }),
    );
    return points[0] ? this.toStored(points[0] as Point) : null;
  }

  /** Up to `limit` vectors of the namespace in insertion order, from sequence number `fromSeq` on. */
  async scroll(namespace: string, fromSeq: number, limit: number, want: Want): Promise<StoredVector[]> {
    const { points } = await this.op(() =>
      this.client.scroll(this.location.collection, {
        filter: this.inNamespace(namespace),
        limit,
        order_by: { key: KEY.seq, direction: 'asc', start_from: fromSeq },
        with_payload: this.payloadKeys(want),
        with_vector: this.wantsQdrantVector(want),
      }),
    );
    return points.map((p) => this.toStored(p as Point));
  }

  /**
   * Walks the namespace in insertion order from `fromSeq`, calling `visit` with each page, until
   * `visit` returns false or the namespace ends.
   */
  async walk(namespace: string, fromSeq: number, want: Want, visit: (page: StoredVector[]) => boolean): Promise<void> {
    let from = fromSeq;
    for (;;) {
      const page = await this.scroll(namespace, from, WALK_PAGE, want);
      if (page.length === 0 || !visit(page) || page.length < WALK_PAGE) return;
      from = (page[page.length - 1] as StoredVector).seq + 1;
    }
  }

  /**
   * Vector count of each namespace that holds any (Qdrant's exact facet over the namespace key). The
   * facet can still name a value whose points are all gone, with count 0 (qdrant-local does after a
   * namespace's points are deleted): such namespaces are left out.
   */
  async countByNamespace(): Promise<Map<string, number>> {
    const { hits } = await this.op(() =>
      this.client.facet(this.location.collection, { key: KEY.namespace, exact: true, limit: 1_000_000 }),
    );
    return new Map(hits.filter((h) => h.count > 0).map((h) => [String(h.value), h.count]));
  }

  /** Deletes vectors by id in a namespace. */
  async deleteIds(namespace: string, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const points = ids.map((id) => this.pointId(namespace, id));
    await this.op(() => this.client.delete(this.location.collection, { wait: true, points }));
  }

  /** Deletes every vector of a namespace that matches `filter` (all of them without one). */
  async deleteWhere(namespace: string, filter?: QdrantFilter): Promise<void> {
    await this.op(() => this.client.delete(this.location.collection, { wait: true, filter: this.inNamespace(namespace, filter) }));
  }

  /** How many vectors of a namespace have each of these sparse dimensions (IDF's n), by dimension. */
  async countWithDimensions(namespace: string, dimensions: number[]): Promise<Map<number, number>> {
    const counts = await Promise.all(
      dimensions.map((d) => this.count(namespace, { must: [{ key: KEY.sparseDims, match: { value: d } }] })),
    );
    return new Map(dimensions.map((d, i) => [d, counts[i] as number]));
  }

  /** Counts vectors of a namespace matching `filter`. */
  async count(namespace: string, filter?: QdrantFilter): Promise<number> {
    const { count } = await this.op(() => this.client.count(this.location.collection, { filter: this.inNamespace(namespace, filter), exact: true }));
    return count;
  }

  /** Counts the vectors of every namespace of the collection. */
  async countAll(): Promise<number> {
    const { count } = await this.op(() => this.client.count(this.location.collection, { exact: true }));
    return count;
  }

  /** Deletes every vector of every namespace. */
  async deleteAll(): Promise<void> {
    await this.op(() => this.client.delete(this.location.collection, { wait: true, filter: {} }));
  }

  /** The `query` and `using` of a search on the side the query names. */
  private queryBody(q: SearchQuery): { query: unknown; using?: string } {
    if ('dense' in q) return this.type === 'DENSE' ? { query: q.dense } : { query: q.dense, using: NAMED.dense };
    return { query: 'sparse' in q ? q.sparse : { text: q.sparseText, model: BM25_MODEL }, using: NAMED.sparse };
  }

  private inNamespace(namespace: string, filter?: QdrantFilter): QdrantFilter {
    const must: unknown[] = [{ key: KEY.namespace, match: { value: namespace } }];
    if (filter) must.push(filter);
    return { must };
  }

  private payloadKeys(want: Want): string[] {
    const keys: string[] = [KEY.id, KEY.seq];
    if (want.metadata) keys.push(KEY.metadata);
    if (want.data) keys.push(KEY.data, KEY.content);
    if (want.vector && this.location.distance === 'Cosine' && this.type !== 'SPARSE') keys.push(KEY.vector);
    return keys;
  }

  /** Qdrant's `with_vector`: the stored dense vector unless the payload keeps it (COSINE), and the sparse one. */
  private wantsQdrantVector(want: Want): boolean | string[] {
    const type = this.type;
    const dense = want.vector && this.location.distance !== 'Cosine';
    if (type === 'DENSE') return dense;
    const names: string[] = [];
    if (dense && type === 'HYBRID') names.push(NAMED.dense);
    if (want.vector || want.sparse) names.push(NAMED.sparse);
    return names.length > 0 ? names : false;
  }

  private toStored(point: Point): StoredVector {
    const payload = point.payload ?? {};
    const out: StoredVector = { id: String(payload[KEY.id]), seq: Number(payload[KEY.seq]) };
    const type = this.type;
    const named = type === 'DENSE' ? undefined : ((point.vector ?? {}) as Record<string, unknown>);
    const vector = this.location.distance === 'Cosine' ? payload[KEY.vector] : named ? named[NAMED.dense] : point.vector;
    if (Array.isArray(vector)) out.vector = vector as number[];
    const sparse = named?.[NAMED.sparse] as SparseVector | undefined;
    if (sparse && Array.isArray(sparse.indices) && Array.isArray(sparse.values)) out.sparseVector = { indices: sparse.indices, values: sparse.values };
    if (payload[KEY.metadata] !== undefined) out.metadata = payload[KEY.metadata] as Record<string, unknown>;
    if (payload[KEY.data] !== undefined) out.data = payload[KEY.data] as string;
    if (payload[KEY.content] !== undefined) out.content = payload[KEY.content] as Record<string, unknown>;
    return out;
  }

  /**
   * POSTs JSON to an endpoint of the collection (`/collections/<c>/<path>`) and answers Qdrant's `result`.
   * The searches, the gateway's hot path, go through here (undici's `request` on the stores' shared
   * Agent) rather than through @qdrant/js-client-rest, whose fetcher parses every response with a
   * `JSON.parse` reviver (for 64-bit integers; our point ids are UUIDs and our payload numbers are
   * small): measured on 2026-11-23, that reviver took 37% of the gateway's CPU in the sparse query
   * benchmark, and WHATWG fetch's streams most of the rest of the HTTP cost.
   * @throws an error with Qdrant's `status` and `data` when it answers other than 2xx (see describe)
   */
  private async postJson<T>(path: string, body: unknown): Promise<T> {
    const { url, apiKey, collection } = this.location;
    const response = await request(`${url.replace(/\/+$/, '')}/collections/${encodeURIComponent(collection)}/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(apiKey ? { 'api-key': apiKey } : {}) },
      body: JSON.stringify(body),
      dispatcher: this.http.agent,
      headersTimeout: this.http.timeoutMs,
      bodyTimeout: this.http.timeoutMs,
    });
    const text = await response.body.text();
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
    if (response.statusCode < 200 || response.statusCode > 299) throw Object.assign(new Error(`Qdrant answered ${response.statusCode}`), { status: response.statusCode, data });
    return (data as { result: T }).result;
  }

  /** Runs a call on the collection, creating it first if needed. */
  private async op<T>(run: () => Promise<T>): Promise<T> {
    await this.ensureCollection();
    return this.call(run);
  }

  private async call<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (status(error) === 404) this.ensured = undefined; // the collection went away: create it again next time
      throw new EngineUnavailableError(describe(error), status(error));
    }
  }
}

/** The HTTP status of a Qdrant error response, if the error is one. */
function status(error: unknown): number | undefined {
  const s = (error as { status?: unknown })?.status;
  return typeof s === 'number' ? s : undefined;
}

function describe(error: unknown): string {
  const data = (error as { data?: { status?: { error?: string } } })?.data;
  const detail = data?.status?.error ?? (error instanceof Error ? `${error.message}${error.cause ? `: ${String(error.cause)}` : ''}` : String(error));
  const code = status(error);
  return code ? `Qdrant answered ${code}: ${detail}` : `Qdrant unreachable: ${detail}`;
}
