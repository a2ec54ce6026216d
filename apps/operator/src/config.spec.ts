import { loadOperatorConfig } from './config';

const valid = {
  CONTROL_REDIS_URL: 'redis://127.0.0.1:6379',
  REGISTRY_SEAL_KEY: Buffer.alloc(32, 7).toString('base64'),
  KV_GATEWAY_URL: 'http://kv.example:8080',
  VECTOR_GATEWAY_URL: 'http://vector.example:8081',
  STREAM_GATEWAY_URL: 'http://stream.example:8082',
  QUEUE_GATEWAY_URL: 'http://queue.example:8083',
  MANAGED_REDIS_IMAGE: 'localhost/restash/redis:7.0.15',
};

describe('loadOperatorConfig', () => {
  it('fills in the defaults: leader election on, the queue store on the control Redis, no backends', () => {
    const config = loadOperatorConfig(valid);
    expect(config.leaderElection).toEqual({ namespace: 'default', name: 'restash-operator', identity: expect.any(String) });
    expect(config.queueStore.redisUrl).toBe(valid.CONTROL_REDIS_URL);
    expect(config.backends).toEqual({});
    expect(config.managedRedis).toEqual({ image: 'localhost/restash/redis:7.0.15', imagePullPolicy: 'IfNotPresent', runAsUser: 65532, cpuRequest: '50m', memoryRequest: '64Mi', memoryLimit: '256Mi' });
    expect(config.resyncMs).toBe(300_000);
  });

  it('reads the backends as the tenants command does, and can turn leader election off', () => {
    const config = loadOperatorConfig({ ...valid, QDRANT_URL: 'http://qdrant:6333', KAFKA_BROKERS: 'k0:9092,k1:9092', LEADER_ELECTION: 'false', POD_NAME: 'op-0' });
    expect(config.backends).toEqual({ qdrant: { url: 'http://qdrant:6333' }, kafka: { brokers: ['k0:9092', 'k1:9092'] } });
    expect(config.leaderElection).toBeUndefined();
  });

  it('reads the Valkey image of databases whose engine is valkey', () => {
    expect(loadOperatorConfig({ ...valid, MANAGED_VALKEY_IMAGE: 'localhost/restash/valkey:9.1.2' }).managedRedis).toMatchObject({ image: 'localhost/restash/redis:7.0.15', valkeyImage: 'localhost/restash/valkey:9.1.2' });
  });

  it('reports every invalid variable at once', () => {
    const problems = expect.objectContaining({ name: 'ConfigError', variables: expect.arrayContaining(['KV_GATEWAY_URL', 'MANAGED_REDIS_PULL_POLICY', 'MANAGED_REDIS_MEMORY_LIMIT', 'KAFKA_BROKERS']) });
    expect(() => loadOperatorConfig({ ...valid, KV_GATEWAY_URL: 'kv:8080', MANAGED_REDIS_PULL_POLICY: 'Sometimes', MANAGED_REDIS_MEMORY_LIMIT: 'lots', KAFKA_BROKERS: 'nohost' })).toThrow(problems);
  });
});
