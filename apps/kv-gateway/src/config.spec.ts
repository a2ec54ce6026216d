import { loadKvGatewayConfig } from './config';

const REQUIRED = { CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY: Buffer.alloc(32, 7).toString('base64') };

describe('kv-gateway configuration', () => {
  it('needs only the control Redis and the registry seal key, and maps the rest to defaults', () => {
    expect(loadKvGatewayConfig(REQUIRED)).toMatchObject({
      registrySealKey: REQUIRED.REGISTRY_SEAL_KEY,
      http: { port: 8080, managementPort: 9080, service: 'kv-gateway' },
      backend: { poolSize: 2, transactionPoolSize: 8, commandTimeoutMs: 10_000, idleTimeoutMs: 60_000 },
      scriptTimeoutMs: 5_000,
    });
  });

  it('refuses a script timeout that is not below the command timeout', () => {
    expect(() => loadKvGatewayConfig({ ...REQUIRED, REDIS_SCRIPT_TIMEOUT_MS: '10000' })).toThrow(expect.objectContaining({ name: 'ConfigError', variables: ['REDIS_SCRIPT_TIMEOUT_MS'] }));
    expect(loadKvGatewayConfig({ ...REQUIRED, REDIS_SCRIPT_TIMEOUT_MS: '10000', REDIS_COMMAND_TIMEOUT_MS: '0' }).scriptTimeoutMs).toBe(10_000);
  });

  it('refuses to boot with every invalid variable listed', () => {
    const problems = expect.objectContaining({ name: 'ConfigError', variables: ['CONTROL_REDIS_URL', 'REGISTRY_SEAL_KEY', 'PORT', 'LOG_LEVEL', 'REDIS_POOL_SIZE'] });
    expect(() => loadKvGatewayConfig({ PORT: 'http', REDIS_POOL_SIZE: '0', LOG_LEVEL: 'loud' })).toThrow(problems);
  });
});
