import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { RegistrySeal, queueProjectId } from '@restash/shared/data-access-registry';
import { eventually } from '@restash/shared/util-testing';
import { type AppProcess, QUEUE_REDIS_CONFIG, type RedisServer, startApp, startRedisServer } from '@restash/platform/util-stack';
import { QueueStore, laneQueueName } from '@restash/queue/data-access-store';
import { type QueueMessage, newMessageId } from '@restash/queue/util-message';
import { registerQueueProject } from './testing/registry';
import { startGatedSink } from './testing/gated-sink';

/**
 * A queue's message holds its queue until its callback is settled (DeliveryProcessor); a worker SIGKILLed during
 * that wait must not make the message be delivered again: the job taken over finds the callback named in its
 * progress and waits for it.
 */
describe('queue-worker killed while a queue message waits for its callback', () => {
  const project = queueProjectId('acme', 'main');
  const sealKey = RegistrySeal.generateKey();
  let control: RedisServer;
  let queueRedis: RedisServer;
  const workers: AppProcess[] = [];
  let sink: Awaited<ReturnType<typeof startGatedSink>>;
  let storeRedis: Redis;
  let store: QueueStore;
  // Short locks: the killed worker's jobs are taken over within about 3 s.
  const startWorker = async () => {
    const env = { CONTROL_REDIS_URL: control.url, REGISTRY_SEAL_KEY: sealKey, QUEUE_REDIS_URL: queueRedis.url, DESTINATION_ALLOWLIST: '127.0.0.1/32', LOCK_DURATION_MS: '2000', STALLED_INTERVAL_MS: '1000', LOG_LEVEL: 'fatal' };
    const worker = await startApp('queue-worker', { from: 'source', env });
    workers.push(worker);
    return worker;
  };

  beforeAll(async () => {
    [control, queueRedis, sink] = await Promise.all([startRedisServer({ config: ['appendonly yes'] }), startRedisServer({ config: [...QUEUE_REDIS_CONFIG] }), startGatedSink()]);
    await registerQueueProject(control.url, sealKey);
    storeRedis = new Redis(queueRedis.url, { maxRetriesPerRequest: null });
    store = new QueueStore(storeRedis, { prefix: 'restash:queue', messageRetentionMs: 3_600_000, dlqRetentionMs: 3_600_000, eventsPerProject: 1000 });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await store?.close();
    storeRedis?.disconnect();
    await Promise.all([control?.stop(), queueRedis?.stop(), sink?.close()]);
  });

  const message = (path: string, callback?: string): QueueMessage => {
    const now = Date.now();
    return {
      messageId: newMessageId(),
      project,
      url: `${sink.url}${path}`,
      method: 'POST',
      header: {},
      body: Buffer.from(path).toString('base64'),
      maxRetries: 3,
      notBefore: now,
      createdAt: now,
      callerIp: '127.0.0.1',
      queueName: 'with-callback',
      ...(callback ? { callback: `${sink.url}${callback}` } : {}),
    };
  };

  it('waits for the callback again on the worker that takes the job over, without delivering the message twice', async () => {
    const killed = await startWorker();
    sink.hold('/callback');
    const first = message('/first', '/callback');
    await store.publish(first);
    await store.publish(message('/second'));
    // The first message was delivered; its callback is at the destination, unanswered: the queue is held.
    await eventually(() => expect(sink.on('/callback')).toHaveLength(1), 15_000);
    const lane = store.lanes.queue(laneQueueName({ project, kind: 'q', name: 'with-callback' }));
    await eventually(async () => expect((await lane.getJob(first.messageId))?.progress).toMatchObject({ callbacks: [expect.any(String)] }), 5_000);
    await killed.kill();
    await startWorker();
    // The callback is delivered again once its lock lapsed (the destination holds that answer too); the first
    // message's job, taken over as well, waits for it and is not delivered again.
    await eventually(() => expect(sink.on('/callback')).toHaveLength(2), 15_000);
    await sleep(1_000);
    expect([sink.on('/first').length, sink.on('/second').length]).toEqual([1, 0]);
    sink.release('/callback');
    await eventually(() => expect(sink.on('/second')).toHaveLength(1), 15_000);
    expect(sink.on('/first')).toHaveLength(1);
    await eventually(async () => expect(await lane.getJobState(first.messageId)).toBe('completed'), 5_000);
  }, 90_000);
});
