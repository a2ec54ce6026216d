import { Client } from '@upstash/qstash';
import type { Redis } from 'ioredis';
import { queueProjectId } from '@restash/shared/data-access-registry';
import { eventually, startGaugeSink } from '@restash/shared/util-testing';
import { QueueStore, laneQueueName } from '@restash/queue/data-access-store';
import { queueTestbed } from './testing/queue-testbed';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Lane Workers only for lanes with work (docs/queue.md, "Queue: queues and flow control"): a queue-worker replica
 * closes a lane's Worker (its blocking Redis connection) once the lane has had no work for a tick (5 s), a
 * publish to the lane starts it again at once, a delayed message to an idle lane wakes it when due (no Worker
 * meanwhile), and a paused lane with waiting messages needs none until resumed. Workers are counted with
 * BullMQ's `getWorkersCount` (CLIENT LIST names of the Workers' blocking connections).
 */
describe('lane Workers for busy lanes only', () => {
  const project = queueProjectId('acme', 'main');
  const bed = queueTestbed({ acme: [{ name: 'main' }] }, { destination: () => startGaugeSink(10), timeoutMs: 180_000 });
  let client: Client;
  let redis: Redis;
  let store: QueueStore;

  beforeAll(() => {
    client = bed.client();
    redis = bed.redis(bed.stack.queueRedis.url, { maxRetriesPerRequest: null });
    store = bed.closes(new QueueStore(redis, { prefix: 'restash:queue', messageRetentionMs: 3_600_000, dlqRetentionMs: 3_600_000, eventsPerProject: 1000 }));
  });

  const fcLane = (key: string) => laneQueueName({ project, kind: 'fc', name: key });
  const workersOf = (lane: string) => store.lanes.queue(lane).getWorkersCount();
  const busy = async (lane: string) => (await redis.sismember(store.lanes.lanesKey, lane)) === 1;
  /** Waits until no replica runs a Worker of the lane and it is out of the busy set (one to two ticks after its last work). */
  const idled = (lane: string) =>
    eventually(async () => {
      expect(await busy(lane)).toBe(false);
      expect(await workersOf(lane)).toBe(0);
    }, 20_000, 200);

  it('closes an idle lane Worker after a tick and starts it again at the next publish', async () => {
    const lane = fcLane('idle-key');
    const flowControl = { key: 'idle-key', parallelism: 1 };
    const clientsBefore = Number(/connected_clients:(\d+)/.exec(await redis.info('clients'))?.[1]);
    await client.publish({ url: `${bed.sink.url}/idle`, body: 'first', flowControl });
    await eventually(() => expect(bed.sink.on('/idle').bodies).toEqual(['first']), 10_000);
    expect(await workersOf(lane)).toBe(1);
    const deliveredAt = Date.now();
    await idled(lane);
    const clientsAfter = Number(/connected_clients:(\d+)/.exec(await redis.info('clients'))?.[1]);
    process.stdout.write(`idle lane Worker closed ${Date.now() - deliveredAt} ms after its delivery; Redis clients ${clientsBefore} before the publish, ${clientsAfter} after\n`);
    expect(clientsAfter).toBeLessThanOrEqual(clientsBefore);

    // A publish to the idle lane marks it busy and tells the workers (pub/sub): delivered without waiting for a tick.
    const sentAt = Date.now();
    await client.publish({ url: `${bed.sink.url}/idle`, body: 'second', flowControl });
    await eventually(() => expect(bed.sink.on('/idle').bodies).toEqual(['first', 'second']), 10_000, 20);
    const latency = (bed.sink.on('/idle').starts[1] as number) - sentAt;
    process.stdout.write(`publish to an idle lane delivered after ${latency} ms\n`);
    expect(latency).toBeLessThan(4_500); // under a tick (5 s): started by the publish, not by the resync
    // The listing does not depend on the busy set.
    await idled(lane);
    expect((await client.flowControl.get('idle-key')).flowControlKey).toBe('idle-key');
    const listed = await fetch(`${bed.stack.url}/v2/flowControl`, { headers: { authorization: `Bearer ${bed.stack.secrets('acme', 'main').token}` } });
    expect(((await listed.json()) as Array<{ flowControlKey: string }>).map((k) => k.flowControlKey)).toContain('idle-key');
  }, 60_000);

  it('wakes an idle lane for its delayed message when due, with no Worker meanwhile', async () => {
    const lane = fcLane('sleepy');
    const flowControl = { key: 'sleepy', parallelism: 1 };
    await client.publish({ url: `${bed.sink.url}/sleepy`, body: 'warm', flowControl });
    await eventually(() => expect(bed.sink.on('/sleepy').bodies).toEqual(['warm']), 10_000);
    await idled(lane);

    const sentAt = Date.now();
    await client.publish({ url: `${bed.sink.url}/sleepy`, body: 'later', flowControl, delay: 3 });
    expect(Number(await redis.zscore(store.lanes.wakeKey, lane))).toBeGreaterThanOrEqual(sentAt + 3_000);
    const workerSeen: number[] = [];
    while (bed.sink.on('/sleepy').bodies.length < 2 && Date.now() - sentAt < 10_000) {
      if ((await workersOf(lane)) > 0 || (await busy(lane))) workerSeen.push(Date.now() - sentAt);
      await sleep(100);
    }
    expect(bed.sink.on('/sleepy').bodies).toEqual(['warm', 'later']);
    const late = (bed.sink.on('/sleepy').starts[1] as number) - sentAt - 3_000;
    process.stdout.write(`delayed 3 s message on an idle lane delivered ${late} ms after due; lane busy first seen ${workerSeen[0] ?? '-'} ms after the publish\n`);
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(4_500); // woken by the replica's wake-up timer, not by the next 5 s tick
    // No Worker and not busy until (about) the message's time.
    expect(workerSeen.every((t) => t >= 2_900)).toBe(true);
    await idled(lane);
    expect(await redis.zscore(store.lanes.wakeKey, lane)).toBeNull();
  }, 60_000);

  it('needs no Worker for a paused queue with waiting messages, and delivers them once resumed', async () => {
    const lane = laneQueueName({ project, kind: 'q', name: 'held' });
    const queue = client.queue({ queueName: 'held' });
    await queue.upsert({ parallelism: 1 });
    await queue.pause();
    await queue.enqueue({ url: `${bed.sink.url}/held`, body: 'a' });
    await queue.enqueue({ url: `${bed.sink.url}/held`, body: 'b' });
    await idled(lane);
    expect(await queue.get()).toMatchObject({ paused: true, lag: 2 });
    expect(bed.sink.on('/held').bodies).toEqual([]);

    const resumedAt = Date.now();
    await queue.resume();
    await eventually(() => expect(bed.sink.on('/held').bodies).toEqual(['a', 'b']), 10_000, 20);
    process.stdout.write(`paused queue resumed: its 2 messages delivered ${(bed.sink.on('/held').starts[1] as number) - resumedAt} ms later\n`);
    await idled(lane);

    // Flow-control pause and resume the same way.
    const fc = fcLane('held-key');
    await client.publish({ url: `${bed.sink.url}/held-key`, body: 'x', flowControl: { key: 'held-key', parallelism: 1 } });
    await eventually(() => expect(bed.sink.on('/held-key').bodies).toEqual(['x']), 10_000);
    await client.flowControl.pause('held-key');
    await client.publish({ url: `${bed.sink.url}/held-key`, body: 'y', flowControl: { key: 'held-key', parallelism: 1 } });
    await idled(fc);
    expect(bed.sink.on('/held-key').bodies).toEqual(['x']);
    await client.flowControl.resume('held-key');
    await eventually(() => expect(bed.sink.on('/held-key').bodies).toEqual(['x', 'y']), 10_000, 20);
  }, 90_000);

  it('keeps a rate-limited lane Worker while messages wait for the next period', async () => {
    const lane = fcLane('slow');
    const flowControl = { key: 'slow', rate: 1, period: 8 };
    await Promise.all(['1', '2'].map((body) => client.publish({ url: `${bed.sink.url}/slow`, body, flowControl })));
    await eventually(() => expect(bed.sink.on('/slow').bodies).toHaveLength(1), 10_000);
    // The second waits up to 8 s for the next period: two ticks and more, with its lane busy and its Worker open.
    await sleep(6_000);
    expect(await busy(lane)).toBe(true);
    expect(await workersOf(lane)).toBe(1);
    await eventually(() => expect(bed.sink.on('/slow').bodies).toHaveLength(2), 15_000);
  }, 60_000);
});
