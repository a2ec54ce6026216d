import { defaultCollection, kvServerEndpoint, tenantDocumentSchema, vectorCollectionOf } from './tenant-spec';

const tenant = (...urls: string[]) => ({
  apiVersion: 'restash.dev/v1alpha1',
  kind: 'Tenant',
  metadata: { name: 'acme' },
  spec: { kv: { databases: urls.map((url, i) => ({ name: `db${i}`, redis: { url } })) } },
});

describe('kvServerEndpoint', () => {
  it('is host:port, whatever the db number or credentials, with the default port filled in', () => {
    expect(kvServerEndpoint('redis://gw:secret@Redis-A.example:6391/3')).toBe('redis-a.example:6391');
    expect(kvServerEndpoint('rediss://redis-a.example/0')).toBe('redis-a.example:6379');
    expect(kvServerEndpoint('redis://127.0.0.1:6379')).toBe('127.0.0.1:6379');
  });

  it('is the sorted sentinels and the primary name for a Sentinel URL, whatever the db number or credentials', () => {
    expect(kvServerEndpoint('redis+sentinel://gw:pw@S2:26380,s1,[::1]:26381/kv/3?sentinelPassword=x')).toBe('sentinel:[::1]:26381,s1:26379,s2:26380/kv');
    expect(kvServerEndpoint('rediss+sentinel://s1:26379,s2:26380/kv')).toBe(kvServerEndpoint('redis+sentinel://s2:26380,s1/kv/1'));
    expect(() => kvServerEndpoint('redis+sentinel://s1:26379')).toThrow(/primary name/);
  });
});

describe('a tenant document (a Redis server backs at most one KV database: docs/kv.md, "KV: one Redis server per database")', () => {
  it('accepts KV databases on different servers', () => {
    expect(tenantDocumentSchema.safeParse(tenant('redis://a:1@127.0.0.1:6391/0', 'redis://a:1@127.0.0.1:6392/0')).success).toBe(true);
  });

  it.each([
    ['another db number', 'redis://gw:pw@127.0.0.1:6391/0', 'redis://gw:pw@127.0.0.1:6391/1'],
    ['other credentials', 'redis://gw:pw@127.0.0.1:6391/0', 'redis://other:x@127.0.0.1:6391'],
    ['the default port spelled out', 'redis://host/0', 'rediss://HOST:6379/5'],
    ['one Sentinel primary, its sentinels in another order', 'redis+sentinel://gw:pw@s1,s2:26380/kv/0', 'redis+sentinel://s2:26380,S1:26379/kv/1'],
  ])('refuses two KV databases on one server (%s), naming both', (_why, first, second) => {
    const parsed = tenantDocumentSchema.safeParse(tenant(first, second));
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues).toEqual([
      expect.objectContaining({
        path: ['spec', 'kv', 'databases', 1, 'redis', 'url'],
        message: expect.stringMatching(/^KV database 'db1' is on Redis server \S+, which already backs KV database 'db0': a Redis server backs at most one KV database/),
      }),
    ]);
  });

  it('refuses a URL it cannot parse', () => {
    expect(tenantDocumentSchema.safeParse(tenant('redis://[bad')).success).toBe(false);
    for (const url of ['redis+sentinel://s1:26379', 'redis+sentinel://s1:1x/kv', 'redis+sentinel://s1/kv?timeout=1', 'sentinel://s1/kv', 'http://h']) {
      expect(tenantDocumentSchema.safeParse(tenant(url)).error?.issues[0]?.message).toMatch(/^must be a valid redis:\/\/ or rediss:\/\/ URL, or redis\+sentinel:/);
    }
  });

  it('accepts a Sentinel deployment, and two primaries of one Sentinel deployment (two servers)', () => {
    expect(tenantDocumentSchema.safeParse(tenant('redis+sentinel://gw:p%40w@s1,s2:26380/kv/0?sentinelPassword=x')).success).toBe(true);
    expect(tenantDocumentSchema.safeParse(tenant('redis+sentinel://s1,s2/kv-a', 'redis+sentinel://s1,s2/kv-b', 'rediss+sentinel://s1/kv-c')).success).toBe(true);
  });
});

