import { Redis } from '@upstash/redis';
import { type KvStack, startKvStack } from './testing/kv-stack';
import { kvEngine } from '@restash/platform/util-stack';

/** The tenant data server these tests run against (KV_ENGINE): `redis` (8.2 with RedisJSON and RediSearch) or `valkey` (9.1). */
const engine = kvEngine().name;

/**
 * Every hash method of @upstash/redis 1.39.0 through a real kv-gateway, including hash-field
 * expiration (HEXPIRE … HPERSIST, Redis 7.4 and Valkey 9.0) and HGETEX, HSETEX and HGETDEL (Redis
 * 8.0, Valkey 9.0): the replies the SDK hands back, as its own tests expect them from Upstash.
 */
describe(`@upstash/redis hashes on ${engine}`, () => {
  let stack: KvStack;
  let redis: Redis;
  const inSeconds = (s: number) => Math.floor(Date.now() / 1000) + s;

  beforeAll(async () => {
    stack = await startKvStack({ acme: [{ name: 'main' }] });
    redis = new Redis({ url: stack.url, token: stack.tokens('acme', 'main').standard, enableTelemetry: false });
  });
  afterAll(() => stack.stop());

  it('hashes: HSET, HGET, HMGET, HGETALL, counters, HSETNX, HSTRLEN, HKEYS, HVALS, HDEL, HRANDFIELD, HSCAN', async () => {
    expect(await redis.hset('h:user', { name: 'ada', age: 36, tags: ['a', 'b'] })).toBe(3);
    expect(await redis.hset('h:user', { name: 'ada lovelace' })).toBe(0);
    expect(await redis.hget('h:user', 'name')).toBe('ada lovelace');
    expect(await redis.hget('h:user', 'age')).toBe(36);
    expect(await redis.hget('h:user', 'nope')).toBeNull();
    expect(await redis.hmget('h:user', 'name', 'tags', 'nope')).toEqual({ name: 'ada lovelace', tags: ['a', 'b'], nope: null });
    expect(await redis.hmget('h:none', 'a', 'b')).toBeNull();
    expect(await redis.hgetall('h:user')).toEqual({ name: 'ada lovelace', age: 36, tags: ['a', 'b'] });
    expect(await redis.hgetall('h:none')).toBeNull();
    expect(await redis.hmset('h:user', { city: 'london' })).toBe('OK');
    expect(await redis.hsetnx('h:user', 'city', 'paris')).toBe(0);
    expect(await redis.hsetnx('h:user', 'born', 1815)).toBe(1);
    expect(await redis.hincrby('h:user', 'age', 1)).toBe(37);
    expect(await redis.hincrbyfloat('h:user', 'age', 0.5)).toBe(37.5);
    expect(await redis.hexists('h:user', 'city')).toBe(1);
    expect(await redis.hexists('h:user', 'nope')).toBe(0);
    expect(await redis.hstrlen('h:user', 'city')).toBe(6);
    expect(await redis.hlen('h:user')).toBe(5);
    expect((await redis.hkeys('h:user')).sort()).toEqual(['age', 'born', 'city', 'name', 'tags']);
    expect(await redis.hvals('h:user')).toContain('london');
    expect(await redis.hdel('h:user', 'born', 'nope')).toBe(1);

    const fields = ['age', 'city', 'name', 'tags'];
    expect(fields).toContain(await redis.hrandfield('h:user'));
    expect((await redis.hrandfield('h:user', 10)).sort()).toEqual(fields);
    expect(await redis.hrandfield('h:user', 10, true)).toEqual({ name: 'ada lovelace', age: 37.5, tags: ['a', 'b'], city: 'london' });
    expect(await redis.hrandfield('h:none')).toBeNull();

    const [cursor, page] = await redis.hscan('h:user', 0, { match: 'c*' });
    expect(cursor).toBe('0');
    expect(page).toEqual(['city', 'london']);
  });

  it('hash-field expiration: HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT with conditions, HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME, HPERSIST', async () => {
    await redis.hset('h:ttl', { a: 'x', b: 'y', c: 'z' });
    // Per field: 1 set, 0 condition not met, -2 no such field (2 when the time is in the past: deleted).
    expect(await redis.hexpire('h:ttl', ['a', 'nope'], 100)).toEqual([1, -2]);
    expect(await redis.hexpire('h:ttl', 'a', 200, 'NX')).toEqual([0]);
    expect(await redis.hexpire('h:ttl', 'a', 50, 'GT')).toEqual([0]);
    expect(await redis.hexpire('h:ttl', 'a', 50, 'LT')).toEqual([1]);
    expect(await redis.hexpire('h:ttl', 'b', 50, 'XX')).toEqual([0]);
    expect(await redis.hexpire('h:none', 'a', 10)).toEqual([-2]);
    const [ttlA, ttlB, ttlNope] = await redis.httl('h:ttl', ['a', 'b', 'nope']);
    expect(ttlA).toBeGreaterThan(40);
    expect(ttlA).toBeLessThanOrEqual(50);
    expect([ttlB, ttlNope]).toEqual([-1, -2]);

    expect(await redis.hpexpire('h:ttl', 'b', 90_000)).toEqual([1]);
    const [pttlB] = await redis.hpttl('h:ttl', 'b');
    expect(pttlB).toBeGreaterThan(80_000);
    expect(await redis.hexpireat('h:ttl', 'c', inSeconds(300))).toEqual([1]);
    const [expiresC] = await redis.hexpiretime('h:ttl', 'c');
    expect(Math.abs((expiresC ?? 0) - inSeconds(300))).toBeLessThanOrEqual(1);
    expect(await redis.hpexpireat('h:ttl', 'c', inSeconds(400) * 1000)).toEqual([1]);
    const [pexpiresC] = await redis.hpexpiretime('h:ttl', ['c']);
    expect(Math.abs((pexpiresC ?? 0) - inSeconds(400) * 1000)).toBeLessThanOrEqual(1000);
    expect(await redis.hexpiretime('h:ttl', 'nope')).toEqual([-2]);

    expect(await redis.hpersist('h:ttl', ['a', 'nope'])).toEqual([1, -2]);
    expect(await redis.hpersist('h:ttl', 'a')).toEqual([-1]);
    expect(await redis.httl('h:ttl', 'a')).toEqual([-1]);

    // A time in the past deletes the field at once.
    expect(await redis.hexpireat('h:ttl', 'c', inSeconds(-10))).toEqual([2]);
    expect(await redis.hexists('h:ttl', 'c')).toBe(0);
    // A negative time too, as Upstash: Redis would answer "invalid expire time".
    await redis.hset('h:ttl', { d: 'gone' });
    expect(await redis.hexpireat('h:ttl', 'd', -1)).toEqual([2]);
    expect(await redis.hexists('h:ttl', 'd')).toBe(0);
    expect(await redis.hpexpire('h:ttl', 'b', 1)).toEqual([1]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await redis.hgetall('h:ttl')).toEqual({ a: 'x' });
  });

  it('HSETEX with FNX/FXX and EX/PX/EXAT/PXAT/KEEPTTL, HGETEX with EX/PX/EXAT/PXAT/PERSIST, HGETDEL', async () => {
    expect(await redis.hsetex('h:ex', { expiration: { ex: 100 } }, { a: 'x', b: { n: 1 } })).toBe(1);
    expect(await redis.hget('h:ex', 'b')).toEqual({ n: 1 });
    expect((await redis.httl('h:ex', ['a', 'b'])).every((t) => t > 90 && t <= 100)).toBe(true);
    expect(await redis.hsetex('h:ex', { conditional: 'FNX' }, { a: 'again', c: 'new' })).toBe(0);
    expect(await redis.hsetex('h:ex', { conditional: 'FNX', expiration: { px: 200_000 } }, { c: 'new' })).toBe(1);
    expect((await redis.hpttl('h:ex', 'c'))[0]).toBeGreaterThan(190_000);
    expect(await redis.hsetex('h:ex', { conditional: 'FXX' }, { a: 'y', nope: 'z' })).toBe(0);
    expect(await redis.hsetex('h:ex', { conditional: 'FXX', expiration: { keepttl: true } }, { a: 'y' })).toBe(1);
    expect((await redis.httl('h:ex', 'a'))[0]).toBeGreaterThan(90);
    expect(await redis.hsetex('h:ex', { conditional: 'FXX' }, { a: 'z' })).toBe(1);
    expect(await redis.httl('h:ex', 'a')).toEqual([-1]);
    expect(await redis.hsetex('h:ex', { expiration: { exat: inSeconds(500) } }, { d: 'd' })).toBe(1);
    expect(await redis.hsetex('h:ex', { expiration: { pxat: inSeconds(600) * 1000 } }, { e: 'e' })).toBe(1);
    expect((await redis.httl('h:ex', ['d', 'e'])).map((t) => Math.round(t / 100))).toEqual([5, 6]);

    expect(await redis.hgetex('h:ex', { ex: 70 }, 'a', 'nope')).toEqual({ a: 'z', nope: null });
    expect((await redis.httl('h:ex', 'a'))[0]).toBeGreaterThan(60);
    expect(await redis.hgetex('h:ex', { px: 80_000 }, 'a')).toEqual({ a: 'z' });
    expect((await redis.hpttl('h:ex', 'a'))[0]).toBeGreaterThan(70_000);
    expect(await redis.hgetex('h:ex', { exat: inSeconds(700) }, 'a')).toEqual({ a: 'z' });
    expect(Math.round(((await redis.httl('h:ex', 'a'))[0] ?? 0) / 100)).toBe(7);
    expect(await redis.hgetex('h:ex', { pxat: inSeconds(800) * 1000 }, 'a')).toEqual({ a: 'z' });
    expect(Math.round(((await redis.httl('h:ex', 'a'))[0] ?? 0) / 100)).toBe(8);
    expect(await redis.hgetex('h:ex', { persist: true }, 'a', 'b')).toEqual({ a: 'z', b: { n: 1 } });
    expect(await redis.httl('h:ex', ['a', 'b'])).toEqual([-1, -1]);
    expect(await redis.hgetex('h:none', { ex: 10 }, 'a')).toBeNull();

    expect(await redis.hgetdel('h:ex', 'a', 'nope')).toEqual({ a: 'z', nope: null });
    expect(await redis.hexists('h:ex', 'a')).toBe(0);
    expect(await redis.hgetdel('h:ex', 'b', 'c', 'd', 'e')).toEqual({ b: { n: 1 }, c: 'new', d: 'd', e: 'e' });
    // The last field gone, the hash is gone.
    expect(await redis.exists('h:ex')).toBe(0);
    expect(await redis.hgetdel('h:ex', 'a')).toBeNull();
  });
});
