import { type RetiredResource, tenantDocumentSchema } from '@restash/shared/data-access-registry';
import { controlStateOf, describeResource, formatFailures, isResumableOf, reusedStorage } from './teardown';

const limits = { maxRequestBytes: 1024, dailyRequestLimit: 10 };
const kv: RetiredResource = { api: 'kv', record: { id: 'acme.main', tenant: 'acme', name: 'main', redisUrl: 'redis://h:1', ...limits, durability: 'async' } };
const vector: RetiredResource = {
  api: 'vector',
  record: {
    id: 'acme.main',
    tenant: 'acme',
    name: 'main',
    dimension: 3,
    similarityFunction: 'COSINE',
    indexType: 'DENSE',
    qdrantUrl: 'http://q:1',
    collection: 'restash-acme-main',
    ...limits,
  },
};
const queue: RetiredResource = {
  api: 'queue',
  record: { id: 'acme.jobs', tenant: 'acme', name: 'jobs', signingKeys: { current: 'a', next: 'b' }, retries: { default: 3, max: 10 }, ...limits },
};

describe('describeResource', () => {
  it('names the kind and the id, so a KV database and a vector index of the same name differ', () => {
    expect(describeResource(kv)).toBe('KV database acme.main');
    expect(describeResource(vector)).toBe('vector index acme.main');
    expect(describeResource(queue)).toBe('queue project acme.jobs');
  });
});

describe('controlStateOf', () => {
  it("owns the resource's quota counters of every day, under its own API", () => {
    expect(controlStateOf(kv)).toEqual({ keys: [], patterns: ['restash:v1:quota:kv:acme.main:*'] });
    expect(controlStateOf(queue).patterns).toEqual(['restash:v1:quota:queue:acme.jobs:*']);
  });

  it("owns a vector index's namespaces and write-counter hashes", () => {
    expect(controlStateOf(vector)).toEqual({
      keys: ['restash:v1:vector:namespaces:acme.main', 'restash:v1:vector:writes:acme.main'],
      patterns: ['restash:v1:quota:vector:acme.main:*'],
    });
  });

  it("owns the hash of a stream cluster's consumer-instance holders", () => {
    const stream: RetiredResource = { api: 'stream', record: { id: 'acme.events', tenant: 'acme', name: 'events', brokers: ['k:9092'], prefix: 'p.', topics: {}, ...limits } };
    expect(controlStateOf(stream)).toEqual({ keys: ['restash:v1:stream:instances:acme.events'], patterns: ['restash:v1:quota:stream:acme.events:*'] });
  });
});

describe('isResumableOf', () => {
  it("matches a resumable query's state by its index id only", () => {
    expect(isResumableOf(JSON.stringify({ index: 'acme.main', returned: 3 }), 'acme.main')).toBe(true);
    expect(isResumableOf(JSON.stringify({ index: 'acme.main2' }), 'acme.main')).toBe(false);
    expect(isResumableOf('not json', 'acme.main')).toBe(false);
    expect(isResumableOf(null, 'acme.main')).toBe(false);
  });
});

describe('formatFailures', () => {
  it('names every resource left and how to finish', () => {
    const text = formatFailures(
      { tenant: 'acme', purged: ['KV database acme.main'], untouched: [], failed: [{ resource: 'vector index acme.main', api: 'vector', id: 'acme.main', reason: 'connect ECONNREFUSED' }] },
      'run `tenants delete acme` again to finish',
    );
    expect(text).toBe(
      'tenant/acme: could not delete the data of 1 resource(s); it is still stored:\n  - vector index acme.main: connect ECONNREFUSED\nrun `tenants delete acme` again to finish',
    );
  });

  it('is empty when everything was purged', () => {
    expect(formatFailures({ tenant: 'acme', purged: [], untouched: [], failed: [] }, 'x')).toBe('');
  });
});

describe('reusedStorage', () => {
  const doc = (kvUrl: string, collection?: string) =>
    tenantDocumentSchema.parse({
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'Tenant',
      metadata: { name: 'acme' },
      spec: {
        kv: { databases: [{ name: 'renamed', redis: { url: kvUrl } }] },
        vector: { indexes: [{ name: 'other', dimension: 3, qdrant: { url: 'http://q:1', ...(collection ? { collection } : {}) } }] },
      },
    });

  it("names a KV database on the dropped one's server, whatever the db number or credentials", () => {
    expect(reusedStorage(doc('redis://user:pw@h:1/3'), [kv], 'that this apply drops')).toEqual([
      "KV database 'renamed' is on Redis server h:1, which still holds the data of KV database acme.main that this apply drops",
    ]);
  });

  it("names a vector index on the dropped one's collection", () => {
    expect(reusedStorage(doc('redis://h:2', 'restash-acme-main'), [vector], 'of tenant/old')).toEqual([
      "vector index 'other' uses Qdrant collection restash-acme-main, which still holds the data of vector index acme.main of tenant/old",
    ]);
  });

  it('finds nothing when the storage differs', () => {
    expect(reusedStorage(doc('redis://h:2'), [kv, vector, queue], 'x')).toEqual([]);
  });
});
