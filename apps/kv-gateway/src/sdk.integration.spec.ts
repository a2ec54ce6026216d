import { Redis } from '@upstash/redis';
import { eventually } from '@restash/shared/util-testing';
import { type KvStack, startKvStack } from './testing/kv-stack';

/**
 * The official @upstash/redis SDK against a real kv-gateway and real Redis, one test per command
 * group of the command coverage (docs/kv.md, "KV: command coverage"), plus what the SDK itself relies on.
 */
describe('kv-gateway with @upstash/redis', () => {
  let stack: KvStack;
  let redis: Redis;

  beforeAll(async () => {
    stack = await startKvStack({ acme: [{ name: 'main', db: 0 }] });
    redis = new Redis({ url: stack.url, token: stack.tokens('acme', 'main').standard, enableTelemetry: false });
  });
  afterAll(() => stack.stop());

  it('strings: values, JSON, keys with / and non-ASCII, expiry', async () => {
    expect(await redis.set('a/b/c', 'slash')).toBe('OK');
    expect(await redis.get('a/b/c')).toBe('slash');
    await redis.set('ключ-鍵-🔑', { nested: ['ü', 1] });
    expect(await redis.get('ключ-鍵-🔑')).toEqual({ nested: ['ü', 1] });
    expect(await redis.set('exp', 'v', { ex: 100 })).toBe('OK');
    expect(await redis.ttl('exp')).toBeGreaterThan(90);
    expect(await redis.incrbyfloat('f', 1.5)).toBe(1.5);
    expect(await redis.mget('a/b/c', 'missing')).toEqual(['slash', null]);
    expect(await redis.get('OK-value-check')).toBeNull();
    await redis.set('okv', 'OK');
    expect(await redis.get('okv')).toBe('OK');
  });

  it('bitmaps: binary replies survive base64', async () => {
    await redis.setbit('bits', 7, 1);
    expect(await redis.getbit('bits', 7)).toBe(1);
    expect(await redis.bitcount('bits', 0, -1)).toBe(1);
    expect(await redis.bitop('not', 'inverted', 'bits')).toBe(1);
    expect(await redis.bitcount('inverted', 0, -1)).toBe(7);
  });

  it('hashes, lists, sets and sorted sets keep RESP2 shapes', async () => {
    await redis.hset('h', { f1: 'v1', f2: 2 });
    expect(await redis.hgetall('h')).toEqual({ f1: 'v1', f2: 2 });
    await redis.rpush('l', 'x', 'y', 'z');
    expect(await redis.lrange('l', 0, -1)).toEqual(['x', 'y', 'z']);
    await redis.sadd('s', 'm1', 'm2');
    expect((await redis.smembers('s')).sort()).toEqual(['m1', 'm2']);
    await redis.zadd('z', { score: 2.5, member: 'b' }, { score: 1, member: 'a' });
    expect(await redis.zrange('z', 0, -1, { withScores: true })).toEqual(['a', 1, 'b', 2.5]);
    expect(await redis.zscore('z', 'b')).toBe(2.5);
  });

  it('geo, hyperloglog and streams', async () => {
    await redis.geoadd('g', { longitude: 13.361389, latitude: 38.115556, member: 'Palermo' }, { longitude: 15.087269, latitude: 37.502669, member: 'Catania' });
    expect(Number(await redis.geodist('g', 'Palermo', 'Catania', 'KM'))).toBeCloseTo(166.27, 1);
    await redis.pfadd('hll', 'a', 'b', 'c', 'a');
    expect(await redis.pfcount('hll')).toBe(3);
    const id = await redis.xadd('stream', '*', { field: 'value' });
    expect(await redis.xlen('stream')).toBe(1);
    expect(await redis.xrange('stream', '-', '+')).toEqual({ [id]: { field: 'value' } });
  });

  it('generic, server and connection commands', async () => {
    expect(await redis.exists('a/b/c', 'nope')).toBe(1);
    expect(await redis.type('h')).toBe('hash');
    expect(await redis.ping()).toBe('PONG');
    expect(await redis.echo('hi there')).toBe('hi there');
    expect(await redis.dbsize()).toBeGreaterThan(5);
    const [cursor, keys] = await redis.scan(0, { match: 'a/*', count: 1000 });
    expect(cursor).toBe('0');
    expect(keys).toEqual(['a/b/c']);
    expect(await redis.keys('a/*')).toEqual(['a/b/c']);
  });

  it('scripting: EVAL, SCRIPT LOAD and EVALSHA', async () => {
    expect(await redis.eval('return redis.call("GET", KEYS[1])', ['a/b/c'], [])).toBe('slash');
    const sha = await redis.scriptLoad('return ARGV[1]');
    expect(await redis.evalsha(sha, [], ['echoed'])).toBe('echoed');
    await expect(redis.evalsha('0'.repeat(40), [], [])).rejects.toThrow(/NOSCRIPT/);
  });

  it('pipelines and transactions, with per-command errors', async () => {
    const p = redis.pipeline();
    p.set('p1', 1).incr('p1').get('p1');
    expect(await p.exec()).toEqual(['OK', 2, 2]);

    const failing = redis.pipeline();
    failing.set('p2', 'text').incr('p2').get('p2');
    expect(await failing.exec({ keepErrors: true })).toEqual([
      { result: 'OK', error: undefined },
      { result: undefined, error: 'ERR value is not an integer or out of range' },
      { result: 'text', error: undefined },
    ]);

    const tx = redis.multi();
    tx.set('t1', 'v').get('t1').del('t1');
    expect(await tx.exec()).toEqual(['OK', 'v', 1]);
  });

  it('auto-pipelining batches parallel calls into /pipeline', async () => {
    const values = await Promise.all(Array.from({ length: 50 }, (_, i) => redis.set(`auto:${i}`, i).then(() => redis.get(`auto:${i}`))));
    expect(values).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });

  it('returns a new sync token after every write, as read-your-writes needs', async () => {
    const before = redis.readYourWritesSyncToken;
    await redis.set('ryw', 1);
    const first = redis.readYourWritesSyncToken;
    await redis.set('ryw', 2);
    expect(first).not.toBe(before);
    expect(redis.readYourWritesSyncToken).not.toBe(first);
    expect(redis.readYourWritesSyncToken).not.toBe('');
  });

  it('works without base64 response encoding too', async () => {
    const plain = new Redis({ url: stack.url, token: stack.tokens('acme', 'main').standard, responseEncoding: false, enableTelemetry: false });
    await plain.set('plain', 'ünïcode');
    expect(await plain.get('plain')).toBe('ünïcode');
  });

  it('subscribes over server-sent events and receives published messages', async () => {
    const received: unknown[] = [];
    const subscriber = redis.subscribe(['news']);
    subscriber.on('message', (event) => received.push(event.message));
    await eventually(async () => {
      await redis.publish('news', { headline: 'restash' });
      expect(received).toContainEqual({ headline: 'restash' });
    });
    await subscriber.unsubscribe();
    await eventually(async () => expect(await redis.publish('news', 'gone')).toBe(0));
  });

  it('pattern-subscribes over server-sent events and receives messages of matching channels only', async () => {
    const received: unknown[] = [];
    const subscriber = redis.psubscribe(['chat:*']);
    subscriber.on('pmessage', (event) => received.push([event.pattern, event.channel, event.message]));
    await eventually(async () => {
      // The SDK JSON-parses pattern messages (an unparsable one becomes an error event).
      await redis.publish('chat:room1', { text: 'hi' });
      expect(received).toContainEqual(['chat:*', 'chat:room1', { text: 'hi' }]);
    });
    await redis.publish('other:room', { text: 'not for us' });
    await redis.publish('chat:room2', { text: 'again' });
    await eventually(() => expect(received).toContainEqual(['chat:*', 'chat:room2', { text: 'again' }]));
    expect(received.some((r) => (r as unknown[])[1] === 'other:room')).toBe(false);
    await subscriber.unsubscribe();
  });

  it('refuses a read-only token’s writes with the SDK’s error', async () => {
    const readonly = new Redis({ url: stack.url, token: stack.tokens('acme', 'main').readonly, enableTelemetry: false });
    expect(await readonly.get('a/b/c')).toBe('slash');
    await expect(readonly.set('a/b/c', 'changed')).rejects.toThrow(/NOPERM/);
    expect(await redis.get('a/b/c')).toBe('slash');
  });
});
