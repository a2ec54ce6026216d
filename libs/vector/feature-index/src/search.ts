import { randomUUID } from 'node:crypto';
import type { ScoredVector, SearchQuery, StoredVector, Want } from '@restash/vector/data-access-qdrant';
import { METADATA_PREFIX, matchesFilter } from '@restash/vector/util-filter';
import {
  type Candidate,
  type Includes,
  type QueryInput,
  RRF_K,
  type ResumableStartInput,
  type SparseVector,
  VectorError,
  checkDimension,
  exactScore,
  float32Score,
  fuse,
  normaliseScore,
  sparseScore,
} from '@restash/vector/util-query';
import type { BackendCalls } from './backend-calls';
import type { IndexEmbedding } from './embedding';
import { type PreparedFilter, byScoreThenId, prepareFilter, wantOf } from './filters';
import type { IdfStatistics, IdfWeights } from './idf';
import type { IndexSession, IndexStatePort, VectorIndexLimits } from './ports';
import type { SparseScope, SparseVectorCache } from './sparse-vector-cache';

/** What an Upstash Search filter reads of a document: its content's fields, and its metadata under `@metadata`. */
function searchFields(hit: StoredVector): Record<string, unknown> {
  return { ...hit.content, [METADATA_PREFIX]: hit.metadata };
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

/**
 * A sparse search whose ranking is already exact reads this many hits beyond those it needs, to rescore
 * them in float32 (the engine's summation order may differ in the last bit) before cutting.
 */
const SPARSE_EXACT_MARGIN = 2;

/** Which side(s) of the index a query searches, with what. */
interface Plan {
  dense?: number[];
  sparse?: SearchQuery & ({ sparse: SparseVector } | { sparseText: string });
}

/**
 * The Vector API's queries (docs/vector.md, "Vector: index types", "Vector: scores and number formatting"): `/query`,
 * `/query-data` and resumable queries on the dense, sparse or both sides of an index, with hits in a total order,
 * scores as Upstash computes them, filters applied exactly.
 *
 * Methods throw VectorError: 400 for a query the index cannot answer, 404 for an unknown resumable query, 422/502
 * from embedding, 503 when Qdrant cannot be reached; TenantDenied `registry-unavailable` for the control Redis.
 */
export class VectorSearch {
  constructor(
    private readonly state: IndexStatePort,
    private readonly calls: BackendCalls,
    private readonly embedding: IndexEmbedding,
    private readonly idf: IdfStatistics,
    private readonly sparseVectors: SparseVectorCache,
    private readonly limits: VectorIndexLimits,
  ) {}

  /**
   * `/query` and `/query-data`: the hits of each query, in order. A one-sided query's hits are the first
   * `topK` in the total order (score, then id: searchTotal), so among tied scores the engine does not
   * pick which make the cut, and the hits of a smaller `topK` are the first ones of a larger `topK`.
   */
  query(session: IndexSession, namespace: string, queries: QueryInput[]): Promise<ScoredVector[][]> {
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
   * expected scores: docs/vector.md, "Vector: index types"), so no vector comes twice.
   */
  async resumableStart(session: IndexSession, namespace: string, input: ResumableStartInput): Promise<{ uuid: string; hits: ScoredVector[] }> {
    const plan = await this.plan(session, input);
    const both = plan.dense !== undefined && plan.sparse !== undefined;
    const hits = both
      ? await this.fused(session, namespace, input, plan, input.topK, input.topK, new Set())
      : await this.searchTotal(session, namespace, input, plan, input.topK);
    const uuid = randomUUID();
    await this.calls.state(session, () =>
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
  async resumableNext(session: IndexSession, uuid: string, additionalK: number): Promise<{ hits: ScoredVector[]; include: Includes }> {
    const state = await this.calls.state(session, () => this.state.loadResumable(uuid));
    if (!state || state.index !== session.index.id) throw new VectorError(404, `Resumable query ${uuid} not found: it ended or idled out`);
    const depth = state.returned + additionalK;
    const hits = state.seen
      ? await this.fused(session, state.namespace, state.query, state.plan, depth, additionalK, new Set(state.seen))
      : (await this.searchTotal(session, state.namespace, state.query, state.plan, depth)).slice(state.returned);
    const seen = state.seen ? { seen: [...state.seen, ...hits.map((h) => h.id)] } : {};
    await this.calls.state(session, () => this.state.saveResumable(uuid, { ...state, ...seen, returned: state.returned + hits.length }));
    return { hits, include: state.query.include };
  }

  /** `/resumable-query-end`. */
  async resumableEnd(session: IndexSession, uuid: string): Promise<void> {
    const state = await this.calls.state(session, () => this.state.loadResumable(uuid));
    if (!state || state.index !== session.index.id) throw new VectorError(404, `Resumable query ${uuid} not found: it ended or idled out`);
    await this.calls.state(session, () => this.state.endResumable(uuid));
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
  private async searchTotal(session: IndexSession, namespace: string, q: QueryInput, plan: Plan, limit: number): Promise<ScoredVector[]> {
    const cap = Math.max(limit + 1, this.limits.filterScanLimit);
    for (let fetch = limit + 1; ; fetch = Math.min(fetch * 2, cap)) {
      const hits = await this.search(session, namespace, q, plan, fetch);
      const last = hits[limit - 1];
      if (hits.length < fetch || !last || (hits[fetch - 1] as ScoredVector).rawScore < last.rawScore || fetch >= cap) {
        return hits.slice(0, limit);
      }
    }
  }

  /**
   * What a query searches (docs/vector.md, "Vector: index types"): a DENSE index its dense side, a SPARSE index
   * its sparse side, a HYBRID index the sides its vectors (or `queryMode`) name; `data` is embedded for
   * the sides searched, the sparse side by BM25 on the engine.
   * @throws VectorError 400 when `queryMode` names a side the query has no vector for; 422 when data cannot be embedded
   */
  private async plan(session: IndexSession, q: QueryInput): Promise<Plan> {
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
        this.embedding.sparseModel(session);
        plan.sparse = { sparseText: q.data as string };
      }
      if (wantsDense) plan.dense = (await this.embedding.embed(session, [q.data as string]))[0] as number[];
    }
    if (plan.dense) checkDimension(plan.dense, session.index.dimension);
    return plan;
  }

  /** The best `limit` hits of a one-sided query, filter applied exactly, scores final; in total order (byScoreThenId). */
  private search(session: IndexSession, namespace: string, q: QueryInput, plan: Plan, limit: number): Promise<ScoredVector[]> {
    const filter = q.filter === undefined ? undefined : prepareFilter(q.filter, q.filterOn ?? 'metadata');
    const want = wantOf(q.include);
    return plan.dense
      ? this.denseSide(session, namespace, plan.dense, filter, limit, want)
      : this.sparseSide(session, namespace, q, plan.sparse as NonNullable<Plan['sparse']>, filter, limit, want);
  }

  /**
   * A query on both sides of a hybrid index: the best `depth` hits of each side, less the ids in
   * `seen`, fused with the query's algorithm (RRF by default; docs/vector.md, "Vector: index types"); the
   * first `take` of the fused list, `rawScore` being the fused score. DBSF fuses dense scores
   * computed in float32 from the stored vectors, as Upstash does (float32Score). An RRF query whose
   * sides the engine ranks as Upstash does (a text query's sparse side, BM25 on the engine, or an IDF
   * query's on a namespace that is the whole collection: IdfStats.exclusive; no `seen`, no filter the
   * gateway must apply itself) is fused by the engine in one request (Qdrant's RRF with k 60 is Upstash's formula;
   * its score is summed in float32, ties in the engine's order).
   */
  private async fused(session: IndexSession, namespace: string, q: QueryInput, plan: Plan, depth: number, take: number, seen: ReadonlySet<string>): Promise<ScoredVector[]> {
    const filter = q.filter === undefined ? undefined : prepareFilter(q.filter, q.filterOn ?? 'metadata');
    const algorithm = q.fusionAlgorithm ?? 'RRF';
    const want = wantOf(q.include);
    const dense = plan.dense as number[];
    const sparse = plan.sparse as NonNullable<Plan['sparse']>;
    const idf = 'sparse' in sparse && q.weightingStrategy === 'IDF' ? await this.idf.weights(session, namespace, sparse.sparse.indices) : undefined;
    const engineRanksSparse = !('sparse' in sparse) || idf?.exclusive === true;
    if (algorithm === 'RRF' && seen.size === 0 && (!filter || filter.exact) && engineRanksSparse) {
      // Both sides' rankings are Upstash's: the engine fuses them with Upstash's RRF, in one request.
      const sides = [{ dense }, 'sparse' in sparse ? { sparse: sparse.sparse } : { sparseText: sparse.sparseText }];
      return this.calls.engine(session, () =>
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

  /** The best `limit` hits of the dense side, scores normalised (docs/vector.md, "Vector: scores and number formatting"), in total order. */
  private async denseSide(session: IndexSession, namespace: string, vector: number[], filter: PreparedFilter | undefined, limit: number, want: Want): Promise<ScoredVector[]> {
    const hits = await this.rawHits(session, namespace, { dense: vector }, filter, limit, want);
    const similarity = session.index.similarityFunction;
    const scored = hits.map((h) => ({ ...h, rawScore: normaliseScore(similarity, h.rawScore) }));
    return (await this.rescoreNearMatches(session, namespace, vector, scored)).sort(byScoreThenId);
  }

  /**
   * The best `limit` hits of the sparse side, in total order, scored exactly as Upstash does: the inner
   * product over shared dimensions, with `weightingStrategy: "IDF"` each query value times the
   * namespace's IDF of its dimension (docs/vector.md, "Vector: index types"). Qdrant ranks with its IDF modifier over
   * the whole collection, so a sparse vector query reads more candidates than it needs and rescores them:
   * {@link SPARSE_OVERFETCH} times more (at least {@link SPARSE_MIN_CANDIDATES}); only
   * {@link SPARSE_EXACT_MARGIN} more when the query asks for IDF and the namespace is the whole collection
   * (Qdrant's ranking is then Upstash's). A side of a fused query reads `fused.depth` candidates; with
   * `ranksOnly` (RRF) and an exact ranking it keeps Qdrant's order without reading sparse vectors, and
   * `fused.idf` is the IDF the fused query read already. A text query (BM25 on the engine) keeps
   * Qdrant's score, the query's sparse vector being the engine's.
   */
  private async sparseSide(
    session: IndexSession,
    namespace: string,
    q: QueryInput,
    query: NonNullable<Plan['sparse']>,
    filter: PreparedFilter | undefined,
    limit: number,
    want: Want,
    fused?: { depth: number; ranksOnly: boolean; idf?: IdfWeights },
  ): Promise<ScoredVector[]> {
    if (!('sparse' in query)) return (await this.rawHits(session, namespace, query, filter, limit, want)).sort(byScoreThenId);
    const idf = q.weightingStrategy !== 'IDF' ? undefined : (fused?.idf ?? (await this.idf.weights(session, namespace, query.sparse.indices)));
    if (idf?.exclusive && fused?.ranksOnly) {
      // RRF needs the ranks only, and the engine's are exact: no vectors to read, no rescoring.
      return (await this.rawHits(session, namespace, query, filter, fused.depth, want)).sort(byScoreThenId);
    }
    const overfetch = Math.min(Math.max(limit * SPARSE_OVERFETCH, SPARSE_MIN_CANDIDATES), this.limits.filterScanLimit);
    const fetch = fused?.depth ?? (idf?.exclusive ? limit + SPARSE_EXACT_MARGIN : Math.max(limit, overfetch));
    const version = idf?.version ?? (await this.calls.state(session, () => this.state.versions(session.index.id, namespace))).namespace;
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
  private async withSparseVectors(session: IndexSession, scope: SparseScope, hits: ScoredVector[]): Promise<ScoredVector[]> {
    const cached = this.sparseVectors.getMany(scope, hits.filter((h) => !h.sparseVector).map((h) => h.id));
    const missing = hits.filter((h) => !h.sparseVector && !cached.has(h.id)).map((h) => h.id);
    const read =
      missing.length > 0
        ? await this.calls.engine(session, () => session.store.retrieve(scope.namespace, missing, { vector: false, metadata: false, data: false, sparse: true }))
        : new Map<string, StoredVector>();
    return hits.map((h) => {
      const sparseVector = h.sparseVector ?? cached.get(h.id) ?? read.get(h.id)?.sparseVector;
      if (sparseVector && !cached.has(h.id)) this.sparseVectors.set(scope, h.id, sparseVector);
      return sparseVector ? { ...h, sparseVector } : h;
    });
  }

  /** Qdrant's best `limit` hits of one side with its raw scores, the filter applied exactly. */
  private async rawHits(session: IndexSession, namespace: string, query: SearchQuery, filter: PreparedFilter | undefined, limit: number, want: Want): Promise<ScoredVector[]> {
    if (!filter || filter.exact) {
      return this.calls.engine(session, () => session.store.search(namespace, query, { limit, offset: 0, filter: filter?.pushdown }, want));
    }
    // Qdrant narrows; the exact filter decides. Read pages until enough hits pass or the budget is spent.
    const hits: ScoredVector[] = [];
    const page = Math.max(limit * 4, 100);
    const onMetadata = filter.field === 'metadata';
    const read = onMetadata ? { ...want, metadata: true } : { ...want, metadata: true, data: true };
    const strip = (hit: ScoredVector): ScoredVector => ({
      ...hit,
      ...(want.metadata ? {} : { metadata: undefined }),
      ...(want.data ? {} : { data: undefined, content: undefined }),
    });
    for (let offset = 0; hits.length < limit && offset < this.limits.filterScanLimit; offset += page) {
      const batch = await this.calls.engine(session, () => session.store.search(namespace, query, { limit: page, offset, filter: filter.pushdown }, read));
      for (const hit of batch) if (hits.length < limit && matchesFilter(filter.node, onMetadata ? hit.metadata : searchFields(hit))) hits.push(strip(hit));
      if (batch.length < page) break;
    }
    return hits;
  }

  /**
   * Recomputes in float64 the scores of hits within float32 noise of either end of [0, 1], so that
   * a vector identical to the query scores exactly 1 (and an opposite one exactly 0) as on Upstash
   * (docs/vector.md, "Vector: scores and number formatting"): Qdrant's float32 cosine of a vector with
   * itself comes out as 0.9999999. Costs one extra read, and only when such a hit exists.
   */
  private async rescoreNearMatches(session: IndexSession, namespace: string, query: number[], hits: ScoredVector[]): Promise<ScoredVector[]> {
    const extreme = (score: number) => score > 1 - NEAR_EDGE || score < NEAR_EDGE;
    const near = hits.filter((h) => extreme(h.rawScore));
    if (near.length === 0) return hits;
    const want: Want = { vector: true, metadata: false, data: false };
    const stored = await this.calls.engine(session, () => session.store.retrieve(namespace, near.map((h) => h.id), want));
    const similarity = session.index.similarityFunction;
    return hits
      .map((h) => {
        const v = extreme(h.rawScore) ? stored.get(h.id)?.vector : undefined;
        return v ? { ...h, rawScore: exactScore(similarity, v, query) } : h;
      });
  }

}
