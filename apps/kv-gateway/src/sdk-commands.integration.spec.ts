import { Redis } from '@upstash/redis';
import { type KvStack, startKvStack } from './testing/kv-stack';
import { kvEngine } from '@restash/platform/util-stack';

/** The tenant data server these tests run against (KV_ENGINE): `redis` (8.2 with RedisJSON and RediSearch) or `valkey` (9.1). */
const engine = kvEngine().name;

/**
 * Every command method of @upstash/redis 1.39.0 for strings, bitmaps, keys, lists, sets, sorted
 * sets, geo, HyperLogLog, scripting and functions, Pub/Sub PUBLISH and the server commands, through
 * a real kv-gateway on the engine KV_ENGINE names: the replies the SDK hands back, as its own tests
 * expect them from Upstash. Hashes, streams, JSON, pipelines and transactions have files of their
 * own (sdk-hash-ttl, sdk-streams, sdk-json); sdk.integration.spec.ts covers the basics.
 */
describe(`@upstash/redis commands on ${engine}`, () => {
  let stack: KvStack;
  let redis: Redis;

  beforeAll(async () => {
    stack = await startKvStack({ acme: [{ name: 'main' }, { name: 'scratch' }] });
    redis = new Redis({ url: stack.url, token: stack.tokens('acme', 'main').standard, enableTelemetry: false });
  });
  afterAll(() => stack.stop());

  it('strings: SET options, GETEX, GETDEL, GETSET, ranges, counters, MSET', async () => {
    expect(await redis.set('s:nx', 'one', { nx: true })).toBe('OK');
    expect(await redis.set('s:nx', 'two', { nx: true })).toBeNull();
    expect(await redis.set('s:xx', 'one', { xx: true })).toBeNull();
    expect(await redis.set('s:nx', 'three', { get: true })).toBe('one');
    expect(await redis.set('s:nx', 'four', { keepTtl: true, xx: true })).toBe('OK');
    await redis.set('s:px', 'v', { px: 60_000 });
    expect(await redis.pttl('s:px')).toBeGreaterThan(50_000);
    await redis.set('s:exat', 'v', { exat: Math.floor(Date.now() / 1000) + 100 });
    expect(await redis.ttl('s:exat')).toBeGreaterThan(90);
    expect(await redis.setnx('s:nx', 'x')).toBe(0);
    expect(await redis.setnx('s:new', 'x')).toBe(1);
    expect(await redis.setex('s:ex', 100, 'v')).toBe('OK');
    expect(await redis.ttl('s:ex')).toBeGreaterThan(90);
    expect(await redis.psetex('s:pex', 100_000, 'v')).toBe('OK');
    expect(await redis.pttl('s:pex')).toBeGreaterThan(90_000);

    expect(await redis.getex('s:ex', { persist: true })).toBe('v');
    expect(await redis.ttl('s:ex')).toBe(-1);
    expect(await redis.getex('s:ex', { ex: 50 })).toBe('v');
    expect(await redis.ttl('s:ex')).toBeGreaterThan(40);
    expect(await redis.getex('s:missing', { ex: 50 })).toBeNull();
    expect(await redis.getdel('s:new')).toBe('x');
    expect(await redis.get('s:new')).toBeNull();
    expect(await redis.getset('s:gs', 'first')).toBeNull();
    expect(await redis.getset('s:gs', 'second')).toBe('first');

    expect(await redis.append('s:text', 'Hello')).toBe(5);
    expect(await redis.append('s:text', ' World')).toBe(11);
    expect(await redis.getrange('s:text', 0, 4)).toBe('Hello');
    expect(await redis.setrange('s:text', 6, 'Redis')).toBe(11);
    expect(await redis.get('s:text')).toBe('Hello Redis');
    expect(await redis.strlen('s:text')).toBe(11);

    expect(await redis.incr('s:n')).toBe(1);
    expect(await redis.incrby('s:n', 10)).toBe(11);
    expect(await redis.decr('s:n')).toBe(10);
    expect(await redis.decrby('s:n', 4)).toBe(6);
    expect(await redis.incrbyfloat('s:n', 0.5)).toBe(6.5);
    await expect(redis.incr('s:text')).rejects.toThrow('ERR value is not an integer or out of range');

    expect(await redis.mset({ 's:m1': 'a', 's:m2': { nested: true } })).toBe('OK');
    expect(await redis.mget('s:m1', 's:m2', 's:none')).toEqual(['a', { nested: true }, null]);
    expect(await redis.mget(['s:m1', 's:m2'])).toEqual(['a', { nested: true }]);
    expect(await redis.msetnx({ 's:m1': 'b', 's:m3': 'c' })).toBe(0);
    expect(await redis.msetnx({ 's:m3': 'c', 's:m4': 'd' })).toBe(1);
    expect(await redis.get('s:m1')).toBe('a');
  });

  it('bitmaps: SETBIT, GETBIT, BITCOUNT, BITPOS, BITFIELD and every BITOP of the engine', async () => {
    for (const [key, bits] of [
      ['b:a', [0, 1, 2]],
      ['b:b', [1]],
      ['b:c', [2, 3]],
    ] as const) {
      for (const bit of bits) expect(await redis.setbit(key, bit, 1)).toBe(0);
    }
    expect(await redis.setbit('b:a', 0, 1)).toBe(1);
    expect(await redis.getbit('b:a', 2)).toBe(1);
    expect(await redis.getbit('b:a', 3)).toBe(0);
    expect(await redis.bitcount('b:a', 0, -1)).toBe(3);
    expect(await redis.bitcount('b:a', 1, 1)).toBe(0);
    expect(await redis.bitpos('b:c', 1)).toBe(2);
    expect(await redis.bitpos('b:a', 0)).toBe(3);
    expect(await redis.bitpos('b:a', 1, 1, 2)).toBe(-1);

    const bitsOf = async (key: string) => {
      const set: number[] = [];
      for (let i = 0; i < 8; i++) if ((await redis.getbit(key, i)) === 1) set.push(i);
      return set;
    };
    expect(await redis.bitop('and', 'b:and', 'b:a', 'b:b')).toBe(1);
    expect(await bitsOf('b:and')).toEqual([1]);
    expect(await redis.bitop('or', 'b:or', 'b:b', 'b:c')).toBe(1);
    expect(await bitsOf('b:or')).toEqual([1, 2, 3]);
    expect(await redis.bitop('xor', 'b:xor', 'b:a', 'b:c')).toBe(1);
    expect(await bitsOf('b:xor')).toEqual([0, 1, 3]);

    // Redis 8.2: DIFF = a ∧ ¬(b ∨ c), DIFF1 = ¬a ∧ (b ∨ c), ANDOR = a ∧ (b ∨ c), ONE = set in exactly one source.
    const ops = [
      ['diff', [0]],
      ['diff1', [3]],
      ['andor', [1, 2]],
      ['one', [0, 3]],
    ] as const;
    for (const [op, expected] of ops) {
      const result = op === 'one' ? redis.bitop(op, `b:${op}`, 'b:a', 'b:b', 'b:c') : redis.bitop(op, `b:${op}`, 'b:a', 'b:b', 'b:c');
      if (engine === 'valkey') {
        await expect(result).rejects.toThrow('ERR syntax error');
      } else {
        expect(await result).toBe(1);
        expect(await bitsOf(`b:${op}`)).toEqual(expected);
      }
    }

    // The auto-pipelining proxy (on by default) turns bitfield()'s builder into a promise: use a plain client.
    const plain = new Redis({ url: stack.url, token: stack.tokens('acme', 'main').standard, enableTelemetry: false, enableAutoPipelining: false });
    const field = await plain.bitfield('b:field').set('u8', 0, 200).get('u8', 0).incrby('u8', 0, 100).overflow('SAT').incrby('u8', 0, 100).exec();
    expect(field).toEqual([0, 200, 44, 144]);
  });

  it('keys: COPY, RENAME, expiry with NX/XX/GT/LT, TOUCH, TYPE, UNLINK, RANDOMKEY', async () => {
    await redis.set('k:src', 'v');
    expect(await redis.copy('k:src', 'k:dst')).toBe('COPIED');
    expect(await redis.copy('k:src', 'k:dst')).toBe('NOT_COPIED');
    expect(await redis.copy('k:src', 'k:dst', { replace: true })).toBe('COPIED');
    expect(await redis.copy('k:none', 'k:dst2')).toBe('NOT_COPIED');
    await redis.lpush('k:list', 'x', 'y');
    expect(await redis.copy('k:list', 'k:list2')).toBe('COPIED');
    expect(await redis.lrange('k:list2', 0, -1)).toEqual(['y', 'x']);

    expect(await redis.rename('k:dst', 'k:renamed')).toBe('OK');
    expect(await redis.renamenx('k:renamed', 'k:src')).toBe(0);
    expect(await redis.renamenx('k:renamed', 'k:renamed2')).toBe(1);
    await expect(redis.rename('k:none', 'k:x')).rejects.toThrow('ERR no such key');

    expect(await redis.expire('k:src', 100, 'XX')).toBe(0);
    expect(await redis.expire('k:src', 100, 'NX')).toBe(1);
    expect(await redis.expire('k:src', 50, 'GT')).toBe(0);
    expect(await redis.expire('k:src', 50, 'LT')).toBe(1);
    expect(await redis.ttl('k:src')).toBeLessThanOrEqual(50);
    expect(await redis.pexpire('k:src', 80_000)).toBe(1);
    expect(await redis.pttl('k:src')).toBeGreaterThan(70_000);
    const inAMinute = Math.floor(Date.now() / 1000) + 60;
    expect(await redis.expireat('k:src', inAMinute)).toBe(1);
    expect(await redis.ttl('k:src')).toBeGreaterThan(50);
    expect(await redis.pexpireat('k:src', inAMinute * 1000 + 30_000)).toBe(1);
    expect(await redis.ttl('k:src')).toBeGreaterThan(80);
    expect(await redis.persist('k:src')).toBe(1);
    expect(await redis.ttl('k:src')).toBe(-1);
    expect(await redis.ttl('k:none')).toBe(-2);
    expect(await redis.pttl('k:none')).toBe(-2);
    expect(await redis.expire('k:none', 10)).toBe(0);

    expect(await redis.touch('k:src', 'k:list', 'k:none')).toBe(2);
    expect(await redis.type('k:src')).toBe('string');
    expect(await redis.type('k:list')).toBe('list');
    expect(await redis.type('k:none')).toBe('none');
    expect(await redis.exists('k:src', 'k:list', 'k:src')).toBe(3);
    expect(await redis.unlink('k:list', 'k:list2', 'k:none')).toBe(2);
    expect(await redis.del('k:src', 'k:none')).toBe(1);
    expect(await redis.exists('k:src')).toBe(0);

    // Upstash answers 0 (NOT_COPIED) for a key copied onto itself where Redis answers an error.
    await redis.set('k:self', 'v');
    expect(await redis.copy('k:self', 'k:self')).toBe('NOT_COPIED');
  });

  it('keys: SCAN with MATCH, COUNT, TYPE and WITHTYPE, KEYS, RANDOMKEY, DBSIZE, FLUSHDB and FLUSHALL', async () => {
    const scratch = new Redis({ url: stack.url, token: stack.tokens('acme', 'scratch').standard, enableTelemetry: false });
    expect(await scratch.randomkey()).toBeNull();
    await scratch.set('scan:str', 'v');
    await scratch.zadd('scan:zset', { score: 1, member: 'm' });
    await scratch.hset('scan:hash', { f: 'v' });
    expect(await scratch.randomkey()).toMatch(/^scan:/);
    expect(await scratch.dbsize()).toBe(3);

    const scanAll = async <T>(page: (cursor: string) => Promise<[string, T[]]>): Promise<T[]> => {
      const found: T[] = [];
      let cursor = '0';
      do {
        const [next, keys] = await page(cursor);
        expect(typeof next).toBe('string');
        found.push(...keys);
        cursor = next;
      } while (cursor !== '0');
      return found;
    };
    expect((await scanAll((c) => scratch.scan(c, { count: 1 }))).sort()).toEqual(['scan:hash', 'scan:str', 'scan:zset']);
    expect(await scanAll((c) => scratch.scan(c, { match: 'scan:z*' }))).toEqual(['scan:zset']);
    expect(await scanAll((c) => scratch.scan(c, { type: 'string' }))).toEqual(['scan:str']);
    expect((await scratch.keys('scan:*')).sort()).toEqual(['scan:hash', 'scan:str', 'scan:zset']);

    expect(await scratch.flushdb()).toBe('OK');
    expect(await scratch.dbsize()).toBe(0);
    await scratch.set('scan:again', 'v');
    expect(await scratch.flushdb({ async: true })).toBe('OK');
    expect(await scratch.dbsize()).toBe(0);
    await scratch.set('scan:again', 'v');
    expect(await scratch.flushall()).toBe('OK');
    expect(await scratch.dbsize()).toBe(0);
    // FLUSHALL of one database leaves the tenant's other databases alone.
    await redis.set('k:survives', 'v');
    expect(await scratch.flushall([{ async: true }])).toBe('OK');
    expect(await redis.get('k:survives')).toBe('v');

    // SCAN … WITHTYPE is Upstash's: each key with its type.
    await scratch.set('scan:str', 'v');
    await scratch.hset('scan:hash', { f: 'v' });
    expect((await scanAll((c) => scratch.scan(c, { withType: true }))).sort((a, b) => a.key.localeCompare(b.key))).toEqual([
      { key: 'scan:hash', type: 'hash' },
      { key: 'scan:str', type: 'string' },
    ]);
  });

  it('lists: pushes, pops with counts, LMOVE, LMPOP, LPOS, LINSERT, LSET, LREM, LTRIM', async () => {
    expect(await redis.lpushx('l:list', 'a')).toBe(0);
    expect(await redis.rpushx('l:list', 'a')).toBe(0);
    expect(await redis.rpush('l:list', 'a', 'b', 'c')).toBe(3);
    expect(await redis.lpush('l:list', 'z')).toBe(4);
    expect(await redis.lpushx('l:list', 'y')).toBe(5);
    expect(await redis.rpushx('l:list', 'd')).toBe(6);
    expect(await redis.lrange('l:list', 0, -1)).toEqual(['y', 'z', 'a', 'b', 'c', 'd']);
    expect(await redis.llen('l:list')).toBe(6);
    expect(await redis.lindex('l:list', -1)).toBe('d');
    expect(await redis.lindex('l:list', 100)).toBeNull();
    expect(await redis.lpop('l:list')).toBe('y');
    expect(await redis.rpop('l:list')).toBe('d');
    expect(await redis.lpop('l:list', 2)).toEqual(['z', 'a']);
    expect(await redis.rpop('l:list', 5)).toEqual(['c', 'b']);
    expect(await redis.lpop('l:list')).toBeNull();

    await redis.rpush('l:pos', 'a', 'b', 'c', 'b', 'b');
    expect(await redis.lpos('l:pos', 'b')).toBe(1);
    expect(await redis.lpos('l:pos', 'b', { rank: 2 })).toBe(3);
    expect(await redis.lpos('l:pos', 'b', { rank: -1 })).toBe(4);
    expect(await redis.lpos('l:pos', 'b', { count: 0 })).toEqual([1, 3, 4]);
    expect(await redis.lpos('l:pos', 'b', { count: 5, maxLen: 4 })).toEqual([1, 3]);
    expect(await redis.lpos('l:pos', 'x')).toBeNull();
    expect(await redis.linsert('l:pos', 'before', 'c', 'bc')).toBe(6);
    expect(await redis.linsert('l:pos', 'after', 'nope', 'x')).toBe(-1);
    expect(await redis.lset('l:pos', 0, 'A')).toBe('OK');
    await expect(redis.lset('l:pos', 99, 'x')).rejects.toThrow('ERR index out of range');
    expect(await redis.lrem('l:pos', 0, 'b')).toBe(3);
    expect(await redis.lrange('l:pos', 0, -1)).toEqual(['A', 'bc', 'c']);
    expect(await redis.ltrim('l:pos', 1, -1)).toBe('OK');
    expect(await redis.lrange('l:pos', 0, -1)).toEqual(['bc', 'c']);

    expect(await redis.lmove('l:pos', 'l:dest', 'left', 'right')).toBe('bc');
    expect(await redis.lmove('l:pos', 'l:dest', 'right', 'left')).toBe('c');
    expect(await redis.lrange('l:dest', 0, -1)).toEqual(['c', 'bc']);
    expect(await redis.lmove('l:pos', 'l:dest', 'left', 'left')).toBeNull();

    await redis.rpush('l:mp2', 'p', 'q', 'r');
    expect(await redis.lmpop(2, ['l:mp1', 'l:mp2'], 'LEFT')).toEqual(['l:mp2', ['p']]);
    expect(await redis.lmpop(2, ['l:mp1', 'l:mp2'], 'RIGHT', 5)).toEqual(['l:mp2', ['r', 'q']]);
    expect(await redis.lmpop(2, ['l:mp1', 'l:mp2'], 'LEFT')).toBeNull();
  });

  it('sets: membership, random picks, algebra with STORE variants, SINTERCARD, SMOVE, SSCAN', async () => {
    expect(await redis.sadd('set:a', 'a', 'b', 'c', 'd')).toBe(4);
    expect(await redis.sadd('set:a', 'a')).toBe(0);
    await redis.sadd('set:b', 'c', 'd', 'e');
    expect(await redis.scard('set:a')).toBe(4);
    expect(await redis.sismember('set:a', 'a')).toBe(1);
    expect(await redis.sismember('set:a', 'z')).toBe(0);
    expect(await redis.smismember('set:a', ['a', 'z', 'c'])).toEqual([1, 0, 1]);
    const sorted = (xs: unknown) => (xs as string[]).sort();
    expect(sorted(await redis.sdiff('set:a', 'set:b'))).toEqual(['a', 'b']);
    expect(sorted(await redis.sinter('set:a', 'set:b'))).toEqual(['c', 'd']);
    expect(sorted(await redis.sunion('set:a', 'set:b'))).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(await redis.sdiffstore('set:diff', 'set:a', 'set:b')).toBe(2);
    expect(await redis.sinterstore('set:inter', 'set:a', 'set:b')).toBe(2);
    expect(await redis.sunionstore('set:union', 'set:a', 'set:b')).toBe(5);
    expect(sorted(await redis.smembers('set:diff'))).toEqual(['a', 'b']);
    expect(await redis.sintercard(['set:a', 'set:b'])).toBe(2);
    expect(await redis.sintercard(['set:a', 'set:b'], { limit: 1 })).toBe(1);

    expect(await redis.smove('set:a', 'set:b', 'a')).toBe(1);
    expect(await redis.smove('set:a', 'set:b', 'a')).toBe(0);
    expect(await redis.srem('set:b', 'a', 'z')).toBe(1);

    const members = ['b', 'c', 'd'];
    expect(members).toContain(await redis.srandmember('set:a'));
    const two = (await redis.srandmember<string[]>('set:a', 2)) ?? [];
    expect(two).toHaveLength(2);
    for (const m of two) expect(members).toContain(m);
    expect(await redis.srandmember('set:none')).toBeNull();
    const popped = await redis.spop<string>('set:a');
    expect(members).toContain(popped);
    const rest = (await redis.spop<string[]>('set:a', 5)) ?? [];
    expect([popped, ...rest].sort()).toEqual(members);
    expect(await redis.spop('set:a')).toBeNull();

    await redis.sadd('set:scan', 'm1', 'm2', 'x1');
    const [cursor, page] = await redis.sscan('set:scan', 0, { match: 'm*', count: 100 });
    expect(cursor).toBe('0');
    expect(sorted(page)).toEqual(['m1', 'm2']);
  });

  it('sorted sets: ZADD options, ranges by rank/score/lex, pops, ranks, algebra, ZSCAN', async () => {
    expect(await redis.zadd('z:a', { score: 1, member: 'one' }, { score: 2, member: 'two' }, { score: 3, member: 'three' })).toBe(3);
    expect(await redis.zadd('z:a', { nx: true }, { score: 10, member: 'one' })).toBe(0);
    expect(await redis.zadd('z:a', { xx: true, ch: true }, { score: 1.5, member: 'one' })).toBe(1);
    expect(await redis.zadd('z:a', { gt: true, ch: true }, { score: 1, member: 'one' })).toBe(0);
    expect(await redis.zadd('z:a', { incr: true }, { score: 0.5, member: 'one' })).toBe(2);
    expect(await redis.zscore('z:a', 'one')).toBe(2);
    expect(await redis.zscore('z:a', 'nobody')).toBeNull();
    expect(await redis.zincrby('z:a', -1, 'one')).toBe(1);
    expect(await redis.zmscore('z:a', ['one', 'three', 'nobody'])).toEqual([1, 3, null]);
    expect(await redis.zcard('z:a')).toBe(3);
    expect(await redis.zcount('z:a', 2, '+inf')).toBe(2);
    expect(await redis.zrank('z:a', 'three')).toBe(2);
    expect(await redis.zrevrank('z:a', 'three')).toBe(0);
    expect(await redis.zrank('z:a', 'nobody')).toBeNull();

    expect(await redis.zrange('z:a', 0, -1)).toEqual(['one', 'two', 'three']);
    expect(await redis.zrange('z:a', 0, 1, { rev: true, withScores: true })).toEqual(['three', 3, 'two', 2]);
    expect(await redis.zrange('z:a', '(1', '+inf', { byScore: true })).toEqual(['two', 'three']);
    expect(await redis.zrange('z:a', '+inf', '-inf', { byScore: true, rev: true, offset: 1, count: 1 })).toEqual(['two']);

    await redis.zadd('z:lex', { score: 0, member: 'a' }, ...['b', 'c', 'd', 'e'].map((member) => ({ score: 0, member })));
    expect(await redis.zrange('z:lex', '[b', '(d', { byLex: true })).toEqual(['b', 'c']);
    expect(await redis.zlexcount('z:lex', '[b', '+')).toBe(4);
    expect(await redis.zremrangebylex('z:lex', '[a', '[b')).toBe(2);
    expect(await redis.zremrangebyrank('z:lex', 0, 0)).toBe(1);
    expect(await redis.zrange('z:lex', 0, -1)).toEqual(['d', 'e']);
    expect(await redis.zrem('z:lex', 'd', 'nobody')).toBe(1);

    await redis.zadd('z:pop', { score: 1, member: 'p1' }, { score: 2, member: 'p2' }, { score: 3, member: 'p3' }, { score: 4, member: 'p4' });
    expect(await redis.zpopmin('z:pop')).toEqual(['p1', 1]);
    expect(await redis.zpopmax('z:pop', 2)).toEqual(['p4', 4, 'p3', 3]);
    expect(await redis.zremrangebyscore('z:pop', 0, 10)).toBe(1);
    expect(await redis.zpopmin('z:pop')).toEqual([]);

    await redis.zadd('z:b', { score: 10, member: 'two' }, { score: 20, member: 'four' });
    expect(await redis.zunion(2, ['z:a', 'z:b'], { withScores: true })).toEqual(['one', 1, 'three', 3, 'two', 12, 'four', 20]);
    expect(await redis.zunion(2, ['z:a', 'z:b'], { weights: [2, 1], aggregate: 'max' })).toEqual(['one', 'three', 'two', 'four']);
    expect(await redis.zunionstore('z:union', 2, ['z:a', 'z:b'], { aggregate: 'min' })).toBe(4);
    expect(await redis.zscore('z:union', 'two')).toBe(2);
    expect(await redis.zinterstore('z:inter', 2, ['z:a', 'z:b'], { weights: [1, 0.5] })).toBe(1);
    expect(await redis.zrange('z:inter', 0, -1, { withScores: true })).toEqual(['two', 7]);
    expect(await redis.zdiffstore('z:diff', 2, 'z:a', 'z:b')).toBe(2);
    expect(await redis.zrange('z:diff', 0, -1)).toEqual(['one', 'three']);

    const [cursor, page] = await redis.zscan('z:a', 0, { match: 't*' });
    expect(cursor).toBe('0');
    expect(page).toEqual(['two', 2, 'three', 3]);
  });

  it('geo: GEOADD options, GEOPOS, GEOHASH, GEODIST units, GEOSEARCH and GEOSEARCHSTORE', async () => {
    const palermo = { longitude: 13.361389, latitude: 38.115556, member: 'Palermo' };
    const catania = { longitude: 15.087269, latitude: 37.502669, member: 'Catania' };
    expect(await redis.geoadd('geo:sicily', palermo, catania)).toBe(2);
    expect(await redis.geoadd('geo:sicily', { nx: true }, { ...palermo, longitude: 0 })).toBe(0);
    expect(await redis.geoadd('geo:sicily', { xx: true, ch: true }, { ...catania, longitude: 15.1 })).toBe(1);
    expect(await redis.geoadd('geo:sicily', { ch: true }, catania)).toBe(1);
    // The SDK leaves out the members that have no position.
    const positions = await redis.geopos('geo:sicily', 'Palermo', 'Atlantis');
    expect(positions).toHaveLength(1);
    expect(positions[0]?.lng).toBeCloseTo(13.361389, 5);
    expect(positions[0]?.lat).toBeCloseTo(38.115556, 5);
    expect(await redis.geohash('geo:sicily', 'Palermo', 'Atlantis')).toEqual(['sqc8b49rny0', null]);
    expect(await redis.geodist('geo:sicily', 'Palermo', 'Catania')).toBeCloseTo(166274, -1);
    expect(await redis.geodist('geo:sicily', 'Palermo', 'Catania', 'MI')).toBeCloseTo(103.3, 1);
    expect(await redis.geodist('geo:sicily', 'Palermo', 'Atlantis')).toBeNull();

    const near = await redis.geosearch('geo:sicily', { type: 'FROMLONLAT', coordinate: { lon: 15, lat: 37 } }, { type: 'BYRADIUS', radius: 200, radiusType: 'KM' }, 'ASC', {
      withDist: true,
      withCoord: true,
      withHash: true,
    });
    expect(near.map((r) => r.member)).toEqual(['Catania', 'Palermo']);
    expect(near[0]?.dist).toBeCloseTo(56.4413, 3);
    expect(near[0]?.coord?.long).toBeCloseTo(15.087269, 4);
    expect(typeof near[0]?.hash).toBe('string');
    const box = await redis.geosearch('geo:sicily', { type: 'FROMMEMBER', member: 'Palermo' }, { type: 'BYBOX', rect: { width: 100, height: 100 }, rectType: 'KM' }, 'DESC', { count: { limit: 1 } });
    expect(box).toEqual([{ member: 'Palermo' }]);
    expect(await redis.geosearchstore('geo:near', 'geo:sicily', { type: 'FROMLONLAT', coordinate: { lon: 15, lat: 37 } }, { type: 'BYRADIUS', radius: 100, radiusType: 'KM' }, 'ASC')).toBe(1);
    expect(await redis.zrange('geo:near', 0, -1)).toEqual(['Catania']);
    expect(
      await redis.geosearchstore('geo:dist', 'geo:sicily', { type: 'FROMLONLAT', coordinate: { lon: 15, lat: 37 } }, { type: 'BYRADIUS', radius: 300, radiusType: 'KM' }, 'ASC', { storeDist: true }),
    ).toBe(2);
    expect(await redis.zscore('geo:dist', 'Catania')).toBeCloseTo(56.4413, 3);
  });

  it('HyperLogLog: PFADD, PFCOUNT over keys, PFMERGE', async () => {
    expect(await redis.pfadd('hll:a', 'a', 'b', 'c')).toBe(1);
    expect(await redis.pfadd('hll:a', 'a')).toBe(0);
    await redis.pfadd('hll:b', 'c', 'd');
    expect(await redis.pfcount('hll:a')).toBe(3);
    expect(await redis.pfcount('hll:a', 'hll:b')).toBe(4);
    expect(await redis.pfmerge('hll:merged', 'hll:a', 'hll:b')).toBe('OK');
    expect(await redis.pfcount('hll:merged')).toBe(4);
  });

  it('scripting: EVAL_RO, EVALSHA_RO, SCRIPT EXISTS and FLUSH, createScript', async () => {
    await redis.set('lua:key', 'value');
    expect(await redis.evalRo('return redis.call("GET", KEYS[1])', ['lua:key'], [])).toBe('value');
    await expect(redis.evalRo('return redis.call("SET", KEYS[1], "x")', ['lua:key'], [])).rejects.toThrow(/write command/i);
    const sha = await redis.scriptLoad('return redis.call("GET", KEYS[1])');
    expect(await redis.evalshaRo(sha, ['lua:key'], [])).toBe('value');
    expect(await redis.scriptExists(sha, '0'.repeat(40))).toEqual([1, 0]);
    expect(await redis.scriptFlush({ sync: true })).toBe('OK');
    expect(await redis.scriptExists(sha)).toEqual([0]);

    const script = redis.createScript<string>('return ARGV[1] .. redis.call("GET", KEYS[1])');
    expect(await script.exec(['lua:key'], ['got '])).toBe('got value');
    expect(await script.exec(['lua:key'], ['again '])).toBe('again value');
    const readonly = redis.createScript<string, true>('return redis.call("GET", KEYS[1])', { readonly: true });
    expect(await readonly.evalRo(['lua:key'], [])).toBe('value');
  });

  it('functions: FUNCTION LOAD, LIST, STATS, DELETE and FLUSH, FCALL and FCALL_RO', async () => {
    const code = [
      '#!lua name=sdklib',
      "redis.register_function('sdk_set', function(keys, args) return redis.call('SET', keys[1], args[1]) end)",
      "redis.register_function('sdk_peek', function(keys) return redis.call('GET', keys[1]) end)",
      "redis.register_function{function_name='sdk_get', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}, description='reads a key'}",
    ].join('\n');
    await redis.functions.flush();
    expect(await redis.functions.load({ code })).toBe('sdklib');
    await expect(redis.functions.load({ code })).rejects.toThrow(/already exists/);
    expect(await redis.functions.load({ code, replace: true })).toBe('sdklib');

    const libraries = await redis.functions.list();
    expect(libraries).toHaveLength(1);
    expect(libraries[0]).toMatchObject({ libraryName: 'sdklib', engine: 'LUA' });
    expect(libraries[0]?.libraryCode).toBeUndefined();
    expect(libraries[0]?.functions.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: 'sdk_get', description: 'reads a key', flags: ['no-writes'] },
      { name: 'sdk_peek', flags: [] },
      { name: 'sdk_set', flags: [] },
    ]);
    const withCode = await redis.functions.list({ libraryName: 'sdk*', withCode: true });
    expect(withCode[0]?.libraryCode).toBe(code);
    expect(await redis.functions.list({ libraryName: 'other*' })).toEqual([]);
    expect(await redis.functions.stats()).toEqual({ engines: { LUA: { librariesCount: 1, functionsCount: 3 } } });

    expect(await redis.functions.call('sdk_set', ['fn:key'], ['stored'])).toBe('OK');
    expect(await redis.functions.call('sdk_get', ['fn:key'])).toBe('stored');
    expect(await redis.functions.callRo('sdk_get', ['fn:key'])).toBe('stored');
    // Upstash runs FCALL_RO of a function without the no-writes flag read-only (docs/kv.md, "KV: where Upstash and Redis differ"), where Redis refuses it: reads work, a write inside fails.
    expect(await redis.functions.callRo('sdk_peek', ['fn:key'])).toBe('stored');
    await expect(redis.functions.callRo('sdk_set', ['fn:key'], ['x'])).rejects.toThrow('Write commands are not allowed from read-only scripts');
    expect(await redis.get('fn:key')).toBe('stored');

    expect(await redis.functions.delete('sdklib')).toBe('OK');
    await expect(redis.functions.delete('sdklib')).rejects.toThrow(/Library not found/i);
    await expect(redis.functions.call('sdk_get', ['fn:key'])).rejects.toThrow(/Function not found/i);
    await redis.functions.load({ code });
    expect(await redis.functions.flush()).toBe('OK');
    expect(await redis.functions.list()).toEqual([]);
  });

  it('server and connection: PING, ECHO, TIME, PUBLISH, CLIENT SETINFO, exec of a raw command', async () => {
    expect(await redis.ping()).toBe('PONG');
    expect(await redis.ping(['hello'])).toBe('hello');
    expect(await redis.echo('{"not":"parsed"}')).toEqual({ not: 'parsed' });
    const [seconds, micros] = await redis.time();
    expect(Math.abs(seconds - Date.now() / 1000)).toBeLessThan(60);
    expect(micros).toBeGreaterThanOrEqual(0);
    expect(micros).toBeLessThan(1_000_000);
    expect(await redis.publish('nobody-listens', 'hi')).toBe(0);
    expect(await redis.exec<string>(['SET', 'raw:key', 'raw'])).toBe('OK');
    expect(await redis.exec<number>(['STRLEN', 'raw:key'])).toBe(3);
    await expect(redis.exec(['NOSUCHCOMMAND'])).rejects.toThrow("ERR unknown command 'NOSUCHCOMMAND'");
    // The SDK sends CLIENT SETINFO itself when asked; Upstash accepts it.
    expect(await redis.clientSetinfo('LIB-NAME', 'restash-test')).toBe('OK');
  });

  // No self-hosted server has Upstash's array type or VECTOR.* indexes (docs/kv.md, "KV: where Upstash and Redis differ").
  it("Upstash-only commands (AR* arrays, VECTOR.* indexes) answer the server's unknown-command error", async () => {
    await expect(redis.arinsert('ar:key', 'a')).rejects.toThrow(/ERR unknown command 'arinsert'/i);
    await expect(redis.arlen('ar:key')).rejects.toThrow(/ERR unknown command 'arlen'/i);
    await expect(redis.vector.createIndex({ name: 'vec', dimension: 3, metric: 'COSINE' })).rejects.toThrow(/ERR unknown command 'vector\.create'/i);
    await expect(redis.vector.index('vec').add('doc-1', [0.1, 0.2, 0.3])).rejects.toThrow(/ERR unknown command 'vector\.add'/i);
  });
});
