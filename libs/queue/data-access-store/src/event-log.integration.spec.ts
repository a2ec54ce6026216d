import { Redis } from 'ioredis';
import type { MessageEvent } from '@restash/queue/util-message';
import { EventLog } from './event-log';
import { useQueueRedis } from './testing/queue-redis';

function event(messageId: string, state: MessageEvent['state']): MessageEvent {
  return { time: Date.now(), state, messageId, url: 'http://127.0.0.1:9/hook', callerIp: '127.0.0.1' };
}

/** The events of a stream, oldest first, as `messageId state`. */
async function read(redis: Redis, key: string): Promise<string[]> {
  const entries = await redis.xrange(key, '-', '+');
  return entries.map(([, fields]) => {
    const e = JSON.parse(fields[1]) as MessageEvent;
    return `${e.messageId} ${e.state}`;
  });
}

/** Calls of a command so far (INFO commandstats), 0 before its first. */
async function calls(redis: Redis, command: string): Promise<number> {
  const info = await redis.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
}

describe('EventLog on a real Redis', () => {
  const queueRedis = useQueueRedis();
  let log: EventLog;

  beforeAll(() => {
    log = new EventLog(queueRedis.redis, 1000);
  });

  it('writes the appends of one turn in one script call, each stream in the order of the calls', async () => {
    await log.append('s:warm', [event('m0', 'CREATED')]); // loads the script
    const before = { scripts: (await calls(queueRedis.redis, 'evalsha')) + (await calls(queueRedis.redis, 'eval')), xadds: await calls(queueRedis.redis, 'xadd') };
    await Promise.all([
      log.append('s:a', [event('m1', 'ACTIVE'), event('m1', 'DELIVERED')]),
      log.append('s:b', [event('m2', 'CREATED')]),
      log.append('s:a', [event('m3', 'ACTIVE'), event('m3', 'ERROR'), event('m3', 'RETRY')]),
      log.append('s:b', []),
    ]);
    const after = { scripts: (await calls(queueRedis.redis, 'evalsha')) + (await calls(queueRedis.redis, 'eval')), xadds: await calls(queueRedis.redis, 'xadd') };
    expect(after.scripts - before.scripts).toBe(1);
    expect(after.xadds - before.xadds).toBe(6);
    await expect(read(queueRedis.redis, 's:a')).resolves.toEqual(['m1 ACTIVE', 'm1 DELIVERED', 'm3 ACTIVE', 'm3 ERROR', 'm3 RETRY']);
    await expect(read(queueRedis.redis, 's:b')).resolves.toEqual(['m2 CREATED']);
  });

  it('rejects every append its failed script call carried, and the next turn writes again', async () => {
    await queueRedis.redis.set('s:not-a-stream', 'x');
    const results = await Promise.allSettled([
      log.append('s:c', [event('m4', 'CREATED')]),
      log.append('s:not-a-stream', [event('m5', 'CREATED')]),
      log.append('s:c', [event('m6', 'CREATED')]),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/WRONGTYPE/);
    // The script stops at the failed XADD: what came before it was written.
    await expect(read(queueRedis.redis, 's:c')).resolves.toEqual(['m4 CREATED']);

    await log.append('s:c', [event('m7', 'CREATED')]);
    await expect(read(queueRedis.redis, 's:c')).resolves.toEqual(['m4 CREATED', 'm7 CREATED']);
  });

  it('writes a guarded call only if its key exists when the script runs, and says so', async () => {
    const absent = log.append('s:g', [event('m8', 'CREATED')], 's:job:m8');
    const present = log.append('s:g', [event('m9', 'CREATED'), event('m9', 'ACTIVE')], 's:job:m9');
    await queueRedis.redis.set('s:job:m9', '1'); // sent before the script call, which runs after this turn
    await expect(Promise.all([absent, present, log.append('s:g', [event('m10', 'CREATED')])])).resolves.toEqual([false, true, true]);
    await expect(read(queueRedis.redis, 's:g')).resolves.toEqual(['m9 CREATED', 'm9 ACTIVE', 'm10 CREATED']);
  });

  it('works on an auto-pipelining connection whose pending pipeline was made after the log (queue-gateway\'s)', async () => {
    const pipelining = new Redis(queueRedis.server.url, { enableAutoPipelining: true });
    try {
      await pipelining.ping();
      const fresh = new EventLog(pipelining, 1000);
      const appended = fresh.append('s:ap', [event('m11', 'CREATED')]); // flushed before the pipeline below
      const other = pipelining.set('s:ap-other', '1'); // a new pending pipeline, which the script call joins
      await expect(Promise.all([appended, other])).resolves.toEqual([true, 'OK']);
      await expect(read(queueRedis.redis, 's:ap')).resolves.toEqual(['m11 CREATED']);
    } finally {
      pipelining.disconnect();
    }
  });

  it('never splits one call over two script calls, however many events a turn holds', async () => {
    const big = Array.from({ length: 700 }, (_, i) => event(`b${i}`, 'CREATED'));
    const before = (await calls(queueRedis.redis, 'evalsha')) + (await calls(queueRedis.redis, 'eval'));
    await Promise.all([log.append('s:d', big.slice(0, 300)), log.append('s:d', big.slice(300, 650)), log.append('s:d', big.slice(650))]);
    // 300 + 350 reaches the 500 of one call only after the second call's last event: the third goes alone.
    expect((await calls(queueRedis.redis, 'evalsha')) + (await calls(queueRedis.redis, 'eval')) - before).toBe(2);
    await expect(read(queueRedis.redis, 's:d')).resolves.toEqual(big.map((e) => `${e.messageId} CREATED`));
  });
});
