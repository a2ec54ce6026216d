import { ConfigError } from '@restash/shared/util-config';
import { loadQueueWorkerConfig } from './config';

const REGISTRY_SEAL_KEY = Buffer.alloc(32, 7).toString('base64');

describe('queue-worker config', () => {
  const required = { CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', QUEUE_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY };

  it('applies the defaults: QStash-like delivery, and no destination allowed off the public internet', () => {
    const config = loadQueueWorkerConfig(required);
    expect(config).toMatchObject({
      service: { service: 'queue-worker', managementPort: 9084 },
      registrySealKey: REGISTRY_SEAL_KEY,
      concurrency: 100,
      deliveryTimeoutMs: 30_000,
      maxRedirects: 5,
      destinationAllowlist: [],
      callbackRetries: 3,
    });
  });

  it('splits the allowlist on commas', () => {
    expect(loadQueueWorkerConfig({ ...required, DESTINATION_ALLOWLIST: '127.0.0.0/8, ::1,' }).destinationAllowlist).toEqual(['127.0.0.0/8', '::1']);
  });

  it('reports every bad variable at once', () => {
    try {
      loadQueueWorkerConfig({ CONTROL_REDIS_URL: 'redis://x', WORKER_CONCURRENCY: '0', MAX_REDIRECTS: '99' });
      throw new Error('no error');
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems.map((p) => p.split(':')[0])).toEqual(['REGISTRY_SEAL_KEY', 'QUEUE_REDIS_URL', 'WORKER_CONCURRENCY', 'MAX_REDIRECTS']);
    }
  });
});
