import type { Redis } from '@upstash/redis';
import { Analytics, IpDenyList, MultiRegionRatelimit, Ratelimit } from '@upstash/ratelimit';
import { Lock } from '@upstash/lock';
import { CursorUnavailableError, Realtime, handle, isRealtimeCursor } from '@upstash/realtime';
import { z } from 'zod';
import { eventually, required } from '@restash/shared/util-testing';
import { KV_TEST_ENGINE as engine, acmeDatabase } from './testing/upstash-redis';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits, when less than `roomMs` is left of the current fixed window of `windowMs` (the windows the libraries count
 * in: `Math.floor(Date.now() / windowMs)`), for the next one, so that a test's calls all fall in one window.
 * @returns the end of the window the calls fall in (the `reset` the libraries answer)
 */
async function windowWithRoom(windowMs: number, roomMs: number): Promise<number> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < roomMs) await sleep(left + 5);
  return (Math.floor(Date.now() / windowMs) + 1) * windowMs;
}

/** A Lua script that keeps the server busy for ARGV[1] milliseconds of its CPU time (a slow database, for the ratelimit timeout). */
const BUSY_SCRIPT = `
local start = os.clock()
while os.clock() - start < tonumber(ARGV[1]) / 1000 do end
return 1`;

/** `n` limit() calls one after the other, each waiting for its `pending` (MultiRegionRatelimit's sync of the other databases). */
async function limitSynced(ratelimit: MultiRegionRatelimit, identifier: string, n: number): Promise<Awaited<ReturnType<MultiRegionRatelimit['limit']>>[]> {
  const answers = [];
  for (let i = 0; i < n; i++) {
    const answer = await ratelimit.limit(identifier);
    await answer.pending;
    answers.push(answer);
  }
  return answers;
}

/**
 * @upstash/ratelimit 2.2.0 through a real kv-gateway, as an application uses it: its four single-database
 * algorithms (fixed window, sliding window, token bucket, cached fixed window; their Lua scripts, run with EVALSHA
 * and, on NOSCRIPT, EVAL, carry Upstash's `#!lua flags=allow-key-locking` shebang), the `rate` option, dynamic limits,
 * `blockUntilReady`, `getRemaining`, `resetUsedTokens` (a script that SCANs and deletes), the `timeout` option, the
 * deny list (`enableProtection`), analytics, and MultiRegionRatelimit over two databases of one tenant. The IP deny
 * list is not exercised: `IpDenyList.updateIpDenyList` (which `enableProtection` starts when the list's status key
 * is missing) downloads the list from GitHub, so the tests disable it first, as `disableIpDenyList` documents.
 */
