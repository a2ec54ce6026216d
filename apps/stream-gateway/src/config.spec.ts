import { loadStreamGatewayConfig } from './config';

const REQUIRED = { CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY: Buffer.alloc(32, 7).toString('base64') };

describe('stream-gateway configuration', () => {
  it('needs only the control Redis and the registry seal key, and maps the rest to defaults', () => {
    const config = loadStreamGatewayConfig(REQUIRED);
    expect(config).toMatchObject({ registrySealKey: REQUIRED.REGISTRY_SEAL_KEY, http: { port: 8082, managementPort: 9082, service: 'stream-gateway' } });
    expect(config.consumer).toEqual({ idleTimeoutMs: 120_000, sessionTimeoutMs: 30_000, maxWaitMs: 500, maxBufferedRecords: 10_000, maxBufferedBytes: 16 * 1024 * 1024, joinWaitMs: 10_000 });
    expect(config.peerHost).toBeUndefined();
  });

  it('refuses to boot with every invalid variable listed', () => {
    const problems = expect.objectContaining({ name: 'ConfigError', variables: ['CONTROL_REDIS_URL', 'REGISTRY_SEAL_KEY', 'PORT', 'LOG_LEVEL', 'CONSUMER_IDLE_TIMEOUT_MS', 'PEER_HOST'] });
    expect(() => loadStreamGatewayConfig({ PORT: 'http', CONSUMER_IDLE_TIMEOUT_MS: '0', LOG_LEVEL: 'loud', PEER_HOST: 'http://10.0.0.1/' })).toThrow(problems);
  });
});
