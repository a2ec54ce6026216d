import { z } from 'zod';
import { type KvDatabase, type RestashResource, parseResourceFile, streamClusterUsername } from '@restash/shared/util-resources';
import { streamClusterId, streamUsername } from './records';
import { MANAGED_KV_NOT_SUPPORTED, type ResolveOptions, backendsConfig, backendsEnv, resolveTenant } from './resources';
import { tenantDocumentSchema } from './tenant-spec';

const FILE = `
apiVersion: v1
kind: Secret
metadata: { name: creds, namespace: acme }
stringData: { redis: "redis://gw:pw@redis-a:6380/0", other: "redis://gw:pw@REDIS-A:6380/1", embed: sk-1, bad: "http://x" }
---
apiVersion: restash.dev/v1alpha1
kind: KvDatabase
metadata: { name: main, namespace: acme }
spec: { redis: { external: { urlSecretRef: { name: creds, key: redis } } }, limits: { dailyRequests: 5 } }
---
apiVersion: restash.dev/v1alpha1
kind: VectorIndex
metadata: { name: docs, namespace: acme }
spec: { dimension: 3, embedding: { model: m } }
---
apiVersion: restash.dev/v1alpha1
kind: StreamCluster
metadata: { name: events, namespace: acme }
spec: { topics: [{ name: orders, partitions: 3, retentionMs: -1 }] }
---
apiVersion: restash.dev/v1alpha1
kind: QueueProject
metadata: { name: jobs, namespace: acme }
---
apiVersion: restash.dev/v1alpha1
kind: QueueProject
metadata: { name: jobs, namespace: other }
`;

function setup(text: string) {
  const { resources, secrets } = parseResourceFile(text, {});
  const options: ResolveOptions = {
    backends: backendsConfig(z.object(backendsEnv()).parse({ QDRANT_URL: 'http://qdrant:6333', KAFKA_BROKERS: 'k1:9092,k2:9092', EMBEDDING_URL: 'http://embed/v1', EMBEDDING_API_KEY: 'sk-default' })),
    secret: (ns, name, key) => secrets.get(`${ns}/${name}`)?.[key],
  };
  return { resources, options };
}

const kv = (name: string, key: string): KvDatabase => ({
  apiVersion: 'restash.dev/v1alpha1',
  kind: 'KvDatabase',
  metadata: { name, namespace: 'acme' },
  spec: { redis: { external: { urlSecretRef: { name: 'creds', key } } }, limits: { maxRequestBytes: 1, dailyRequests: 0 }, durability: 'async' },
});

