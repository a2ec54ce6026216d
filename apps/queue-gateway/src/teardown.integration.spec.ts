import type { Redis } from 'ioredis';
import { RegistryWriter } from '@restash/shared/data-access-registry';
import { call, eventually } from '@restash/shared/util-testing';
import { QueueStore } from '@restash/queue/data-access-store';
import { queueTestbed } from './testing/queue-testbed';
import { nonEmpty } from './testing/sink';

/**
 * A deleted queue project (issue 11, tenant deletion) as queue-gateway and queue-worker see it: the registry
 * loses it first (tenants delete), then its messages are purged (QueueStore.purgeProject, which the teardown
 * runs). Neither its waiting, delayed nor in-flight messages reach their destination afterwards.
 */
describe('a deleted queue project', () => {
  const bed = queueTestbed({ acme: [{ name: 'jobs' }], busy: [{ name: 'jobs', retries: { default: 3, max: 3 } }], other: [{ name: 'main' }] });
  let queueRedis: Redis;
  let writer: RegistryWriter;
  let store: QueueStore;

  beforeAll(() => {
    queueRedis = bed.redis(bed.stack.queueRedis.url, { maxRetriesPerRequest: null });
    writer = new RegistryWriter(bed.redis(bed.stack.control.url), bed.stack.seal);
    store = bed.closes(new QueueStore(queueRedis, { prefix: 'restash:queue', messageRetentionMs: 86_400_000, dlqRetentionMs: 86_400_000, eventsPerProject: 1000 }));
  });

  const publish = (token: string, destination: string, headers: Record<string, string> = {}) =>
    call(`${bed.stack.url}/v2/publish/${destination}`, { method: 'POST', token, raw: 'body', headers });

  /** Waits until a message of another tenant, published now with `delay`, is delivered: every earlier-due message had its turn. */
  async function barrier(name: string, delay: string): Promise<void> {
    const published = await publish(bed.stack.secrets('other', 'main').token, `${bed.sink.url}/${name}`, { 'Upstash-Delay': delay });
    expect(published.status).toBe(201);
    await eventually(() => nonEmpty(bed.sink.on(`/${name}`)), 20_000);
  }

  it('never delivers its waiting or delayed messages, writes nothing under it, and refuses its tokens', async () => {
    const { token } = bed.stack.secrets('acme', 'jobs');
    await bed.stack.worker.stop();
    try {
      expect((await publish(token, `${bed.sink.url}/waiting`)).status).toBe(201);
      expect((await publish(token, `${bed.sink.url}/delayed`, { 'Upstash-Delay': '1s' })).status).toBe(201);
      // The registry forgets the project before its messages are purged: the worker must drop them.
      await writer.deleteTenant('acme');
    } finally {
      await bed.stack.worker.start();
    }
    await barrier('after-acme', '2s');
    expect(bed.sink.on('/waiting')).toEqual([]);
    expect(bed.sink.on('/delayed')).toEqual([]);
    // Only the publishes' CREATED events: the dropped messages left no outcome, DLQ entry or callback.
    const events = await store.events('acme.jobs', { count: 100, filter: {} });
    expect(events.items.map((e) => e.state)).toEqual(['CREATED', 'CREATED']);
    expect(await queueRedis.exists('restash:queue:dlq:acme.jobs')).toBe(0);

    const refused = await publish(token, `${bed.sink.url}/late`);
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ error: expect.any(String) });
    expect((await call(`${bed.stack.url}/v2/events`, { token })).status).toBe(401);

    await store.purgeProject('acme.jobs');
    expect(await queueRedis.exists('restash:queue:events:acme.jobs')).toBe(0);
    const jobs = await store.queue.getJobs(['wait', 'delayed', 'active', 'completed', 'failed'], 0, -1);
    expect(jobs.filter((job) => job?.data?.project === 'acme.jobs')).toEqual([]);
    expect(await store.deliveries.projectMessages('acme.jobs')).toEqual([]);
  }, 60_000);

  it('does not deliver a message again once its project is deleted during an attempt', async () => {
    const { token } = bed.stack.secrets('busy', 'jobs');
    bed.sink.answer('/in-flight', { status: 500, delayMs: 1_500 });
    expect((await publish(token, `${bed.sink.url}/in-flight`, { 'Upstash-Retries': '3', 'Upstash-Retry-Delay': '500' })).status).toBe(201);
    await eventually(() => nonEmpty(bed.sink.on('/in-flight')), 15_000); // the first attempt is under way

    await writer.deleteTenant('busy');
    await store.purgeProject('busy.jobs'); // waits for the attempt, then removes its retry
    expect(await queueRedis.exists('restash:queue:events:busy.jobs', 'restash:queue:dlq:busy.jobs')).toBe(0);

    await barrier('after-busy', '2s');
    expect(bed.sink.on('/in-flight')).toHaveLength(1);
    const jobs = await store.queue.getJobs(['wait', 'delayed', 'active', 'completed', 'failed'], 0, -1);
    expect(jobs.filter((job) => job?.data?.project === 'busy.jobs')).toEqual([]);
    expect(await store.deliveries.projectMessages('busy.jobs')).toEqual([]);
  }, 60_000);
});
