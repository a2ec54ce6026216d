import { kvServerEndpoint, tenantDocumentSchema } from './tenant-spec';

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
});

describe('a tenant document (DESIGN.md, KV: a Redis server backs at most one KV database)', () => {
  it('accepts KV databases on different servers', () => {
    expect(tenantDocumentSchema.safeParse(tenant('redis://a:1@127.0.0.1:6391/0', 'redis://a:1@127.0.0.1:6392/0')).success).toBe(true);
  });

  it.each([
    ['another db number', 'redis://gw:pw@127.0.0.1:6391/0', 'redis://gw:pw@127.0.0.1:6391/1'],
    ['other credentials', 'redis://gw:pw@127.0.0.1:6391/0', 'redis://other:x@127.0.0.1:6391'],
    ['the default port spelled out', 'redis://host/0', 'rediss://HOST:6379/5'],
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
  });
});
