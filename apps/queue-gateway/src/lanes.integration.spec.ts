import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@upstash/qstash';
import { Redis } from 'ioredis';
import { queueProjectId } from '@restash/shared/data-access-registry';
import { eventually, startGaugeSink } from '@restash/shared/util-testing';
import { QueueStore } from '@restash/queue/data-access-store';
import { queueTestbed } from './testing/queue-testbed';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Queues and flow control (docs/queue.md, "Queue: queues and flow control") through the official `@upstash/qstash`
 * Client, against queue-gateway and two queue-worker processes on real Redis servers: the limits are
 * measured at the destination (requests it holds at once, arrivals per period).
 */
describe('queues and flow control with the official @upstash/qstash Client', () => {
  const bed = queueTestbed({ acme: [{ name: 'main' }], mallory: [{ name: 'main' }] }, { destination: () => startGaugeSink(150), workerEnv: { WORKER_CONCURRENCY: '20' }, timeoutMs: 180_000 });
  let client: Client;
  let other: Client;
  let token: string;

  beforeAll(async () => {
    await bed.stack.startWorker();
    token = bed.stack.secrets('acme', 'main').token;
    client = bed.client();
    other = bed.client('mallory');
  }, 60_000);

  const api = (method: string, path: string, init: { body?: string; headers?: Record<string, string> } = {}) =>
    fetch(`${bed.stack.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...init.headers }, ...(init.body !== undefined ? { body: init.body } : {}) });

  it('creates, reads, lists, pauses, resumes and deletes queues', async () => {
    const queue = client.queue({ queueName: 'upstash-queue' });
    await queue.upsert({ parallelism: 2 });
    const created = await queue.get();
    expect(created).toMatchObject({ name: 'upstash-queue', parallelism: 2, lag: 0, paused: false });
    expect(created.createdAt).toBeGreaterThan(0);
    expect(created.updatedAt).toBeGreaterThanOrEqual(created.createdAt);

    await queue.pause();
    expect((await queue.get()).paused).toBe(true);
    await queue.resume();
    expect((await queue.get()).paused).toBe(false);
    await queue.upsert({ paused: true });
    expect(await queue.get()).toMatchObject({ paused: true, parallelism: 1 });
    await queue.upsert({ paused: false });
    expect((await queue.get()).paused).toBe(false);

    await client.queue({ queueName: 'second' }).upsert({ parallelism: 1 });
    expect((await client.queue().list()).map((q) => q.name)).toEqual(['second', 'upstash-queue']);
    await queue.delete();
    await client.queue({ queueName: 'second' }).delete();
    expect(await client.queue().list()).toEqual([]);
    await expect(queue.get()).rejects.toThrow(/not found/);
    expect((await api('DELETE', '/v2/queues/upstash-queue')).status).toBe(404);
    expect((await api('POST', '/v2/queues/upstash-queue/pause')).status).toBe(404);
  });

  it('refuses bad queue requests with 400 naming the field, writing nothing', async () => {
    const cases: Array<[string, string, string | undefined, string]> = [
      ['POST', '/v2/queues', '{"queueName":"a b"}', 'queueName'],
      ['POST', '/v2/queues', '{"queueName":"q","parallelism":0}', 'parallelism'],
      ['POST', '/v2/queues', '{"queueName":"q","parallelism":101}', 'parallelism'],
      ['POST', '/v2/queues', '{"queueName":"q","parallelism":1.5}', 'parallelism'],
      ['POST', '/v2/queues', '{"queueName":"q","paused":"yes"}', 'paused'],
      ['POST', '/v2/queues', 'nope', 'body'],
      ['GET', '/v2/queues/bad%20name', undefined, 'queue name'],
      ['POST', `/v2/enqueue/bad%3Aname/${bed.sink.url}/x`, 'x', 'queue name'],
    ];
    for (const [method, path, body, field] of cases) {
      const response = await api(method, path, body === undefined ? {} : { body });
      expect({ path, body, status: response.status }).toEqual({ path, body, status: 400 });
      expect(((await response.json()) as { error: string }).error).toContain(field);
    }
    expect(await client.queue().list()).toEqual([]);
    const both = await api('POST', `/v2/enqueue/q1/${bed.sink.url}/x`, {
      body: 'x',
      headers: { 'upstash-flow-control-key': 'k', 'upstash-flow-control-value': 'parallelism=1' },
    });
    expect(both.status).toBe(400);
    expect(((await both.json()) as { error: string }).error).toContain('Upstash-Flow-Control-Key');
    const noValue = await api('POST', `/v2/publish/${bed.sink.url}/x`, { body: 'x', headers: { 'upstash-flow-control-key': 'k' } });
    expect(noValue.status).toBe(400);
    expect(((await noValue.json()) as { error: string }).error).toContain('Upstash-Flow-Control-Key');
    expect(await client.queue().list()).toEqual([]);
    expect((await api('GET', '/v2/flowControl')).status).toBe(200);
    expect(await (await api('GET', '/v2/flowControl')).json()).toEqual([]);
  });

  it('delivers a queue in order, one at a time across two workers (parallelism 1), the enqueue creating the queue', async () => {
    const queue = client.queue({ queueName: 'ordered' });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await queue.enqueue({ url: `${bed.sink.url}/ordered`, body: String(i) })).messageId);
    const message = await client.messages.get(ids[0] as string);
    expect(message.queueName).toBe('ordered');
    expect(await queue.get()).toMatchObject({ name: 'ordered', parallelism: 1 });
    const gauge = bed.sink.on('/ordered');
    await eventually(() => expect(gauge.bodies).toHaveLength(12), 30_000);
    expect(gauge.bodies).toEqual(Array.from({ length: 12 }, (_, i) => String(i)));
    expect(gauge.maxInFlight).toBe(1);
    // A batch into a new queue keeps its order too (its items are published concurrently).
    await client.batch(Array.from({ length: 10 }, (_, i) => ({ queueName: 'ordered-batch', url: `${bed.sink.url}/ordered-batch`, body: String(i) })));
    await eventually(() => expect(bed.sink.on('/ordered-batch').bodies).toEqual(Array.from({ length: 10 }, (_, i) => String(i))), 30_000);
    expect(bed.sink.on('/ordered-batch').maxInFlight).toBe(1);
  }, 60_000);

  it('holds a queue while its message waits for a retry, as QStash does; a cancel releases it, a deletion ends it', async () => {
    // A destination that answers 500 to the bodies starting with "fail" (the first time only for "fail-once"), 200 to the others.
    const arrivals: string[] = [];
    const server: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        arrivals.push(`${body}:${String(req.headers['upstash-retried'])}`);
        const fails = body === 'fail-always' || (body === 'fail-once' && arrivals.filter((a) => a.startsWith('fail-once:')).length === 1);
        res.statusCode = fails ? 500 : 200;
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/held`;
    try {
      const queue = client.queue({ queueName: 'held-retry' });
      for (const body of ['fail-once', 'next']) await queue.enqueue({ url, body, retries: 2, retryDelay: '1500' });
      // The second message starts only once the first is delivered on its retry (Upstash-Retried 1).
      await eventually(() => expect(arrivals).toEqual(['fail-once:0', 'fail-once:1', 'next:0']), 30_000);

      arrivals.length = 0;
      const { messageId } = await queue.enqueue({ url, body: 'fail-always', retries: 3, retryDelay: '600000' });
      await queue.enqueue({ url, body: 'after-cancel', retries: 0 });
      await eventually(() => expect(arrivals).toEqual(['fail-always:0']), 15_000);
      await sleep(1_500);
      expect(arrivals).toEqual(['fail-always:0']); // held: the retry is 10 minutes away
      await client.messages.cancel(messageId);
      await eventually(() => expect(arrivals).toEqual(['fail-always:0', 'after-cancel:0']), 15_000);
      await eventually(async () => expect((await client.logs({ messageIds: [messageId] })).logs.map((l) => l.state)).toContain('CANCELLED'), 15_000);

      // A queue deleted while its message waits: no attempt after the deletion.
      arrivals.length = 0;
      const doomed = client.queue({ queueName: 'held-delete' });
      await doomed.enqueue({ url, body: 'fail-always', retries: 3, retryDelay: '3000' });
      await eventually(() => expect(arrivals).toEqual(['fail-always:0']), 15_000);
      await doomed.delete();
      await sleep(5_000); // past the retry's due time
      expect(arrivals).toEqual(['fail-always:0']);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 90_000);

  it('holds a queue until the callbacks and failure callbacks of its message are delivered, as QStash does', async () => {
    // The sink answers 150 ms after a request arrives: a message may start only once the callback before it was answered.
    const queue = client.queue({ queueName: 'with-callbacks' });
    for (const body of ['0', '1']) await queue.enqueue({ url: `${bed.sink.url}/cbq`, body, callback: `${bed.sink.url}/cbq-callback` });
    // Nothing listens on port 1: no retries, so it goes to the DLQ and its failure callback is posted.
    await queue.enqueue({ url: 'http://127.0.0.1:1/closed', body: 'fails', retries: 0, failureCallback: `${bed.sink.url}/cbq-failure` });
    await queue.enqueue({ url: `${bed.sink.url}/cbq`, body: '2' });
    const messages = bed.sink.on('/cbq');
    const callbacks = bed.sink.on('/cbq-callback');
    const failures = bed.sink.on('/cbq-failure');
    await eventually(() => expect([messages.bodies, callbacks.bodies.length, failures.bodies.length]).toEqual([['0', '1', '2'], 2, 1]), 30_000);
    const sourceBodies = callbacks.bodies.map((b) => Buffer.from((JSON.parse(b) as { sourceBody: string }).sourceBody, 'base64').toString());
    expect(sourceBodies).toEqual(['0', '1']);
    // Each next message arrived once the callback before it had been answered (150 ms after it arrived).
    const [first, second, third] = messages.starts as [number, number, number];
    const [callback0, callback1] = callbacks.starts as [number, number];
    expect(callback0).toBeGreaterThanOrEqual(first + 140);
    expect(second - callback0).toBeGreaterThanOrEqual(140);
    expect(callback1).toBeGreaterThanOrEqual(second + 140);
    expect((failures.starts[0] as number) - callback1).toBeGreaterThanOrEqual(140);
    expect(third - (failures.starts[0] as number)).toBeGreaterThanOrEqual(140);
  }, 60_000);

  it('keeps a waiting lane message findable past the retention; once settled its lane record expires with the job', async () => {
    const redis = new Redis(bed.stack.queueRedis.url);
    try {
      const recordTtl = (messageId: string) => redis.pttl(`restash:queue:lane-of:${queueProjectId('acme', 'main')}:${messageId}`);
      const retentionMs = 86_400_000; // MESSAGE_RETENTION_MS's default
      const later = await client.queue({ queueName: 'later' }).enqueue({ url: `${bed.sink.url}/later`, body: 'x', delay: 3 * 86_400 });
      expect(await recordTtl(later.messageId)).toBeGreaterThan(3 * 86_400_000 + retentionMs);
      expect(await client.messages.get(later.messageId)).toMatchObject({ queueName: 'later' });
      const now = await client.queue({ queueName: 'later' }).enqueue({ url: `${bed.sink.url}/now`, body: 'y' });
      await eventually(() => expect(bed.sink.on('/now').bodies).toEqual(['y']), 15_000);
      await eventually(async () => expect(await recordTtl(now.messageId)).toBeLessThanOrEqual(retentionMs), 5_000);
      expect(await client.messages.get(now.messageId)).toMatchObject({ queueName: 'later' });
      await client.messages.delete(later.messageId);
    } finally {
      redis.disconnect();
    }
  });

  it('holds at most `parallelism` deliveries of a queue in flight across two workers', async () => {
    const queue = client.queue({ queueName: 'wide' });
    await queue.upsert({ parallelism: 3 });
    await client.batch(Array.from({ length: 30 }, (_, i) => ({ queueName: 'wide', url: `${bed.sink.url}/wide`, body: String(i) })));
    const gauge = bed.sink.on('/wide');
    await eventually(() => expect(gauge.bodies).toHaveLength(30), 30_000);
    expect(gauge.maxInFlight).toBe(3);
    expect((await queue.get()).lag).toBe(0);
  }, 60_000);

  it('keeps a paused queue waiting (lag counts it) until resumed', async () => {
    const queue = client.queue({ queueName: 'held' });
    await queue.upsert({ parallelism: 2, paused: true });
    await queue.enqueueJSON({ url: `${bed.sink.url}/held`, body: { n: 1 } });
    await queue.enqueueJSON({ url: `${bed.sink.url}/held`, body: { n: 2 } });
    await sleep(1_500);
    expect(bed.sink.on('/held').bodies).toHaveLength(0);
    expect(await queue.get()).toMatchObject({ paused: true, lag: 2 });
    await queue.resume();
    await eventually(() => expect(bed.sink.on('/held').bodies).toHaveLength(2), 15_000);
  }, 30_000);

  it('enforces a flow-control key\'s parallelism across two workers, and reports it', async () => {
    const flowControl = { key: 'fc-parallel', parallelism: 2 };
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => client.publish({ url: `${bed.sink.url}/fc-parallel`, body: String(i), flowControl })));
    const message = await client.messages.get(ids[0]?.messageId as string);
    expect(message).toMatchObject({ flowControlKey: 'fc-parallel', parallelism: 2 });
    const info = await client.flowControl.get('fc-parallel');
    expect(info).toMatchObject({ flowControlKey: 'fc-parallel', parallelismMax: 2, rateMax: 0, isPaused: false, isPinnedParallelism: false, isPinnedRate: false });
    const gauge = bed.sink.on('/fc-parallel');
    await eventually(() => expect(gauge.bodies).toHaveLength(20), 30_000);
    expect(gauge.maxInFlight).toBe(2);
    // The last delivery's job completes once its outcome is stored, a moment after the sink answered.
    await eventually(async () => expect(await client.flowControl.get('fc-parallel')).toMatchObject({ waitListSize: 0, parallelismCount: 0 }), 5_000);
  }, 60_000);

  it('enforces a flow-control key\'s rate (5 per 2 s) across two workers', async () => {
    const flowControl = { key: 'fc-rate', rate: 5, period: 2 };
    const started = Date.now();
    const ids = await Promise.all(Array.from({ length: 15 }, (_, i) => client.publish({ url: `${bed.sink.url}/fc-rate`, body: String(i), flowControl })));
    expect(await client.messages.get(ids[0]?.messageId as string)).toMatchObject({ flowControlKey: 'fc-rate', rate: 5, period: 2 });
    const gauge = bed.sink.on('/fc-rate');
    await eventually(() => expect(gauge.bodies).toHaveLength(15), 30_000);
    // Fixed windows of 2 s, each starting with its first delivery: 15 deliveries need three windows, so the
    // last starts two periods after the first (less the first delivery's extra latency: a cold registry
    // cache; two windows would end all within about one period).
    const first = gauge.starts[0] as number;
    expect((gauge.starts[14] as number) - first).toBeGreaterThanOrEqual(3_500);
    for (const start of gauge.starts) {
      // An interval shorter than a period spans at most two windows: at most 10 deliveries.
      expect(gauge.starts.filter((t) => t >= start && t < start + 1_900).length).toBeLessThanOrEqual(10);
    }
    const windows = new Map<number, number>();
    for (const t of gauge.starts) windows.set(Math.floor((t - first) / 2_000), (windows.get(Math.floor((t - first) / 2_000)) ?? 0) + 1);
    const info = await client.flowControl.get('fc-rate');
    expect(info).toMatchObject({ rateMax: 5, ratePeriod: 2, parallelismMax: 0 });
    process.stdout.write(`rate 5/2s: 15 deliveries over ${(gauge.starts[14] as number) - first} ms (published at +${first - started} ms); per 2 s from the first: ${[...windows.values()].join(',')}\n`);
  }, 60_000);

  it('pauses, resumes, pins, unpins and resets a flow-control key; lists keys with search', async () => {
    const flowControl = { key: 'fc-admin', parallelism: 5, rate: 10, period: '1m' as const };
    expect((await api('POST', '/v2/flowControl/fc-admin/pause')).status).toBe(404);
    await client.publish({ url: `${bed.sink.url}/fc-admin`, body: 'first', flowControl });
    await eventually(() => expect(bed.sink.on('/fc-admin').bodies).toHaveLength(1), 15_000);
    expect(await client.flowControl.get('fc-admin')).toMatchObject({ rateMax: 10, rateCount: 1, ratePeriod: 60, parallelismMax: 5 });
    expect((await client.flowControl.get('fc-admin')).ratePeriodStart).toBeGreaterThan(Date.now() - 60_000);

    await client.flowControl.pause('fc-admin');
    expect((await client.flowControl.get('fc-admin')).isPaused).toBe(true);
    await client.publish({ url: `${bed.sink.url}/fc-admin`, body: 'second', flowControl });
    await sleep(1_000);
    expect(bed.sink.on('/fc-admin').bodies).toHaveLength(1);
    expect((await client.flowControl.get('fc-admin')).waitListSize).toBe(1);
    await client.flowControl.resume('fc-admin');
    await eventually(() => expect(bed.sink.on('/fc-admin').bodies).toHaveLength(2), 15_000);

    await client.flowControl.pin('fc-admin', { parallelism: 3, rate: 20, period: 120 });
    expect(await client.flowControl.get('fc-admin')).toMatchObject({ isPinnedParallelism: true, isPinnedRate: true, parallelismMax: 3, rateMax: 20, ratePeriod: 120 });
    // A publish with other limits does not change pinned ones.
    await client.publish({ url: `${bed.sink.url}/fc-admin`, body: 'third', flowControl: { key: 'fc-admin', parallelism: 1 } });
    expect(await client.flowControl.get('fc-admin')).toMatchObject({ parallelismMax: 3, rateMax: 20 });
    await client.flowControl.unpin('fc-admin', { parallelism: true });
    // Unpinned, the latest publish's parallelism applies; the rate stays pinned.
    expect(await client.flowControl.get('fc-admin')).toMatchObject({ isPinnedParallelism: false, isPinnedRate: true, parallelismMax: 1, rateMax: 20 });
    await client.flowControl.unpin('fc-admin', { rate: true });
    expect(await client.flowControl.get('fc-admin')).toMatchObject({ isPinnedRate: false, rateMax: 0 });

    await client.flowControl.pin('fc-admin', { rate: 2, period: 60 });
    await eventually(() => expect(bed.sink.on('/fc-admin').bodies).toHaveLength(3), 15_000);
    await client.flowControl.resetRate('fc-admin');
    expect((await client.flowControl.get('fc-admin')).rateCount).toBe(0);
    // `reset`, the changelog's name for resetRate.
    await client.publish({ url: `${bed.sink.url}/fc-admin`, body: 'fourth', flowControl: { key: 'fc-admin', rate: 2, period: 60 } });
    await eventually(async () => expect((await client.flowControl.get('fc-admin')).rateCount).toBe(1), 15_000);
    expect((await api('POST', '/v2/flowControl/fc-admin/reset')).status).toBe(200);
    expect((await client.flowControl.get('fc-admin')).rateCount).toBe(0);
    expect((await api('POST', '/v2/flowControl/never-used/reset')).status).toBe(404);

    const listed = (await (await api('GET', '/v2/flowControl?search=admin')).json()) as Array<{ flowControlKey: string }>;
    expect(listed.map((f) => f.flowControlKey)).toEqual(['fc-admin']);
    const all = (await (await api('GET', '/v2/flowControl')).json()) as Array<{ flowControlKey: string }>;
    expect(all.map((f) => f.flowControlKey)).toEqual(['fc-admin', 'fc-parallel', 'fc-rate']);
    await expect(client.flowControl.get('never-used')).rejects.toThrow(/not found/);
    for (const bad of ['pin', 'pin?parallelism=0', 'pin?period=8d', 'unpin', 'unpin?parallelism=yes']) {
      expect({ bad, status: (await api('POST', `/v2/flowControl/fc-admin/${bad}`)).status }).toEqual({ bad, status: 400 });
    }
  }, 60_000);

  it('reports global parallelism: the live workers\' concurrency and the project\'s deliveries in flight', async () => {
    // Two replicas of WORKER_CONCURRENCY 20 (each refreshes its entry every few seconds).
    await eventually(async () => expect(await client.flowControl.getGlobalParallelism()).toEqual({ parallelismMax: 40, parallelismCount: 0 }), 15_000);
    const queue = client.queue({ queueName: 'busy' });
    await queue.upsert({ parallelism: 2 });
    await client.batch(Array.from({ length: 16 }, (_, i) => ({ queueName: 'busy', url: `${bed.sink.url}/busy`, body: String(i) })));
    await eventually(async () => expect((await client.flowControl.getGlobalParallelism()).parallelismCount).toBe(2), 10_000, 20);
    expect((await other.flowControl.getGlobalParallelism()).parallelismCount).toBe(0);
    await eventually(() => expect(bed.sink.on('/busy').bodies).toHaveLength(16), 15_000);
    await eventually(async () => expect((await client.flowControl.getGlobalParallelism()).parallelismCount).toBe(0), 5_000);
  }, 40_000);

  it('keeps a tenant out of another project\'s queues, keys and lane messages', async () => {
    await client.queue({ queueName: 'private' }).upsert({ parallelism: 1, paused: true });
    const { messageId } = await client.queue({ queueName: 'private' }).enqueue({ url: `${bed.sink.url}/private`, body: 'secret' });
    await client.publish({ url: `${bed.sink.url}/private-key`, body: 'x', flowControl: { key: 'private-key', parallelism: 1 } });
    expect(await other.queue().list()).toEqual([]);
    await expect(other.queue({ queueName: 'private' }).get()).rejects.toThrow(/not found/);
    await expect(other.queue({ queueName: 'private' }).resume()).rejects.toThrow(/not found/);
    await expect(other.queue({ queueName: 'private' }).delete()).rejects.toThrow(/not found/);
    await expect(other.flowControl.get('private-key')).rejects.toThrow(/not found/);
    await expect(other.flowControl.resume('private-key')).rejects.toThrow(/not found/);
    await expect(other.messages.get(messageId)).rejects.toThrow(/not found/);
    await expect(other.messages.delete(messageId)).rejects.toThrow(/not found/);
    // The same queue name in the other project is its own queue.
    await other.queue({ queueName: 'private' }).enqueue({ url: `${bed.sink.url}/mallory`, body: 'mine' });
    await eventually(() => expect(bed.sink.on('/mallory').bodies).toEqual(['mine']), 15_000);
    expect(bed.sink.on('/private').bodies).toEqual([]);
    expect(await client.queue({ queueName: 'private' }).get()).toMatchObject({ paused: true, lag: 1 });
    // Its owner can cancel it in its lane.
    await client.messages.delete(messageId);
    expect(await client.queue({ queueName: 'private' }).get()).toMatchObject({ lag: 0 });
  }, 30_000);

  it('purges a project\'s queues, keys and lane messages (teardown), leaving other projects\'', async () => {
    await client.queue({ queueName: 'doomed' }).upsert({ parallelism: 1, paused: true });
    await client.queue({ queueName: 'doomed' }).enqueue({ url: `${bed.sink.url}/doomed`, body: 'x' });
    const redis = new Redis(bed.stack.queueRedis.url, { maxRetriesPerRequest: null });
    const store = new QueueStore(redis, { prefix: 'restash:queue', messageRetentionMs: 86_400_000, dlqRetentionMs: 86_400_000, eventsPerProject: 1000 });
    try {
      const project = queueProjectId('acme', 'main');
      const keysOf = async (pattern: string) => (await redis.keys(pattern)).sort();
      expect(await keysOf(`restash:queue:lane/${project}/*`)).not.toEqual([]);
      await store.purgeProject(project, 10_000);
      expect(await keysOf(`restash:queue:lane/${project}/*`)).toEqual([]);
      expect(await keysOf(`restash:queue:*${project}*`)).toEqual([]);
      expect((await redis.smembers('restash:queue:lanes')).filter((name) => name.includes(project))).toEqual([]);
      expect(await client.queue().list()).toEqual([]);
      expect((await other.queue().list()).map((q) => q.name)).toEqual(['private']);
    } finally {
      await store.close();
      redis.disconnect();
    }
  }, 30_000);
});
