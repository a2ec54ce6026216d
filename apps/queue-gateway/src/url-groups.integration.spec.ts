import { Client, QstashError } from '@upstash/qstash';
import { Redis } from 'ioredis';
import { eventually } from '@restash/shared/util-testing';
import { QueueStore } from '@restash/queue/data-access-store';
import { queueTestbed } from './testing/queue-testbed';
import { atLeast, nonEmpty } from './testing/sink';

/** The status of a rejected SDK call. */
async function statusOf(call: Promise<unknown>): Promise<number | string> {
  try {
    await call;
    return 'resolved';
  } catch (error) {
    return error instanceof QstashError ? (error.status ?? 'no status') : String(error);
  }
}

/**
 * URL groups (docs/queue.md, "Queue: URL groups") with the official `@upstash/qstash` Client: `client.urlGroups`, and
 * publish/batch to a group fanning out one message per endpoint, against queue-gateway + queue-worker.
 */
describe('URL groups with the official @upstash/qstash Client', () => {
  const bed = queueTestbed({ acme: [{ name: 'main' }, { name: 'purged' }], mallory: [{ name: 'main' }] });
  let client: Client;
  let other: Client;

  beforeAll(() => {
    client = bed.client();
    other = bed.client('mallory');
  });

  it('creates a group, adds, replaces and removes endpoints, lists, gets and deletes it', async () => {
    const a = { name: 'a', url: `${bed.sink.url}/crud/a` };
    const b = { url: `${bed.sink.url}/crud/b` };
    await client.urlGroups.addEndpoints({ name: 'crud', endpoints: [a, b] });
    const created = await client.urlGroups.get('crud');
    expect(created).toMatchObject({ name: 'crud', endpoints: [a, b] });
    expect(created.createdAt).toBeGreaterThan(0);

    // A repeated name replaces the endpoint; a repeated URL too.
    const a2 = { name: 'a', url: `${bed.sink.url}/crud/a2` };
    await client.urlGroups.addEndpoints({ name: 'crud', endpoints: [a2, { name: 'b', url: b.url }] });
    expect((await client.urlGroups.get('crud')).endpoints).toEqual([a2, { name: 'b', url: b.url }]);

    await client.urlGroups.addEndpoints({ name: 'crud-2', endpoints: [b] });
    expect((await client.urlGroups.list()).map((g) => g.name)).toEqual(['crud', 'crud-2']);

    await client.urlGroups.removeEndpoints({ name: 'crud', endpoints: [{ name: 'a' }] });
    expect((await client.urlGroups.get('crud')).endpoints).toEqual([{ name: 'b', url: b.url }]);

    await client.urlGroups.delete('crud');
    await client.urlGroups.delete('crud-2');
    expect(await statusOf(client.urlGroups.get('crud'))).toBe(404);
    expect(await statusOf(client.urlGroups.delete('crud'))).toBe(404);
    expect(await statusOf(client.urlGroups.removeEndpoints({ name: 'crud', endpoints: [{ name: 'b' }] }))).toBe(404);
    expect(await client.urlGroups.list()).toEqual([]);
  });

  it('refuses bad names and URLs with 400 naming the field, writing nothing', async () => {
    const raw = (path: string, body: string) =>
      fetch(`${bed.stack.url}/v2/topics/${path}`, { method: 'POST', headers: { authorization: `Bearer ${bed.stack.secrets('acme', 'main').token}` }, body });
    let res = await raw('bad%20name/endpoints', JSON.stringify({ endpoints: [{ url: `${bed.sink.url}/x` }] }));
    expect([res.status, ((await res.json()) as { error: string }).error]).toEqual([400, expect.stringMatching(/^invalid url group name/)]);
    res = await raw('g/endpoints', JSON.stringify({ endpoints: [{ url: `${bed.sink.url}/x` }, { url: 'ftp://x' }] }));
    expect([res.status, ((await res.json()) as { error: string }).error]).toEqual([400, expect.stringMatching(/^invalid endpoints\[1\]\.url/)]);
    res = await raw('g/endpoints', JSON.stringify({ endpoints: [{ name: 'x y', url: `${bed.sink.url}/x` }] }));
    expect(res.status).toBe(400);
    expect(await statusOf(client.urlGroups.get('g'))).toBe(404);
  });

  it('fans a publish out to every endpoint: own ids, Upstash-Topic-Name, topicName/endpointName in the message, logs and callbacks', async () => {
    await client.urlGroups.addEndpoints({ name: 'fan', endpoints: [{ name: 'one', url: `${bed.sink.url}/fan/1` }, { url: `${bed.sink.url}/fan/2` }] });
    const results = await client.publishJSON({ urlGroup: 'fan', body: { n: 1 }, callback: `${bed.sink.url}/fan/callback` });
    expect(Array.isArray(results)).toBe(true);
    const list = results as unknown as Array<{ messageId: string; url: string }>;
    expect(list.map((r) => r.url)).toEqual([`${bed.sink.url}/fan/1`, `${bed.sink.url}/fan/2`]);
    expect(new Set(list.map((r) => r.messageId)).size).toBe(2);

    const [one] = await eventually(() => nonEmpty(bed.sink.on('/fan/1')), 15_000);
    const [two] = await eventually(() => nonEmpty(bed.sink.on('/fan/2')), 15_000);
    expect(one.headers['upstash-topic-name']).toBe('fan');
    expect(two.headers['upstash-topic-name']).toBe('fan');
    expect([one.headers['upstash-message-id'], two.headers['upstash-message-id']]).toEqual(list.map((r) => r.messageId));
    expect(JSON.parse(one.body.toString())).toEqual({ n: 1 });

    const first = await client.messages.get(list[0]?.messageId ?? '');
    expect(first).toMatchObject({ topicName: 'fan', urlGroup: 'fan', endpointName: 'one', url: `${bed.sink.url}/fan/1` });
    const second = await client.messages.get(list[1]?.messageId ?? '');
    expect(second).toMatchObject({ topicName: 'fan', url: `${bed.sink.url}/fan/2` });
    expect(second).not.toHaveProperty('endpointName');

    const callbacks = await eventually(() => atLeast(bed.sink.on('/fan/callback'), 2), 15_000);
    const payloads = callbacks.map((c) => JSON.parse(c.body.toString()) as Record<string, unknown>);
    expect(payloads.map((p) => p.topicName)).toEqual(['fan', 'fan']);
    expect(payloads.map((p) => p.endpointName ?? null).sort()).toEqual([null, 'one'].sort());

    const logs = await eventually(async () => {
      const page = await client.logs({ filter: { urlGroup: 'fan', state: 'DELIVERED' } });
      return atLeast(page.logs, 2);
    }, 15_000);
    expect(logs.map((l) => l.messageId).sort()).toEqual(list.map((r) => r.messageId).sort());
    expect(logs.every((l) => l.topicName === 'fan' && l.urlGroup === 'fan')).toBe(true);
  }, 40_000);

  it('batches to a group as a nested array, deduplicates per endpoint, and refuses unknown or empty groups writing nothing', async () => {
    await client.urlGroups.addEndpoints({ name: 'batch', endpoints: [{ url: `${bed.sink.url}/batch/1` }, { url: `${bed.sink.url}/batch/2` }] });
    const batch = (await client.batchJSON([
      { urlGroup: 'batch', body: { b: 1 }, deduplicationId: 'same' },
      { url: `${bed.sink.url}/batch/single`, body: { b: 2 } },
    ])) as unknown as Array<unknown>;
    expect(Array.isArray(batch[0])).toBe(true);
    expect((batch[0] as unknown[]).length).toBe(2);
    expect(batch[1]).toMatchObject({ url: `${bed.sink.url}/batch/single` });

    const again = (await client.publishJSON({ urlGroup: 'batch', body: { b: 1 }, deduplicationId: 'same' })) as unknown as Array<{ messageId: string; deduplicated?: boolean }>;
    expect(again.map((r) => r.deduplicated)).toEqual([true, true]);
    expect(again.map((r) => r.messageId)).toEqual((batch[0] as Array<{ messageId: string }>).map((r) => r.messageId));

    const before = (await client.logs({ filter: { url: `${bed.sink.url}/batch/never` } })).logs.length;
    const unknown = client.batchJSON([
      { url: `${bed.sink.url}/batch/never`, body: {} },
      { urlGroup: 'no-such-group', body: {} },
    ]);
    await expect(unknown).rejects.toThrow(/no-such-group/);
    expect(await statusOf(client.publishJSON({ urlGroup: 'no-such-group', body: {} }))).toBe(400);
    expect((await client.logs({ filter: { url: `${bed.sink.url}/batch/never` } })).logs.length).toBe(before);

    await client.urlGroups.addEndpoints({ name: 'empty', endpoints: [{ url: `${bed.sink.url}/batch/gone` }] });
    await client.urlGroups.removeEndpoints({ name: 'empty', endpoints: [{ url: `${bed.sink.url}/batch/gone` }] });
    expect(await statusOf(client.publishJSON({ urlGroup: 'empty', body: {} }))).toBe(400);
  }, 40_000);

  it("never lets another tenant's project read, change, delete or publish to a group", async () => {
    await client.urlGroups.addEndpoints({ name: 'private', endpoints: [{ url: `${bed.sink.url}/private` }] });
    expect(await statusOf(other.urlGroups.get('private'))).toBe(404);
    expect(await other.urlGroups.list()).toEqual([]);
    expect(await statusOf(other.urlGroups.delete('private'))).toBe(404);
    expect(await statusOf(other.publishJSON({ urlGroup: 'private', body: {} }))).toBe(400);
    // The same name in another project is another group.
    await other.urlGroups.addEndpoints({ name: 'private', endpoints: [{ url: `${bed.sink.url}/mallory` }] });
    expect((await client.urlGroups.get('private')).endpoints).toEqual([{ url: `${bed.sink.url}/private` }]);
    await other.urlGroups.delete('private');
    expect((await client.urlGroups.get('private')).endpoints).toEqual([{ url: `${bed.sink.url}/private` }]);
  });

  it("goes with its project's purge (teardown)", async () => {
    const purged = new Client({ baseUrl: bed.stack.url, token: bed.stack.secrets('acme', 'purged').token });
    await purged.urlGroups.addEndpoints({ name: 'doomed', endpoints: [{ url: `${bed.sink.url}/doomed` }] });
    const redis = new Redis(bed.stack.queueRedis.url, { maxRetriesPerRequest: null });
    const store = new QueueStore(redis, { prefix: 'restash:queue', messageRetentionMs: 86_400_000, dlqRetentionMs: 86_400_000, eventsPerProject: 1000 });
    try {
      expect(await redis.exists('restash:queue:topics:acme.purged')).toBe(1);
      await store.purgeProject('acme.purged');
      expect(await redis.exists('restash:queue:topics:acme.purged')).toBe(0);
      expect(await purged.urlGroups.list()).toEqual([]);
      expect((await client.urlGroups.list()).length).toBeGreaterThan(0);
    } finally {
      await store.close();
      redis.disconnect();
    }
  });
});
