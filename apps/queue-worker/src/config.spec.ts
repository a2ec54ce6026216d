import { loadQueueWorkerConfig } from './config';

const REQUIRED = { CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY: Buffer.alloc(32, 7).toString('base64') };

describe('queue-worker config', () => {
  const required = { ...REQUIRED, QUEUE_REDIS_URL: 'redis://127.0.0.1:6390' };

  it('applies the defaults: QStash-like delivery, and no destination allowed off the public internet', () => {
    expect(loadQueueWorkerConfig(required)).toMatchObject({
      service: { service: 'queue-worker', managementPort: 9084 },
      registrySealKey: REQUIRED.REGISTRY_SEAL_KEY,
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
    const problems = expect.objectContaining({ name: 'ConfigError', variables: ['REGISTRY_SEAL_KEY', 'QUEUE_REDIS_URL', 'WORKER_CONCURRENCY', 'MAX_REDIRECTS'] });
    expect(() => loadQueueWorkerConfig({ CONTROL_REDIS_URL: 'redis://x', WORKER_CONCURRENCY: '0', MAX_REDIRECTS: '99' })).toThrow(problems);
  });
});
