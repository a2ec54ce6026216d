import { call } from '@restash/shared/util-testing';
import { exactScore } from '@restash/vector/util-query';
import { type VectorStack, startVectorStack } from './testing/vector-stack';

const METRICS = ['COSINE', 'EUCLIDEAN', 'DOT_PRODUCT'] as const;

/** Raw HTTP against vector-gateway: errors, limits, read-only tokens, isolation, scores, durability. */
describe('vector-gateway over raw HTTP', () => {
  let stack: VectorStack;
  let token: string;
  const post = (path: string, body: unknown, t = token) => call(`${stack.url}${path}`, { method: 'POST', token: t, body });

  beforeAll(async () => {
    stack = await startVectorStack({
      acme: [
        { name: 'main', dimension: 4, maxRequestBytes: 64 * 1024, dailyRequests: 0 },
        ...METRICS.map((similarityFunction) => ({ name: `m-${similarityFunction.toLowerCase().replace('_', '-')}`, dimension: 8, similarityFunction })),
        { name: 'limited', dimension: 2, dailyRequests: 3 },
      ],
      other: [{ name: 'main', dimension: 4 }],
    });
    token = stack.tokens('acme', 'main').standard;
  }, 120_000);
  afterAll(() => stack?.stop());

  it('answers a wrong dimension with 422 and the spec text', async () => {
    const res = await post('/upsert', { id: 'a', vector: [1, 2] });
    expect(res).toMatchObject({ status: 422, body: { error: 'Invalid vector dimension: 2, expected: 4', status: 422 } });
    const query = await post('/query', { vector: [1, 2, 3], topK: 1 });
    expect(query.status).toBe(422);
  });

  it.each([
    ['malformed JSON', '/upsert', '{"id": "a", "vector": [1,2', 'Invalid JSON'],
    ['topK of 0', '/query', { vector: [1, 2, 3, 4], topK: 0 }, 'topK'],
    ['negative topK', '/query', { vector: [1, 2, 3, 4], topK: -3 }, 'topK'],
    ['an oversized batch', '/upsert', Array.from({ length: 1001 }, (_, i) => ({ id: i, vector: [1] })), 'at most 1000'],
    ['a bad filter', '/query', { vector: [1, 2, 3, 4], topK: 1, filter: "genre = 'drama' AND" }, 'position 19'],
    ['an unknown operator', '/query', { vector: [1, 2, 3, 4], topK: 1, filter: 'a ~ 1' }, 'position 2'],
    ['a vector of strings', '/upsert', { id: 'a', vector: ['1', 2, 3, 4] }, 'vector[0]'],
    ['data without an id', '/upsert', { vector: [1, 2, 3, 4] }, 'id'],
  ])('refuses %s with 400 {error, status}', async (_name, path, body, text) => {
    const res = typeof body === 'string' ? await call(`${stack.url}${path}`, { method: 'POST', token, raw: body }) : await post(path, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: expect.stringContaining(text), status: 400 });
  });

  it('refuses a body over the index limit with 413, and nothing is written', async () => {
    const big = Array.from({ length: 900 }, (_, i) => ({ id: `big-${i}`, vector: [1, 2, 3, 4], metadata: { pad: 'x'.repeat(40) } }));
    expect((await post('/upsert', big)).status).toBe(413);
    expect((await post('/fetch', { ids: ['big-0'] })).body).toEqual({ result: [null] });
  });

  it('refuses every write with a read-only token, and serves reads', async () => {
    const readonly = stack.tokens('acme', 'main').readonly;
    await post('/upsert', { id: 'ro', vector: [1, 0, 0, 0] });
    for (const [path, body] of [
      ['/upsert', { id: 'x', vector: [1, 2, 3, 4] }],
      ['/upsert-data', { id: 'x', data: 'text' }],
      ['/update', { id: 'ro', metadata: { a: 1 } }],
      ['/delete', { ids: ['ro'] }],
      ['/reset', []],
      ['/reset?all', []],
      ['/delete-namespace/ns', []],
    ] as const) {
      const res = await post(path, body, readonly);
      expect([path, res.status]).toEqual([path, 403]);
      expect(res.body).toMatchObject({ status: 403, error: expect.stringContaining('read-only') });
    }
    expect((await post('/fetch', { ids: ['ro'] }, readonly)).body).toEqual({ result: [{ id: 'ro' }] });
    expect((await post('/query', { vector: [1, 0, 0, 0], topK: 1 }, readonly)).body).toMatchObject({ result: [{ id: 'ro', score: 1 }] });
    expect((await call(`${stack.url}/info`, { token: readonly })).status).toBe(200);
  });

  it('keeps tenants apart: a token sees only its own index', async () => {
    await post('/upsert', { id: 'secret', vector: [1, 1, 1, 1], metadata: { owner: 'acme' } });
    const otherToken = stack.tokens('other', 'main').standard;
    expect((await post('/fetch', { ids: ['secret'] }, otherToken)).body).toEqual({ result: [null] });
    expect((await post('/query', { vector: [1, 1, 1, 1], topK: 10 }, otherToken)).body).toEqual({ result: [] });
    expect((await post('/reset?all', [], otherToken)).status).toBe(200);
    expect((await post('/fetch', { ids: ['secret'] })).body).toEqual({ result: [{ id: 'secret' }] });
  });

  it('serves GET /random: null for an empty namespace, else one vector', async () => {
    expect((await call(`${stack.url}/random/empty-ns`, { token })).body).toEqual({ result: null });
    await post('/upsert/rand-ns', { id: 'only', vector: [0.5, 0.25, 0, 1] });
    expect((await call(`${stack.url}/random/rand-ns`, { token })).body).toEqual({ result: { id: 'only', vector: [0.5, 0.25, 0, 1] } });
  });

  it('answers 401 in the API shape for missing and unknown tokens', async () => {
    expect(await call(`${stack.url}/info`, {})).toMatchObject({ status: 401, body: { status: 401, error: expect.stringContaining('Unauthorized') } });
    expect(await call(`${stack.url}/info`, { token: 'nope' })).toMatchObject({ status: 401, body: { error: 'Unauthorized: Invalid auth token', status: 401 } });
  });

  it('answers 422 for text endpoints of an index without an embedding model, and 404 for unknown endpoints', async () => {
    const res = await post('/query-data', { data: 'hello', topK: 1 });
    expect(res).toMatchObject({ status: 422, body: { status: 422, error: expect.stringContaining('embedding model') } });
    expect((await post('/nope', {})).status).toBe(404);
    expect((await call(`${stack.url}/info`, { token, method: 'GET' })).body).toMatchObject({ result: { dimension: 4 } });
  });

  it('counts requests against the daily limit and answers 429 past it', async () => {
    const limited = stack.tokens('acme', 'limited').standard;
    for (let i = 0; i < 3; i++) expect((await post('/info', [], limited)).status).toBe(200);
    expect(await post('/info', [], limited)).toMatchObject({ status: 429, body: { status: 429 } });
  });

  it.each(METRICS)('scores %s as Upstash does, checked against an independent computation', async (metric) => {
    const t = stack.tokens('acme', `m-${metric.toLowerCase().replace('_', '-')}`).standard;
    const rand = (seed: number) => Array.from({ length: 8 }, (_, i) => Math.sin(seed * 7.1 + i * 3.3) * 0.5);
    const unit = (v: number[]) => v.map((x) => x / Math.hypot(...v));
    const vectors = Array.from({ length: 30 }, (_, i) => (metric === 'DOT_PRODUCT' ? unit(rand(i)) : rand(i)));
    await post('/upsert', vectors.map((vector, i) => ({ id: `v${i}`, vector })), t);
    const q = metric === 'DOT_PRODUCT' ? unit(rand(99)) : rand(99);
    const res = await post('/query', { vector: q, topK: 30 }, t);
    const results = (res.body as { result: Array<{ id: string; score: number }> }).result;
    const expected = vectors
      .map((v, i) => ({ id: `v${i}`, score: exactScore(metric, v, q) }))
      .sort((a, b) => b.score - a.score);
    expect(results.map((r) => r.id)).toEqual(expected.map((e) => e.id));
    results.forEach((r, i) => expect(r.score).toBeCloseTo(expected[i]!.score, 5));
  });

  it('loses nothing acknowledged when the engine is killed, and answers 503 while it is down', async () => {
    const records = Array.from({ length: 200 }, (_, i) => ({ id: `d-${i}`, vector: [i, 1, 2, 3], metadata: { i } }));
    for (let i = 0; i < records.length; i += 50) expect((await post('/upsert', records.slice(i, i + 50))).status).toBe(200);
    await stack.qdrant.kill(); // SIGKILL: no flush, no clean shutdown
    expect(await post('/fetch', { ids: ['d-0'] })).toMatchObject({ status: 503, body: { status: 503 } });
    await stack.qdrant.restart();
    const fetched = await post('/fetch', { ids: records.map((r) => r.id), includeMetadata: true });
    expect(fetched.status).toBe(200);
    expect((fetched.body as { result: unknown[] }).result).toEqual(records.map((r) => ({ id: r.id, metadata: r.metadata })));
  });
});
