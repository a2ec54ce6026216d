import { Redis } from 'ioredis';
import { DelayedError } from 'bullmq';
import { type QueueMessage, newMessageId } from '@restash/queue/util-message';
import { eventually } from '@restash/shared/util-testing';
import { DeliveryConsumer, type DeliveryConsumerOptions, type StreamJob } from './delivery-consumer';
import { DeliveryStreams } from './delivery-streams';
import { TEST_STORE_OPTIONS, useQueueRedis } from './testing/queue-redis';

/** A message of project t.a due now (or `notBefore`). */
function message(overrides: Partial<QueueMessage> = {}): QueueMessage {
  const now = Date.now();
  return { messageId: newMessageId(), project: 't.a', url: 'http://127.0.0.1:9/hook', method: 'POST', header: {}, body: '', maxRetries: 2, notBefore: now, createdAt: now, callerIp: '127.0.0.1', ...overrides };
}

const OPTIONS: DeliveryConsumerOptions = { concurrency: 10, lockDurationMs: 600, stalledIntervalMs: 200, maxStalledCount: 5, backoff: () => 100 };

/**
 * The shared deliveries on Redis Streams (docs/queue.md, "Queue: at-least-once delivery"): DeliveryStreams' scripts and DeliveryConsumer's reads,
 * retries, delays, takeovers and settles on a real Redis.
 */
