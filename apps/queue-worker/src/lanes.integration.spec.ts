import type { AppProcess } from '@restash/platform/util-stack';
import { type GaugeSink, eventually, startGaugeSink } from '@restash/shared/util-testing';
import { laneQueueName } from '@restash/queue/data-access-store';
import { type WorkerTestbed, startWorkerTestbed } from './testing/testbed';

/**
 * A flow-controlled key (parallelism 2) delivered by two queue-worker processes, one of which is killed
 * (SIGKILL) mid-way: no message is lost, and the destination never holds more than 2 requests of the key
 * at once, also while the dead worker's jobs wait for their locks to lapse (BullMQ keeps them in the lane's
 * active list, which its global concurrency counts).
 */
describe('queue-worker lanes when a worker is killed', () => {
  let bed: WorkerTestbed;
  let workers: AppProcess[];
  let sink: GaugeSink;

  beforeAll(async () => {
    [bed, sink] = await Promise.all([startWorkerTestbed(), startGaugeSink(40)]);
    const env = { LOCK_DURATION_MS: '2000', STALLED_INTERVAL_MS: '1000' };
    workers = await Promise.all([bed.startWorker(env), bed.startWorker(env)]);
  }, 120_000);

  afterAll(async () => {
    await bed?.stop();
    await sink?.close();
  });

  it('loses no message and never exceeds the parallelism when one of two workers is SIGKILLed', async () => {
    const total = 300;
    const gauge = sink.on('/fc');
    for (let i = 0; i < total; i++) {
      const message = bed.message(`${sink.url}/fc`, { body: Buffer.from(String(i)).toString('base64'), flowControl: { key: 'sigkill', parallelism: 2 } });
      await bed.store.publish(message);
    }
    await eventually(() => expect(gauge.bodies.length).toBeGreaterThanOrEqual(60), 30_000);
    // The worker killed is the one that has delivered more of the key's messages (which of the two takes the
    // lane's slots is BullMQ's race), so that it dies holding some.
    const deliveredBy = async (worker: AppProcess) => {
      const text = await (await fetch(`${worker.managementUrl}/metrics`)).text();
      return Number(/^restash_queue_delivery_duration_seconds_count\{tenant="acme",outcome="delivered"\} (\d+)/m.exec(text)?.[1] ?? 0);
    };
    const counts = await Promise.all(workers.map(deliveredBy));
    const victim = (counts[0] ?? 0) >= (counts[1] ?? 0) ? 0 : 1;
    const killedDelivered = counts[victim] ?? 0;
    expect(killedDelivered).toBeGreaterThan(0);
    const beforeKill = gauge.bodies.length;
    await (workers[victim] as AppProcess).kill();
    await eventually(() => expect(new Set(gauge.bodies).size).toBe(total), 90_000, 100);
    const lane = bed.store.lanes.queue(laneQueueName({ project: bed.project, kind: 'fc', name: 'sigkill' }));
    await eventually(async () => expect(await lane.getJobCounts('completed', 'active', 'wait', 'delayed', 'failed')).toEqual({ completed: total, active: 0, wait: 0, delayed: 0, failed: 0 }), 15_000);
    const unique = new Set(gauge.bodies).size;
    const redelivered = gauge.bodies.length - unique;
    process.stdout.write(
      `SIGKILL after ${beforeKill} deliveries (${killedDelivered} by the killed worker): ${unique}/${total} delivered (0 lost), ${redelivered} delivered twice (the dead worker's in-flight ones), ` +
        `max ${gauge.maxInFlight} in flight at the destination (parallelism 2)\n`,
    );
    expect(unique).toBe(total);
    expect(redelivered).toBeLessThanOrEqual(2);
    expect(gauge.maxInFlight).toBe(2);
  }, 150_000);
});