describe(`@upstash/ratelimit on ${engine}`, () => {
  const acme = acmeDatabase('second');
  let redis: Redis;
  beforeAll(() => {
    redis = acme.client();
  });
  // The library leaves requests running after it answers (MultiRegionRatelimit answers with the first database's
  // reply, resetUsedTokens and a timed-out limit() do not wait): each test waits for every request it started, so
  // that none is still running, its connection busy, when the stack stops.
  let requests: jest.SpiedFunction<typeof fetch>;
  beforeEach(() => {
    requests = jest.spyOn(global, 'fetch');
  });
  afterEach(async () => {
    await Promise.allSettled(requests.mock.results.map((result) => result.value));
    requests.mockRestore();
  });

  it('fixedWindow: remaining counts down to 0, then limit() blocks (from Redis, then from the ephemeral cache) until reset', async () => {
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(3, '10 s'), prefix: 'rl:fixed' });
    const reset = await windowWithRoom(10_000, 3_000);
    const key = `rl:fixed:user:${reset / 10_000 - 1}`;
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await ratelimit.limit('user'));
    expect(answers.map(({ success, limit, remaining, reset, reason }) => ({ success, limit, remaining, reset, reason }))).toEqual([
      { success: true, limit: 3, remaining: 2, reset, reason: undefined },
      { success: true, limit: 3, remaining: 1, reset, reason: undefined },
      { success: true, limit: 3, remaining: 0, reset, reason: undefined },
      { success: false, limit: 3, remaining: 0, reset, reason: undefined },
    ]);
    // Blocked identifiers are then answered from the in-memory cache, without Redis.
    expect(await ratelimit.limit('user')).toMatchObject({ success: false, remaining: 0, reset, reason: 'cacheBlock' });
    expect(await redis.get(key)).toBe(4);
    const pttl = await redis.pttl(key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(10_000);
    expect(await ratelimit.limit('other')).toMatchObject({ success: true, remaining: 2 });
    // The library calls its scripts by digests it hard-codes (this one is the fixed window's `limit` script, with its
    // `#!lua flags=allow-key-locking` line): known once it ran, as on Upstash.
    expect(await redis.scriptExists('b2efc02798c8e9b471a10f9b1d5745db89923ff3')).toEqual([1]);

    expect(await ratelimit.getRemaining('user')).toEqual({ remaining: 0, reset, limit: 3 });
    await ratelimit.resetUsedTokens('user');
    expect(await redis.exists(key)).toBe(0);
    expect(await redis.get(`rl:fixed:other:${reset / 10_000 - 1}`)).toBe(1);
    expect(await ratelimit.getRemaining('user')).toEqual({ remaining: 3, reset, limit: 3 });
    expect(await ratelimit.limit('user')).toMatchObject({ success: true, remaining: 2 });
  });

  it('fixedWindow: the rate option takes several tokens (a negative rate refunds), and dynamic limits override the limit', async () => {
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(5, '10 s'), prefix: 'rl:rate', ephemeralCache: false, dynamicLimits: true });
    await windowWithRoom(10_000, 3_000);
    expect(await ratelimit.limit('batch', { rate: 3 })).toMatchObject({ success: true, limit: 5, remaining: 2 });
    expect(await ratelimit.limit('batch', { rate: 3 })).toMatchObject({ success: false, limit: 5, remaining: 0 });
    expect(await ratelimit.limit('batch', { rate: -3 })).toMatchObject({ success: true, remaining: 2 });
    expect(await ratelimit.getRemaining('batch')).toMatchObject({ remaining: 2, limit: 5 });

    expect(await ratelimit.getDynamicLimit()).toEqual({ dynamicLimit: null });
    await ratelimit.setDynamicLimit({ limit: 10 });
    expect(await ratelimit.getDynamicLimit()).toEqual({ dynamicLimit: 10 });
    expect(await ratelimit.limit('batch', { rate: 3 })).toMatchObject({ success: true, limit: 10, remaining: 4 });
    expect(await ratelimit.getRemaining('batch')).toMatchObject({ remaining: 4, limit: 10 });
    await ratelimit.setDynamicLimit({ limit: false });
    expect(await ratelimit.getDynamicLimit()).toEqual({ dynamicLimit: null });
    expect(await ratelimit.limit('batch')).toMatchObject({ success: false, limit: 5, remaining: 0 });
  });

  it('slidingWindow: blocks at the limit without counting the blocked call, and blockUntilReady waits for the next window', async () => {
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.slidingWindow(3, '2 s'), prefix: 'rl:sliding', ephemeralCache: false });
    const reset = await windowWithRoom(2_000, 1_000);
    expect(await ratelimit.limit('user')).toMatchObject({ success: true, limit: 3, remaining: 2, reset });
    expect(await ratelimit.limit('user', { rate: 2 })).toMatchObject({ success: true, limit: 3, remaining: 0, reset });
    expect(await ratelimit.limit('user')).toMatchObject({ success: false, limit: 3, remaining: 0, reset });
    expect(await redis.get(`rl:sliding:user:${reset / 2_000 - 1}`)).toBe(3);
    expect(await ratelimit.getRemaining('user')).toEqual({ remaining: 0, reset, limit: 3 });

    // Too short a wait gives up with the blocked answer; a long enough one passes once the window has moved on.
    expect(await ratelimit.blockUntilReady('user', 100)).toMatchObject({ success: false });
    const ready = await ratelimit.blockUntilReady('user', 5_000);
    expect(ready).toMatchObject({ success: true, limit: 3 });
    expect(Date.now()).toBeGreaterThanOrEqual(reset);
    expect(ready.reset).toBeGreaterThan(reset);

    await ratelimit.resetUsedTokens('user');
    expect(await redis.keys('rl:sliding:user:*')).toEqual([]);
    expect(await ratelimit.getRemaining('user')).toMatchObject({ remaining: 3 });
  });

  it('tokenBucket: starts full, refills refillRate tokens per interval, and refuses a rate larger than what is left', async () => {
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.tokenBucket(1, '1 s', 3), prefix: 'rl:bucket', ephemeralCache: false });
    const before = Date.now();
    const first = await ratelimit.limit('user');
    expect(first).toMatchObject({ success: true, limit: 3, remaining: 2 });
    expect(first.reset).toBeGreaterThanOrEqual(before + 1_000);
    expect(first.reset).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(await ratelimit.limit('user', { rate: 2 })).toMatchObject({ success: true, remaining: 0, reset: first.reset });
    expect(await ratelimit.limit('user')).toMatchObject({ success: false, remaining: 0, reset: first.reset });
    expect(await redis.hgetall('rl:bucket:user')).toEqual({ refilledAt: first.reset - 1_000, tokens: 0 });
    expect(await ratelimit.getRemaining('user')).toEqual({ remaining: 0, reset: first.reset, limit: 3 });

    await sleep(first.reset - Date.now() + 50);
    expect(await ratelimit.limit('user', { rate: 2 })).toMatchObject({ success: false, remaining: 0 });
    expect(await ratelimit.limit('user')).toMatchObject({ success: true, remaining: 0, reset: first.reset + 1_000 });

    await ratelimit.resetUsedTokens('user');
    expect(await redis.exists('rl:bucket:user')).toBe(0);
    expect(await ratelimit.getRemaining('user')).toMatchObject({ remaining: 3, limit: 3 });
  });

  it('cachedFixedWindow: answers from the local cache after the first call and updates Redis in the background (pending)', async () => {
    const cache = new Map<string, number>();
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.cachedFixedWindow(2, '10 s'), prefix: 'rl:cached', ephemeralCache: cache });
    const reset = await windowWithRoom(10_000, 3_000);
    const key = `rl:cached:user:${reset / 10_000 - 1}`;
    expect(await ratelimit.limit('user')).toMatchObject({ success: true, limit: 2, remaining: 1, reset });
    expect(cache.get(key)).toBe(1);
    const second = await ratelimit.limit('user');
    expect(second).toMatchObject({ success: true, limit: 2, remaining: 0, reset });
    await second.pending;
    expect(await redis.get(key)).toBe(2);
    expect(await ratelimit.limit('user')).toMatchObject({ success: false, limit: 2, reset });
    expect(await redis.get(key)).toBe(2);

    // Another instance (another serverless function) starts with an empty cache and reads the count from Redis.
    const elsewhere = new Ratelimit({ redis, limiter: Ratelimit.cachedFixedWindow(2, '10 s'), prefix: 'rl:cached', ephemeralCache: new Map() });
    expect(await elsewhere.getRemaining('user')).toEqual({ remaining: 0, reset, limit: 2 });
    expect(await elsewhere.limit('user')).toMatchObject({ success: false, limit: 2, reset });
    await elsewhere.resetUsedTokens('user');
    expect(await redis.exists(key)).toBe(0);
    expect(await elsewhere.getRemaining('user')).toEqual({ remaining: 2, reset, limit: 2 });
  });

  it('timeout: a database slower than the timeout lets the request pass with reason "timeout"', async () => {
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(1, '10 s'), prefix: 'rl:timeout', ephemeralCache: false, timeout: 200 });
    const reset = await windowWithRoom(10_000, 3_000);
    // Another client keeps the database busy for longer than the timeout (a script runs alone on its server).
    // 2.5 s, under the gateway's script timeout (5 s); sent 0.5 s before limit(), so that limit() waits behind it
    // even on a loaded machine, and still finds it running.
    const busy = acme.client().eval(BUSY_SCRIPT, [], ['2500']);
    await sleep(500);
    expect(await ratelimit.limit('user')).toEqual({ success: true, limit: 0, remaining: 0, reset: 0, pending: expect.any(Promise), reason: 'timeout' });
    expect(await busy).toBe(1);
    // The request itself was not lost: it is counted once the database answers.
    await eventually(async () => expect(await redis.get(`rl:timeout:user:${reset / 10_000 - 1}`)).toBe(1));
    expect(await ratelimit.limit('user')).toMatchObject({ success: false, limit: 1, remaining: 0, reset });
  });

  it('enableProtection: identifiers, IPs, user agents and countries in the deny list are refused with reason "denyList"', async () => {
    const prefix = 'rl:protected';
    // The status key marks the IP deny list disabled, so no limit() call starts its download from GitHub.
    await IpDenyList.disableIpDenyList(redis, prefix);
    expect(await redis.get(`${prefix}:ipDenyListStatus`)).toBe('disabled');
    // The deny list the Upstash console edits: one set of every denied value.
    await redis.sadd(`${prefix}:denyList:all`, 'bad-user', '203.0.113.9', 'EvilBot/1.0', 'XX');
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(10, '10 s'), prefix, enableProtection: true });

    expect(await ratelimit.limit('bad-user')).toMatchObject({ success: false, remaining: 0, reason: 'denyList', deniedValue: 'bad-user' });
    expect(await ratelimit.limit('someone', { ip: '203.0.113.9' })).toMatchObject({ success: false, reason: 'denyList', deniedValue: '203.0.113.9' });
    expect(await ratelimit.limit('someone', { userAgent: 'EvilBot/1.0' })).toMatchObject({ success: false, reason: 'denyList', deniedValue: 'EvilBot/1.0' });
    expect(await ratelimit.limit('someone', { country: 'XX' })).toMatchObject({ success: false, reason: 'denyList', deniedValue: 'XX' });
    // The limit is counted alongside the deny-list check (one round trip): the three refused calls of `someone` count too.
    const allowed = await ratelimit.limit('someone', { ip: '198.51.100.1', userAgent: 'curl/8', country: 'DE' });
    expect(allowed).toMatchObject({ success: true, limit: 10, remaining: 6 });
    expect(allowed.reason).toBeUndefined();
    await allowed.pending;
    expect(await redis.get(`${prefix}:ipDenyListStatus`)).toBe('disabled');
    expect(await redis.exists(`${prefix}:denyList:ipDenyList`)).toBe(0);
  });

  it('analytics: every limit() is recorded, and Analytics reads the allowed and blocked counts back', async () => {
    const prefix = 'rl:analytics';
    const ratelimit = new Ratelimit({ redis, limiter: Ratelimit.fixedWindow(2, '10 s'), prefix, ephemeralCache: false, analytics: true });
    await windowWithRoom(10_000, 3_000);
    const answers = [];
    for (const identifier of ['alice', 'alice', 'alice', 'bob']) answers.push(await ratelimit.limit(identifier, { geo: { country: 'DE' } }));
    expect(answers.map((a) => a.success)).toEqual([true, true, false, true]);
    await Promise.all(answers.map((a) => a.pending));

    const analytics = new Analytics({ redis, prefix });
    expect(await analytics.getUsage()).toEqual({ alice: { success: 2, blocked: 1 }, bob: { success: 1, blocked: 0 } });
    const { allowed, ratelimited, denied } = await analytics.getMostAllowedBlocked(1);
    expect(allowed).toEqual(expect.arrayContaining([{ identifier: 'alice', count: 2 }, { identifier: 'bob', count: 1 }]));
    expect(ratelimited).toEqual([{ identifier: 'alice', count: 1 }]);
    expect(denied).toEqual([]);
    const [bucket] = await analytics.getUsageOverTime(1, 'country');
    expect(bucket).toMatchObject({ country: { DE: 4 } });
  });

  it('MultiRegionRatelimit: fixedWindow counts across two databases and syncs the request ids of each into the other', async () => {
    const regions = [redis, acme.client({}, 'second')];
    const ratelimit = new MultiRegionRatelimit({ redis: regions, limiter: MultiRegionRatelimit.fixedWindow(3, '10 s'), prefix: 'rl:multi' });
    const reset = await windowWithRoom(10_000, 3_000);
    const key = `rl:multi:user:${reset / 10_000 - 1}`;
    const answers = await limitSynced(ratelimit, 'user', 4);
    expect(answers.map(({ success, limit, remaining, reset }) => ({ success, limit, remaining, reset }))).toEqual([
      { success: true, limit: 3, remaining: 2, reset },
      { success: true, limit: 3, remaining: 1, reset },
      { success: true, limit: 3, remaining: 0, reset },
      { success: false, limit: 3, remaining: -1, reset },
    ]);
    const [main, second] = await Promise.all(regions.map((r) => r.hgetall<Record<string, number>>(key)));
    expect(Object.keys(main ?? {})).toHaveLength(4);
    expect(second).toEqual(main);
    expect(await ratelimit.getRemaining('user')).toEqual({ remaining: 0, reset, limit: 3 });

    await ratelimit.resetUsedTokens('user');
    await eventually(async () => expect(await Promise.all(regions.map((r) => r.exists(key)))).toEqual([0, 0]));
    expect(await ratelimit.getRemaining('user')).toEqual({ remaining: 3, reset, limit: 3 });
  });

  it('MultiRegionRatelimit: slidingWindow blocks at the limit in both databases', async () => {
    const regions = [redis, acme.client({}, 'second')];
    const ratelimit = new MultiRegionRatelimit({ redis: regions, limiter: MultiRegionRatelimit.slidingWindow(2, '10 s'), prefix: 'rl:multisliding' });
    const reset = await windowWithRoom(10_000, 3_000);
    const key = `rl:multisliding:user:${reset / 10_000 - 1}`;
    const answers = await limitSynced(ratelimit, 'user', 3);
    expect(answers.map(({ success, remaining, reset }) => ({ success, remaining, reset }))).toEqual([
      { success: true, remaining: 1, reset },
      { success: true, remaining: 0, reset },
      { success: false, remaining: 0, reset },
    ]);
    const [main, second] = await Promise.all(regions.map((r) => r.hgetall<Record<string, number>>(key)));
    expect(Object.values(main ?? {})).toEqual([1, 1]);
    expect(second).toEqual(main);
    expect(await ratelimit.getRemaining('user')).toEqual({ remaining: 0, reset, limit: 2 });
  });
});