describe('DeliveryStreams and DeliveryConsumer on a real Redis', () => {
  const consumers: DeliveryConsumer[] = [];
  const readers: Redis[] = [];
  const queueRedis = useQueueRedis(async () => {
    await Promise.all(consumers.map((c) => c.close()));
    for (const reader of readers) reader.disconnect();
  });
  let streams: DeliveryStreams;
  let prefix = 0;

  beforeEach(() => {
    // A prefix per test: each test has its own stream, group and messages.
    streams = new DeliveryStreams(queueRedis.redis, { ...TEST_STORE_OPTIONS, prefix: `t${++prefix}` });
  });

  const consume = async (process: (job: StreamJob) => Promise<string | undefined>, options: Partial<DeliveryConsumerOptions> = {}, on = streams) => {
    const reader = new Redis(queueRedis.server.url);
    readers.push(reader);
    const consumer = new DeliveryConsumer(on, reader, `c${consumers.length}`, process, { ...OPTIONS, ...options });
    consumers.push(consumer);
    await consumer.run();
    return consumer;
  };

  it('adds a message once per id and once per deduplication key, holding the first id', async () => {
    const first = message();
    const dedup = { key: 't:de:t.a:x', ttlMs: 60_000 };
    await expect(streams.add(first, dedup)).resolves.toEqual({ messageId: first.messageId, added: true });
    await expect(streams.add(message(), dedup)).resolves.toEqual({ messageId: first.messageId, added: false });
    await expect(streams.add(first)).resolves.toEqual({ messageId: first.messageId, added: false });
    expect(await queueRedis.redis.xlen(streams.ready)).toBe(1);
    await expect(streams.get(first.messageId)).resolves.toMatchObject({ message: first, state: 'waiting', attemptsMade: 0, progress: 0 });
    await expect(streams.states([first.messageId, 'msg_none'])).resolves.toEqual(['waiting', undefined]);
  });

  it('writes the CREATED event and the pending index entry with an add, and none for a duplicate', async () => {
    const first = message();
    const dedup = { key: 't:de:t.a:created', ttlMs: 60_000 };
    const created = (id: string) => ({ stream: 't:events:t.a', json: JSON.stringify({ messageId: id, state: 'CREATED' }), maxLength: 100, index: 't:pending:t.a' });
    await expect(streams.add(first, dedup, created(first.messageId))).resolves.toEqual({ messageId: first.messageId, added: true });
    const duplicate = message();
    await expect(streams.add(duplicate, dedup, created(duplicate.messageId))).resolves.toEqual({ messageId: first.messageId, added: false });
    const events = await queueRedis.redis.xrange('t:events:t.a', '-', '+');
    expect(events.map(([, fields]) => JSON.parse(fields[1] as string))).toEqual([{ messageId: first.messageId, state: 'CREATED' }]);
    expect(await queueRedis.redis.zrange('t:pending:t.a', '0', '-1', 'WITHSCORES')).toEqual([first.messageId, String(first.createdAt)]);
  });

  it('settles a message purged while it was delivered without writing it again, and drops its entry', async () => {
    await streams.ensureGroup();
    const { messageId } = await streams.add(message());
    const entries = (await queueRedis.redis.xreadgroup('GROUP', 'workers', 'purged', 'COUNT', 10, 'STREAMS', streams.ready, '>')) as Array<[string, Array<[string, string[]]>]>;
    const [taken] = await streams.start(entries[0]?.[1] ?? [], 5);
    await streams.forget([messageId]);
    await streams.finish(taken as NonNullable<typeof taken>, 'completed', 'delivered');
    expect(await queueRedis.redis.exists(streams.key(messageId))).toBe(0);
    expect(await queueRedis.redis.xlen(streams.ready)).toBe(0);
    await expect(streams.counts()).resolves.toEqual({ waiting: 0, active: 0, delayed: 0 });
  });

  it('delivers each message once and keeps its result for the retention', async () => {
    const seen: string[] = [];
    const consumer = await consume(async (job) => {
      seen.push(job.id);
      return 'delivered';
    });
    const ids = await Promise.all(Array.from({ length: 50 }, async () => (await streams.add(message())).messageId));
    await eventually(async () => expect((await streams.states(ids)).every((s) => s === 'completed')).toBe(true), 10_000);
    await consumer.close();
    expect(seen.sort()).toEqual([...ids].sort());
    await expect(streams.get(ids[0] as string)).resolves.toMatchObject({ state: 'completed', result: 'delivered' });
    expect(await queueRedis.redis.pttl(streams.key(ids[0] as string))).toBeGreaterThan(50_000);
    // Acknowledged and deleted: nothing is left in the stream or pending.
    expect(await queueRedis.redis.xlen(streams.ready)).toBe(0);
    await expect(streams.counts()).resolves.toEqual({ waiting: 0, active: 0, delayed: 0 });
  });

  it('settles the messages that end in one turn of the event loop in one script call', async () => {
    await streams.ensureGroup();
    const ids = await Promise.all(Array.from({ length: 5 }, async () => (await streams.add(message())).messageId));
    const entries = (await queueRedis.redis.xreadgroup('GROUP', 'workers', 'batch', 'COUNT', 10, 'STREAMS', streams.ready, '>')) as Array<[string, Array<[string, string[]]>]>;
    const taken = await streams.start(entries[0]?.[1] ?? [], 5);
    const calls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await queueRedis.redis.info('commandstats'))?.[1] ?? 0);
    const before = await calls();
    await Promise.all(taken.map((t) => streams.finish(t, 'completed', 'delivered')));
    expect((await calls()) - before).toBe(1);
    await expect(streams.states(ids)).resolves.toEqual(ids.map(() => 'completed'));
    expect(await queueRedis.redis.xlen(streams.ready)).toBe(0);
  });

  it('holds a delayed message until it is due', async () => {
    const started: number[] = [];
    await consume(async () => void started.push(Date.now()));
    const due = Date.now() + 700;
    const { messageId } = await streams.add(message({ notBefore: due }));
    await expect(streams.get(messageId)).resolves.toMatchObject({ state: 'delayed' });
    await eventually(async () => expect((await streams.get(messageId))?.state).toBe('completed'), 5_000);
    expect(started[0]).toBeGreaterThanOrEqual(due);
  });

  it('retries a throw after the backoff while attempts are left, then fails the message', async () => {
    const attempts: number[] = [];
    await consume(async (job) => {
      attempts.push(job.attemptsMade);
      throw new Error('boom');
    });
    const { messageId } = await streams.add(message({ maxRetries: 2 }));
    await eventually(async () => expect((await streams.get(messageId))?.state).toBe('failed'), 5_000);
    expect(attempts).toEqual([0, 1, 2]);
    await expect(streams.get(messageId)).resolves.toMatchObject({ attemptsMade: 3, result: 'boom' });
  });

  it('leaves a message the processor put back itself (no attempt spent) and records progress', async () => {
    let calls = 0;
    await consume(async (job) => {
      if (++calls === 1) {
        await job.updateProgress({ callbacks: ['x'] });
        await job.moveToDelayed(Date.now() + 200);
        throw new DelayedError();
      }
      expect(job.progress).toEqual({ callbacks: ['x'] });
      return 'delivered';
    });
    const { messageId } = await streams.add(message());
    await eventually(async () => expect((await streams.get(messageId))?.state).toBe('completed'), 5_000);
    // One attempt counted: the one that delivered (the first was put back without one).
    await expect(streams.get(messageId)).resolves.toMatchObject({ attemptsMade: 1, result: 'delivered' });
    expect(calls).toBe(2);
  });

  it("takes over the messages of a consumer that died, once its hold lapses; a live consumer's are never taken", async () => {
    const slow = message();
    const dead = message();
    // A consumer that takes messages and never settles them (its process died): a raw XREADGROUP.
    await streams.ensureGroup();
    await streams.add(dead);
    const taken = await queueRedis.redis.xreadgroup('GROUP', 'workers', 'dead', 'COUNT', 10, 'STREAMS', streams.ready, '>');
    expect(taken).toHaveLength(1);
    const runs: string[] = [];
    // The live consumer holds a message for 1.5 s, longer than the lock (600 ms): its renewals keep it.
    await consume(async (job) => {
      runs.push(job.id);
      if (job.id === slow.messageId) await new Promise((resolve) => setTimeout(resolve, 1500));
      return 'delivered';
    });
    await consume(async (job) => {
      runs.push(job.id);
      return 'delivered';
    });
    await streams.add(slow);
    await eventually(async () => expect(await streams.states([dead.messageId, slow.messageId])).toEqual(['completed', 'completed']), 10_000);
    expect(runs.sort()).toEqual([dead.messageId, slow.messageId].sort());
  });

  it('skips a removed message; a message being delivered is not removed', async () => {
    const waiting = await streams.add(message());
    const delayed = await streams.add(message({ notBefore: Date.now() + 60_000 }));
    await expect(streams.remove(waiting.messageId)).resolves.toBe('removed');
    await expect(streams.remove(delayed.messageId)).resolves.toBe('removed');
    await expect(streams.remove('msg_none')).resolves.toBe('none');
    let release = () => undefined as void;
    const seen: string[] = [];
    await consume(async (job) => {
      seen.push(job.id);
      await new Promise<void>((resolve) => (release = resolve));
      return 'delivered';
    });
    const active = await streams.add(message());
    await eventually(async () => expect(seen).toEqual([active.messageId]), 5_000);
    await expect(streams.remove(active.messageId)).resolves.toBe('active');
    await expect(streams.activeProjects()).resolves.toEqual(['t.a']);
    release();
    await eventually(async () => expect((await streams.get(active.messageId))?.state).toBe('completed'), 5_000);
    await expect(streams.get(waiting.messageId)).resolves.toBeNull();
    expect(await queueRedis.redis.zcard(streams.delayed)).toBe(0);
  });

  it('removes the consumers gone (holding nothing, idle) from the group, and only those', async () => {
    await streams.ensureGroup();
    await streams.add(message());
    await queueRedis.redis.xreadgroup('GROUP', 'workers', 'holds-one', 'COUNT', 1, 'STREAMS', streams.ready, '>');
    await queueRedis.redis.xgroup('CREATECONSUMER', streams.ready, 'workers', 'gone');
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(streams.forgetIdleConsumers(20)).resolves.toBe(1);
    const names = ((await queueRedis.redis.xinfo('CONSUMERS', streams.ready, 'workers')) as unknown[][]).map((fields) => fields[1]);
    expect(names).toEqual(['holds-one']);
  });

  it('lists and forgets a project’s messages for a purge', async () => {
    const a = await streams.add(message());
    await streams.add(message({ project: 't.b' }));
    await expect(streams.projectMessages('t.a')).resolves.toEqual([{ id: a.messageId, state: 'waiting' }]);
    await streams.forget([a.messageId]);
    await expect(streams.projectMessages('t.a')).resolves.toEqual([]);
  });

  it('makes the consumer group again when the stream was lost (the Redis restarted empty)', async () => {
    const seen: string[] = [];
    await consume(async (job) => void seen.push(job.id), {}, streams);
    await queueRedis.redis.del(streams.ready);
    const { messageId } = await streams.add(message());
    await eventually(async () => expect(seen).toEqual([messageId]), 10_000);
  });
});
