import { Redis } from 'ioredis';
import { RegistryWriter } from '@restash/shared/data-access-registry';
import { call } from '@restash/shared/util-testing';
import { METADATA_LIMITS } from '@restash/vector/util-query';
import { type VectorStack, startVectorStack } from './testing/vector-stack';

const LONE = '\ud800';

function nested(depth: number): Record<string, unknown> {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = { a: value };
  return value as Record<string, unknown>;
}

/** Issue 11, Vector: what a hostile tenant could do with bad input, methods and shared engines. */
describe('vector-gateway isolation and bad input', () => {
  let stack: VectorStack;
  let token: string;
  const post = (path: string, body: unknown, t = token) => call(`${stack.url}${path}`, { method: 'POST', token: t, body });
  const count = async (namespace = '') => {
    const info = (await post('/info', undefined)).body as { result: { namespaces: Record<string, { vectorCount: number }> } };
    return info.result.namespaces[namespace]?.vectorCount ?? 0;
  };

  beforeAll(async () => {
    stack = await startVectorStack({
      acme: [
        { name: 'main', dimension: 2 },
        { name: 'no-embedder', dimension: 384, embeddingUrl: 'http://127.0.0.1:9/v1' },
        // qdrant-local answers its own 404 text for /embeddings: the gateway must not quote it
        { name: 'bad-embedder', dimension: 384, embeddingUrl: (qdrantUrl) => qdrantUrl },
      ],
      doomed: [{ name: 'main', dimension: 2 }],
    });
    token = stack.tokens('acme', 'main').standard;
  }, 120_000);
  afterAll(() => stack?.stop());

  describe('deep and large metadata', () => {
    it('refuses 127-level metadata in upsert, update OVERWRITE and a 10,000-level PATCH, and the index stays usable after an engine restart', async () => {
      expect((await post('/upsert', { id: 'ok', vector: [1, 0], metadata: { a: 1 } })).status).toBe(200);
      const upsert = await post('/upsert', { id: 'deep', vector: [1, 0], metadata: nested(127) });
      expect(upsert).toMatchObject({ status: 400, body: { status: 400, error: `metadata is nested too deeply: at most ${METADATA_LIMITS.depth} levels of objects and arrays` } });
      const batch = await post('/upsert', [{ id: 'fine', vector: [0, 1] }, { id: 'deep', vector: [1, 0], metadata: { x: [nested(40)] } }]);
      expect(batch).toMatchObject({ status: 400, body: { error: expect.stringContaining('[1]metadata is nested too deeply') } });
      const overwrite = await post('/update', { id: 'ok', metadata: nested(127) });
      expect(overwrite.status).toBe(400);
      // JSON.parse of the body is fine at this depth; nothing of ours recurses over it
      const raw = `{"id":"ok","metadataUpdateMode":"PATCH","metadata":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`;
      const patch = await call(`${stack.url}/update`, { method: 'POST', token, raw });
      expect(patch).toMatchObject({ status: 400, body: { error: expect.stringContaining('nested too deeply'), status: 400 } });

      await stack.qdrant.restart(); // before the limits, qdrant-local could not load the collection again
      expect((await post('/fetch', { ids: ['ok', 'fine', 'deep'], includeMetadata: true })).body).toEqual({ result: [{ id: 'ok', metadata: { a: 1 } }, null, null] });
      expect((await post('/query', { vector: [1, 0], topK: 5 })).status).toBe(200);
      expect((await post('/range', { cursor: 0, limit: 10 })).status).toBe(200);
      expect((await post('/delete', { ids: ['ok'] })).body).toEqual({ result: { deleted: 1 } });
      expect((await call(`${stack.url}/reset?all`, { method: 'POST', token })).status).toBe(200);
    });

    it('refuses metadata over the size limit, also when a PATCH makes it grow, and leaves the stored metadata alone', async () => {
      const big = await post('/upsert', { id: 'big', vector: [1, 0], metadata: { pad: 'x'.repeat(METADATA_LIMITS.bytes) } });
      expect(big).toMatchObject({ status: 400, body: { error: expect.stringContaining(`metadata is too large`) } });
      expect((big.body as { error: string }).error).toContain(`at most ${METADATA_LIMITS.bytes}`);
      const half = 'y'.repeat(METADATA_LIMITS.bytes / 2);
      expect((await post('/upsert', { id: 'grow', vector: [1, 0], metadata: { a: half } })).status).toBe(200);
      const grown = await post('/update', { id: 'grow', metadata: { b: half }, metadataUpdateMode: 'PATCH' });
      expect(grown).toMatchObject({ status: 400, body: { error: expect.stringContaining('metadata is too large') } });
      expect((await post('/fetch', { ids: ['grow'], includeMetadata: true })).body).toEqual({ result: [{ id: 'grow', metadata: { a: half } }] });
    });
  });

  describe('namespaces and ids', () => {
    it('refuses NUL in a namespace, so a/b\\0c and a\\0b/c cannot meet', async () => {
      expect((await post('/upsert/a', { id: 'b\u0000c', vector: [1, 0], metadata: { owner: 'a' } })).status).toBe(200);
      const nul = await post('/upsert/a%00b', { id: 'c', vector: [0, 1], metadata: { owner: 'a\\0b' } });
      expect(nul).toMatchObject({ status: 400, body: { error: 'namespace must not contain the NUL character', status: 400 } });
      expect((await post('/fetch/a', { ids: ['b\u0000c'], includeMetadata: true })).body).toEqual({ result: [{ id: 'b\u0000c', metadata: { owner: 'a' } }] });
      for (const path of ['/query/a%00b', '/reset/a%00b', '/delete-namespace/a%00b', '/range/a%00b']) {
        expect((await post(path, { vector: [1, 0], topK: 1, cursor: 0, limit: 1 })).status).toBe(400);
      }
    });

    it('keeps namespace ab / id c apart from namespace a / id bc', async () => {
      await post('/upsert/ab', { id: 'c', vector: [1, 0], metadata: { ns: 'ab' } });
      await post('/upsert/a', { id: 'bc', vector: [0, 1], metadata: { ns: 'a' } });
      expect((await post('/fetch/ab', { ids: ['c'], includeMetadata: true })).body).toEqual({ result: [{ id: 'c', metadata: { ns: 'ab' } }] });
      expect((await post('/fetch/a', { ids: ['bc'], includeMetadata: true })).body).toEqual({ result: [{ id: 'bc', metadata: { ns: 'a' } }] });
    });

    it.each([
      ['id', '/upsert', { id: `x${LONE}`, vector: [1, 0] }, 'id'],
      ['a metadata key', '/upsert', { id: 'x', vector: [1, 0], metadata: { [LONE]: 1 } }, 'metadata (a key)'],
      ['a metadata value', '/upsert', { id: 'x', vector: [1, 0], metadata: { k: [LONE] } }, 'metadata (a string value)'],
      ['data', '/upsert', { id: 'x', vector: [1, 0], data: LONE }, 'data'],
      ['data to embed', '/upsert-data', { id: 'x', data: `text ${LONE}` }, 'data'],
      ['a query text', '/query-data', { data: LONE, topK: 1 }, 'data'],
      ['a filter', '/query', { vector: [1, 0], topK: 1, filter: `k = '${LONE}'` }, 'filter'],
      ['a prefix', '/range', { cursor: 0, limit: 1, prefix: LONE }, 'prefix'],
      ['an id to delete', '/delete', { ids: [LONE] }, 'ids[0]'],
    ])('refuses a lone surrogate in %s with 400 naming the field', async (_what, path, body, field) => {
      const res = await post(path, body);
      expect(res).toMatchObject({ status: 400, body: { error: `${field} contains a lone UTF-16 surrogate, which is not valid Unicode text`, status: 400 } });
    });

    it('refuses a namespace that is not valid UTF-8 once decoded (a lone surrogate) with 400 in the API shape', async () => {
      const res = await post('/upsert/%ED%A0%80', { id: 'x', vector: [1, 0] });
      expect(res).toMatchObject({ status: 400, body: { error: expect.any(String), status: 400 } });
    });
  });

  describe('safe methods', () => {
    it('GET and HEAD /reset are 405 with Allow and wipe nothing; DELETE and POST reset', async () => {
      await post('/upsert', [{ id: 'r1', vector: [1, 0] }, { id: 'r2', vector: [0, 1] }]);
      const before = await count();
      expect(before).toBeGreaterThanOrEqual(2);
      for (const method of ['GET', 'HEAD']) {
        for (const path of ['/reset', '/reset?all', '/reset/a']) {
          const res = await call(`${stack.url}${path}`, { method, token });
          expect(res.status).toBe(405);
          expect(res.headers.get('allow')).toBe('POST, DELETE');
          if (method === 'GET') expect(res.body).toEqual({ error: 'Method GET is not allowed on /reset; use POST or DELETE', status: 405 });
        }
      }
      expect(await count()).toBe(before);
      expect(await count('a')).toBeGreaterThan(0);
      expect((await call(`${stack.url}/reset/a`, { method: 'DELETE', token })).status).toBe(200);
      expect(await count('a')).toBe(0);
      expect((await call(`${stack.url}/reset`, { method: 'POST', token })).status).toBe(200);
      expect(await count()).toBe(0);
    });

    it('answers 405 to GET on every other write, and to methods an endpoint does not take', async () => {
      await post('/upsert/keep', { id: 'k', vector: [1, 0] });
      for (const path of ['/delete?ids=k', '/delete-namespace/keep', '/upsert', '/update', '/upsert-data', '/query']) {
        const res = await call(`${stack.url}${path}`, { method: 'GET', token });
        expect([path, res.status]).toEqual([path, 405]);
      }
      expect((await call(`${stack.url}/info`, { method: 'DELETE', token })).status).toBe(405);
      expect((await call(`${stack.url}/upsert`, { method: 'PUT', token, body: { id: 'p', vector: [1, 0] } })).headers.get('allow')).toBe('POST');
      expect((await call(`${stack.url}/info`, { method: 'HEAD', token })).status).toBe(200);
      expect(await count('keep')).toBe(1);
    });
  });

  it('hands out tied results of a resumable query once each, in id order', async () => {
    await post('/upsert/ties', ['same2', 'same0', 'same1'].map((id) => ({ id, vector: [1, 1] })).concat([{ id: 'other', vector: [1, -0.5] }]));
    const start = await post('/resumable-query/ties', { vector: [1, 1], topK: 1 });
    const { uuid, scores } = (start.body as { result: { uuid: string; scores: Array<{ id: string }> } }).result;
    const ids = scores.map((s) => s.id);
    for (let i = 0; i < 4; i++) {
      const next = await post('/resumable-query-next', { uuid, additionalK: 1 });
      ids.push(...(next.body as { result: Array<{ id: string }> }).result.map((s) => s.id));
    }
    expect(ids).toEqual(['same0', 'same1', 'same2', 'other']);
  });

  it('answers embedding failures in its own words, never the provider text', async () => {
    const unreachable = await post('/upsert-data', { id: 'x', data: 'hello' }, stack.tokens('acme', 'no-embedder').standard);
    expect(unreachable.body).toEqual({ error: 'Embedding failed: the embedding provider could not be reached or gave no usable answer', status: 502 });
    const refused = await post('/query-data', { data: 'hello', topK: 1 }, stack.tokens('acme', 'bad-embedder').standard);
    expect(refused.body).toEqual({ error: 'Embedding failed: the embedding provider answered HTTP 404', status: 502 });
  });

  it('closes the backend of an index when its tenant is deleted', async () => {
    const openIndexes = async () => {
      const text = (await call(`${stack.managementUrl}/metrics`)).body as string;
      return Number(/^restash_vector_open_indexes (\d+)$/m.exec(text)?.[1]);
    };
    const doomed = stack.tokens('doomed', 'main').standard;
    expect((await post('/upsert', { id: 'x', vector: [1, 0] }, doomed)).status).toBe(200);
    const open = await openIndexes();
    expect(open).toBeGreaterThanOrEqual(1);
    const redis = new Redis(stack.control.url);
    try {
      await new RegistryWriter(redis, stack.seal).deleteTenant('doomed');
    } finally {
      redis.disconnect();
    }
    // The change is announced over pub/sub: wait for this replica to hear it.
    for (let tries = 0; (await openIndexes()) !== open - 1 && tries < 100; tries++) await new Promise((r) => setTimeout(r, 50));
    expect(await openIndexes()).toBe(open - 1);
    expect((await post('/query', { vector: [1, 0], topK: 1 }, doomed)).status).toBe(401);
    expect((await post('/query', { vector: [1, 0], topK: 1 })).status).toBe(200);
  });
});
