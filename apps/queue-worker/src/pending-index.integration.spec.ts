import { DELIVERY_JOB } from '@restash/queue/data-access-store';
import { eventually } from '@restash/shared/util-testing';
import { type WorkerTestbed, startWorkerTestbed } from './testing/testbed';

/**
 * A bulk cancel finds a project's pending messages through its pending index (QueueStore.pendingMessageIds);
 * messages published before the indexes existed are indexed by the first queue-worker that starts taking messages.
 */
describe('queue-worker indexing the pending messages of an older queue Redis', () => {
  let bed: WorkerTestbed;

  beforeAll(async () => {
    bed = await startWorkerTestbed();
  }, 120_000);

  afterAll(async () => {
    await bed?.stop();
  });

  it('indexes them once it takes messages', async () => {
    const later = bed.message('http://127.0.0.1:1/later', { notBefore: Date.now() + 3_600_000 });
    // As published before the index (and before the streams engine): a BullMQ job of the shared queue, unindexed.
    await bed.store.queue.add(DELIVERY_JOB, later, { jobId: later.messageId, delay: later.notBefore - Date.now() });
    expect(await bed.store.pendingMessageIds(bed.project, {}, 10)).toEqual([]);
    await bed.startWorker();
    await eventually(async () => expect(await bed.store.pendingMessageIds(bed.project, {}, 10)).toEqual([later.messageId]), 15_000);
    expect(await bed.redis.exists('restash:queue:pending-indexed')).toBe(1);
  }, 60_000);
});
