import { loadVectorGatewayConfig } from './config';

const REQUIRED = { CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY: Buffer.alloc(32, 7).toString('base64') };

describe('vector-gateway configuration', () => {
  it('needs only the control Redis and the registry seal key, and maps the rest to defaults', () => {
    expect(loadVectorGatewayConfig(REQUIRED)).toMatchObject({
      registrySealKey: REQUIRED.REGISTRY_SEAL_KEY,
      http: { port: 8081, managementPort: 9081, service: 'vector-gateway' },
      qdrantTimeoutMs: 30_000,
      embedderTimeoutMs: 30_000,
      filterScanLimit: 10_000,
    });
  });

  it('refuses to boot with every invalid variable listed', () => {
    const problems = expect.objectContaining({ name: 'ConfigError', variables: ['CONTROL_REDIS_URL', 'REGISTRY_SEAL_KEY', 'PORT', 'LOG_LEVEL', 'QDRANT_TIMEOUT_MS'] });
    expect(() => loadVectorGatewayConfig({ PORT: 'http', QDRANT_TIMEOUT_MS: '0', LOG_LEVEL: 'loud', REGISTRY_SEAL_KEY: 'not-base64-32' })).toThrow(problems);
  });
});
