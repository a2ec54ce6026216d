import { setTimeout as sleep } from 'node:timers/promises';
import { laneQueueName } from '@restash/queue/data-access-store';
import { eventually } from '@restash/shared/util-testing';
import { startGatedSink } from './testing/gated-sink';
import { type WorkerTestbed, startWorkerTestbed } from './testing/testbed';

/**
 * A queue's message holds its queue until its callback is settled (DeliveryProcessor); a worker SIGKILLed during
 * that wait must not make the message be delivered again: the job taken over finds the callback named in its
 * progress and waits for it.
 */
describe('queue-worker killed while a queue message waits for its callback', () => {
  let bed: WorkerTestbed;
  let sink: Awaited<ReturnType<typeof startGatedSink>>;
  // Short locks: the killed worker's jobs are taken over within about 3 s.
  const startWorker = () => bed.startWorker({ LOCK_DURATION_MS: '2000', STALLED_INTERVAL_MS: '1000' });

  beforeAll(async () => {
    [bed, sink] = await Promise.all([startWorkerTestbed(), startGatedSink()]);
  }, 120_000);

  afterAll(async () => {
    await bed?.stop();
    await sink?.close();
  });

  it('waits for the callback again on the worker that takes the job over, without delivering the message twice', async () => {
    const killed = await startWorker();
    sink.hold('/callback');
    const first = bed.message(`${sink.url}/first`, { queueName: 'with-callback', callback: `${sink.url}/callback` });
    await bed.store.publish(first);
    await bed.store.publish(bed.message(`${sink.url}/second`, { queueName: 'with-callback' }));
    // The first message was delivered; its callback is at the destination, unanswered: the queue is held.
    await eventually(() => expect(sink.on('/callback')).toHaveLength(1), 15_000);
    const lane = bed.store.lanes.queue(laneQueueName({ project: bed.project, kind: 'q', name: 'with-callback' }));
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
