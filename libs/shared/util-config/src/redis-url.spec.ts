import { z } from 'zod';
import { env } from './load-config';
import { isSentinelUrl, parseSentinelUrl, redisUrlAuth } from './redis-url';

describe('parseSentinelUrl', () => {
  it('reads the sentinels, the primary name, the database and the credentials', () => {
    expect(parseSentinelUrl('redis+sentinel://app:p%40ss@10.0.0.1:26380,sentinel-b,[::1]:26381/mymaster/2?sentinelPassword=s3cret')).toEqual({
      sentinels: [
        { host: '10.0.0.1', port: 26380 },
        { host: 'sentinel-b', port: 26379 },
        { host: '::1', port: 26381 },
      ],
      name: 'mymaster',
      db: 2,
      username: 'app',
      password: 'p@ss',
      sentinelPassword: 's3cret',
      tls: false,
    });
    expect(parseSentinelUrl('rediss+sentinel://:pw@s1/primary')).toEqual({ sentinels: [{ host: 's1', port: 26379 }], name: 'primary', db: 0, password: 'pw', tls: true });
  });

  it('leaves other URLs alone and refuses malformed sentinel URLs with a reason', () => {
    expect(parseSentinelUrl('redis://127.0.0.1:6379/0')).toBeUndefined();
    expect(isSentinelUrl('redis://127.0.0.1')).toBe(false);
    expect(() => parseSentinelUrl('redis+sentinel://s1:26379')).toThrow(/primary name/);
    expect(() => parseSentinelUrl('redis+sentinel://s1:99999/m')).toThrow(/'s1:99999' is not a host\[:port\]/);
    expect(() => parseSentinelUrl('redis+sentinel://s1,,s2/m')).toThrow(/is not a host/);
    expect(() => parseSentinelUrl('redis+sentinel://s1/m?timeout=1')).toThrow(/unknown query parameter 'timeout'/);
  });

  it('is what env.redisUrl() accepts beside redis:// and rediss://', () => {
    const schema = env.redisUrl();
    for (const url of ['redis://h:6379', 'rediss://h', 'redis+sentinel://a:26379,b:26379/mymaster']) expect(schema.parse(url)).toBe(url);
    for (const url of ['http://h', 'redis+sentinel://a:26379', 'sentinel://a/m']) expect(schema.safeParse(url).success).toBe(false);
    expect(z.object({ U: schema }).safeParse({ U: 'redis+sentinel://a:1x/m' }).error?.issues[0]?.message).toMatch(/must be redis\+sentinel|not a host/);
  });
});

describe('redisUrlAuth', () => {
  it('reads the database and the credentials of a redis:// URL, as ioredis does', () => {
    expect(redisUrlAuth('redis://restash-gateway:p%40ss@127.0.0.1:6391/3')).toEqual({ db: 3, username: 'restash-gateway', password: 'p@ss' });
    expect(redisUrlAuth('rediss://:pw@h')).toEqual({ db: 0, password: 'pw' });
    expect(redisUrlAuth('redis://h:6379')).toEqual({ db: 0 });
  });

  it("reads a sentinel URL's primary credentials and database, not the sentinels'", () => {
    expect(redisUrlAuth('redis+sentinel://restash-gateway:p%40ss@s1,s2:26380/kv/2?sentinelPassword=other')).toEqual({ db: 2, username: 'restash-gateway', password: 'p@ss' });
    expect(redisUrlAuth('redis+sentinel://s1/kv')).toEqual({ db: 0 });
    expect(() => redisUrlAuth('redis+sentinel://s1')).toThrow(/primary name/);
  });
});