/**
 * @upstash/lock 0.2.1 through a real kv-gateway: `acquire` (SET NX PX) with its lease, uuid and retry options,
 * contention between two Lock instances on one id, `release` and `extend` (Lua scripts that check the holder's
 * UUID first), `getStatus`, and a lease that expires.
 */
describe(`@upstash/lock on ${engine}`, () => {
  const acme = acmeDatabase();
  let redis: Redis;
  beforeAll(() => {
    redis = acme.client();
  });

  it('acquire, getStatus and release; a second Lock on the same id cannot acquire or release it meanwhile', async () => {
    const first = new Lock({ id: 'lock:job', redis, lease: 5_000 });
    const second = new Lock({ id: 'lock:job', redis, lease: 5_000, retry: { attempts: 2, delay: 50 } });
    expect(first.id).toBe('lock:job');
    expect(await first.getStatus()).toBe('FREE');
    expect(await first.acquire({ uuid: 'holder-1' })).toBe(true);
    expect(await first.getStatus()).toBe('ACQUIRED');
    expect(await redis.get('lock:job')).toBe('holder-1');
    const pttl = await redis.pttl('lock:job');
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(5_000);

    expect(await second.acquire()).toBe(false);
    expect(await second.getStatus()).toBe('FREE');
    expect(await second.release()).toBe(false);
    expect(await redis.get('lock:job')).toBe('holder-1');

    expect(await first.release()).toBe(true);
    expect(await first.getStatus()).toBe('FREE');
    expect(await redis.exists('lock:job')).toBe(0);
    expect(await first.release()).toBe(false);
    expect(await second.acquire()).toBe(true);
    expect(await second.getStatus()).toBe('ACQUIRED');
    expect(await first.getStatus()).toBe('FREE');
    expect(await second.release()).toBe(true);
  });

  it('a lease expires on its own, and a waiting acquire with enough retries gets the lock then', async () => {
    const holder = new Lock({ id: 'lock:lease', redis, lease: 600 });
    const waiter = new Lock({ id: 'lock:lease', redis, lease: 5_000 });
    expect(await holder.acquire()).toBe(true);
    expect(await waiter.acquire({ retry: { attempts: 2, delay: 50 } })).toBe(false);
    expect(await waiter.acquire({ retry: { attempts: 40, delay: 50 } })).toBe(true);
    expect(await holder.getStatus()).toBe('FREE');
    expect(await waiter.getStatus()).toBe('ACQUIRED');
    expect(await holder.release()).toBe(false);
    expect(await waiter.release()).toBe(true);
  });

  it('extend adds to the lease of the holder only', async () => {
    const holder = new Lock({ id: 'lock:extend', redis, lease: 5_000 });
    const other = new Lock({ id: 'lock:extend', redis, retry: { attempts: 1, delay: 10 } });
    expect(await other.extend(10_000)).toBe(false);
    expect(await holder.acquire()).toBe(true);
    // The library extends by whole seconds: EXPIRE with the TTL left plus amt / 1000.
    expect(await holder.extend(10_000)).toBe(true);
    const pttl = await redis.pttl('lock:extend');
    expect(pttl).toBeGreaterThan(10_000);
    expect(pttl).toBeLessThanOrEqual(15_000);
    expect(await other.acquire()).toBe(false);
    expect(await other.extend(10_000)).toBe(false);
    expect(await redis.pttl('lock:extend')).toBeLessThanOrEqual(15_000);
    expect(await holder.release()).toBe(true);
    expect(await holder.extend(10_000)).toBe(false);
  });
});

