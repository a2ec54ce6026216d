import { Redis } from 'ioredis';
import { RegistrySeal, queueProjectId } from '@restash/shared/data-access-registry';
import { eventually } from '@restash/shared/util-testing';
import { type AppProcess, QUEUE_REDIS_CONFIG, type RedisServer, startApp, startRedisServer } from '@restash/platform/util-stack';
import { QueueStore, laneQueueName } from '@restash/queue/data-access-store';
import { type QueueMessage, newMessageId } from '@restash/queue/util-message';
import { registerQueueProject } from './testing/registry';

/**
 * A queue's message that waits for its retry holds its place with its job active (DeliveryProcessor); a
 * SIGTERM of its worker must not wait for the retry: the job moves to BullMQ's delayed set, due when the
 * retry is, with the retries made in place kept as its progress.
 */
describe('queue-worker stopping while a queue message waits for its retry', () => {
  const project = queueProjectId('acme', 'main');
  const sealKey = RegistrySeal.generateKey();
  let control: RedisServer;
  let queueRedis: RedisServer;
  let worker: AppProcess;
  let storeRedis: Redis;
  let store: QueueStore;

  beforeAll(async () => {
    [control, queueRedis] = await Promise.all([startRedisServer({ config: ['appendonly yes'] }), startRedisServer({ config: [...QUEUE_REDIS_CONFIG] })]);
    await registerQueueProject(control.url, sealKey);
    storeRedis = new Redis(queueRedis.url, { maxRetriesPerRequest: null });
    store = new QueueStore(storeRedis, { prefix: 'restash:queue', messageRetentionMs: 3_600_000, dlqRetentionMs: 3_600_000, eventsPerProject: 1000 });
    worker = await startApp('queue-worker', {
      from: 'source',
      env: { CONTROL_REDIS_URL: control.url, REGISTRY_SEAL_KEY: sealKey, QUEUE_REDIS_URL: queueRedis.url, DESTINATION_ALLOWLIST: '127.0.0.1/32', LOG_LEVEL: 'fatal' },
    });
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await store?.close();
    storeRedis?.disconnect();
    await Promise.all([control?.stop(), queueRedis?.stop()]);
  });

  it('moves the waiting retry to the delayed set at SIGTERM, and exits without waiting for it', async () => {
    const now = Date.now();
    const message: QueueMessage = {
      messageId: newMessageId(),
      project,
      url: 'http://127.0.0.1:1/closed', // nothing listens: every attempt fails with a connection error
      method: 'POST',
      header: {},
      body: Buffer.from('x').toString('base64'),
      maxRetries: 3,
      retryDelayExpression: '600000',
      notBefore: now,
      createdAt: now,
      callerIp: '127.0.0.1',
      queueName: 'held',
    };
    await store.publish(message);
    const lane = store.lanes.queue(laneQueueName({ project, kind: 'q', name: 'held' }));
    // The first attempt failed; the message waits in place (its job active, one retry made in place).
    await eventually(async () => {
      const job = await lane.getJob(message.messageId);
      expect([await job?.getState(), job?.progress]).toEqual(['active', 1]);
    }, 30_000);
    const exit = worker.exited();
    const stopping = Date.now();
    await worker.stop();
    expect(await exit).not.toBe('SIGKILL'); // it closed on its own, not at the launcher's kill after its grace time
    const job = await lane.getJob(message.messageId);
    expect([await job?.getState(), job?.progress]).toEqual(['delayed', 1]);
    // Due when the retry is: 10 minutes after the failed attempt, not after the stop.
    expect((job?.timestamp ?? 0) + (job?.delay ?? 0)).toBeGreaterThan(stopping + 590_000);
  }, 90_000);
});