describe('resolveTenant', () => {
  it('turns a namespace into the registry’s tenant document, secrets and backends resolved', () => {
    const { resources, options } = setup(FILE);
    const { document, problems } = resolveTenant('acme', resources, options);
    expect(problems).toEqual([]);
    expect(tenantDocumentSchema.parse(document)).toEqual(document);
    expect(document.metadata.name).toBe('acme');
    expect(document.spec.kv.databases).toEqual([{ name: 'main', redis: { url: 'redis://gw:pw@redis-a:6380/0' }, limits: { maxRequestBytes: 10_485_760, dailyRequests: 5 }, durability: 'async' }]);
    expect(document.spec.vector.indexes).toEqual([
      {
        name: 'docs',
        type: 'DENSE',
        dimension: 3,
        similarityFunction: 'COSINE',
        qdrant: { url: 'http://qdrant:6333', collection: 'restash.acme.docs' },
        embedding: { url: 'http://embed/v1', model: 'm', apiKey: 'sk-default', platform: true },
        limits: { maxRequestBytes: 10_485_760, dailyRequests: 0 },
      },
    ]);
    expect(document.spec.stream.clusters).toEqual([
      { name: 'events', kafka: { brokers: ['k1:9092', 'k2:9092'] }, topics: [{ name: 'orders', partitions: 3 }], limits: { maxRequestBytes: 1_048_576, dailyRequests: 0 } },
    ]);
    expect(document.spec.queue.projects).toEqual([{ name: 'jobs', retries: { default: 3, max: 10 }, destinations: { inNamespace: false }, limits: { maxRequestBytes: 1_048_576, dailyRequests: 0 } }]);
  });

  it('leaves out each resource with a problem, and keeps the others', () => {
    const { options } = setup(FILE);
    const managed: KvDatabase = { ...kv('managed', 'x'), spec: { redis: { managed: { storage: '1Gi', replicas: 1, engine: 'redis' } }, limits: { maxRequestBytes: 1, dailyRequests: 0 }, durability: 'async' } };
    const resources = [kv('a', 'redis'), kv('b', 'other'), kv('c', 'missing'), kv('d', 'bad'), managed];
    const { document, problems } = resolveTenant('acme', resources, options);
    expect(document.spec.kv.databases.map((d) => d.name)).toEqual(['a']);
    expect(problems).toEqual([
      { kind: 'KvDatabase', name: 'b', reason: 'StorageConflict', message: expect.stringContaining("KV database 'b' is on Redis server redis-a:6380, which already backs KV database 'a'") },
      { kind: 'KvDatabase', name: 'c', reason: 'SecretNotFound', message: 'spec.redis.external.urlSecretRef: Secret acme/creds has no key missing' },
      { kind: 'KvDatabase', name: 'd', reason: 'InvalidSpec', message: 'spec.redis: the Redis URL is not a valid redis://, rediss:// or redis+sentinel:// URL' },
      { kind: 'KvDatabase', name: 'managed', reason: 'NotSupported', message: MANAGED_KV_NOT_SUPPORTED },
    ]);
  });

  it('takes a Redis Sentinel deployment as an external KV database’s URL (issue 31)', () => {
    const { options } = setup(FILE);
    const url = 'redis+sentinel://gw:pw@s1:26379,s2:26379/kv/0';
    const { document, problems } = resolveTenant('acme', [kv('s', 'sentinel')], { ...options, secret: () => url });
    expect(problems).toEqual([]);
    expect(document.spec.kv.databases).toEqual([expect.objectContaining({ name: 's', redis: { url } })]);
    const malformed = resolveTenant('acme', [kv('s', 'sentinel')], { ...options, secret: () => 'redis+sentinel://gw:pw@s1:26379' });
    expect(malformed.problems).toEqual([expect.objectContaining({ reason: 'InvalidSpec', message: expect.not.stringContaining('pw') })]);
  });

  it('takes a managed KV database’s URL from managedKvUrl', () => {
    const { options } = setup(FILE);
    const managed: KvDatabase = { ...kv('m', 'x'), spec: { redis: { managed: { storage: '1Gi', replicas: 1, engine: 'redis' } }, limits: { maxRequestBytes: 1, dailyRequests: 0 }, durability: 'async' } };
    const { document } = resolveTenant('acme', [managed], { ...options, managedKvUrl: (db) => `redis://gw:pw@${db.metadata.name}-redis:6379` });
    expect(document.spec.kv.databases[0].redis.url).toBe('redis://gw:pw@m-redis:6379');
  });

  it('sends the applier’s embedding key only to the applier’s endpoint, and a referenced key anywhere; only the applier’s endpoint is the platform’s', () => {
    const { options } = setup(FILE);
    const index = (embedding: object): RestashResource => ({
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'VectorIndex',
      metadata: { name: 'docs', namespace: 'acme' },
      spec: { type: 'DENSE', dimension: 3, similarityFunction: 'COSINE', embedding: { model: 'm', ...embedding }, limits: { maxRequestBytes: 1, dailyRequests: 0 } },
    });
    const embeddingOf = (r: RestashResource) => resolveTenant('acme', [r], options).document.spec.vector.indexes[0].embedding;
    expect(embeddingOf(index({ url: 'https://elsewhere/v1' }))).toEqual({ url: 'https://elsewhere/v1', model: 'm' });
    expect(embeddingOf(index({ url: 'http://embed/v1' }))).toEqual({ url: 'http://embed/v1', model: 'm' }); // named by the index: guarded
    expect(embeddingOf(index({ url: 'https://elsewhere/v1', apiKeySecretRef: { name: 'creds', key: 'embed' } }))).toEqual({ url: 'https://elsewhere/v1', model: 'm', apiKey: 'sk-1' });
  });

  it('refuses resources whose backend the applier lacks', () => {
    const { resources } = setup(FILE);
    const { document, problems } = resolveTenant('acme', resources, { backends: {}, secret: () => 'redis://r:1' });
    expect(document.spec.kv.databases).toHaveLength(1);
    expect(problems.map((p) => [p.kind, p.reason, p.message])).toEqual([
      ['VectorIndex', 'NotSupported', 'the applier has no Qdrant (QDRANT_URL)'],
      ['StreamCluster', 'NotSupported', 'the applier has no Kafka (KAFKA_BROKERS)'],
    ]);
  });
});

describe('backendsEnv', () => {
  it('refuses a broker list that is not host:port', () => {
    expect(z.object(backendsEnv()).safeParse({ KAFKA_BROKERS: 'k1:9092, k2' }).success).toBe(false);
    expect(backendsConfig(z.object(backendsEnv()).parse({}))).toEqual({});
  });
});

describe('streamClusterUsername', () => {
  it('is the registry’s user name of the cluster’s credentials', () => {
    for (const role of ['standard', 'readonly'] as const) {
      expect(streamClusterUsername('acme', 'events', role)).toBe(streamUsername(streamClusterId('acme', 'events'), role));
    }
  });
});
