import { QdrantClient } from '@qdrant/js-client-rest';

/** A Qdrant filter as its REST API takes it (`Schemas['Filter']`), kept structural on purpose. */
export type QdrantFilter = Record<string, unknown>;

/** Where an index lives and how its collection is shaped. */
export interface IndexLocation {
  url: string;
  apiKey?: string;
  collection: string;
  dimension: number;
  distance: 'Cosine' | 'Euclid' | 'Dot';
}

/** A vector as the API sees it, inside one namespace. */
export interface StoredVector {
  id: string;
  /** Insertion sequence number within the namespace: the order `range` pages in. */
  seq: number;
  vector?: number[];
  metadata?: Record<string, unknown>;
  data?: string;
}

/** A search hit with Qdrant's raw score (similarity, dot product or distance by metric). */
export interface ScoredVector extends StoredVector {
  rawScore: number;
}

/** Which stored parts a read returns; the id and sequence number always come back. */
export interface Want {
  vector: boolean;
  metadata: boolean;
  data: boolean;
}

/**
 * The engine could not be reached, timed out, or failed; the API answers 503. `status` is Qdrant's
 * HTTP status when it answered (e.g. 503 for a collection qdrant-local could not load).
 */
export class EngineUnavailableError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'EngineUnavailableError';
  }
}

/**
 * Payload layout of a point (README, "Vector: storage in Qdrant"): the namespace is a keyword-indexed partition, the
 * string id and the insertion number are kept beside metadata and data. For COSINE indexes Qdrant
 * stores the vector normalised, so the vector as given is kept in the payload too: `fetch` must
 * give back what was upserted.
 */
