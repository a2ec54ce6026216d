import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { RegistryWriter } from '@restash/shared/data-access-registry';
import { call } from '@restash/shared/util-testing';
import { METADATA_LIMITS } from '@restash/vector/util-query';
import { type VectorStack, startVectorStack } from './testing/vector-stack';

const LONE = '\ud800';

/**
 * An OpenAI-compatible embedding provider (dimension 4) whose answer for each text follows its prefix:
 * `big:…` gives a component beyond float32, `strs:…` strings, `nan:…` a bare NaN (not JSON), anything
 * else a good vector.
 */
async function startStubEmbedder(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const input = (JSON.parse(body) as { input: string[] }).input;
      const embedding = (text: string) => {
        const mode = text.split(':')[0];
        return mode === 'big' ? '[1e39,1,1,1]' : mode === 'strs' ? '["a","b","c","d"]' : mode === 'nan' ? '[NaN,1,1,1]' : '[1,0.5,0.25,0.125]';
      };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"object":"list","data":[${input.map((text, index) => `{"index":${index},"embedding":${embedding(text)}}`).join(',')}]}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

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

  let stub: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    stub = await startStubEmbedder();
    stack = await startVectorStack({
      acme: [
        { name: 'main', dimension: 2 },
        { name: 'stub-embedder', dimension: 4, embeddingUrl: stub.url },
        { name: 'no-embedder', dimension: 384, embeddingUrl: 'http://127.0.0.1:9/v1' },
        // An index's own embedding URL passes the SSRF guard (the stack allows loopback only).
        { name: 'private-embedder', dimension: 384, embeddingUrl: 'http://10.255.255.1:6333/collections/restash.other.docs/snapshots?x=' },
        { name: 'metadata-embedder', dimension: 384, embeddingUrl: 'http://[::ffff:169.254.169.254]/latest' },
        // qdrant-local answers its own 404 text for /embeddings: the gateway must not quote it
        { name: 'bad-embedder', dimension: 384, embeddingUrl: (qdrantUrl) => qdrantUrl },
      ],
      doomed: [{ name: 'main', dimension: 2 }],
    });
    token = stack.tokens('acme', 'main').standard;
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await stub?.close();
  });

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

  it('never connects an index’s own embedding URL to an internal address', async () => {
    const own = (index: string) => post('/upsert-data', { id: 'x', data: 'hello' }, stack.tokens('acme', index).standard);
    expect((await own('private-embedder')).body).toEqual({
      error: "Embedding failed: the embedding provider's address is not allowed (private address): an index's own embedding URL must be public",
      status: 502,
    });
    expect((await own('metadata-embedder')).body).toMatchObject({ status: 502, error: expect.stringMatching(/address is not allowed \(link-local address\)/) });
  });

  describe('vectors an embedding provider answers', () => {
    let stubToken: string;
    const stubbed = (path: string, body: unknown) => post(path, body, stubToken);

    beforeAll(async () => {
      stubToken = stack.tokens('acme', 'stub-embedder').standard;
      expect((await stubbed('/upsert-data', { id: 'kept', data: 'fine: text' })).status).toBe(200);
    });

    it.each([
      ['a component beyond float32', 'big', 'Embedding failed: the embedding provider answered a vector this index cannot store (vector[0] is outside the float32 range)'],
      ['strings', 'strs', 'Embedding failed: the embedding provider could not be reached or gave no usable answer'],
      ['a bare NaN (not JSON)', 'nan', 'Embedding failed: the embedding provider could not be reached or gave no usable answer'],
    ])('answers %s with 502 in its own words on upsert-data, query-data and update, and writes nothing', async (_what, mode, error) => {
      const refused = { status: 502, body: { error, status: 502 } };
      expect(await stubbed('/upsert-data', [{ id: `new-${mode}`, data: 'fine: text' }, { id: 'other', data: `${mode}: text` }])).toMatchObject({ status: 502 });
      expect(await stubbed('/upsert-data', { id: `new-${mode}`, data: `${mode}: text` })).toEqual(expect.objectContaining(refused));
      expect(await stubbed('/query-data', { data: `${mode}: text`, topK: 1 })).toEqual(expect.objectContaining(refused));
      expect(await stubbed('/update', { id: 'kept', data: `${mode}: new text` })).toEqual(expect.objectContaining(refused));

      const read = await call(`${stack.url}/range`, { method: 'POST', token: stubToken, body: { cursor: 0, limit: 10, includeVectors: true, includeData: true } });
      expect(read.body).toEqual({ result: { nextCursor: '', vectors: [{ id: 'kept', vector: [1, 0.5, 0.25, 0.125], data: 'fine: text' }] } });
      expect((await stubbed('/fetch', { ids: [`new-${mode}`, 'other'] })).body).toEqual({ result: [null, null] });
    });
  });

  describe('empty prefixes', () => {
    it('refuses delete {prefix: ""} as it refuses a blank filter, and reads "" as every id on fetch and range', async () => {
      await post('/upsert/pfx', ['p1', 'p2', 'q1'].map((id, i) => ({ id, vector: [1, i] })));
      expect(await post('/delete/pfx', { prefix: '' })).toMatchObject({ status: 400, body: { error: 'prefix is empty: to delete everything, use reset', status: 400 } });
      expect(await post('/delete/pfx', { filter: '   ' })).toMatchObject({ status: 400, body: { error: 'filter is empty: to delete everything, use reset', status: 400 } });
      expect(await count('pfx')).toBe(3);
      expect((await post('/fetch/pfx', { prefix: '' })).body).toEqual({ result: [{ id: 'p1' }, { id: 'p2' }, { id: 'q1' }] });
      const first = await post('/range/pfx', { cursor: 0, limit: 2, prefix: '' });
      expect(first.body).toMatchObject({ result: { vectors: [{ id: 'p1' }, { id: 'p2' }] } });
      const cursor = (first.body as { result: { nextCursor: string } }).result.nextCursor;
      expect((await post('/range/pfx', { cursor, limit: 2, prefix: '' })).body).toEqual({ result: { nextCursor: '', vectors: [{ id: 'q1' }] } });
      expect((await post('/delete/pfx', { prefix: 'p' })).body).toEqual({ result: { deleted: 2 } });
    });
  });

  describe('info.namespaces', () => {
    it('lists exactly the namespaces list-namespaces lists: not deleted or renamed ones, an empty one with 0', async () => {
      await post('/upsert/gone', { id: 'g', vector: [1, 0] });
      await post('/upsert/old-name', { id: 'o', vector: [0, 1] });
      await post('/upsert/emptied', { id: 'e', vector: [1, 1] });
      expect((await post('/delete-namespace/gone', [])).status).toBe(200);
      expect((await post('/rename-namespace', { namespace: 'old-name', newNamespace: 'new-name' })).body).toEqual({ result: { renamed: true } });
      expect((await post('/reset/emptied', [])).status).toBe(200);

      const listed = ((await post('/list-namespaces', [])).body as { result: string[] }).result;
      const info = ((await post('/info', [])).body as { result: { vectorCount: number; namespaces: Record<string, { vectorCount: number }> } }).result;
      expect(Object.keys(info.namespaces).sort()).toEqual([...listed].sort());
      expect(listed).toEqual(expect.arrayContaining(['', 'new-name', 'emptied']));
      expect(listed).not.toContain('gone');
      expect(listed).not.toContain('old-name');
      expect(info.namespaces['new-name']).toEqual({ vectorCount: 1, pendingVectorCount: 0 });
      expect(info.namespaces.emptied).toEqual({ vectorCount: 0, pendingVectorCount: 0 });
      expect(info.vectorCount).toBe(Object.values(info.namespaces).reduce((sum, n) => sum + n.vectorCount, 0));
    });
  });

  describe('tied scores', () => {
    it('cuts topK among tied scores by id, so a smaller topK gives the first hits of a larger one', async () => {
      await post('/upsert/tied', ['e', 'c', 'a', 'd', 'b'].map((id) => ({ id, vector: [0.6, 0.8] })).concat([{ id: 'far', vector: [1, -1] }]));
      const ids = async (topK: number) => ((await post('/query/tied', { vector: [0.6, 0.8], topK })).body as { result: Array<{ id: string }> }).result.map((h) => h.id);
      expect(await ids(1)).toEqual(['a']);
      expect(await ids(2)).toEqual(['a', 'b']);
      expect(await ids(3)).toEqual(['a', 'b', 'c']);
      expect(await ids(5)).toEqual(['a', 'b', 'c', 'd', 'e']);
      expect(await ids(6)).toEqual(['a', 'b', 'c', 'd', 'e', 'far']);
    });
  });

  describe('the float32 range', () => {
    it('takes 3.4028235e38 (the largest float32 as usually printed) and prints it back in that form; refuses what rounds beyond', async () => {
      expect((await post('/upsert/f32', { id: 'max', vector: [3.4028235e38, -1] })).status).toBe(200);
      expect(await post('/upsert/f32', { id: 'over', vector: [3.5e38, 1] })).toMatchObject({ status: 400, body: { error: 'vector[0] is outside the float32 range', status: 400 } });
      const raw = async (path: string, body: unknown) => (await fetch(`${stack.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(body) })).text();
      expect(await raw('/fetch/f32', { ids: ['max', 'over'], includeVectors: true })).toBe('{"result":[{"id":"max","vector":[3.4028235e+38,-1]},null]}');
      expect(await raw('/range/f32', { cursor: 0, limit: 5, includeVectors: true })).toBe('{"result":{"nextCursor":"","vectors":[{"id":"max","vector":[3.4028235e+38,-1]}]}}');
      const query = await post('/query/f32', { vector: [3.4028235e38, -1], topK: 1 });
      expect(query).toMatchObject({ status: 200, body: { result: [{ id: 'max' }] } });
    });
  });

  describe('DELETE bodies', () => {
    it('reads the body of DELETE /delete (the form Upstash documents), with or without a content type', async () => {
      await post('/upsert/del', ['a', 'b', 'c'].map((id) => ({ id, vector: [1, 0] })));
      expect((await call(`${stack.url}/delete/del`, { method: 'DELETE', token, body: { ids: ['a'] } })).body).toEqual({ result: { deleted: 1 } });
      const bare = await fetch(`${stack.url}/delete/del`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` }, body: '{"ids":["b"]}' });
      expect(await bare.json()).toEqual({ result: { deleted: 1 } });
      const typed = await fetch(`${stack.url}/delete/del`, { method: 'DELETE', headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' }, body: '{"prefix":"c"}' });
      expect(await typed.json()).toEqual({ result: { deleted: 1 } });
      expect(await call(`${stack.url}/delete/del`, { method: 'DELETE', token })).toMatchObject({ status: 400, body: { error: 'the delete body must be a JSON object', status: 400 } });
    });
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
