import { z } from 'zod';
import { ConfigError, env, loadConfig } from './load-config';

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
    const names = (error as ConfigError).problems.map((p) => p.split(':')[0]).sort();
    expect(names).toEqual(['CONTROL_REDIS_URL', 'POOL_SIZE', 'PORT', 'TRACE']);
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
