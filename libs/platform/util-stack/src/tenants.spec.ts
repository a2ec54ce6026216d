import { parseAllDocuments } from 'yaml';
import { resourceFileOf } from './tenants';

describe('resourceFileOf', () => {
  const tenant = (name: string, spec: object) => ({ apiVersion: 'restash.dev/v1alpha1', kind: 'Tenant', metadata: { name }, spec });
  const documents = (text: string) => parseAllDocuments(text).map((doc) => doc.toJS() as { kind: string; metadata: { name: string; namespace: string }; spec?: object });

  it('writes Tenant documents as resources of the four kinds and Secrets, the engines as variables', () => {
    const { text, env } = resourceFileOf([
      tenant('acme', {
        kv: { databases: [{ name: 'main', redis: { url: 'redis://u:p@127.0.0.1:7000/0' }, limits: { maxRequestBytes: 1024, dailyRequests: 0 } }] },
        vector: { indexes: [{ name: 'docs', dimension: 3, qdrant: { url: 'http://127.0.0.1:6333', apiKey: 'k' }, embedding: { url: 'http://e/v1', model: 'm' } }] },
        stream: { clusters: [{ name: 'events', kafka: { brokers: ['127.0.0.1:9092', '127.0.0.1:9093'] }, topics: [{ name: 'orders', partitions: 2 }] }] },
      }),
      tenant('shop', { queue: { projects: [{ name: 'jobs', retries: { default: 1, max: 2 } }] } }),
    ]);
    expect(env).toEqual({ QDRANT_URL: 'http://127.0.0.1:6333', QDRANT_API_KEY: 'k', KAFKA_BROKERS: '127.0.0.1:9092,127.0.0.1:9093' });
    expect(documents(text)).toEqual([
      {
        apiVersion: 'restash.dev/v1alpha1',
        kind: 'KvDatabase',
        metadata: { name: 'main', namespace: 'acme' },
        spec: { redis: { external: { urlSecretRef: { name: 'stack-secrets', key: 'main.url' } } }, limits: { maxRequestBytes: 1024, dailyRequests: 0 } },
      },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'stack-secrets', namespace: 'acme' }, stringData: { 'main.url': 'redis://u:p@127.0.0.1:7000/0' } },
      { apiVersion: 'restash.dev/v1alpha1', kind: 'VectorIndex', metadata: { name: 'docs', namespace: 'acme' }, spec: { dimension: 3, embedding: { url: 'http://e/v1', model: 'm' } } },
      { apiVersion: 'restash.dev/v1alpha1', kind: 'StreamCluster', metadata: { name: 'events', namespace: 'acme' }, spec: { topics: [{ name: 'orders', partitions: 2 }] } },
      { apiVersion: 'restash.dev/v1alpha1', kind: 'QueueProject', metadata: { name: 'jobs', namespace: 'shop' }, spec: { retries: { default: 1, max: 2 } } },
    ]);
  });

  it('leaves what a resources file does not have in the spec (the tenants command refuses it), and refuses two engines', () => {
    const { text } = resourceFileOf([tenant('acme', { vector: { indexes: [{ name: 'docs', dimension: 3, qdrant: { url: 'http://q:6333', collection: 'mine' } }] } })]);
    expect(documents(text)[0]?.spec).toEqual({ dimension: 3, collection: 'mine' });
    const brokers = (b: string) => ({ stream: { clusters: [{ name: b, kafka: { brokers: [b] } }] } });
    expect(() => resourceFileOf([tenant('a', brokers('k1:1')), tenant('b', brokers('k2:1'))])).toThrow('the tenant documents give two KAFKA_BROKERS: k1:1 and k2:1');
  });
});
