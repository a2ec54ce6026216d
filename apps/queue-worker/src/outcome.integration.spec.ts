import { DELIVERY_JOB, laneQueueName } from '@restash/queue/data-access-store';
import { eventually } from '@restash/shared/util-testing';
import { startGatedSink } from './testing/gated-sink';
import { type WorkerTestbed, startWorkerTestbed } from './testing/testbed';

/**
 * A message's job completes whether the message was delivered or went to the DLQ (DeliveryProcessor): its return
 * value says which, so that `QueueStore.message` (and a schedule's `lastScheduleStates`) reports a message in the
 * DLQ as failed, not delivered.
 */
describe('queue-worker completing a message job with how the message ended', () => {
  let bed: WorkerTestbed;
  let sink: Awaited<ReturnType<typeof startGatedSink>>;

  beforeAll(async () => {
    [bed, sink] = await Promise.all([startWorkerTestbed(), startGatedSink()]);
    await bed.startWorker();
  }, 120_000);

  afterAll(async () => {
    await bed?.stop();
    await sink?.close();
  });

  it('returns "delivered" for a delivered message and "failed" for one that went to the DLQ, on the shared queue and in a lane', async () => {
    // Nothing listens on port 1: the attempt fails with a connection error, and with no retries the message goes to the DLQ.
    const delivered = bed.message(`${sink.url}/ok`, { maxRetries: 0 });
    const failed = bed.message('http://127.0.0.1:1/closed', { maxRetries: 0 });
    const failedInQueue = bed.message('http://127.0.0.1:1/closed', { maxRetries: 0, queueName: 'outcomes' });
    for (const m of [delivered, failed, failedInQueue]) await bed.store.publish(m);
    const lane = bed.store.lanes.queue(laneQueueName({ project: bed.project, kind: 'q', name: 'outcomes' }));
    const outcome = async (queue: typeof lane, id: string) => {
      const job = await queue.getJob(id);
      return [await job?.getState(), job?.returnvalue];
    };
    const shared = async (id: string) => {
      const found = await bed.store.deliveries.get(id);
      return [found?.state, found?.result];
    };
    await eventually(async () => {
      expect(await shared(delivered.messageId)).toEqual(['completed', 'delivered']);
      expect(await shared(failed.messageId)).toEqual(['completed', 'failed']);
      expect(await outcome(lane, failedInQueue.messageId)).toEqual(['completed', 'failed']);
    }, 15_000);
    const statuses = await Promise.all([delivered, failed, failedInQueue].map(async (m) => (await bed.store.message(bed.project, m.messageId))?.status));
    expect(statuses).toEqual(['delivered', 'failed', 'failed']);
  }, 30_000);

  it('delivers a message published before the streams engine (a BullMQ job of the shared queue), once', async () => {
    const legacy = bed.message(`${sink.url}/legacy`, { maxRetries: 0 });
    await bed.store.queue.add(DELIVERY_JOB, legacy, { jobId: legacy.messageId });
    await eventually(async () => expect((await bed.store.message(bed.project, legacy.messageId))?.status).toBe('delivered'), 15_000);
    expect(sink.on('/legacy')).toHaveLength(1);
  }, 30_000);

  it("keeps a queue message's outcome while it waits for its callback, and returns it once the callback is settled", async () => {
    sink.hold('/callback');
    const message = bed.message(`${sink.url}/with-callback`, { maxRetries: 0, queueName: 'outcome-callback', callback: `${sink.url}/callback` });
    await bed.store.publish(message);
    const lane = bed.store.lanes.queue(laneQueueName({ project: bed.project, kind: 'q', name: 'outcome-callback' }));
    await eventually(async () => expect((await lane.getJob(message.messageId))?.progress).toEqual({ callbacks: [expect.any(String)], outcome: 'delivered' }), 15_000);
    sink.release('/callback');
    await eventually(async () => {
      const job = await lane.getJob(message.messageId);
      expect([await job?.getState(), job?.returnvalue]).toEqual(['completed', 'delivered']);
    }, 15_000);
  }, 30_000);
});
