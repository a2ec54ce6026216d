import { FusionAlgorithm, Index, QueryMode, WeightingStrategy } from '@upstash/vector';
import { fuseRrf } from '@restash/vector/util-query';
import { type VectorStack, postApi as call, startVectorStack } from './testing/vector-stack';

type Meta = Record<string, unknown>;

/** The SDK's own sparse and hybrid test data (upstash/vector-js test-utils): three vectors, id2 with metadata and data. */
const SPARSE_DATA = [
  { id: 'id0', sparseVector: { indices: [0, 1], values: [0.1, 0.2] } },
  { id: 'id1', sparseVector: { indices: [1, 2], values: [0.2, 0.3] }, metadata: { key: 'value' } },
  { id: 'id2', sparseVector: { indices: [2, 3], values: [0.3, 0.4] }, metadata: { key: 'value' }, data: 'data' },
];
const DENSE_OF: Record<string, number[]> = { id0: [0.1, 0.2], id1: [0.2, 0.3], id2: [0.3, 0.4] };
const HYBRID_DATA = SPARSE_DATA.map((v) => ({ ...v, vector: DENSE_OF[v.id] as number[] }));

/**
 * The official `@upstash/vector` SDK against vector-gateway and qdrant-local on SPARSE and HYBRID
 * indexes (docs/vector.md, "Vector: index types"): the SDK's own expected scores (docs/vector.md, "Vector: index types"),
 * BM25 data on the engine, query modes, fusion, resumable queries, namespaces and rename.
 */