/**
 * @upstash/realtime 1.1.0's server side (`@upstash/realtime`, dist/server) through a real kv-gateway: `emit` (XADD to
 * the channel's stream, then EXPIRE and PUBLISH in one pipeline) with schema validation, history trimming and
 * expiry, `history` (XRANGE), the server-side `subscribe` (the SDK's SSE subscription, then XRANGE for history or a
 * cursor), and `handle`, the route handler that streams a channel to browsers as server-sent events (called here with
 * a standard Request, as a Next.js route would). The React client (`@upstash/realtime/client`, `useRealtime`) needs a
 * browser's EventSource and React, so it is not exercised: `handle`'s stream is what it reads.
 */
describe(`@upstash/realtime on ${engine}`, () => {
  const acme = acmeDatabase();
  let redis: Redis;
  const schema = { chat: { message: z.object({ text: z.string() }), typing: z.boolean() }, status: z.enum(['online', 'away']) };
  beforeAll(() => {
    redis = acme.client();
  });

  it('emit writes to the channel stream, history reads it back, and a schema refuses invalid data', async () => {
    const realtime = new Realtime({ redis, schema });
    await realtime.channel('room-1').emit('chat.message', { text: 'hello' });
    await realtime.channel('room-1').emit('chat.typing', true);
    await realtime.emit('status', 'online');
    await expect(realtime.channel('room-1').emit('chat.message', { text: 42 } as unknown as { text: string })).rejects.toThrow();

    const history = await realtime.channel('room-1').history();
    expect(history.map(({ event, channel, data }) => ({ event, channel, data }))).toEqual([
      { event: 'chat.message', channel: 'room-1', data: { text: 'hello' } },
      { event: 'chat.typing', channel: 'room-1', data: true },
    ]);
    for (const { id } of history) expect(id).toMatch(/^\d+-\d+$/);
    expect(await redis.xlen('room-1')).toBe(2);
    expect(await realtime.history()).toMatchObject([{ event: 'status', channel: 'default', data: 'online' }]);
    expect(await realtime.channel('room-1').history({ limit: 1 })).toEqual([history[0]]);
    const firstMs = Number(history[0].id.split('-')[0]);
    expect(await realtime.channel('room-1').history({ start: firstMs, end: firstMs })).toEqual(history.filter(({ id }) => id.startsWith(`${firstMs}-`)));
  });

  it('history options: maxLength trims the stream, expireAfterSecs sets its TTL', async () => {
    const realtime = new Realtime({ redis, schema, history: { maxLength: 3, expireAfterSecs: 60 } });
    for (let i = 0; i < 5; i++) await realtime.channel('room-trim').emit('chat.message', { text: `m${i}` });
    expect((await realtime.channel('room-trim').history()).map((m) => m.data)).toEqual([{ text: 'm2' }, { text: 'm3' }, { text: 'm4' }]);
    const ttl = await redis.ttl('room-trim');
    expect(ttl).toBeGreaterThan(50);
    expect(ttl).toBeLessThanOrEqual(60);
  });

  it('subscribe (server side) replays history, then delivers live events of the chosen events only, and resumes after a cursor', async () => {
    const realtime = new Realtime({ redis, schema });
    const room = realtime.channel('room-live');
    await room.emit('chat.message', { text: 'before' });
    // @upstash/realtime 1.1.0 stops the 60 s ping of a subscription only on an `unsubscribe` event, which @upstash/redis
    // never emits (its unsubscribe() aborts the stream): the test clears the intervals the subscriptions started.
    const intervals = jest.spyOn(global, 'setInterval');
    try {
      const received: { event: string; data: unknown; cursor: string }[] = [];
      const unsubscribe = await room.subscribe({ events: ['chat.message'], history: true, onData: ({ event, data, cursor }) => received.push({ event, data, cursor }) });
      expect(received).toMatchObject([{ event: 'chat.message', data: { text: 'before' } }]);
      await room.emit('chat.typing', true);
      await room.emit('chat.message', { text: 'live' });
      await eventually(() => expect(received.map((r) => r.data)).toEqual([{ text: 'before' }, { text: 'live' }]));
      unsubscribe();

      const cursor = required(received[0], 'first event').cursor;
      expect(isRealtimeCursor(cursor)).toBe(true);
      if (!isRealtimeCursor(cursor)) return;
      const resumed: unknown[] = [];
      const stop = await room.subscribe({ events: ['chat.message', 'chat.typing'], after: cursor, onData: ({ data }) => resumed.push(data) });
      expect(resumed).toEqual([true, { text: 'live' }]);
      stop();
      const gone = '1-1';
      if (!isRealtimeCursor(gone)) throw new Error('1-1 is a stream id');
      await expect(room.subscribe({ events: ['chat.message'], after: gone, onData: () => undefined })).rejects.toThrow(CursorUnavailableError);
      await eventually(async () => expect(await redis.publish('room-live', { type: 'ping', timestamp: 0 })).toBe(0));
    } finally {
      for (const started of intervals.mock.results) clearInterval(started.value as NodeJS.Timeout);
      intervals.mockRestore();
    }
  });

  it('handle streams a channel as server-sent events: connected, the messages after last_ack, then live messages; middleware can refuse', async () => {
    const realtime = new Realtime({ redis, schema });
    const room = realtime.channel('room-sse');
    await room.emit('chat.message', { text: 'seen' });
    await room.emit('chat.message', { text: 'missed' });
    const [seen] = await room.history({ limit: 1 });

    const route = handle({ realtime, middleware: ({ request }) => (request.headers.get('authorization') === 'Bearer ok' ? undefined : new Response('no', { status: 401 })) });
    expect((await route(new Request('http://app.test/api/realtime?channel=room-sse')))?.status).toBe(401);

    const abort = new AbortController();
    const request = new Request(`http://app.test/api/realtime?channel=room-sse&last_ack_room-sse=${seen.id}`, { headers: { authorization: 'Bearer ok' }, signal: abort.signal });
    const response = required((await route(request)) ?? undefined, 'response');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    const events: { type?: string; data?: unknown }[] = [];
    const reader = required(response.body ?? undefined, 'response body').getReader();
    const reading = readServerSentEvents(reader, events);
    await eventually(() => expect(events).toMatchObject([{ type: 'connected', channel: 'room-sse' }, { event: 'chat.message', data: { text: 'missed' } }]));
    await room.emit('chat.message', { text: 'live' });
    await eventually(() => expect(events.map((e) => e.data ?? e.type)).toEqual(['connected', { text: 'missed' }, { text: 'live' }]));
    // The browser goes away: the request is aborted and the server cancels the response stream.
    abort.abort();
    await reader.cancel();
    await reading;
    await eventually(async () => expect(await redis.publish('room-sse', 'anyone?')).toBe(0));
  });
});

/** Reads the `data:` events of a server-sent event stream as JSON into `events`, until the stream ends or is cancelled. */
async function readServerSentEvents(reader: ReadableStreamDefaultReader<Uint8Array>, events: unknown[]): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const chunk = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (chunk.startsWith('data: ')) events.push(JSON.parse(chunk.slice('data: '.length)));
      }
    }
  } catch (error) {
    if (!(error instanceof Error && error.name === 'AbortError')) throw error;
  }
}

