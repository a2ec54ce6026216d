import { ConfigError } from '@restash/shared/util-config';
import { loadQueueGatewayConfig } from './config';

const REGISTRY_SEAL_KEY = Buffer.alloc(32, 7).toString('base64');

describe('queue-gateway config', () => {
  it('applies the defaults', () => {
    const config = loadQueueGatewayConfig({ CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', QUEUE_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY });
    expect(config.registrySealKey).toBe(REGISTRY_SEAL_KEY);
    expect(config.http).toMatchObject({ service: 'queue-gateway', port: 8083, managementPort: 9083 });
    expect(config.store.options).toEqual({ prefix: 'restash:queue', messageRetentionMs: 86_400_000, dlqRetentionMs: 604_800_000, eventsPerProject: 10_000 });
  });

  it('reports every bad variable at once', () => {
    expect(() => loadQueueGatewayConfig({ CONTROL_REDIS_URL: 'http://x', QUEUE_PREFIX: 'a b' })).toThrow(ConfigError);
    try {
      loadQueueGatewayConfig({ CONTROL_REDIS_URL: 'http://x', QUEUE_PREFIX: 'a b' });
    } catch (error) {
      expect((error as ConfigError).problems.map((p) => p.split(':')[0])).toEqual(['CONTROL_REDIS_URL', 'REGISTRY_SEAL_KEY', 'QUEUE_REDIS_URL', 'QUEUE_PREFIX']);
    }
  });
});
