import { Redis } from 'ioredis';
import { Worker } from 'bullmq';
import { type QueueMessage, dlqIdOf, messageEvent, newMessageId } from '@restash/queue/util-message';
import { eventually } from '@restash/shared/util-testing';
import { DELIVERY_JOB, DELIVERY_QUEUE, QueueStore } from './queue-store';
import { DeliveryConsumer, type DeliveryConsumerOptions } from './delivery-consumer';
import { laneQueueName } from './lanes';
import { TEST_STORE_OPTIONS, useQueueRedis } from './testing/queue-redis';

/** A message of `project` due in an hour (no worker runs here: it stays pending). */
function message(project: string, overrides: Partial<QueueMessage> = {}): QueueMessage {
  const now = Date.now();
  return {
    messageId: newMessageId(),
    project,
    url: 'http://127.0.0.1:9/hook',
    method: 'POST',
    header: { 'Content-Type': ['text/plain'] },
    body: Buffer.from('hello').toString('base64'),
    maxRetries: 3,
    notBefore: now + 3_600_000,
    createdAt: now,
    callerIp: '127.0.0.1',
    ...overrides,
  };
}

/** The settings of the consumers of these tests: settled at once, never retried. */
const CONSUMER: DeliveryConsumerOptions = { concurrency: 50, lockDurationMs: 30_000, stalledIntervalMs: 5_000, maxStalledCount: 1, backoff: () => 0 };

