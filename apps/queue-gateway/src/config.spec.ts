import { loadQueueGatewayConfig } from './config';

const REQUIRED = { CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY: Buffer.alloc(32, 7).toString('base64') };

describe('queue-gateway config', () => {
  it('applies the defaults', () => {
    expect(loadQueueGatewayConfig({ ...REQUIRED, QUEUE_REDIS_URL: 'redis://127.0.0.1:6390' })).toMatchObject({
      registrySealKey: REQUIRED.REGISTRY_SEAL_KEY,
      http: { service: 'queue-gateway', port: 8083, managementPort: 9083 },
      store: { options: { prefix: 'restash:queue', messageRetentionMs: 86_400_000, dlqRetentionMs: 604_800_000, eventsPerProject: 10_000 } },
    });
  });

  it('reports every bad variable at once', () => {
    const problems = expect.objectContaining({ name: 'ConfigError', variables: ['CONTROL_REDIS_URL', 'REGISTRY_SEAL_KEY', 'QUEUE_REDIS_URL', 'QUEUE_PREFIX'] });
    expect(() => loadQueueGatewayConfig({ CONTROL_REDIS_URL: 'http://x', QUEUE_PREFIX: 'a b' })).toThrow(problems);
  });
});
