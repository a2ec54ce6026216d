import { parseResourceFile } from '@restash/shared/util-resources';
import { resourceFileOf } from './tenants';

describe('resourceFileOf', () => {
  const tenant = (name: string, spec: object) => ({ apiVersion: 'restash.dev/v1alpha1', kind: 'Tenant', metadata: { name }, spec });

  it('writes Tenant documents as the resources file the tenants command reads, engines as variables', () => {
    const { text, env } = resourceFileOf([
      tenant('acme', {
        kv: { databases: [{ name: 'main', redis: { url: 'redis://u:p@127.0.0.1:7000/0' }, limits: { maxRequestBytes: 1024, dailyRequests: 0 } }] },
        vector: { indexes: [{ name: 'docs', dimension: 3, qdrant: { url: 'http://127.0.0.1:6333' }, embedding: { url: 'http://e/v1', model: 'm' } }] },
        stream: { clusters: [{ name: 'events', kafka: { brokers: ['127.0.0.1:9092'] }, topics: [{ name: 'orders', partitions: 2 }] }] },
      }),
      tenant('shop', { queue: { projects: [{ name: 'jobs', retries: { default: 1, max: 2 } }] } }),
    ]);
    expect(env).toEqual({ QDRANT_URL: 'http://127.0.0.1:6333', KAFKA_BROKERS: '127.0.0.1:9092' });
    const { resources, secrets } = parseResourceFile(text, {});
    expect(resources.map((r) => `${r.kind} ${r.metadata.namespace}/${r.metadata.name}`)).toEqual([
      'KvDatabase acme/main',
      'VectorIndex acme/docs',
      'StreamCluster acme/events',
      'QueueProject shop/jobs',
    ]);
    expect(resources[0]?.spec).toEqual({
      redis: { external: { urlSecretRef: { name: 'stack-secrets', key: 'main.url' } } },
      limits: { maxRequestBytes: 1024, dailyRequests: 0 },
    });
    expect(secrets.get('acme/stack-secrets')).toEqual({ 'main.url': 'redis://u:p@127.0.0.1:7000/0' });
    expect(resources[1]?.spec).toMatchObject({ dimension: 3, embedding: { url: 'http://e/v1', model: 'm' } });
    expect(resources[3]?.spec).toMatchObject({ retries: { default: 1, max: 2 } });
  });

  it('leaves what a resources file does not have for the tenants command to refuse, and refuses two engines', () => {
    const { text } = resourceFileOf([tenant('acme', { vector: { indexes: [{ name: 'docs', dimension: 3, qdrant: { url: 'http://q:6333', collection: 'mine' } }] } })]);
    expect(() => parseResourceFile(text, {})).toThrow('spec: Unrecognized key: "collection"');
    const brokers = (b: string) => ({ stream: { clusters: [{ name: b, kafka: { brokers: [b] } }] } });
    expect(() => resourceFileOf([tenant('a', brokers('k1:1')), tenant('b', brokers('k2:1'))])).toThrow('the tenant documents give two KAFKA_BROKERS: k1:1 and k2:1');
  });
});