describe('QueueStore on a real Redis (the shared deliveries, lanes, DLQ, events)', () => {
  let store: QueueStore;
  const queueRedis = useQueueRedis(() => store?.close());

  beforeAll(() => {
    store = new QueueStore(queueRedis.redis, TEST_STORE_OPTIONS);
  });

  it('keeps a published message pending, readable by its project only, and deduplicates within the window', async () => {
    const first = message('t.a');
    await expect(store.publish(first, 'dedup-1')).resolves.toEqual({ messageId: first.messageId, deduplicated: false });
    await expect(store.publish(message('t.a'), 'dedup-1')).resolves.toEqual({ messageId: first.messageId, deduplicated: true });
    const other = message('t.b');
    await expect(store.publish(other, 'dedup-1')).resolves.toEqual({ messageId: other.messageId, deduplicated: false });

    await expect(store.message('t.a', first.messageId)).resolves.toEqual({ message: first, status: 'pending', retried: 0 });
    await expect(store.message('t.b', first.messageId)).resolves.toBeNull();
    await expect(store.pendingMessageIds('t.a', {}, 500)).resolves.toEqual([first.messageId]);
    const events = await store.events('t.a', { count: 10, filter: {} });
    expect(events.items.map((e) => [e.state, e.messageId])).toEqual([['CREATED', first.messageId]]);
  });

  it('writes the CREATED events of publishes in the round trip of their adds, none for a duplicate', async () => {
    const warm = message('t.rt');
    await store.publish(warm); // the queue's connection is ready, the scripts are loaded
    const calls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await queueRedis.redis.info('commandstats'))?.[1] ?? 0);
    const before = await calls();
    const batch = Array.from({ length: 10 }, () => message('t.rt'));
    await Promise.all(batch.map((m, i) => store.publish(m, i === 9 ? 'rt-dedup' : undefined)));
    const duplicate = message('t.rt');
    await expect(store.publish(duplicate, 'rt-dedup')).resolves.toEqual({ messageId: batch[9].messageId, deduplicated: true });
    // 11 adds, each writing its CREATED event in its own script (the duplicate's writes none): no event took a
    // script call or a round trip of its own.
    expect((await calls()) - before).toBe(11);
    const events = await store.events('t.rt', { count: 100, filter: {} });
    expect(events.items.map((e) => `${e.state} ${e.messageId}`).sort()).toEqual([warm, ...batch].map((m) => `CREATED ${m.messageId}`).sort());
  });

  it('publishes on an auto-pipelining connection (as queue-gateway does), the CREATED events in the round trip of the adds', async () => {
    const pipelining = new Redis(queueRedis.server.url, { enableAutoPipelining: true });
    await pipelining.ping(); // ready: commands go to its pipelines at once, not to its offline queue
    const other = new QueueStore(pipelining, { prefix: 'test:queue', messageRetentionMs: 60_000, dlqRetentionMs: 60_000, eventsPerProject: 100 });
    try {
      const batch = Array.from({ length: 10 }, () => message('t.ap'));
      const calls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await queueRedis.redis.info('commandstats'))?.[1] ?? 0);
      await other.publish(batch[0]);
      const before = await calls();
      await Promise.all(batch.slice(1).map((m) => other.publish(m)));
      expect((await calls()) - before).toBe(9); // 9 adds, each with its event
      const events = await other.events('t.ap', { count: 100, filter: {} });
      expect(events.items.map((e) => `${e.state} ${e.messageId}`).sort()).toEqual(batch.map((m) => `CREATED ${m.messageId}`).sort());
    } finally {
      await other.close();
      pipelining.disconnect();
    }
  });

  it('writes the CREATED event in the round trip of the add on a store used at once (its connection not ready yet)', async () => {
    // A fresh connection sends each script's first call as EVAL, then EVALSHA.
    const calls = async () => {
      const stats = await queueRedis.redis.info('commandstats');
      return Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0) + Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    };
    const before = await calls();
    const fresh = new Redis(queueRedis.server.url);
    const other = new QueueStore(fresh, { prefix: 'test:queue', messageRetentionMs: 60_000, dlqRetentionMs: 60_000, eventsPerProject: 100 });
    try {
      const first = message('t.fresh');
      await other.publish(first); // its queue's connection reads the server's version before the add is sent
      expect((await calls()) - before).toBe(1); // the add, with its event; not a second call after the add
      const events = await other.events('t.fresh', { count: 10, filter: {} });
      expect(events.items.map((e) => `${e.state} ${e.messageId}`)).toEqual([`CREATED ${first.messageId}`]);
    } finally {
      await other.close();
      fresh.disconnect();
    }
  });

  /** Publishes 50 messages due now (5, then 45 at once) and waits until each one's log reads CREATED then ACTIVE. */
  const expectCreatedBeforeActive = async (project: string, overrides: Partial<QueueMessage>) => {
    const published = Array.from({ length: 50 }, () => message(project, { ...overrides, notBefore: Date.now() }));
    for (const m of published.slice(0, 5)) await store.publish(m);
    await Promise.all(published.slice(5).map((m) => store.publish(m)));
    const states = async () => {
      const { items } = await store.events(project, { count: 1000, filter: { messageId: published.map((m) => m.messageId) } });
      return published.map((m) => items.filter((e) => e.messageId === m.messageId).map((e) => e.state).reverse().join(' '));
    };
    await eventually(async () => expect(await states()).toEqual(published.map(() => 'CREATED ACTIVE')), 10_000);
  };

  it('logs CREATED before the ACTIVE of a consumer that takes a message of the shared deliveries at once', async () => {
    // A consumer already reading the shared deliveries, which logs ACTIVE as soon as it gets a message (as
    // queue-worker does): the publish's CREATED must still come first in the log.
    const reader = new Redis(queueRedis.server.url, { maxRetriesPerRequest: null });
    const consumer = new DeliveryConsumer(store.deliveries, reader, 'created-first', async (job) => void (await store.addEvent(job.data.project, messageEvent(job.data, 'ACTIVE', Date.now()))), CONSUMER);
    try {
      await consumer.run();
      await expectCreatedBeforeActive('t.order-shared', {});
    } finally {
      await consumer.close();
      reader.disconnect();
    }
  });

  it.each([
    ["a queue's message", laneQueueName({ project: 't.order', kind: 'q', name: 'orders' }), { queueName: 'orders' }],
    ["a flow-control key's message", laneQueueName({ project: 't.order', kind: 'fc', name: 'k' }), { flowControl: { key: 'k', parallelism: 5 } }],
  ])('logs CREATED before the ACTIVE of a worker that takes %s at once', async (_, queueName, overrides: Partial<QueueMessage>) => {
    // A BullMQ Worker already waiting on the message's queue, which logs ACTIVE as soon as it gets a job (as
    // queue-worker does): the publish's CREATED must still come first in the log.
    const connection = new Redis(queueRedis.server.url, { maxRetriesPerRequest: null });
    const worker = new Worker<QueueMessage>(queueName, async (job) => store.addEvent(job.data.project, messageEvent(job.data, 'ACTIVE', Date.now())), { connection, prefix: 'test:queue', concurrency: 50 });
    try {
      await worker.waitUntilReady();
      await expectCreatedBeforeActive('t.order', overrides);
    } finally {
      await worker.close();
      connection.disconnect();
    }
  });

  it("lists a project's pending messages for a bulk cancel from its own index, not by reading every project's", async () => {
    await Promise.all(Array.from({ length: 300 }, () => store.publish(message('t.big'))));
    const now = Date.now();
    const mine = [1, 2, 3].map((ago) => message('t.small', { createdAt: now - ago * 1000 }));
    for (const m of mine) await store.publish(m);
    const [newest, middle, oldest] = mine as [QueueMessage, QueueMessage, QueueMessage];
    await store.cancel('t.small', newest.messageId); // settled: it leaves the index
    const commands = async () => Number(/total_commands_processed:(\d+)/.exec(await queueRedis.redis.info('stats'))?.[1]);
    const before = await commands();
    expect((await store.pendingMessageIds('t.small', {}, 500)).sort()).toEqual([middle.messageId, oldest.messageId].sort());
    // Its two messages' jobs and states, the index and the lanes: not t.big's 300 jobs.
    expect((await commands()) - before).toBeLessThan(20);
    expect(await store.pendingMessageIds('t.small', { fromDate: now - 2500 }, 500)).toEqual([middle.messageId]);
    expect(await store.pendingMessageIds('t.small', { toDate: now - 2500 }, 500)).toEqual([oldest.messageId]);
    expect(await store.pendingMessageIds('t.small', {}, 1)).toHaveLength(1);
    // A delivered message leaves it with its final event; an entry whose job is gone is dropped when read.
    await store.addEvents('t.small', [messageEvent(middle, 'DELIVERED', Date.now())], true);
    expect(await queueRedis.redis.zrange('test:queue:pending:t.small', '0', '-1')).toEqual([oldest.messageId]);
    await store.deliveries.remove(oldest.messageId);
    expect(await store.pendingMessageIds('t.small', {}, 500)).toEqual([]);
    expect(await queueRedis.redis.zcard('test:queue:pending:t.small')).toBe(0);
  });

  it('indexes the pending messages published before the pending indexes, once', async () => {
    const older = [message('t.upgrade'), message('t.upgrade', { notBefore: Date.now() + 7_200_000 }), message('t.upgrade2')];
    // Published before the streams engine too: jobs of BullMQ's shared queue.
    for (const m of older) await store.queue.add(DELIVERY_JOB, m, { jobId: m.messageId, delay: m.notBefore - Date.now() });
    // As before the index: no entries, no marker.
    await queueRedis.redis.del('test:queue:pending:t.upgrade', 'test:queue:pending:t.upgrade2', 'test:queue:pending-indexed');
    expect(await store.pendingMessageIds('t.upgrade', {}, 500)).toEqual([]);
    expect(await store.indexPending()).toBeGreaterThanOrEqual(3); // the other tests' pending messages too
    expect((await store.pendingMessageIds('t.upgrade', {}, 500)).sort()).toEqual([older[0], older[1]].map((m) => m.messageId).sort());
    expect(await store.pendingMessageIds('t.upgrade2', {}, 500)).toEqual([older[2]?.messageId]);
    expect(await store.indexPending()).toBe(0); // once
  });

  it('cancels a pending message once, and logs it', async () => {
    const pending = message('t.c');
    await store.publish(pending);
    await expect(store.cancel('t.d', pending.messageId)).resolves.toBe(false);
    await expect(store.cancel('t.c', pending.messageId)).resolves.toBe(true);
    await expect(store.cancel('t.c', pending.messageId)).resolves.toBe(false);
    await expect(store.message('t.c', pending.messageId)).resolves.toBeNull();
    const events = await store.events('t.c', { count: 10, filter: {} });
    expect(events.items.map((e) => e.state)).toEqual(['CANCELLED', 'CREATED']);
  });

  it.each([
    ['the shared queue', {}],
    ['a queue (lane)', { queueName: 'dd-orders' }],
    ['a flow-control key (lane)', { flowControl: { key: 'dd-key', parallelism: 1 } }],
  ])('keeps the deduplication id of a message cancelled on %s for the rest of its 10 minutes', async (_, overrides: Partial<QueueMessage>) => {
    const project = `t.dedup-cancel-${Object.keys(overrides).join('') || 'shared'}`;
    const first = message(project, overrides);
    await expect(store.publish(first, 'id:dd-1')).resolves.toEqual({ messageId: first.messageId, deduplicated: false });
    await expect(store.cancel(project, first.messageId)).resolves.toBe(true);
    // As for a delivered or failed message: the same id answers the first message's id, and nothing is enqueued.
    const again = message(project, overrides);
    await expect(store.publish(again, 'id:dd-1')).resolves.toEqual({ messageId: first.messageId, deduplicated: true });
    await expect(store.message(project, again.messageId)).resolves.toBeNull();
    // The key keeps what was left of its expiry (not a new 10 minutes, not forever).
    const [key] = await queueRedis.redis.keys(`test:queue:*:de:${project}:id:dd-1`);
    const ttl = await queueRedis.redis.pttl(key as string);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(10 * 60 * 1000);
    // Another id of the project is not held by it.
    const other = message(project, overrides);
    await expect(store.publish(other, 'id:dd-2')).resolves.toEqual({ messageId: other.messageId, deduplicated: false });
  });

  it('tells a message that went to the DLQ (its job completed, returning "failed") from a delivered one', async () => {
    const reader = new Redis(queueRedis.server.url, { maxRetriesPerRequest: null });
    // As queue-worker's processor does: the message completes with how it ended.
    const consumer = new DeliveryConsumer(
      store.deliveries,
      reader,
      'outcomes',
      async (job) => (job.data.url.endsWith('/fail') ? 'failed' : job.data.url.endsWith('/cancel') ? 'cancelled' : 'delivered'),
      CONSUMER,
    );
    try {
      await consumer.run();
      const [failed, delivered, cancelled] = ['/fail', '/ok', '/cancel'].map((path) => message('t.status', { url: `http://127.0.0.1:9${path}`, notBefore: Date.now() }));
      for (const m of [failed, delivered, cancelled]) await store.publish(m as QueueMessage);
      const status = async (m: QueueMessage | undefined) => (await store.message('t.status', m?.messageId ?? ''))?.status;
      await eventually(async () => expect([await status(failed), await status(delivered), await status(cancelled)]).toEqual(['failed', 'delivered', 'cancelled']), 10_000);
    } finally {
      await consumer.close();
      reader.disconnect();
    }
  });

  it('reads, cancels and settles the messages published before the streams engine (BullMQ jobs of the shared queue)', async () => {
    const [waiting, delivered] = [message('t.legacy'), message('t.legacy', { notBefore: Date.now() })];
    for (const m of [waiting, delivered]) await store.queue.add(DELIVERY_JOB, m as QueueMessage, { jobId: m?.messageId, delay: Math.max(0, (m?.notBefore ?? 0) - Date.now()) });
    await expect(store.message('t.legacy', waiting?.messageId ?? '')).resolves.toMatchObject({ status: 'pending', retried: 0 });
    const connection = new Redis(queueRedis.server.url, { maxRetriesPerRequest: null });
    const worker = new Worker<QueueMessage>(DELIVERY_QUEUE, async () => 'delivered', { connection, prefix: 'test:queue' });
    try {
      await eventually(async () => expect((await store.message('t.legacy', delivered?.messageId ?? ''))?.status).toBe('delivered'), 10_000);
      await expect(store.unsettled([waiting?.messageId ?? '', delivered?.messageId ?? ''])).resolves.toEqual([waiting?.messageId]);
      await expect(store.cancel('t.legacy', waiting?.messageId ?? '')).resolves.toBe(true);
      await expect(store.message('t.legacy', waiting?.messageId ?? '')).resolves.toBeNull();
    } finally {
      await worker.close();
      connection.disconnect();
    }
  });

  it('pages events one at a time, the leading number of each cursor below the last, though they share a millisecond', async () => {
    const m = message('t.page');
    const now = Date.now();
    // one attempt's events, in one script call: one millisecond of the stream, as the worker writes them
    await store.addEvents('t.page', [messageEvent(m, 'ACTIVE', now), messageEvent(m, 'ERROR', now), messageEvent(m, 'RETRY', now)]);
    const ids = (await queueRedis.redis.xrange('test:queue:events:t.page', '-', '+')).map(([id]) => id.split('-')[0]);
    expect(new Set(ids).size).toBe(1);

    const states: string[] = [];
    const leading: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.events('t.page', { count: 1, filter: {}, ...(cursor ? { cursor } : {}) });
      states.push(...page.items.map((e) => e.state));
      cursor = page.cursor;
      // what upstream's SDK tests do with it (`parseCursor(cursor).timestamp`)
      if (cursor) leading.push(Number(cursor.split('-')[0]));
    } while (cursor);
    expect(states).toEqual(['RETRY', 'ERROR', 'ACTIVE']);
    expect(leading).toHaveLength(2);
    expect(leading[0]).toBeGreaterThan(leading[1] as number);
    // a stream id, the cursor of earlier versions, still continues before its entry
    const [newest] = await queueRedis.redis.xrevrange('test:queue:events:t.page', '+', '-', 'COUNT', 1);
    expect((await store.events('t.page', { count: 1, filter: {}, cursor: newest?.[0] })).items.map((e) => e.state)).toEqual(['ERROR']);
  });

  it('reads a cursor of 13 digits or fewer as a Unix time in ms: the events of that millisecond and older (the SDK documents Date.now())', async () => {
    const m = message('t.ms');
    const t = Date.now() - 10_000;
    await store.addEvents('t.ms', [messageEvent(m, 'CREATED', t)]);
    await store.addEvents('t.ms', [messageEvent(m, 'ACTIVE', t + 5), messageEvent(m, 'DELIVERED', t + 5)]);
    const page = (cursor: number) => store.events('t.ms', { count: 10, filter: {}, cursor: String(cursor) }).then((p) => p.items.map((e) => e.state));
    // the events are stored at the time they are written (now), not at their createdAt: page from now
    const written = Number((await queueRedis.redis.xrevrange('test:queue:events:t.ms', '+', '-', 'COUNT', 1))[0]?.[0].split('-')[0]);
    await expect(page(written)).resolves.toEqual(['DELIVERED', 'ACTIVE', 'CREATED']);
    await expect(page(Date.now() + 60_000)).resolves.toEqual(['DELIVERED', 'ACTIVE', 'CREATED']);
    await expect(page(t - 60_000)).resolves.toEqual([]);
  });

  it('pages the DLQ newest first and deletes entries', async () => {
    const entries = [1, 2, 3].map((i) => {
      const m = message('t.e', { createdAt: Date.now() + i });
      return { dlqId: dlqIdOf(m), message: m, failedAt: Date.now() + i, responseStatus: 500 + i };
    });
    for (const entry of entries) await store.putDlq(entry);
    await store.putDlq(entries[0]); // idempotent

    const first = await store.dlqList('t.e', { count: 2, filter: {} });
    expect(first.items.map((e) => e.dlqId)).toEqual([entries[2].dlqId, entries[1].dlqId]);
    const rest = await store.dlqList('t.e', { cursor: first.cursor, count: 2, filter: {} });
    expect(rest).toEqual({ items: [entries[0]] });
    await expect(store.dlqList('t.e', { count: 10, filter: { responseStatus: [502] } })).resolves.toEqual({ items: [entries[1]] });
    await expect(store.dlqEntry('t.f', entries[0].dlqId)).resolves.toBeNull();

    await expect(store.dlqDelete('t.e', [entries[0].dlqId, 'unknown'])).resolves.toBe(1);
    await expect(store.dlqEntry('t.e', entries[0].dlqId)).resolves.toBeNull();
  });

  it('pages the DLQ from the last entry scanned, so that deleting each page (the SDK cursor loop) skips nothing, also among entries of one millisecond', async () => {
    const failedAt = Date.now();
    // seven entries, five of them failed in the same millisecond
    const entries = [0, 0, 0, 0, 0, 1, 2].map((dt) => {
      const m = message('t.loop');
      return { dlqId: dlqIdOf(m), message: m, failedAt: failedAt + dt };
    });
    for (const entry of entries) await store.putDlq(entry);
    const seen: string[] = [];
    let cursor: string | undefined;
    let calls = 0;
    do {
      const page = await store.dlqList('t.loop', { count: 2, filter: {}, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((e) => e.dlqId));
      await store.dlqDelete('t.loop', page.items.map((e) => e.dlqId));
      cursor = page.cursor;
      calls++;
    } while (cursor && calls < 10);
    expect(seen.sort()).toEqual(entries.map((e) => e.dlqId).sort());
    expect(calls).toBe(4);
    await expect(store.dlqList('t.loop', { count: 10, filter: {} })).resolves.toEqual({ items: [] });

    // listing without deleting: every entry once, newest first; a new failure meanwhile repeats none
    for (const entry of entries) await store.putDlq(entry);
    const listed: string[] = [];
    cursor = undefined;
    do {
      const page = await store.dlqList('t.loop', { count: 3, filter: {}, ...(cursor ? { cursor } : {}) });
      listed.push(...page.items.map((e) => e.dlqId));
      if (listed.length === 3) await store.putDlq({ ...entries[0], dlqId: 'newer', failedAt: failedAt + 100 });
      cursor = page.cursor;
    } while (cursor);
    expect(listed).toHaveLength(7);
    expect(new Set(listed).size).toBe(7);
    expect(listed.slice(0, 2)).toEqual([entries[6].dlqId, entries[5].dlqId]);
    // a position, the cursor of earlier versions, continues after that many entries
    await expect(store.dlqList('t.loop', { count: 1, filter: {}, cursor: '1' }).then((p) => p.items.map((e) => e.dlqId))).resolves.toEqual([entries[6].dlqId]);
  });

  it('purges everything of one project and nothing of another', async () => {
    const doomed = [message('t.g'), message('t.g', { notBefore: Date.now() })];
    for (const m of doomed) await store.publish(m, `dedup-${m.messageId}`);
    const dlq = message('t.g');
    await store.putDlq({ dlqId: dlqIdOf(dlq), message: dlq, failedAt: Date.now() });
    const kept = message('t.h');
    await store.publish(kept, 'dedup-kept');

    await expect(store.purgeProject('t.g')).resolves.toBe(2);
    for (const m of doomed) await expect(store.message('t.g', m.messageId)).resolves.toBeNull();
    await expect(store.dlqList('t.g', { count: 10, filter: {} })).resolves.toEqual({ items: [] });
    await expect(store.events('t.g', { count: 10, filter: {} })).resolves.toEqual({ items: [] });
    expect(await queueRedis.redis.keys('*t.g*')).toEqual([]);
    // A deduplication id of the purged project no longer holds: publishing again creates a message.
    const again = message('t.g');
    await expect(store.publish(again, `dedup-${doomed[0].messageId}`)).resolves.toEqual({ messageId: again.messageId, deduplicated: false });

    await expect(store.message('t.h', kept.messageId)).resolves.toMatchObject({ status: 'pending' });
  });
});
