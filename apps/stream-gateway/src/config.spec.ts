import { ConfigError } from '@restash/shared/util-config';
import { loadStreamGatewayConfig } from './config';

const REGISTRY_SEAL_KEY = Buffer.alloc(32, 7).toString('base64');

describe('stream-gateway configuration', () => {
  it('needs only the control Redis and the registry seal key, and maps the rest to defaults', () => {
    const config = loadStreamGatewayConfig({ CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY });
    expect(config.registrySealKey).toBe(REGISTRY_SEAL_KEY);
    expect(config.http).toMatchObject({ port: 8082, managementPort: 9082, service: 'stream-gateway' });
    expect(config.consumer).toEqual({ idleTimeoutMs: 120_000, sessionTimeoutMs: 30_000, maxWaitMs: 500, maxBufferedRecords: 10_000, maxBufferedBytes: 16 * 1024 * 1024, joinWaitMs: 10_000 });
    expect(config.peerHost).toBeUndefined();
  });

  it('refuses to boot with every invalid variable listed', () => {
    let error: unknown;
    try {
      loadStreamGatewayConfig({ PORT: 'http', CONSUMER_IDLE_TIMEOUT_MS: '0', LOG_LEVEL: 'loud', PEER_HOST: 'http://10.0.0.1/' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map((p) => p.split(':')[0]).sort()).toEqual(['CONSUMER_IDLE_TIMEOUT_MS', 'CONTROL_REDIS_URL', 'LOG_LEVEL', 'PEER_HOST', 'PORT', 'REGISTRY_SEAL_KEY']);
  });
});