describe('vector-gateway sparse and hybrid indexes with the official SDK', () => {
  let stack: VectorStack;
  let sparse: Index<Meta>;
  let hybrid: Index<Meta>;
  let sparseText: Index<Meta>;
  let hybridText: Index<Meta>;
  let dense: Index<Meta>;

  beforeAll(async () => {
    stack = await startVectorStack({
      acme: [
        { name: 'sparse', type: 'SPARSE' },
        { name: 'hybrid', type: 'HYBRID', dimension: 2 },
        { name: 'sparse-text', type: 'SPARSE', bm25: true },
        { name: 'hybrid-text', type: 'HYBRID', dimension: 384, embedding: true, bm25: true },
        { name: 'dense', dimension: 2 },
      ],
    });
    const open = (name: string) => new Index<Meta>({ url: stack.url, token: stack.tokens('acme', name).standard });
    sparse = open('sparse');
    hybrid = open('hybrid');
    sparseText = open('sparse-text');
    hybridText = open('hybrid-text');
    dense = open('dense');
  }, 180_000);
  afterAll(() => stack?.stop());
  beforeEach(async () => {
    await Promise.all([sparse, hybrid, sparseText, hybridText, dense].map((i) => i.reset({ all: true })));
  });

  it('IDF follows every write of the namespace (cached statistics are versioned by writes), and only that namespace', async () => {
    const ns = sparse.namespace('idf');
    const idfQuery = () => ns.query({ sparseVector: { indices: [1], values: [1] }, topK: 5, weightingStrategy: WeightingStrategy.IDF });
    await ns.upsert([
      { id: 'a', sparseVector: { indices: [1], values: [1] } },
      { id: 'b', sparseVector: { indices: [2], values: [1] } },
    ]);
    // N = 2, n = 1: ln(1 + 1.5 / 1.5) = ln 2.
    expect(await idfQuery()).toEqual([{ id: 'a', score: 0.6931472 }]);
    await ns.upsert({ id: 'c', sparseVector: { indices: [1], values: [1] } });
    // N = 3, n = 2: ln(1 + 1.5 / 2.5) = ln 1.6.
    expect(await idfQuery()).toEqual([
      { id: 'a', score: 0.47000363 },
      { id: 'c', score: 0.47000363 },
    ]);
    await sparse.upsert({ id: 'elsewhere', sparseVector: { indices: [1], values: [1] } }); // another namespace: no change
    expect((await idfQuery())[0]?.score).toBe(0.47000363);
    await ns.delete('c');
    expect(await idfQuery()).toEqual([{ id: 'a', score: 0.6931472 }]);
    await ns.update({ id: 'b', sparseVector: { indices: [1], values: [2] } });
    // N = 2, n = 2: ln(1 + 0.5 / 2.5) = ln 1.2, b scores 2 × that.
    expect(await idfQuery()).toEqual([
      { id: 'b', score: 0.36464313 },
      { id: 'a', score: 0.18232156 },
    ]);
  });

  it('rescores with each vector as last written, although the gateway keeps the vectors of recent hits', async () => {
    const ns = sparse.namespace('rescore');
    const scores = async (weightingStrategy?: WeightingStrategy) =>
      (await ns.query({ sparseVector: { indices: [1], values: [1] }, topK: 5, weightingStrategy })).map((h) => [h.id, h.score]);
    await ns.upsert([
      { id: 'a', sparseVector: { indices: [1], values: [1] } },
      { id: 'b', sparseVector: { indices: [1, 2], values: [2, 1] } },
    ]);
    for (let i = 0; i < 2; i++) expect(await scores()).toEqual([['b', 2], ['a', 1]]); // the second from kept vectors
    await ns.update({ id: 'a', sparseVector: { indices: [1], values: [3] } });
    expect(await scores()).toEqual([['a', 3], ['b', 2]]);
    await ns.upsert({ id: 'b', sparseVector: { indices: [1], values: [0.5] } });
    expect(await scores()).toEqual([['a', 3], ['b', 0.5]]);
    // N = 2, n = 2: ln 1.2 = 0.18232156 per unit.
    expect(await scores(WeightingStrategy.IDF)).toEqual([['a', 0.5469647], ['b', 0.09116078]]);
    await ns.reset();
    await ns.upsert({ id: 'a', sparseVector: { indices: [1], values: [4] } });
    expect(await scores()).toEqual([['a', 4]]);
  });

  it('fuses RRF queries as the two one-sided queries fused by Upstash’s formula, whether or not the namespace is the whole collection', async () => {
    // Deterministic pseudo-random vectors: 80 points over 12 sparse dimensions, so that the IDF per
    // namespace and per collection differ once another namespace holds vectors.
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const point = (id: string) => {
      const dims = [...new Set([0, 1, 2].map(() => Math.floor(next() * 12)))].sort((a, b) => a - b);
      return { id, vector: [next(), next()], sparseVector: { indices: dims, values: dims.map(() => 0.1 + next()) } };
    };
    const ns = hybrid.namespace('rrf');
    await ns.upsert(Array.from({ length: 80 }, (_, i) => point(`p${i}`)));
    const query = { vector: [0.6, 0.4], sparseVector: { indices: [1, 4, 7], values: [0.5, 1, 0.8] }, weightingStrategy: WeightingStrategy.IDF };
    const expectFusedLikeSides = async () => {
      const [fused, denseSide, sparseSide] = await Promise.all([
        ns.query({ ...query, topK: 10, fusionAlgorithm: FusionAlgorithm.RRF }),
        ns.query({ ...query, topK: 100, queryMode: QueryMode.DENSE }),
        ns.query({ ...query, topK: 100, queryMode: QueryMode.SPARSE }),
      ]);
      const expected = new Map(fuseRrf([denseSide, sparseSide].map((side) => side.map((h) => ({ id: String(h.id), score: h.score })))).map((c) => [c.id, c.score]));
      expect(fused).toHaveLength(10);
      for (const hit of fused) expect(hit.score).toBeCloseTo(expected.get(String(hit.id)) ?? Number.NaN, 6);
      // The best ten scores, whatever the order of ties.
      expect(fused.map((h) => h.score)).toEqual([...expected.values()].slice(0, 10).map((v) => expect.closeTo(v, 6)));
    };
    await expectFusedLikeSides(); // the namespace is the whole collection: the engine fuses
    await hybrid.upsert(Array.from({ length: 40 }, (_, i) => point(`other${i}`))); // now it is not: the gateway fuses
    await expectFusedLikeSides();
  });

  it('upserts, fetches and ranges sparse vectors; info names the index type', async () => {
    expect(await sparse.upsert(SPARSE_DATA)).toBe('Success');
    expect(await sparse.fetch(['id2', 'nope', 'id0'], { includeVectors: true, includeMetadata: true, includeData: true })).toEqual([
      { id: 'id2', sparseVector: { indices: [2, 3], values: [0.3, 0.4] }, metadata: { key: 'value' }, data: 'data' },
      null,
      { id: 'id0', sparseVector: { indices: [0, 1], values: [0.1, 0.2] } },
    ]);
    const page = await sparse.range({ cursor: 0, limit: 2, includeVectors: true });
    expect(page).toEqual({
      nextCursor: '2',
      vectors: [
        { id: 'id0', sparseVector: { indices: [0, 1], values: [0.1, 0.2] } },
        { id: 'id1', sparseVector: { indices: [1, 2], values: [0.2, 0.3] } },
      ],
    });
    const info = await sparse.info();
    expect(info).toMatchObject({ vectorCount: 3, indexType: 'SPARSE', sparseIndex: {} });
    expect(info).not.toHaveProperty('denseIndex');
    expect(await hybrid.info()).toMatchObject({ indexType: 'HYBRID', dimension: 2, denseIndex: { dimension: 2, similarityFunction: 'COSINE' }, sparseIndex: {} });
    expect(await hybridText.info()).toMatchObject({ denseIndex: { embeddingModel: expect.any(String) }, sparseIndex: { embeddingModel: 'BM25' } });
  });

  it('queries a sparse index by inner product, only vectors sharing a dimension, IDF per namespace as the SDK expects', async () => {
    await sparse.upsert(SPARSE_DATA, { namespace: 'ns' });
    const raw = await sparse.query({ sparseVector: { indices: [0, 1], values: [0.1, 0.2] }, topK: 5 }, { namespace: 'ns' });
    expect(raw.map((r) => r.id)).toEqual(['id0', 'id1']);
    expect(raw[0]?.score).toBe(0.050_000_004); // 0.1·0.1 + 0.2·0.2 in float32, as the SDK's IDF expectations are computed
    const idf = await sparse.query(
      { sparseVector: { indices: [0, 1], values: [0.1, 0.2] }, topK: 5, weightingStrategy: WeightingStrategy.IDF, includeVectors: true },
      { namespace: 'ns' },
    );
    expect(idf).toEqual([
      { id: 'id0', score: 0.028_608_438, sparseVector: { indices: [0, 1], values: [0.1, 0.2] } },
      { id: 'id1', score: 0.018_800_145, sparseVector: { indices: [1, 2], values: [0.2, 0.3] } },
    ]);
    // Other namespaces do not count towards IDF: the same vectors elsewhere change nothing.
    await sparse.upsert([...SPARSE_DATA, { id: 'extra', sparseVector: { indices: [0], values: [1] } }]);
    const again = await sparse.query({ sparseVector: { indices: [2, 3], values: [0.5, 0.5] }, topK: 1, weightingStrategy: WeightingStrategy.IDF }, { namespace: 'ns' });
    expect(again).toEqual([{ id: 'id2', score: 0.266_666_38 }]);
  });

  it('queries a hybrid index with RRF and DBSF, both sides or one (queryMode), as the SDK’s queryMany test expects', async () => {
    await hybrid.upsert(HYBRID_DATA, { namespace: 'query-hybrid' });
    const result = await hybrid.queryMany(
      [
        { topK: 1, vector: [0.1, 0.1], sparseVector: { indices: [3, 4], values: [0.1, 0.2] }, fusionAlgorithm: FusionAlgorithm.RRF },
        { topK: 1, vector: [0.5, 0.1], sparseVector: { indices: [0, 1], values: [0.5, 0.1] }, includeVectors: true },
        { topK: 1, sparseVector: { indices: [2, 3], values: [0.5, 0.5] }, weightingStrategy: WeightingStrategy.IDF, fusionAlgorithm: FusionAlgorithm.DBSF, includeMetadata: true },
      ],
      { namespace: 'query-hybrid' },
    );
    expect(result).toEqual([
      [{ id: 'id2', score: 0.033_333_335 }],
      [{ id: 'id0', score: 0.032_795_697, vector: [0.1, 0.2], sparseVector: { indices: [0, 1], values: [0.1, 0.2] } }],
      [{ id: 'id2', score: 0.266_666_38, metadata: { key: 'value' } }],
    ]);
    const both = { vector: [0.5, 0.1], sparseVector: { indices: [0, 1], values: [0.5, 0.1] }, topK: 3 };
    const denseOnly = await hybrid.query({ ...both, queryMode: QueryMode.DENSE }, { namespace: 'query-hybrid' });
    expect(denseOnly.map((r) => r.id)).toEqual(['id2', 'id1', 'id0']);
    expect(denseOnly[0]?.score).toBeGreaterThan(0.5); // a normalised cosine score, not a fused one
    const sparseOnly = await hybrid.query({ ...both, queryMode: QueryMode.SPARSE }, { namespace: 'query-hybrid' });
    expect(sparseOnly).toEqual([
      { id: 'id0', score: 0.07 },
      { id: 'id1', score: 0.020_000_001 },
    ]);
    const dbsf = await hybrid.query({ ...both, fusionAlgorithm: FusionAlgorithm.DBSF }, { namespace: 'query-hybrid' });
    expect(dbsf.map((r) => r.id).sort()).toEqual(['id0', 'id1', 'id2']);
    for (const r of dbsf) expect(r.score).toBeLessThanOrEqual(2);
  });

  it('resumes sparse and hybrid queries with the SDK’s expected scores, without repeats', async () => {
    /** Everything included, IDF and DBSF, an hour's idle time: the options both resumable queries share. */
    const RESUMED = {
      includeVectors: true,
      includeMetadata: true,
      includeData: true,
      weightingStrategy: WeightingStrategy.IDF,
      fusionAlgorithm: FusionAlgorithm.DBSF,
      maxIdle: 3600,
    } as const;
    await sparse.upsert(SPARSE_DATA, { namespace: 'resumable-sparse' });
    const s = await sparse.resumableQuery(
      {
        sparseVector: { indices: [0, 1], values: [0.1, 0.2] },
        topK: 1,
        ...RESUMED,
      },
      { namespace: 'resumable-sparse' },
    );
    expect(s.result).toEqual([{ id: 'id0', score: 0.028_608_438, sparseVector: { indices: [0, 1], values: [0.1, 0.2] } }]);
    expect(await s.fetchNext(1)).toEqual([{ id: 'id1', score: 0.018_800_145, sparseVector: { indices: [1, 2], values: [0.2, 0.3] }, metadata: { key: 'value' } }]);
    expect(await s.fetchNext(5)).toEqual([]);
    await s.stop();

    await hybrid.upsert(HYBRID_DATA, { namespace: 'resumable-hybrid' });
    const h = await hybrid.resumableQuery(
      {
        vector: [0.1, 0.1],
        sparseVector: { indices: [0], values: [0.1] },
        topK: 2,
        ...RESUMED,
      },
      { namespace: 'resumable-hybrid' },
    );
    expect(h.result).toEqual([
      { id: 'id2', score: 0.617_851, vector: [0.3, 0.4], sparseVector: { indices: [2, 3], values: [0.3, 0.4] }, metadata: { key: 'value' }, data: 'data' },
      { id: 'id0', score: 0.5, vector: [0.1, 0.2], sparseVector: { indices: [0, 1], values: [0.1, 0.2] } },
    ]);
    expect(await h.fetchNext(1)).toEqual([{ id: 'id1', score: 0.5, vector: [0.2, 0.3], sparseVector: { indices: [1, 2], values: [0.2, 0.3] }, metadata: { key: 'value' } }]);
    expect(await h.fetchNext(1)).toEqual([]);
    await h.stop();
  });

  it('embeds data with BM25 on the engine (sparse) and with both models (hybrid), for upsert, query and update', async () => {
    const docs = [
      { id: 'fox', data: 'the quick brown fox jumps over the lazy dog' },
      { id: 'cat', data: 'a lazy cat sleeps all day in the sun' },
      { id: 'bird', data: 'birds sing at dawn' },
    ];
    expect(await sparseText.upsert(docs)).toBe('Success');
    const fox = await sparseText.query({ data: 'quick fox', topK: 3, includeData: true });
    expect(fox.map((r) => r.id)).toEqual(['fox']);
    expect(fox[0]?.data).toBe(docs[0]?.data);
    const [stored] = await sparseText.fetch(['cat'], { includeVectors: true });
    expect(stored?.sparseVector?.indices.length).toBeGreaterThan(0);
    expect(stored?.sparseVector?.indices.length).toBe(stored?.sparseVector?.values.length);
    expect(await sparseText.update({ id: 'bird', data: 'a quick bird' })).toEqual({ updated: 1 });
    expect((await sparseText.query({ data: 'quick', topK: 3 })).map((r) => r.id).sort()).toEqual(['bird', 'fox']);

    await hybridText.upsert(docs);
    const hits = await hybridText.query({ data: 'lazy cat in the sun', topK: 3 });
    expect(hits[0]?.id).toBe('cat');
    const sparseSide = await hybridText.query({ data: 'dawn', topK: 3, queryMode: QueryMode.SPARSE });
    expect(sparseSide.map((r) => r.id)).toEqual(['bird']);
    const denseSide = await hybridText.query({ data: 'dawn', topK: 3, queryMode: QueryMode.DENSE });
    expect(denseSide).toHaveLength(3);
    const [both] = await hybridText.fetch(['bird'], { includeVectors: true });
    expect(both?.vector).toHaveLength(384);
    expect(both?.sparseVector?.indices.length).toBeGreaterThan(0);
    const r = await hybridText.resumableQuery({ data: 'lazy', topK: 1, maxIdle: 60 });
    const seen = [...r.result.map((x) => x.id), ...(await r.fetchNext(1)).map((x) => x.id), ...(await r.fetchNext(5)).map((x) => x.id)];
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.sort()).toEqual(['bird', 'cat', 'fox']);
    await r.stop();
  });

  it('updates, deletes and keeps namespaces apart on a hybrid index', async () => {
    await hybrid.upsert(HYBRID_DATA, { namespace: 'a' });
    expect(await hybrid.update({ id: 'id0', vector: [0.9, 0.1], sparseVector: { indices: [7], values: [1] } }, { namespace: 'a' })).toEqual({ updated: 1 });
    expect(await hybrid.fetch(['id0'], { includeVectors: true, namespace: 'a' })).toEqual([{ id: 'id0', vector: [0.9, 0.1], sparseVector: { indices: [7], values: [1] } }]);
    expect(await hybrid.update({ id: 'id0', metadata: { m: 1 } }, { namespace: 'a' })).toEqual({ updated: 1 });
    expect(await hybrid.delete(['id1', 'nope'], { namespace: 'a' })).toEqual({ deleted: 1 });
    expect((await hybrid.query({ sparseVector: { indices: [7], values: [1] }, topK: 5, includeMetadata: true }, { namespace: 'a' }))).toEqual([{ id: 'id0', score: 1, metadata: { m: 1 } }]);
    expect(await hybrid.query({ sparseVector: { indices: [7], values: [1] }, topK: 5 })).toEqual([]);
    expect(await hybrid.listNamespaces()).toContain('a');
  });

  it('renames a namespace: vectors move with ids, data, order and scores; the default namespace and an existing target are refused', async () => {
    const token = stack.tokens('acme', 'hybrid').standard;
    await hybrid.upsert(HYBRID_DATA, { namespace: 'old' });
    await hybrid.upsert([{ id: 'x', vector: [1, 0], sparseVector: { indices: [9], values: [1] } }], { namespace: 'taken' });
    expect(await call(stack, token, 'rename-namespace', { namespace: 'old', newNamespace: 'new' })).toEqual({ status: 200, body: { result: { renamed: true } } });
    const names = await hybrid.listNamespaces();
    expect(names).toEqual(expect.arrayContaining(['', 'new', 'taken']));
    expect(names).not.toContain('old');
    expect((await hybrid.range({ cursor: 0, limit: 5, includeData: true }, { namespace: 'new' })).vectors).toEqual([{ id: 'id0' }, { id: 'id1' }, { id: 'id2', data: 'data' }]);
    expect(await hybrid.fetch(['id0'], { namespace: 'old' })).toEqual([null]);
    const q = await hybrid.query({ vector: [0.1, 0.1], sparseVector: { indices: [3, 4], values: [0.1, 0.2] }, topK: 1 }, { namespace: 'new' });
    expect(q).toEqual([{ id: 'id2', score: 0.033_333_335 }]);
    // A write after the rename continues the insertion order.
    await hybrid.upsert([{ id: 'id3', vector: [1, 1], sparseVector: { indices: [0], values: [1] } }], { namespace: 'new' });
    expect((await hybrid.range({ cursor: 0, limit: 10 }, { namespace: 'new' })).vectors.map((v) => v.id)).toEqual(['id0', 'id1', 'id2', 'id3']);

    const refused = await call(stack, token, 'rename-namespace', { namespace: 'new', newNamespace: 'taken' });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain('already exists');
    expect(await call(stack, token, 'rename-namespace', { namespace: 'new', newNamespace: 'taken', deleteExisting: true })).toEqual({ status: 200, body: { result: { renamed: true } } });
    expect(await hybrid.fetch(['x', 'id3'], { namespace: 'taken' })).toEqual([null, { id: 'id3' }]);
    expect((await call(stack, token, 'rename-namespace', { namespace: '', newNamespace: 'z' })).status).toBe(400);
    expect((await call(stack, token, 'rename-namespace', { namespace: 'missing', newNamespace: 'z' })).status).toBe(404);
    expect((await call(stack, stack.tokens('acme', 'hybrid').readonly, 'rename-namespace', { namespace: 'taken', newNamespace: 'z' })).status).toBe(403);
  });

  it('answers bad sparse input with 400s naming the field, and each index type refuses the other vectors', async () => {
    const token = (name: string) => stack.tokens('acme', name).standard;
    const cases: Array<[string, string, unknown, string]> = [
      ['sparse', 'upsert', { id: 'a', sparseVector: { indices: [1, 1], values: [3e38, 3e38] } }, 'sparseVector: the values of repeated index 1 add up'],
      ['sparse', 'upsert', { id: 'a', sparseVector: { indices: [-1], values: [1] } }, 'sparseVector.indices[0] must be an integer between 0 and 4294967295'],
      ['sparse', 'upsert', [{ id: 'a', sparseVector: { indices: [1, 2], values: [1] } }], '[0]sparseVector.indices and [0]sparseVector.values must have the same length'],
      ['sparse', 'upsert', { id: 'a', vector: [1, 2] }, 'this index is sparse'],
      ['dense', 'upsert', { id: 'a', vector: [1, 2], sparseVector: { indices: [1], values: [1] } }, 'this index is dense'],
      ['hybrid', 'upsert', { id: 'a', vector: [1, 2] }, 'sparseVector is missing: a hybrid index needs both'],
      ['hybrid', 'update', { id: 'a', sparseVector: { indices: [1], values: [1] } }, 'vector is missing: a hybrid index updates both'],
      ['hybrid', 'query', { topK: 1, vector: [1, 2], fusionAlgorithm: 'XYZ' }, 'fusionAlgorithm must be one of RRF, DBSF'],
      ['hybrid', 'query', { topK: 1, sparseVector: { indices: [1], values: [1] }, queryMode: 'DENSE' }, 'queryMode DENSE'],
    ];
    for (const [index, path, body, message] of cases) {
      const answer = await call(stack, token(index), path, body);
      expect([index, path, answer.status]).toEqual([index, path, 400]);
      expect(answer.body.error).toContain(message);
    }
    const noModel = await call(stack, token('sparse'), 'upsert-data', { id: 'a', data: 'text' });
    expect(noModel.status).toBe(422);
  });

  it('accepts a sparse vector that repeats an index, as Upstash does (the official range test): the values add up', async () => {
    const namespace = sparse.namespace('repeats');
    expect(await namespace.upsert({ id: 'r', sparseVector: { indices: [5, 1, 5], values: [0.25, 0.5, 0.5] } })).toBe('Success');
    expect(await namespace.fetch(['r'], { includeVectors: true })).toEqual([{ id: 'r', sparseVector: { indices: [1, 5], values: [0.5, 0.75] } }]);
    const [hit] = await namespace.query({ sparseVector: { indices: [5, 5], values: [1, 1] }, topK: 1 });
    expect(hit).toMatchObject({ id: 'r', score: 1.5 });
    await namespace.reset();
  });
});
