import type { AppProcess } from '@restash/platform/util-stack';
import { laneQueueName } from '@restash/queue/data-access-store';
import { eventually } from '@restash/shared/util-testing';
import { type WorkerTestbed, startWorkerTestbed } from './testing/testbed';

/**
 * A queue's message that waits for its retry holds its place with its job active (DeliveryProcessor); a
 * SIGTERM of its worker must not wait for the retry: the job moves to BullMQ's delayed set, due when the
 * retry is, with the retries made in place kept as its progress.
 */
describe('queue-worker stopping while a queue message waits for its retry', () => {
  let bed: WorkerTestbed;
  let worker: AppProcess;

  beforeAll(async () => {
    bed = await startWorkerTestbed();
    worker = await bed.startWorker();
  }, 120_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it('moves the waiting retry to the delayed set at SIGTERM, and exits without waiting for it', async () => {
    // Nothing listens on port 1: every attempt fails with a connection error.
    const message = bed.message('http://127.0.0.1:1/closed', { retryDelayExpression: '600000', queueName: 'held' });
    await bed.store.publish(message);
    const lane = bed.store.lanes.queue(laneQueueName({ project: bed.project, kind: 'q', name: 'held' }));
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
