import { Redis } from 'ioredis';
import { type QueueMessage, newMessageId } from '@restash/queue/util-message';
import { laneQueueName } from './lanes';
import { QueueStore } from './queue-store';
import { TEST_STORE_OPTIONS, useQueueRedis } from './testing/queue-redis';

/** A message of flow-control key `key` of project `p`, due `delayMs` from now. */
function message(key: string, delayMs = 0): QueueMessage {
  const now = Date.now();
  return {
    messageId: newMessageId(),
    project: 'p',
    url: 'http://127.0.0.1:9/hook',
    method: 'POST',
    header: {},
    body: '',
    maxRetries: 0,
    notBefore: now + delayMs,
    createdAt: now,
    callerIp: '127.0.0.1',
    flowControl: { key, parallelism: 1 },
  };
}

/**
 * The busy-lane bookkeeping of LaneStore on a real Redis, with no worker running: which lanes a publish marks
 * busy, which the idle check (`retireIdle`, one script per lane) removes, the wake-ups it sets from BullMQ's
 * delayed scores, and `wakeDue` moving them back (docs/queue.md, "Queue: queues and flow control").
 */
describe('LaneStore busy lanes and wake-ups', () => {
  let subscriber: Redis;
  let store: QueueStore;
  const told: string[] = [];
  const queueRedis = useQueueRedis(async () => {
    await store?.close();
    subscriber?.disconnect();
  });

  beforeAll(async () => {
    subscriber = new Redis(queueRedis.server.url);
    store = new QueueStore(queueRedis.redis, TEST_STORE_OPTIONS);
    subscriber.on('message', (_channel: string, lane: string) => told.push(lane));
    await subscriber.subscribe(store.lanes.changesChannel);
  });

  const lane = (key: string) => laneQueueName({ project: 'p', kind: 'fc', name: key });
  const busy = async () => (await queueRedis.redis.smembers(store.lanes.lanesKey)).sort();
  const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

  it('marks a lane busy at its first ready message only, and keeps it while a message waits', async () => {
    told.length = 0;
    await store.publish(message('ready'));
    await store.publish(message('ready'));
    await settle();
    expect(await busy()).toEqual([lane('ready')]);
    expect(told).toEqual([lane('ready')]); // told once: the second publish found it busy
    expect(await store.lanes.retireIdle([lane('ready')])).toEqual([]);
    expect(await busy()).toEqual([lane('ready')]);
  });

  it('retires a lane without work, and wakes one with a delayed message at that message’s time', async () => {
    const ready = store.lanes.queue(lane('ready'));
    await ready.drain(); // its waiting jobs gone: no work left
    await store.publish(message('later')); // busy, then its job is removed: only a delayed one stays
    const delayed = message('later', 60_000);
    await store.publish(delayed);
    await store.lanes.queue(lane('later')).remove((await store.lanes.queue(lane('later')).getWaiting())[0]?.id as string);
    told.length = 0;
    expect((await store.lanes.retireIdle([lane('ready'), lane('later')])).sort()).toEqual([lane('later'), lane('ready')]);
    await settle();
    expect(await busy()).toEqual([]);
    expect(told.sort()).toEqual([lane('later'), lane('ready')]);
    const wake = Number(await queueRedis.redis.zscore(store.lanes.wakeKey, lane('later')));
    expect(Math.abs(wake - delayed.notBefore)).toBeLessThan(50);
    expect(await queueRedis.redis.zscore(store.lanes.wakeKey, lane('ready'))).toBeNull();

    expect(await store.lanes.wakeDue(wake - 1)).toBe(wake); // not due yet: the next wake-up's time
    expect(await busy()).toEqual([]);
    expect(await store.lanes.wakeDue(wake)).toBeNull(); // due: moved into the busy set, none left
    expect(await busy()).toEqual([lane('later')]);
  });

  it('sets only a wake-up for a delayed message to an idle lane, brought forward by an earlier one', async () => {
    const first = message('sleepy', 30_000);
    await store.publish(first);
    expect(await busy()).not.toContain(lane('sleepy'));
    expect(Number(await queueRedis.redis.zscore(store.lanes.wakeKey, lane('sleepy')))).toBe(first.notBefore);
    const earlier = message('sleepy', 10_000);
    await store.publish(earlier);
    await store.publish(message('sleepy', 20_000));
    expect(Number(await queueRedis.redis.zscore(store.lanes.wakeKey, lane('sleepy')))).toBe(earlier.notBefore);
  });

  it('retires a paused lane with waiting messages without a wake-up, and marks it busy on resume', async () => {
    await store.publish(message('held'));
    await store.publish(message('held', 5_000));
    await store.lanes.setFlowControlPaused('p', 'held', true);
    expect(await store.lanes.retireIdle([lane('held')])).toEqual([lane('held')]);
    expect(await queueRedis.redis.zscore(store.lanes.wakeKey, lane('held'))).toBeNull();
    expect(await busy()).not.toContain(lane('held'));
    await store.lanes.setFlowControlPaused('p', 'held', false);
    expect(await busy()).toContain(lane('held'));
    expect(await store.lanes.retireIdle([lane('held')])).toEqual([]); // its waiting message needs a Worker again
  });

  it('keeps a lane with a message being delivered, paused or not', async () => {
    await store.publish(message('working'));
    const queue = store.lanes.queue(lane('working'));
    const job = (await queue.getWaiting())[0];
    await queueRedis.redis.lmove(`test:queue:${lane('working')}:wait`, `test:queue:${lane('working')}:active`, 'LEFT', 'LEFT'); // as BullMQ's moveToActive
    expect(job).toBeDefined();
    await store.lanes.setFlowControlPaused('p', 'working', true);
    expect(await store.lanes.retireIdle([lane('working')])).toEqual([]);
    expect(await busy()).toContain(lane('working'));
  });

  it('forgets the lanes of a purged project', async () => {
    await store.lanes.purgeProject('p', Date.now()).catch(() => undefined); // 'working' holds an active job: purge stops there
    await queueRedis.redis.del(`test:queue:${lane('working')}:active`);
    await store.lanes.purgeProject('p', Date.now());
    expect(await busy()).toEqual([]);
    expect(await queueRedis.redis.zcard(store.lanes.wakeKey)).toBe(0);
  });
});
