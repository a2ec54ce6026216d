import { Client } from '@upstash/qstash';
import type { Redis } from 'ioredis';
import type { AppProcess } from '@restash/platform/util-stack';
import { SCHEDULE_QUEUE, ScheduleStore, schedulerId } from '@restash/queue/data-access-store';
import { eventually } from '@restash/shared/util-testing';
import { queueTestbed } from './testing/queue-testbed';

const PREFIX = 'restash:queue';
/** Tick period of the measured schedule (the store's test hook), ms. */
const EVERY_MS = 1000;
/** SIGKILLs of a worker, each this many ms after a tick's time (the tick being taken or published). */
const KILL_OFFSETS_MS = [1, 3, 6, 10, 20];

/**
 * Reliability of schedule ticks (docs/queue.md, "Queue: schedules"): two queue-worker processes, a schedule ticking
 * every second, and one worker SIGKILLed right at a tick, again and again (restarted after each kill). Every
 * tick must publish exactly one message: the tick jobs BullMQ ran form an unbroken run of tick times, and the
 * sink receives exactly one distinct message per tick. Redelivery of a message whose delivery was cut by a
 * kill is at-least-once delivery, counted separately. The counts are printed.
 */
describe('schedule ticks across worker SIGKILLs', () => {
  const bed = queueTestbed({ acme: [{ name: 'main' }] });
  let redis: Redis;
  let store: ScheduleStore;
  let second: AppProcess;

  beforeAll(async () => {
    second = await bed.stack.startWorker();
    redis = bed.redis(bed.stack.queueRedis.url);
    store = bed.closes(new ScheduleStore(redis, { prefix: PREFIX }));
    store.queue.on('error', () => undefined); // the stack's Redis stops before this connection closes
  }, 60_000);

  it('loses and doubles no tick while workers are killed at ticks', async () => {
    const client = new Client({ baseUrl: bed.stack.url, token: bed.stack.secrets('acme', 'main').token });
    const { scheduleId } = await client.schedules.create({ destination: `${bed.sink.url}/tick`, cron: '0 0 1 1 *', body: 'tick' });
    const definition = await store.get('acme.main', scheduleId);
    if (!definition) throw new Error('schedule not stored');
    await store.upsert('acme.main', { ...definition, everyMs: EVERY_MS });

    const workers = [bed.stack.worker, second];
    for (const [i, offset] of KILL_OFFSETS_MS.entries()) {
      const victim = workers[i % 2] as AppProcess;
      const now = Date.now();
      const boundary = Math.ceil(now / EVERY_MS) * EVERY_MS + EVERY_MS;
      await new Promise((r) => setTimeout(r, boundary + offset - now));
      await victim.kill();
      await new Promise((r) => setTimeout(r, 1500));
      await victim.start();
    }
    await client.schedules.pause({ schedule: scheduleId });
    const pausedAt = Date.now();

    const prefix = `repeat:${schedulerId('acme.main', scheduleId)}:`;
    const tickTimes = async () => {
      const jobs = await store.queue.getJobs(['completed', 'failed', 'active', 'wait', 'delayed'], 0, -1);
      return jobs.filter((j) => j.id?.startsWith(prefix) && j.finishedOn !== undefined).map((j) => Number(j.id?.slice(prefix.length)));
    };
    // Every tick taken before the pause is finished (a stalled one comes back after LOCK_DURATION_MS 2000) and delivered.
    const settled = await eventually(
      async () => {
        const active = await store.queue.getJobs(['active', 'wait'], 0, -1);
        if (active.some((j) => j.id?.startsWith(prefix))) throw new Error('ticks still running');
        const times = await tickTimes();
        const delivered = new Set(bed.sink.on('/tick').map((r) => String(r.headers['upstash-message-id'])));
        if (delivered.size < times.length) throw new Error(`${delivered.size} of ${times.length} ticks delivered`);
        return times.sort((a, b) => a - b);
      },
      30_000,
      250,
    );
    await new Promise((r) => setTimeout(r, 1000));

    const requests = bed.sink.on('/tick');
    const messageIds = requests.map((r) => String(r.headers['upstash-message-id']));
    const distinct = new Set(messageIds);
    const first = settled[0] as number;
    const last = settled[settled.length - 1] as number;
    const expected = (last - first) / EVERY_MS + 1;
    const missing = expected - settled.length;
    const report = {
      kills: KILL_OFFSETS_MS.length,
      ticksRun: settled.length,
      tickSpanExpected: expected,
      ticksMissing: missing,
      distinctMessagesDelivered: distinct.size,
      deliveries: requests.length,
      redeliveries: requests.length - distinct.size,
      pausedAfterMs: pausedAt - first,
    };
    console.log(`schedule reliability: ${JSON.stringify(report)}`);
    expect(await redis.exists(`${PREFIX}:${SCHEDULE_QUEUE}:repeat:${schedulerId('acme.main', scheduleId)}`)).toBe(0); // paused
    expect(report.ticksMissing).toBe(0);
    expect(report.distinctMessagesDelivered).toBe(settled.length);
    expect(requests.every((r) => r.headers['upstash-schedule-id'] === scheduleId)).toBe(true);
  }, 240_000);
});
