import type { Redis } from '@upstash/redis';
import { KV_TEST_ENGINE as engine, acmeDatabase } from './testing/upstash-redis';

/**
 * Every stream method of @upstash/redis 1.39.0 through a real kv-gateway (XDELEX and XACKDEL are
 * Redis 8.2's, unknown to Valkey 9.1), then pipelines, transactions and the read-your-writes token
 * beyond what sdk.integration.spec.ts covers.
 */
describe(`@upstash/redis streams, pipelines and transactions on ${engine}`, () => {
  const acme = acmeDatabase();
  let redis: Redis;
  beforeAll(() => {
    redis = acme.client();
  });

  it('streams: XADD options, XRANGE/XREVRANGE, XREAD, XLEN, XTRIM, XDEL', async () => {
    expect(await redis.xadd('x:s', '1-1', { f: 'a' })).toBe('1-1');
    expect(await redis.xadd('x:s', '1-*', { f: 'b' })).toBe('1-2');
    expect(await redis.xadd('x:s', '2-1', { f: 'c', g: 'd' })).toBe('2-1');
    expect(await redis.xadd('x:s', '*', { f: 'e' })).toMatch(/^\d+-\d+$/);
    await expect(redis.xadd('x:s', '1-1', { f: 'old' })).rejects.toThrow('ERR The ID specified in XADD is equal or smaller than the target stream top item');
    expect(await redis.xadd('x:none', '*', { f: 'a' }, { nomkStream: true })).toBeNull();
    expect(await redis.exists('x:none')).toBe(0);
    expect(await redis.xlen('x:s')).toBe(4);

    expect(await redis.xrange('x:s', '-', '2-1')).toEqual({ '1-1': { f: 'a' }, '1-2': { f: 'b' }, '2-1': { f: 'c', g: 'd' } });
    expect(await redis.xrange('x:s', '(1-1', '+', 1)).toEqual({ '1-2': { f: 'b' } });
    expect(Object.keys(await redis.xrevrange('x:s', '2-1', '-', 2))).toEqual(['2-1', '1-2']);
    expect(await redis.xread('x:s', '1-2', { count: 1 })).toEqual([['x:s', [['2-1', ['f', 'c', 'g', 'd']]]]]);
    expect(await redis.xread(['x:s', 'x:other'], ['2-1', '0-0'])).toHaveLength(1);

    expect(await redis.xdel('x:s', ['1-1', '9-9'])).toBe(1);
    expect(await redis.xtrim('x:s', { strategy: 'MAXLEN', exactness: '=', threshold: 2 })).toBe(1);
    expect(Object.keys(await redis.xrange('x:s', '-', '+'))[0]).toBe('2-1');
    expect(await redis.xadd('x:s', '*', { f: 'z' }, { trim: { type: 'MAXLEN', threshold: 1, comparison: '=' } })).toMatch(/-/);
    expect(await redis.xlen('x:s')).toBe(1);
    expect(await redis.xtrim('x:s', { strategy: 'MINID', exactness: '=', threshold: '99999999999999-0' })).toBe(1);
    expect(await redis.xlen('x:s')).toBe(0);

    // `~` keeps at most about the threshold, as Upstash (Redis alone would keep all 50: it trims whole nodes of 100).
    for (let i = 0; i < 50; i++) await redis.xadd('x:approx', '*', { i });
    expect(await redis.xtrim('x:approx', { strategy: 'MAXLEN', exactness: '~', threshold: 30 })).toBe(20);
    expect(await redis.xlen('x:approx')).toBe(30);
    await redis.xadd('x:approx', '*', { i: 50 }, { trim: { type: 'MAXLEN', threshold: 10, comparison: '~' } });
    expect(await redis.xlen('x:approx')).toBe(10);
  });

  it('consumer groups: XGROUP, XREADGROUP (and NOACK), XPENDING, XACK, XCLAIM, XAUTOCLAIM, XINFO', async () => {
    for (const [id, v] of [
      ['1-1', 'a'],
      ['1-2', 'b'],
      ['1-3', 'c'],
    ] as const) {
      await redis.xadd('x:g', id, { v });
    }
    expect(await redis.xgroup('x:g', { type: 'CREATE', group: 'g1', id: '0' })).toBe('OK');
    await expect(redis.xgroup('x:g', { type: 'CREATE', group: 'g1', id: '0' })).rejects.toThrow('BUSYGROUP Consumer Group name already exists');
    expect(await redis.xgroup('x:made', { type: 'CREATE', group: 'g', id: '$', options: { MKSTREAM: true } })).toBe('OK');
    expect(await redis.xlen('x:made')).toBe(0);
    expect(await redis.xgroup('x:g', { type: 'CREATECONSUMER', group: 'g1', consumer: 'idle' })).toBe(1);
    expect(await redis.xgroup('x:g', { type: 'CREATECONSUMER', group: 'g1', consumer: 'idle' })).toBe(0);

    expect(await redis.xreadgroup('g1', 'alice', 'x:g', '>', { count: 2 })).toEqual([
      [
        'x:g',
        [
          ['1-1', ['v', 'a']],
          ['1-2', ['v', 'b']],
        ],
      ],
    ]);
    expect(await redis.xpending('x:g', 'g1', '-', '+', 10)).toEqual([
      ['1-1', 'alice', expect.any(Number), 1],
      ['1-2', 'alice', expect.any(Number), 1],
    ]);
    expect(await redis.xpending('x:g', 'g1', '-', '+', 10, { consumer: 'bob' })).toEqual([]);

    const groups = (await redis.xinfo('x:g', { type: 'GROUPS' })) as unknown[][];
    expect(groups).toHaveLength(1);
    expect(groups[0]?.slice(0, 8)).toEqual(['name', 'g1', 'consumers', 2, 'pending', 2, 'last-delivered-id', '1-2']);
    const consumers = (await redis.xinfo('x:g', { type: 'CONSUMERS', group: 'g1' })) as unknown[][];
    expect(consumers.map((c) => c.slice(0, 4))).toEqual([
      ['name', 'alice', 'pending', 2],
      ['name', 'idle', 'pending', 0],
    ]);

    expect(await redis.xclaim('x:g', 'g1', 'bob', 0, '1-1')).toEqual([['1-1', ['v', 'a']]]);
    expect(await redis.xclaim('x:g', 'g1', 'bob', 0, ['1-1', '1-2'], { justId: true, retryCount: 5 })).toEqual(['1-1', '1-2']);
    expect(await redis.xpending('x:g', 'g1', '-', '+', 10, { consumer: 'bob' })).toEqual([
      ['1-1', 'bob', expect.any(Number), 5],
      ['1-2', 'bob', expect.any(Number), 5],
    ]);
    expect(await redis.xautoclaim('x:g', 'g1', 'carol', 0, '0-0', { count: 1 })).toEqual(['1-2', [['1-1', ['v', 'a']]], []]);
    expect(await redis.xautoclaim('x:g', 'g1', 'carol', 0, '0-0', { justId: true })).toEqual(['0-0', ['1-1', '1-2'], []]);
    expect(await redis.xack('x:g', 'g1', ['1-1', '1-2', '9-9'])).toBe(2);
    expect(await redis.xack('x:g', 'g1', '1-1')).toBe(0);

    expect(await redis.xgroup('x:g', { type: 'DELCONSUMER', group: 'g1', consumer: 'idle' })).toBe(0);
    expect(await redis.xgroup('x:g', { type: 'SETID', group: 'g1', id: '0' })).toBe('OK');
    expect(((await redis.xreadgroup('g1', 'dave', 'x:g', '>')) as [string, unknown[]][])[0]?.[1]).toHaveLength(3);
    expect(await redis.xgroup('x:g', { type: 'DELCONSUMER', group: 'g1', consumer: 'dave' })).toBe(3);
    expect(await redis.xgroup('x:g', { type: 'DESTROY', group: 'g1' })).toBe(1);
    expect(await redis.xgroup('x:g', { type: 'DESTROY', group: 'g1' })).toBe(0);

    // NOACK: nothing enters the pending list. Upstash's XINFO CONSUMERS then lists no consumer (its SDK's own test).
    await redis.xgroup('x:g', { type: 'CREATE', group: 'fire-and-forget', id: '0' });
    expect(((await redis.xreadgroup('fire-and-forget', 'erin', 'x:g', '>', { NOACK: true })) as [string, unknown[]][])[0]?.[1]).toHaveLength(3);
    expect(await redis.xpending('x:g', 'fire-and-forget', '-', '+', 10)).toEqual([]);
    expect(await redis.xinfo('x:g', { type: 'CONSUMERS', group: 'fire-and-forget' })).toEqual([]);
  });

  it('XDELEX and XACKDEL with KEEPREF, DELREF and ACKED (Redis 8.2)', async () => {
    if (engine === 'valkey') {
      await expect(redis.xdelex('x:d', 'KEEPREF', '1-1')).rejects.toThrow(/ERR unknown command 'XDELEX'/i);
      await expect(redis.xackdel('x:d', 'g', 'KEEPREF', '1-1')).rejects.toThrow(/ERR unknown command 'XACKDEL'/i);
      return;
    }
    for (const id of ['1-1', '1-2', '1-3', '1-4']) await redis.xadd('x:d', id, { v: id });
    await redis.xgroup('x:d', { type: 'CREATE', group: 'read', id: '0' });
    await redis.xgroup('x:d', { type: 'CREATE', group: 'unread', id: '0' });
    await redis.xreadgroup('read', 'c', 'x:d', '>');

    // Per id: 1 deleted, -1 no such entry, 2 kept because a group still references it (ACKED).
    expect(await redis.xdelex('x:d', 'KEEPREF', '1-1', '9-9')).toEqual([1, -1]);
    expect(await redis.xdelex('x:d', 'ACKED', '1-2')).toEqual([2]);
    expect(await redis.xackdel('x:d', 'read', 'ACKED', '1-2')).toEqual([2]);
    expect(await redis.xlen('x:d')).toBe(3);
    expect(await redis.xackdel('x:d', 'read', 'KEEPREF', '1-3')).toEqual([1]);
    expect(await redis.xackdel('x:d', 'read', 'KEEPREF', '1-3')).toEqual([-1]);
    expect(await redis.xlen('x:d')).toBe(2);
    expect(await redis.xdelex('x:d', 'DELREF', '1-4')).toEqual([1]);
    // KEEPREF left 1-1 in the pending list of the group that read it; DELREF took 1-4 out of it.
    expect(await redis.xpending('x:d', 'read', '-', '+', 10)).toEqual([['1-1', 'c', expect.any(Number), 1]]);
    expect(Object.keys(await redis.xrange('x:d', '-', '+'))).toEqual(['1-2']);
  });

  it('pipelines: every command group in one /pipeline, keepErrors, JSON values, a pipeline of pipelines', async () => {
    const p = redis.pipeline();
    p.set('p:s', { a: 1 })
      .get('p:s')
      .hset('p:h', { f: 'v' })
      .hgetall('p:h')
      .rpush('p:l', 'x', 'y')
      .lrange('p:l', 0, -1)
      .sadd('p:set', 'm')
      .smembers('p:set')
      .zadd('p:z', { score: 1, member: 'z' })
      .zrange('p:z', 0, -1, { withScores: true })
      .xadd('p:x', '1-1', { f: 'v' })
      .xrange('p:x', '-', '+')
      .hexpire('p:h', 'f', 100)
      .exists('p:s', 'p:none');
    expect(await p.exec()).toEqual(['OK', { a: 1 }, 1, { f: 'v' }, 2, ['x', 'y'], 1, ['m'], 1, ['z', 1], '1-1', { '1-1': { f: 'v' } }, [1], 1]);
    expect(p.length()).toBe(14);

    // Without keepErrors the first failed command rejects the whole exec.
    const failing = redis.pipeline().set('p:t', 'text').lpush('p:t', 'x').get('p:t');
    await expect(failing.exec()).rejects.toThrow(/WRONGTYPE/);
    expect(await redis.get('p:t')).toBe('text');
    await expect(redis.pipeline().exec()).rejects.toThrow('Pipeline is empty');
  });

  it('transactions: MULTI/EXEC is atomic, an EXEC error leaves the other commands applied', async () => {
    await redis.set('t:n', 10);
    const results = await Promise.all(Array.from({ length: 10 }, () => redis.multi().incr('t:n').get('t:n').exec()));
    // Each transaction sees its own increment, never another's in between.
    expect(results.map(([incremented, read]) => incremented === read).every(Boolean)).toBe(true);
    expect(results.map(([incremented]) => incremented).sort()).toEqual(Array.from({ length: 10 }, (_, i) => i + 11));

    const mixed = redis.multi().set('t:s', 'text').incr('t:s').set('t:after', 'applied');
    expect(await mixed.exec({ keepErrors: true })).toEqual([
      { result: 'OK', error: undefined },
      { result: undefined, error: 'ERR value is not an integer or out of range' },
      { result: 'OK', error: undefined },
    ]);
    expect(await redis.get('t:after')).toBe('applied');

  });

  it('read-your-writes: concurrent writes each get their own sync token, and a read sent with it sees them', async () => {
    const tokens = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const client = acme.client({ enableAutoPipelining: false });
        await client.set(`ryw:${i}`, i);
        return client.readYourWritesSyncToken;
      }),
    );
    expect(new Set(tokens).size).toBe(8);
    for (const token of tokens) expect(token).toMatch(/\S/);

    const shared = acme.client({ enableAutoPipelining: false });
    await Promise.all(Array.from({ length: 8 }, (_, i) => shared.set(`ryw:shared:${i}`, i)));
    expect(await shared.mget(Array.from({ length: 8 }, (_, i) => `ryw:shared:${i}`))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);

    const off = acme.client({ readYourWrites: false });
    await off.set('ryw:off', 1);
    expect(off.readYourWritesSyncToken || undefined).toBeUndefined(); // the SDK keeps no token when told not to
  });
});
