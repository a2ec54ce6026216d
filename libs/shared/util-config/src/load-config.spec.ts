import { z } from 'zod';
import {
  ConfigError,
  configLoader,
  env,
  httpServiceConfig,
  httpServiceEnv,
  loadConfig,
  registryConfig,
  registryEnv,
  workerServiceConfig,
  workerServiceEnv,
} from './load-config';

const schema = z.object({
  PORT: env.port(8080),
  CONTROL_REDIS_URL: env.redisUrl(),
  POOL_SIZE: env.positiveInt(2),
  TRACE: env.flag(false),
});

describe('loadConfig', () => {
  it('applies defaults and coerces strings', () => {
    expect(loadConfig(schema, { CONTROL_REDIS_URL: 'redis://127.0.0.1:6379', TRACE: '1' })).toEqual({
      PORT: 8080,
      CONTROL_REDIS_URL: 'redis://127.0.0.1:6379',
      POOL_SIZE: 2,
      TRACE: true,
    });
  });

  it('reports every invalid variable at once', () => {
    let error: unknown;
    try {
      loadConfig(schema, { PORT: '70000', POOL_SIZE: '-1', TRACE: 'yes' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variables).toEqual(['PORT', 'CONTROL_REDIS_URL', 'POOL_SIZE', 'TRACE']);
    expect((error as ConfigError).message).toContain('PORT');
  });
});

describe('env.key256', () => {
  const key = z.object({ KEY: env.key256() });

  it('takes 32 bytes in standard base64 as given', () => {
    const value = Buffer.alloc(32, 0xfb).toString('base64');
    expect(loadConfig(key, { KEY: value })).toEqual({ KEY: value });
  });

  it.each([
    ['missing', undefined, 'required'],
    ['31 bytes', Buffer.alloc(31, 1).toString('base64'), 'must be 32 random bytes'],
    ['33 bytes', Buffer.alloc(33, 1).toString('base64'), 'must be 32 random bytes'],
    ['base64url', Buffer.alloc(32, 0xfb).toString('base64url'), 'must be 32 random bytes'],
    ['hex', Buffer.alloc(32, 1).toString('hex'), 'must be 32 random bytes'],
  ])('refuses a key that is %s', (_, value, message) => {
    expect(() => loadConfig(key, value === undefined ? {} : { KEY: value })).toThrow(message);
  });
});

describe('the shared service variables', () => {
  const SEAL = Buffer.alloc(32, 7).toString('base64');
  const service = z
    .object({ ...registryEnv(), ...httpServiceEnv(8080, 9080), REGISTRY_CACHE_TTL_MS: env.positiveInt(30_000) })
    .transform((e) => ({ http: httpServiceConfig('demo', e), ...registryConfig(e) }));
  const worker = z.object({ ...registryEnv(), ...workerServiceEnv(9084) }).transform((e) => workerServiceConfig('demo-worker', e));

  it('read the registry and the HTTP service from their defaults', () => {
    expect(configLoader(service)({ CONTROL_REDIS_URL: 'redis://127.0.0.1:6390', REGISTRY_SEAL_KEY: SEAL })).toEqual({
      http: { service: 'demo', host: '0.0.0.0', port: 8080, managementPort: 9080, bodyLimitBytes: 104_857_600, unreadAnswerBytes: 67_108_864, logLevel: 'log' },
      controlRedisUrl: 'redis://127.0.0.1:6390',
      registryCacheTtlMs: 30_000,
      registrySealKey: SEAL,
    });
  });

  it('declare their variables in one order', () => {
    expect(Object.keys(registryEnv())).toEqual(['CONTROL_REDIS_URL', 'REGISTRY_SEAL_KEY']);
    expect(Object.keys(httpServiceEnv(1, 2))).toEqual(['HOST', 'PORT', 'MANAGEMENT_PORT', 'BODY_LIMIT_BYTES', 'UNREAD_ANSWER_BYTES', 'LOG_LEVEL']);
    expect(Object.keys(workerServiceEnv(1))).toEqual(['HOST', 'MANAGEMENT_PORT', 'LOG_LEVEL']);
  });

  it('read a worker’s management server, and report every problem through the loader', () => {
    const load = configLoader(worker);
    expect(load({ CONTROL_REDIS_URL: 'redis://h', REGISTRY_SEAL_KEY: SEAL, HOST: '127.0.0.1', LOG_LEVEL: 'warn' })).toEqual({ service: 'demo-worker', host: '127.0.0.1', managementPort: 9084, logLevel: 'warn' });
    expect(() => load({ MANAGEMENT_PORT: '70000' })).toThrow(expect.objectContaining({ name: 'ConfigError', variables: ['CONTROL_REDIS_URL', 'REGISTRY_SEAL_KEY', 'MANAGEMENT_PORT'] }));
  });

  it('read process.env when given no source', () => {
    const saved = { ...process.env };
    try {
      Object.assign(process.env, { CONTROL_REDIS_URL: 'redis://from-env', REGISTRY_SEAL_KEY: SEAL });
      expect(configLoader(worker)().host).toBe('0.0.0.0');
    } finally {
      for (const name of ['CONTROL_REDIS_URL', 'REGISTRY_SEAL_KEY']) if (saved[name] === undefined) delete process.env[name];
      Object.assign(process.env, saved);
    }
  });
});
