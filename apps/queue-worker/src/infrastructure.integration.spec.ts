import { Redis } from 'ioredis';
import { platformOwner, queueProjectId, registryKeys } from '@restash/shared/data-access-registry';
import { serverRunId } from '@restash/shared/data-access-redis';
import { eventually } from '@restash/shared/util-testing';
import type { AppProcess, RedisServer } from '@restash/platform/util-stack';
import type { QueueStore } from '@restash/queue/data-access-store';
import { startGatedSink } from './testing/gated-sink';
import { type WorkerTestbed, startWorkerTestbed } from './testing/testbed';

/**
 * queue-worker (its own process) through outages of its Redis servers: a failed registry or store call is
 * retried in place, so the message is delivered once and none of its attempts is spent. Both servers write
 * every command to their AOF (`appendfsync always`), so that a SIGKILL loses nothing of the registry or the jobs.
 */
describe('queue-worker when a Redis stops mid-delivery', () => {
  let bed: WorkerTestbed;
  let worker: AppProcess;
  let sink: Awaited<ReturnType<typeof startGatedSink>>;
  let control: RedisServer;
  let queueRedis: RedisServer;
  let store: QueueStore;
  const project = queueProjectId('acme', 'main');

  beforeAll(async () => {
    [bed, sink] = await Promise.all([startWorkerTestbed({ controlConfig: ['appendfsync always'], queueConfig: ['appendfsync always'] }), startGatedSink()]);
    ({ control, queueRedis, store } = bed);
    store.queue.on('error', () => undefined); // the third test stops its Redis
    // A registry cache of 1 ms: every lookup reaches the control Redis, as one after an expiry or a change would.
    worker = await bed.startWorker({ REGISTRY_CACHE_TTL_MS: '1' });
  }, 120_000);

  afterAll(async () => {
    await bed?.stop();
    await sink?.close();
  });

  /** Enqueues a message to the sink's `path`, due now, with `maxRetries` retries. */
  const publish = async (path: string, maxRetries: number): Promise<string> => {
    const message = bed.message(`${sink.url}${path}`, { body: Buffer.from(path).toString('base64'), maxRetries });
    return (await store.publish(message)).messageId;
  };

  /** Once delivered: the attempts counted (finished ones: 1 is the attempt that delivered), and the message's events, oldest first. */
  const delivered = (messageId: string) =>
    eventually(
      async () => {
        const found = await store.deliveries.get(messageId); // read once completed: its attempt count is final
        if (found?.state !== 'completed') throw new Error(`message ${messageId} is ${found?.state ?? 'gone'}`);
        const { items } = await store.events(project, { count: 100, filter: { messageId: [messageId] } });
        return { attempts: found.attemptsMade, states: items.map((e) => e.state).reverse() };
      },
      30_000,
      100,
    );

  const retriesCounted = async (operation: string): Promise<number> => {
    const text = await (await fetch(`${worker.managementUrl}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`restash_queue_delivery_infrastructure_retries_total{operation="${operation}"}`));
    return Number(line?.split(' ')[1] ?? 0);
  };

  /** Starts `server` again: the message to `path` is then delivered once, on its first attempt, with no attempt spent. */
  const deliveredOnceWhenBack = async (server: RedisServer, path: string, messageId: string) => {
    await server.start();
    expect(await delivered(messageId)).toEqual({ attempts: 1, states: ['CREATED', 'ACTIVE', 'DELIVERED'] });
    const requests = sink.on(path);
    expect(requests).toHaveLength(1);
    expect(requests[0]?.['upstash-retried']).toBe('0');
  };

  /**
   * Publishes to `path` (3 retries) with the destination holding its answer, stops `server` once the request arrived,
   * then lets the destination answer: the call to that server after the answer fails and is retried in place (counted
   * by `operation`) until the server is back, so the message is delivered once and no attempt is spent.
   */
  const outageWhileAnswering = async (path: string, server: RedisServer, operation: string) => {
    sink.hold(path);
    const messageId = await publish(path, 3);
    await eventually(() => expect(sink.on(path)).toHaveLength(1), 15_000);
    const before = await retriesCounted(operation);
    await server.kill();
    sink.release(path);
    await eventually(async () => expect(await retriesCounted(operation)).toBeGreaterThan(before), 15_000, 100);
    await deliveredOnceWhenBack(server, path, messageId);
  };

  it('delivers once, no attempt spent, when the control Redis stops while the destination answers', async () => {
    // the project check after the answer fails, and is retried in place
    await outageWhileAnswering('/control-outage', control, 'registry');
  }, 60_000);

  it('does not lose a message without retries that comes due while the control Redis is down', async () => {
    const before = await retriesCounted('registry');
    await control.kill();
    const messageId = await publish('/due-during-outage', 0);
    // The worker took it and retries the project lookup in place.
    await eventually(async () => expect(await retriesCounted('registry')).toBeGreaterThan(before), 15_000, 100);
    expect(sink.on('/due-during-outage')).toHaveLength(0);
    await deliveredOnceWhenBack(control, '/due-during-outage', messageId);
  }, 60_000);

  it('puts a message back in the queue, no attempt spent, when the control Redis stays down past the in-place retries', async () => {
    await control.kill();
    const messageId = await publish('/long-outage', 0);
    // Past the in-place retries (15 s, plus the last call, which ioredis fails after a few reconnects: up to 10 s seen).
    const requeued = /^restash_queue_delivery_duration_seconds_count\{tenant="",outcome="requeued"\} [1-9]/m;
    await eventually(async () => expect(await (await fetch(`${worker.managementUrl}/metrics`)).text()).toMatch(requeued), 60_000, 500);
    expect(sink.on('/long-outage')).toHaveLength(0);
    await deliveredOnceWhenBack(control, '/long-outage', messageId);
  }, 90_000);

  it('delivers once, no attempt spent, when the queue Redis stops while the destination answers', async () => {
    // storing the outcome fails, and is retried in place
    await outageWhileAnswering('/store-outage', queueRedis, 'store');
  }, 60_000);

  it("has claimed the queue's Redis for the platform, again after it restarted with a new run_id", async () => {
    // The test before restarted it; no KV database may be served from the new process either.
    const registry = new Redis(control.url);
    const direct = new Redis(queueRedis.url);
    try {
      const runId = await serverRunId(direct);
      await eventually(async () => expect(await registry.get(registryKeys.kvServer(runId))).toBe(platformOwner('queue')), 10_000);
      expect(await registry.keys(registryKeys.kvServer('*'))).toHaveLength(2); // the first process's claim, and this one's
    } finally {
      registry.disconnect();
      direct.disconnect();
    }
  });
});
