import { ConfigError } from '@restash/shared/util-config';
import { loadVectorGatewayConfig } from './config';

const REGISTRY_SEAL_KEY = Buffer.alloc(32, 7).toString('base64');

describe('vector-gateway configuration', () => {
  it('needs only the control Redis and the registry seal key, and maps the rest to defaults', () => {
    const config = loadVectorGatewayConfig({ CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY });
    expect(config.registrySealKey).toBe(REGISTRY_SEAL_KEY);
    expect(config.http).toMatchObject({ port: 8081, managementPort: 9081, service: 'vector-gateway' });
    expect(config).toMatchObject({ qdrantTimeoutMs: 30_000, embedderTimeoutMs: 30_000, filterScanLimit: 10_000 });
  });

  it('refuses to boot with every invalid variable listed', () => {
    let error: unknown;
    try {
      loadVectorGatewayConfig({ PORT: 'http', QDRANT_TIMEOUT_MS: '0', LOG_LEVEL: 'loud', REGISTRY_SEAL_KEY: 'not-base64-32' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map((p) => p.split(':')[0]).sort()).toEqual(['CONTROL_REDIS_URL', 'LOG_LEVEL', 'PORT', 'QDRANT_TIMEOUT_MS', 'REGISTRY_SEAL_KEY']);
  });
});