describe('vector collections (a collection holds one vector index)', () => {
  const indexes = (name: string, ...specs: Array<{ name: string; url?: string; collection?: string }>) => ({
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'Tenant',
    metadata: { name },
    spec: { vector: { indexes: specs.map((s) => ({ name: s.name, dimension: 3, qdrant: { url: s.url ?? 'http://q:6333', collection: s.collection } })) } },
  });

  it("gives every (tenant, index) its own default collection, '-' in names included", () => {
    expect(defaultCollection('x-y', 'z')).toBe('restash.x-y.z');
    expect(defaultCollection('x', 'y-z')).toBe('restash.x.y-z');
  });

  it('names the endpoint and the collection, whatever the case of the host or a trailing slash', () => {
    expect(vectorCollectionOf('http://Q:6333/', 'c')).toBe('collection c on http://q:6333');
    expect(vectorCollectionOf('https://q/prefix/', 'c')).toBe('collection c on https://q/prefix');
  });

  it.each([
    ['the same collection named twice', [{ name: 'a', collection: 'shared' }, { name: 'b', collection: 'shared', url: 'http://Q:6333/' }]],
    ["another index's default collection", [{ name: 'a' }, { name: 'b', collection: 'restash.acme.a' }]],
  ])('refuses two indexes on %s, naming both', (_why, specs) => {
    const parsed = tenantDocumentSchema.safeParse(indexes('acme', ...specs));
    expect(parsed.error?.issues).toEqual([
      expect.objectContaining({
        path: ['spec', 'vector', 'indexes', 1, 'qdrant'],
        message: expect.stringMatching(/^vector index 'b' is on Qdrant collection \S+ on http:\/\/q:6333, which already holds vector index 'a'/),
      }),
    ]);
  });

  it('accepts one collection name on two Qdrant servers', () => {
    expect(tenantDocumentSchema.safeParse(indexes('acme', { name: 'a', collection: 'c' }, { name: 'b', collection: 'c', url: 'http://r:6333' })).success).toBe(true);
  });
});

describe('vector index types in the tenant document', () => {
  const doc = (index: Record<string, unknown>) => ({
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'Tenant',
    metadata: { name: 'acme' },
    spec: { vector: { indexes: [{ name: 'i', qdrant: { url: 'http://q:6333' }, ...index }] } },
  });
  const issues = (index: Record<string, unknown>) => {
    const parsed = tenantDocumentSchema.safeParse(doc(index));
    return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.slice(4).join('.')}: ${i.message}`);
  };

  it('defaults to DENSE and accepts SPARSE with BM25 and HYBRID with both models', () => {
    expect(tenantDocumentSchema.parse(doc({ dimension: 3 })).spec.vector.indexes[0]?.type).toBe('DENSE');
    expect(issues({ type: 'SPARSE', sparseEmbedding: { model: 'BM25' } })).toEqual([]);
    expect(issues({ type: 'HYBRID', dimension: 3, sparseEmbedding: { model: 'BM25' }, embedding: { url: 'http://e/v1', model: 'm' } })).toEqual([]);
  });

  it('refuses what the type rules out, naming the field', () => {
    expect(issues({})).toEqual(['dimension: a DENSE index needs a dimension']);
    expect(issues({ type: 'HYBRID' })).toEqual(['dimension: a HYBRID index needs a dimension']);
    expect(issues({ type: 'SPARSE', dimension: 3 })).toEqual(['dimension: a SPARSE index has no dimension (its vectors are sparse)']);
    expect(issues({ type: 'SPARSE', embedding: { url: 'http://e/v1', model: 'm' } })).toEqual(['embedding: a SPARSE index has no dense embedding model; use sparseEmbedding']);
    expect(issues({ dimension: 3, sparseEmbedding: { model: 'BM25' } })).toEqual([
      'sparseEmbedding: a DENSE index has no sparse side; sparseEmbedding is for SPARSE and HYBRID indexes',
    ]);
    expect(issues({ type: 'SPARSE', sparseEmbedding: { model: 'SPLADE' } })[0]).toMatch(/^sparseEmbedding\.model: /);
  });
});
