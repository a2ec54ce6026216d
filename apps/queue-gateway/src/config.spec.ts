import { loadQueueGatewayConfig } from './config';

const REQUIRED = { CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY: Buffer.alloc(32, 7).toString('base64') };

describe('queue-gateway config', () => {
  it('applies the defaults', () => {
    expect(loadQueueGatewayConfig({ ...REQUIRED, QUEUE_REDIS_URL: 'redis://127.0.0.1:6390' })).toMatchObject({
      registrySealKey: REQUIRED.REGISTRY_SEAL_KEY,
      http: { service: 'queue-gateway', port: 8083, managementPort: 9083 },
      store: {
        options: { prefix: 'restash:queue', messageRetentionMs: 86_400_000, dlqRetentionMs: 604_800_000, eventsPerProject: 10_000 },
        servers: [{ name: 'main', url: 'redis://127.0.0.1:6390' }],
      },
    });
  });

  it('names QUEUE_REDIS_URL main and reads QUEUE_REDIS_SERVERS as <name>=<url> entries', () => {
    const config = loadQueueGatewayConfig({ ...REQUIRED, QUEUE_REDIS_URL: 'redis://a:6390', QUEUE_REDIS_SERVERS: ' q2=redis://b:6390/1\n q-3=redis+sentinel://s1,s2/queue ' });
    expect(config.store.servers).toEqual([
      { name: 'main', url: 'redis://a:6390' },
      { name: 'q2', url: 'redis://b:6390/1' },
      { name: 'q-3', url: 'redis+sentinel://s1,s2/queue' },
    ]);
  });

  it.each([
    ['main=redis://b', /used twice/],
    ['q2=redis://b q2=redis://c', /used twice/],
    ['redis://b', /<name>=<url>/],
    ['Q2=redis://b', /<name>=<url>/],
    ['q2=http://b', /server 'q2': must be a redis/],
  ])('refuses QUEUE_REDIS_SERVERS=%s', (servers, message) => {
    expect(() => loadQueueGatewayConfig({ ...REQUIRED, QUEUE_REDIS_URL: 'redis://a', QUEUE_REDIS_SERVERS: servers })).toThrow(
      expect.objectContaining({ variables: ['QUEUE_REDIS_SERVERS'], message: expect.stringMatching(message) }),
    );
  });

  it('reports every bad variable at once', () => {
    const problems = expect.objectContaining({ name: 'ConfigError', variables: ['CONTROL_REDIS_URL', 'REGISTRY_SEAL_KEY', 'QUEUE_REDIS_URL', 'QUEUE_PREFIX'] });
    expect(() => loadQueueGatewayConfig({ CONTROL_REDIS_URL: 'http://x', QUEUE_PREFIX: 'a b' })).toThrow(problems);
  });
});