const KEY = { namespace: 'ns', id: 'id', seq: 'seq', metadata: 'metadata', data: 'data', vector: 'vector' } as const;

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

  constructor(
    private readonly client: QdrantClient,
    readonly location: IndexLocation,
    private readonly pointId: (namespace: string, id: string) => string,
  ) {}

  /**
   * Creates the collection (vectors of the index's size and distance; keyword index on the namespace,
   * integer index on the insertion number) unless it exists. Memoised; retried after a failure.
   */
  ensureCollection(): Promise<void> {
    this.ensured ??= this.call(async () => {
      const { collection, dimension, distance } = this.location;
      if (!(await this.client.collectionExists(collection)).exists) {
        try {
          await this.client.createCollection(collection, { vectors: { size: dimension, distance } });
        } catch (error) {
          if (status(error) !== 409) throw error; // another replica created it first
        }
      }
      await this.client.createPayloadIndex(collection, { field_name: KEY.namespace, field_schema: 'keyword', wait: true });
      await this.client.createPayloadIndex(collection, { field_name: KEY.seq, field_schema: 'integer', wait: true });
    });
    this.ensured.catch(() => (this.ensured = undefined));
    return this.ensured;
  }

  /** Inserts or replaces vectors of one namespace (each must carry its vector and sequence number). */
  async upsert(namespace: string, vectors: StoredVector[]): Promise<void> {
    const cosine = this.location.distance === 'Cosine';
    const points = vectors.map((v) => ({
      id: this.pointId(namespace, v.id),
      vector: v.vector as number[],
      payload: {
        [KEY.namespace]: namespace,
        [KEY.id]: v.id,
        [KEY.seq]: v.seq,
        ...(v.metadata !== undefined ? { [KEY.metadata]: v.metadata } : {}),
        ...(v.data !== undefined ? { [KEY.data]: v.data } : {}),
        ...(cosine ? { [KEY.vector]: v.vector } : {}),
      },
    }));
    await this.op(() => this.client.upsert(this.location.collection, { wait: true, points }));
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
   * The nearest vectors in a namespace, best first.
   * @param page `limit` and `offset` in results; `filter` narrows further (a Qdrant filter)
   */
  async search(namespace: string, vector: number[], page: { limit: number; offset: number; filter?: QdrantFilter }, want: Want): Promise<ScoredVector[]> {
    const { points } = await this.op(() =>
      this.client.query(this.location.collection, {
        query: vector,
        filter: this.inNamespace(namespace, page.filter),
        limit: page.limit,
        offset: page.offset,
        with_payload: this.payloadKeys(want),
        with_vector: this.wantsQdrantVector(want),
      }),
    );
    return points.map((p) => ({ ...this.toStored(p as Point), rawScore: p.score }));
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

  /** Vector count of each namespace that holds any (Qdrant's facet over the namespace key). */
  async countByNamespace(): Promise<Map<string, number>> {
    const { hits } = await this.op(() =>
      this.client.facet(this.location.collection, { key: KEY.namespace, exact: true, limit: 1_000_000 }),
    );
    return new Map(hits.map((h) => [String(h.value), h.count]));
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

  /** Counts vectors of a namespace matching `filter`. */
  async count(namespace: string, filter?: QdrantFilter): Promise<number> {
    const { count } = await this.op(() => this.client.count(this.location.collection, { filter: this.inNamespace(namespace, filter), exact: true }));
    return count;
  }

  /** Deletes every vector of every namespace. */
  async deleteAll(): Promise<void> {
    await this.op(() => this.client.delete(this.location.collection, { wait: true, filter: {} }));
  }

  private inNamespace(namespace: string, filter?: QdrantFilter): QdrantFilter {
    const must: unknown[] = [{ key: KEY.namespace, match: { value: namespace } }];
    if (filter) must.push(filter);
    return { must };
  }

  private payloadKeys(want: Want): string[] {
    const keys: string[] = [KEY.id, KEY.seq];
    if (want.metadata) keys.push(KEY.metadata);
    if (want.data) keys.push(KEY.data);
    if (want.vector && this.location.distance === 'Cosine') keys.push(KEY.vector);
    return keys;
  }

  private wantsQdrantVector(want: Want): boolean {
    return want.vector && this.location.distance !== 'Cosine';
  }

  private toStored(point: Point): StoredVector {
    const payload = point.payload ?? {};
    const out: StoredVector = { id: String(payload[KEY.id]), seq: Number(payload[KEY.seq]) };
    const vector = this.location.distance === 'Cosine' ? payload[KEY.vector] : point.vector;
    if (Array.isArray(vector)) out.vector = vector as number[];
    if (payload[KEY.metadata] !== undefined) out.metadata = payload[KEY.metadata] as Record<string, unknown>;
    if (payload[KEY.data] !== undefined) out.data = payload[KEY.data] as string;
    return out;
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

/**
 * Qdrant clients by endpoint and stores by index, shared by every request of a gateway. Stores of an
 * index live until {@link drop}; a client lives while a store uses it.
 */
export class QdrantStores {
  private readonly clients = new Map<string, QdrantClient>();
  private readonly stores = new Map<string, QdrantIndexStore>();

  constructor(
    private readonly options: { timeoutMs: number },
    private readonly pointId: (namespace: string, id: string) => string,
  ) {}

  /** The store of an index; a changed location (collection, shape or endpoint) gives a new one. */
  get(indexId: string, location: IndexLocation): QdrantIndexStore {
    const key = `${indexId}\0${JSON.stringify(location)}`;
    let store = this.stores.get(key);
    if (!store) {
      const clientKey = `${location.url}\0${location.apiKey ?? ''}`;
      let client = this.clients.get(clientKey);
      if (!client) {
        // checkCompatibility off: a version probe per client would warn for every Qdrant minor release.
        client = new QdrantClient({ url: location.url, apiKey: location.apiKey, timeout: this.options.timeoutMs, checkCompatibility: false });
        this.clients.set(clientKey, client);
      }
      store = new QdrantIndexStore(client, location, this.pointId);
      this.stores.set(key, store);
    }
    return store;
  }

  /** Forgets every store of an index, and the clients no store uses any more (its record changed or went). */
  drop(indexId: string): void {
    for (const key of this.stores.keys()) if (key.startsWith(`${indexId}\0`)) this.stores.delete(key);
    const used = new Set([...this.stores.values()].map((s) => `${s.location.url}\0${s.location.apiKey ?? ''}`));
    for (const key of this.clients.keys()) if (!used.has(key)) this.clients.delete(key);
  }

  /** How many index stores are open. */
  get size(): number {
    return this.stores.size;
  }
}
