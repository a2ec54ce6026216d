import { KINDS, type KvDatabase, type QueueProject, type StreamCluster, secretDataOf } from './kinds';
import { RULE_CASES } from './testing/rule-cases';

describe('the kinds’ zod schemas', () => {
  it.each(RULE_CASES)('$kind: $what → valid $valid', ({ kind, spec, valid }) => {
    expect(KINDS[kind].spec.safeParse(spec).success).toBe(valid);
  });

  it('fill in the defaults of k8s-api.md', () => {
    expect(KINDS.KvDatabase.spec.parse({})).toEqual({
      redis: { managed: { storage: '1Gi', replicas: 1, engine: 'redis' } },
      limits: { maxRequestBytes: 10_485_760, dailyRequests: 0 },
      durability: 'async',
    });
    expect(KINDS.VectorIndex.spec.parse({ dimension: 384 })).toEqual({
      type: 'DENSE',
      dimension: 384,
      similarityFunction: 'COSINE',
      limits: { maxRequestBytes: 10_485_760, dailyRequests: 0 },
    });
    expect(KINDS.StreamCluster.spec.parse({ topics: [{ name: 'orders' }] })).toEqual({
      topics: [{ name: 'orders', partitions: 1 }],
      limits: { maxRequestBytes: 1_048_576, dailyRequests: 0 },
    });
    expect(KINDS.QueueProject.spec.parse({})).toEqual({
      retries: { default: 3, max: 10 },
      destinations: { inNamespace: false },
      limits: { maxRequestBytes: 1_048_576, dailyRequests: 0 },
    });
  });

  it('name the field of a refused rule', () => {
    const result = KINDS.QueueProject.spec.safeParse({ retries: { default: 5, max: 4 } });
    expect(result.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['retries.default', 'retries.default must not exceed retries.max']]);
  });
});

describe('secretDataOf', () => {
  const meta = { name: 'events', namespace: 'acme' };
  const urls = { kv: 'https://kv.example', vector: 'https://vector.example', stream: 'https://stream.example', queue: 'https://queue.example' };

  it('gives a stream cluster the Basic-auth user names of both credentials', () => {
    const cluster: StreamCluster = { apiVersion: 'restash.dev/v1alpha1', kind: 'StreamCluster', metadata: meta, spec: KINDS.StreamCluster.spec.parse({}) as StreamCluster['spec'] };
    expect(secretDataOf(cluster, { standard: 's', readonly: 'r' }, urls)).toEqual({
      UPSTASH_KAFKA_REST_URL: 'https://stream.example',
      UPSTASH_KAFKA_REST_USERNAME: 'acme.events',
      UPSTASH_KAFKA_REST_PASSWORD: 's',
      UPSTASH_KAFKA_REST_READONLY_USERNAME: 'acme.events.readonly',
      UPSTASH_KAFKA_REST_READONLY_PASSWORD: 'r',
    });
  });

  it('uses exactly the keys of KINDS[kind].secretKeys', () => {
    const queue: QueueProject = { apiVersion: 'restash.dev/v1alpha1', kind: 'QueueProject', metadata: meta, spec: KINDS.QueueProject.spec.parse({}) as QueueProject['spec'] };
    const data = secretDataOf(queue, { standard: 's', readonly: 'r', currentSigningKey: 'c', nextSigningKey: 'n' }, urls);
    expect(Object.keys(data)).toEqual(KINDS.QueueProject.secretKeys);
    expect(data.QSTASH_CURRENT_SIGNING_KEY).toBe('c');
  });

  it('refuses a kind whose gateway URL is not configured', () => {
    const db: KvDatabase = { apiVersion: 'restash.dev/v1alpha1', kind: 'KvDatabase', metadata: meta, spec: KINDS.KvDatabase.spec.parse({}) as KvDatabase['spec'] };
    expect(() => secretDataOf(db, { standard: 's', readonly: 'r' }, { vector: 'x' })).toThrow('KvDatabase acme/events: KV_GATEWAY_URL is not set');
  });
});
