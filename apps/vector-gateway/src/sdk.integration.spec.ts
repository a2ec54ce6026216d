import { Index } from '@upstash/vector';
import { LOCAL_MODEL, type VectorStack, startVectorStack } from './testing/vector-stack';

type Meta = Record<string, unknown>;

/**
 * The official `@upstash/vector` SDK against a running vector-gateway, qdrant-local (Qdrant Edge)
 * and the local embedding model: every endpoint the SDK calls (docs/vector.md, "Vector: endpoints" and
 * "Vector: records and results").
 */
describe('vector-gateway with the official @upstash/vector SDK', () => {
  let stack: VectorStack;
  let index: Index<Meta>;
  let text: Index<Meta>;

  beforeAll(async () => {
    stack = await startVectorStack({
      acme: [
        { name: 'small', dimension: 3 },
        { name: 'text', dimension: 384, embedding: true },
      ],
    });
    index = new Index<Meta>({ url: stack.url, token: stack.tokens('acme', 'small').standard });
    text = new Index<Meta>({ url: stack.url, token: stack.tokens('acme', 'text').standard });
  }, 120_000);
  afterAll(() => stack?.stop());
  beforeEach(async () => {
    await index.reset({ all: true });
  });

  it('upserts one record or many and fetches them in order, null for missing ids, ids as strings', async () => {
    expect(await index.upsert({ id: 'a', vector: [0.1, 0.2, 0.3], metadata: { kind: 'x' } })).toBe('Success');
    expect(await index.upsert([{ id: 33, vector: [1, 0, 0] }, { id: 'c', vector: [0, 1, 0], metadata: { n: 1 } }] as never)).toBe('Success');
    const fetched = await index.fetch(['c', 'missing', 'a', 33] as never, { includeMetadata: true, includeVectors: true });
    expect(fetched).toEqual([
      { id: 'c', vector: [0, 1, 0], metadata: { n: 1 } },
      null,
      { id: 'a', vector: [0.1, 0.2, 0.3], metadata: { kind: 'x' } },
      { id: '33', vector: [1, 0, 0] },
    ]);
    expect(await index.fetch(['a'], { includeVectors: true })).toEqual([{ id: 'a', vector: [0.1, 0.2, 0.3] }]);
    expect(await index.fetch(['a'])).toEqual([{ id: 'a' }]);
  });

  it('queries nearest first with normalised scores, an identical vector scoring exactly 1', async () => {
    await index.upsert([
      { id: 'same', vector: [0.2, 0.4, 0.6], metadata: { rank: 1 } },
      { id: 'near', vector: [0.25, 0.4, 0.55] },
      { id: 'far', vector: [-0.2, -0.4, -0.6] },
    ]);
    const results = await index.query({ vector: [0.2, 0.4, 0.6], topK: 3, includeMetadata: true });
    expect(results.map((r) => r.id)).toEqual(['same', 'near', 'far']);
    expect(results[0]).toEqual({ id: 'same', score: 1, metadata: { rank: 1 } });
    expect(results[2]?.score).toBe(0);
    expect(results[1]).not.toHaveProperty('vector');
    const top1 = await index.query({ vector: [0.2, 0.4, 0.6], topK: 1, includeVectors: true });
    expect(top1).toEqual([{ id: 'same', score: 1, vector: [0.2, 0.4, 0.6] }]);
  });

  it('filters queries with the metadata filter language', async () => {
    await index.upsert([
      { id: 'tiger', vector: [1, 0, 0], metadata: { tags: ['mammal', 'cat'], diet: 'carnivore', population: 4000 } },
      { id: 'cow', vector: [0.9, 0.1, 0], metadata: { tags: ['mammal'], diet: 'herbivore', population: 1e9 } },
      { id: 'tokyo', vector: [0.8, 0.2, 0], metadata: { population: 14_000_000, geography: { continent: 'Asia' } } },
      { id: 'paris', vector: [0.7, 0.3, 0], metadata: { population: 2_100_000, geography: { continent: 'Europe' } } },
    ]);
    const ids = async (filter: string) => (await index.query({ vector: [1, 0, 0], topK: 10, filter })).map((r) => r.id);
    expect(await ids("tags[0] = 'mammal' AND diet = 'carnivore'")).toEqual(['tiger']);
    expect(await ids("population > 1000000 AND geography.continent = 'Asia'")).toEqual(['tokyo']);
    expect(await ids("diet GLOB 'herb*' OR geography.continent IN ('Europe')")).toEqual(['cow', 'paris']);
    expect(await ids("tags CONTAINS 'cat'")).toEqual(['tiger']);
    expect(await ids('HAS FIELD geography')).toEqual(['tokyo', 'paris']);
  });

  it('ranges in insertion order with nextCursor empty exactly at the end', async () => {
    await index.upsert(Array.from({ length: 20 }, (_, i) => ({ id: `id-${i}`, vector: [i, 1, 1] })));
    const first = await index.range({ cursor: 0, limit: 5 });
    expect(first.nextCursor).toBe('5');
    expect(first.vectors.map((v) => v.id)).toEqual(['id-0', 'id-1', 'id-2', 'id-3', 'id-4']);
    const pages: string[][] = [];
    let cursor: string | number = 0;
    for (const limit of [4, 8, 8]) {
      const page: { nextCursor: string; vectors: Array<{ id: string | number }> } = await index.range({ cursor, limit });
      pages.push(page.vectors.map((v) => String(v.id)));
      cursor = page.nextCursor;
    }
    expect(cursor).toBe('');
    expect(pages.flat()).toEqual(Array.from({ length: 20 }, (_, i) => `id-${i}`));
    const prefixed = await index.range({ cursor: 0, limit: 2, prefix: 'id-1' }); // id-1, id-10..id-19
    expect(prefixed.vectors.map((v) => v.id)).toEqual(['id-1', 'id-10']);
  });

  it('reports info, namespaces, and keeps reset namespaces listed', async () => {
    const ns = index.namespace('ns-1');
    await index.upsert({ id: 'a', vector: [1, 2, 3] });
    await ns.upsert([{ id: 'b', vector: [1, 2, 3] }, { id: 'c', vector: [3, 2, 1] }]);
    const info = await index.info();
    expect(info).toMatchObject({ vectorCount: 3, pendingVectorCount: 0, dimension: 3, similarityFunction: 'COSINE' });
    expect(info.namespaces).toEqual({ '': { vectorCount: 1, pendingVectorCount: 0 }, 'ns-1': { vectorCount: 2, pendingVectorCount: 0 } });
    expect(await ns.fetch(['a', 'b'])).toEqual([null, { id: 'b' }]);
    expect(await index.listNamespaces()).toEqual(['', 'ns-1']);
    await ns.reset();
    expect((await index.info()).namespaces['ns-1']).toEqual({ vectorCount: 0, pendingVectorCount: 0 });
    await ns.upsert({ id: 'd', vector: [1, 1, 1] });
    await index.reset({ all: true });
    expect((await index.info()).namespaces['ns-1']?.vectorCount).toBe(0);
    expect(await index.deleteNamespace('ns-1')).toBe('Success');
    expect(await index.listNamespaces()).toEqual(['']);
    await expect(index.deleteNamespace('ns-1')).rejects.toThrow('does not exist');
  });

  it('updates vectors and metadata (OVERWRITE by default, PATCH as merge patch)', async () => {
    await index.upsert({ id: 'u', vector: [1, 0, 0], metadata: { a: 1, b: { c: 2 } } });
    expect(await index.update({ id: 'u', metadata: { b: { d: 3 } }, metadataUpdateMode: 'PATCH' })).toEqual({ updated: 1 });
    expect(await index.fetch(['u'], { includeMetadata: true })).toEqual([{ id: 'u', metadata: { a: 1, b: { c: 2, d: 3 } } }]);
    expect(await index.update({ id: 'u', metadata: { z: 0 } })).toEqual({ updated: 1 });
    expect(await index.update({ id: 'u', vector: [0, 1, 0] })).toEqual({ updated: 1 });
    expect(await index.fetch(['u'], { includeMetadata: true, includeVectors: true })).toEqual([{ id: 'u', vector: [0, 1, 0], metadata: { z: 0 } }]);
    expect(await index.update({ id: 'nope', metadata: { z: 1 } })).toEqual({ updated: 0 });
  });

  it('deletes by ids, prefix and filter, counting what existed', async () => {
    await index.upsert(Array.from({ length: 6 }, (_, i) => ({ id: `p-${i}`, vector: [1, i, 0], metadata: { even: i % 2 === 0, i } })));
    await index.upsert({ id: 'q-1', vector: [0, 0, 1] });
    expect(await index.delete(['p-0', 'p-1', 'missing'])).toEqual({ deleted: 2 });
    expect(await index.delete(['p-0'])).toEqual({ deleted: 0 });
    expect(await index.delete({ filter: 'i >= 4' })).toEqual({ deleted: 2 });
    expect(await index.delete({ prefix: 'p-' })).toEqual({ deleted: 2 });
    expect((await index.range({ cursor: 0, limit: 10 })).vectors.map((v) => v.id)).toEqual(['q-1']);
    await expect(index.delete({ ids: ['a'], prefix: 'b' } as never)).rejects.toThrow('Only and only one of the ids, prefix, or filter must be provided.');
    await expect(index.fetch({ ids: ['a'], prefix: 'b' } as never)).rejects.toThrow('Only one of ids or prefix must be provided.');
  });

  it('answers queryMany as one list per query', async () => {
    await index.upsert([{ id: 'x', vector: [1, 0, 0] }, { id: 'y', vector: [0, 1, 0] }]);
    const [forX, forY] = await index.queryMany([
      { vector: [1, 0, 0], topK: 1 },
      { vector: [0, 1, 0], topK: 1 },
    ]);
    expect(forX?.map((r) => r.id)).toEqual(['x']);
    expect(forY?.map((r) => r.id)).toEqual(['y']);
  });

  it('resumes a query without repeating results, then stops it', async () => {
    await index.upsert(Array.from({ length: 5 }, (_, i) => ({ id: `r-${i}`, vector: [1, i / 10, 0] })));
    const { result, fetchNext, stop } = await index.resumableQuery({ vector: [1, 0, 0], topK: 2, maxIdle: 60 });
    expect(result.map((r) => r.id)).toEqual(['r-0', 'r-1']);
    const next = await fetchNext(1);
    expect(next.map((r) => r.id)).toEqual(['r-2']);
    expect((await fetchNext(5)).map((r) => r.id)).toEqual(['r-3', 'r-4']);
    expect(await stop()).toBe('Success');
  });

  it('embeds text with the local model: upsert-data, query by text, includeData, info names the model', async () => {
    await text.reset();
    await text.upsert([
      { id: 'cat', data: 'A cat is sleeping on the warm windowsill', metadata: { topic: 'pets' } },
      { id: 'market', data: 'Stock markets fell sharply after the interest rate decision' },
      { id: 'football', data: 'The football team won the championship final last night' },
    ]);
    const results = await text.query({ data: 'a kitten naps in the sunshine', topK: 3, includeData: true, includeMetadata: true });
    expect(results[0]).toMatchObject({ id: 'cat', data: 'A cat is sleeping on the warm windowsill', metadata: { topic: 'pets' } });
    expect(results[0]!.score).toBeGreaterThan(results[1]!.score + 0.1);
    expect(await text.fetch(['cat'], { includeData: true })).toEqual([{ id: 'cat', data: 'A cat is sleeping on the warm windowsill' }]);
    const info = await text.info();
    expect(info).toMatchObject({ dimension: 384, vectorCount: 3, denseIndex: { dimension: 384, similarityFunction: 'COSINE', embeddingModel: LOCAL_MODEL } });
    const resumed = await text.resumableQuery({ data: 'stock exchange prices', topK: 1, maxIdle: 60 });
    expect(resumed.result.map((r) => r.id)).toEqual(['market']);
    await resumed.stop();
  });
});
