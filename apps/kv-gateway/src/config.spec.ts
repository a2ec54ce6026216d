import { ConfigError } from '@restash/shared/util-config';
import { loadKvGatewayConfig } from './config';

const REGISTRY_SEAL_KEY = Buffer.alloc(32, 7).toString('base64');

describe('kv-gateway configuration', () => {
  it('needs only the control Redis and the registry seal key, and maps the rest to defaults', () => {
    const config = loadKvGatewayConfig({ CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY });
    expect(config.registrySealKey).toBe(REGISTRY_SEAL_KEY);
    expect(config.http).toMatchObject({ port: 8080, managementPort: 9080, service: 'kv-gateway' });
    expect(config.backend).toEqual({ poolSize: 2, transactionPoolSize: 8, commandTimeoutMs: 10_000, idleTimeoutMs: 60_000 });
    expect(config.scriptTimeoutMs).toBe(5_000);
  });

  it('refuses a script timeout that is not below the command timeout', () => {
    const base = { CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY };
    try {
      loadKvGatewayConfig({ ...base, REDIS_SCRIPT_TIMEOUT_MS: '10000' });
      throw new Error('booted');
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems.map((p) => p.split(':')[0])).toEqual(['REDIS_SCRIPT_TIMEOUT_MS']);
    }
    expect(loadKvGatewayConfig({ ...base, REDIS_SCRIPT_TIMEOUT_MS: '10000', REDIS_COMMAND_TIMEOUT_MS: '0' }).scriptTimeoutMs).toBe(10_000);
  });

  it('refuses to boot with every invalid variable listed', () => {
    expect(() => loadKvGatewayConfig({ PORT: 'http', REDIS_POOL_SIZE: '0', LOG_LEVEL: 'loud' })).toThrow(ConfigError);
    try {
      loadKvGatewayConfig({ PORT: 'http', REDIS_POOL_SIZE: '0', LOG_LEVEL: 'loud' });
    } catch (error) {
      expect((error as ConfigError).problems.map((p) => p.split(':')[0]).sort()).toEqual(['CONTROL_REDIS_URL', 'LOG_LEVEL', 'PORT', 'REDIS_POOL_SIZE', 'REGISTRY_SEAL_KEY']);
    }
  });
});
