import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { streamPrefix } from '@restash/shared/data-access-registry';
import { call, eventually } from '@restash/shared/util-testing';
import { type StreamStack, type TestCredentials, basicAuth, gatewayProcess, startStreamStack } from './testing/stream-stack';

// Raw HTTP against stream-gateway and a real broker: the forms the SDK does not use (GET produce and
// consume, the webhook, both header spellings), every error, and the consumer-group semantics.
jest.setTimeout(120_000);

let stack: StreamStack;
let acme: TestCredentials;

beforeAll(async () => {
  stack = await startStreamStack({
    acme: [{ name: 'events', topics: { orders: 1, wide: 2, hooks: 1, solo: 1 }, maxRequestBytes: 64 * 1024 }],
    other: [{ name: 'events', topics: { orders: 1 } }],
    strict: [{ name: 'events', topics: { s: 1 } }],
    big: [{ name: 'events', topics: { two: 2, wide: 1 }, maxRequestBytes: 4 * 1024 * 1024 }],
  }, { CONSUMER_MAX_BUFFERED_BYTES: String(256 * 1024) });
  acme = stack.credentials('acme', 'events');
});

afterAll(async () => {
  await stack?.stop();
});

/** A request with acme's Basic credentials unless others are given. */
function api(path: string, init: { method?: string; body?: unknown; raw?: string; headers?: Record<string, string>; as?: TestCredentials | null } = {}) {
  const headers: Record<string, string> = { ...init.headers };
  if (init.as !== null) headers.authorization = basicAuth(init.as ?? acme);
  return call(`${stack.url}${path}`, { ...init, headers });
}

async function produce(topic: string, values: string[], partition?: number): Promise<Array<{ offset: number; partition: number }>> {
  const res = await api('/produce', { body: values.map((value) => ({ topic, value, ...(partition === undefined ? {} : { partition }) })) });
  expect(res.status).toBe(200);
  return res.body as Array<{ offset: number; partition: number }>;
}

/**
 * Consumes until `done(values)` holds (a count, or values that must all have arrived) or 15 s passed,
 * returning every value seen, repeats included.
 */
async function consumeValues(path: string, done: number | string[], headers: Record<string, string> = {}): Promise<string[]> {
  const seen: string[] = [];
  const deadline = Date.now() + 15_000;
  const finished = () => (typeof done === 'number' ? seen.length >= done : done.every((v) => seen.includes(v)));
  while (!finished() && Date.now() < deadline) {
    const res = await api(path, { method: 'GET', headers: { ...headers } });
    expect(res.status).toBe(200);
    seen.push(...(res.body as Array<{ value: string }>).map((m) => m.value));
  }
  return seen;
}

describe('produce and fetch forms', () => {
  it('GET /produce/<topic>/<message>?key= answers one Metadata', async () => {
    const res = await api('/produce/orders/hello%20there?key=k9', { method: 'GET' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ topic: 'orders', partition: 0, offset: expect.any(Number), timestamp: expect.any(Number) });
    const { offset } = res.body as { offset: number };
    const fetched = await api('/fetch', { body: { topic: 'orders', partition: 0, offset } });
    expect(fetched.body).toEqual([
      { topic: 'orders', partition: 0, offset, timestamp: expect.any(Number), key: 'k9', value: 'hello there', headers: [] },
    ]);
  });

  it('POST /produce/<topic> takes one message or an array and answers Metadata in order', async () => {
    const one = await api('/produce/orders', { body: { value: 'a' } });
    expect(one.status).toBe(200);
    expect(one.body).toEqual([expect.objectContaining({ topic: 'orders', partition: 0 })]);
    const many = await api('/produce/wide', { body: [{ value: 'x', partition: 1 }, { value: 'y', partition: 1 }, { value: 'z', partition: 0 }] });
    const metadata = many.body as Array<{ partition: number; offset: number }>;
    expect(metadata.map((m) => m.partition)).toEqual([1, 1, 0]);
    expect(metadata[1]!.offset).toBe(metadata[0]!.offset + 1);
  });

  it('GET /fetch reads a body too, and waits at most its timeout for data past the end', async () => {
    const { offset } = (await produce('solo', ['s1']))[0]!;
    const body = JSON.stringify({ topic: 'solo', partition: 0, offset: offset + 1, timeout: 300 });
    const started = Date.now();
    const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(`${stack.url}/fetch`, { method: 'GET', headers: { authorization: basicAuth(acme), 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (r) => {
        let text = '';
        r.on('data', (c: Buffer) => (text += c.toString()));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end(body);
    });
    expect(res).toEqual({ status: 200, text: '[]' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });
});

describe('webhook', () => {
  it('stores the body as the value and non-standard headers as message headers (Basic auth)', async () => {
    const res = await api('/webhook?topic=hooks', {
      raw: '{"event":"paid"}',
      headers: { 'content-type': 'application/json', 'X-Signature': 'sig-1', 'Stripe-Event': 'charge', 'user-agent': 'curl/8' },
    });
    expect(res.status).toBe(200);
    const { offset } = res.body as { offset: number };
    expect(res.body).toMatchObject({ topic: 'hooks', partition: 0 });
    const fetched = (await api('/fetch', { body: { topic: 'hooks', partition: 0, offset } })).body as Array<{ value: string; headers: unknown[] }>;
    expect(fetched[0]!.value).toBe('{"event":"paid"}');
    expect(fetched[0]!.headers).toEqual(
      expect.arrayContaining([
        { key: 'X-Signature', value: 'sig-1' },
        { key: 'Stripe-Event', value: 'charge' },
      ]),
    );
    expect(fetched[0]!.headers).toHaveLength(2);
  });

  it('takes credentials as user and pass query parameters, and refuses wrong ones', async () => {
    const q = `user=${encodeURIComponent(acme.username)}&pass=${encodeURIComponent(acme.password)}`;
    const ok = await api(`/webhook?topic=hooks&${q}`, { raw: 'via query', as: null });
    expect(ok.status).toBe(200);
    const bad = await api(`/webhook?topic=hooks&user=${encodeURIComponent(acme.username)}&pass=nope`, { raw: 'x', as: null });
    expect(bad).toMatchObject({ status: 401, body: { error: expect.stringContaining('Unauthorized'), status: 401 } });
    // Query credentials are for the webhook only.
    expect((await api(`/topics?${q}`, { as: null })).status).toBe(401);
    expect((await api('/webhook', { raw: 'x' })).status).toBe(400);
  });
});

describe('errors', () => {
  const cases: Array<[string, () => ReturnType<typeof call>, number, RegExp]> = [
    ['missing credentials', () => api('/topics', { as: null }), 401, /Unauthorized/],
    ['a wrong password', () => api('/topics', { as: { ...acme, password: 'wrong' } }), 401, /Unauthorized/],
    ['the right password with another user name', () => api('/topics', { as: { ...acme, username: 'someone' } }), 401, /Unauthorized/],
    ['an unknown topic', () => api('/produce', { body: { topic: 'nope', value: 'v' } }), 404, /Topic 'nope' does not exist/],
    ['another tenant’s topic name with a prefix', () => api('/produce', { body: { topic: 'restash.other.events.orders', value: 'v' } }), 404, /does not exist/],
    ['a body that is not JSON', () => api('/produce', { raw: '{"topic":' }), 400, /not valid JSON/],
    ['a message without value', () => api('/produce', { body: { topic: 'orders' } }), 400, /value is required/],
    ['a non-string value', () => api('/produce', { body: { topic: 'orders', value: 5 } }), 400, /value must be a string/],
    ['a partition the topic lacks', () => api('/produce', { body: { topic: 'wide', value: 'v', partition: 2 } }), 400, /has 2 partition\(s\)/],
    ['a negative offset', () => api('/fetch', { body: { topic: 'orders', partition: 0, offset: -1 } }), 400, /offset must be an integer/],
    ['a fetch naming nothing', () => api('/fetch', { body: {} }), 400, /topicPartitionOffsets/],
    ['bad headers in a message', () => api('/produce', { body: { topic: 'orders', value: 'v', headers: { a: 'b' } } }), 400, /headers must be an array/],
    ['an unknown endpoint', () => api('/nothing-here'), 404, /not an endpoint/],
    ['a wrong method', () => api('/topics', { method: 'DELETE' }), 405, /Method DELETE is not allowed on \/topics/],
    ['a method the endpoint does not take', () => api('/fetch', { method: 'PUT' }), 405, /Method PUT is not allowed on \/fetch/],
    ['a method no route takes', () => api('/topics', { method: 'PROPFIND' }), 405, /method PROPFIND is not allowed: use GET, HEAD, POST, PUT, DELETE/],
    ['a bad auto-commit header', () => api('/consume/g/i/orders', { method: 'GET', headers: { 'Stream-Enable-Auto-Commit': 'maybe' } }), 400, /true or false/],
    ['a bad offset-reset header', () => api('/consume/g/i/orders', { method: 'GET', headers: { 'Kafka-Auto-Offset-Reset': 'oldest' } }), 400, /earliest, latest or none/],
    ['a commit for an unknown instance', () => api(`/commit/${randomUUID()}/x`, { method: 'POST' }), 404, /not found/],
    ['deleting an unknown instance', () => api(`/delete-consumer/${randomUUID()}/x`, { method: 'POST' }), 404, /not found/],
    ['a bad offsets timestamp', () => api('/offsets/yesterday', { body: [{ topic: 'orders', partition: 0 }] }), 400, /earliest or latest/],
    ['a timestamp more than an hour ahead', () => api('/produce', { body: { topic: 'orders', value: 'v', timestamp: Date.now() + 2 * 3_600_000 } }), 400, /message\.timestamp \d+ is more than an hour in the future/],
    ['offsets with timeout=0', () => api('/offsets/latest?timeout=0', { body: [{ topic: 'orders', partition: 0 }] }), 400, /timeout must be an integer from 100/],
    ['committed with a negative timeout', () => api('/committed/g/i?timeout=-1', { body: [{ topic: 'orders', partition: 0 }] }), 400, /timeout must be an integer/],
    ['consume with a timeout that is not a number', () => api('/consume/g/i/orders?timeout=soon', { method: 'GET' }), 400, /timeout must be an integer/],
    ['a body over the cluster limit', () => api('/produce', { body: { topic: 'orders', value: 'x'.repeat(70_000) } }), 413, /too large/],
  ];
  it.each(cases)('%s', async (_name, request, status, message) => {
    const res = await request();
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ error: expect.stringMatching(message), status });
  });

  it('names exactly the methods of the endpoint in the Allow of a 405, whatever the method; another path is 404', async () => {
    expect((await api('/topics', { method: 'DELETE' })).headers.get('allow')).toBe('GET');
    expect((await api('/delete-consumer/g/i', { method: 'GET' })).headers.get('allow')).toBe('POST, DELETE');
    for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD']) {
      const res = await api('/fetch', { method, raw: method === 'HEAD' ? undefined : '{}' });
      expect([method, res.status, res.headers.get('allow')]).toEqual([method, 405, 'GET, POST']);
    }
    expect((await api('/topics', { method: 'PUT' })).headers.get('allow')).toBe('GET');
    expect((await api('/produce/orders/x', { method: 'PATCH' })).headers.get('allow')).toBe('GET, POST');
    expect((await api('/nothing-here', { method: 'PUT' })).status).toBe(404);
  });

  it('writes nothing of a batch with one timestamp over an hour ahead; accepts any timestamp up to an hour ahead, old ones too', async () => {
    const latest = async () => ((await api('/offsets/latest', { body: [{ topic: 'solo', partition: 0 }] })).body as Array<{ offset: number }>)[0]?.offset;
    const before = await latest();
    const batch = [{ topic: 'solo', value: 'fine' }, { topic: 'solo', value: 'late', timestamp: Date.now() + 61 * 60_000 }];
    expect(await api('/produce', { body: batch })).toMatchObject({ status: 400, body: { error: expect.stringMatching(/message\[1\]\.timestamp/) } });
    expect(await latest()).toBe(before);
    const soon = Date.now() + 59 * 60_000;
    // One request each: timestamps of one partition's messages in one request lie within 2^31-1 ms of each other.
    for (const [value, timestamp] of [['soon', soon], ['old', 1000]] as const) {
      const accepted = await api('/produce', { body: [{ topic: 'solo', value, timestamp }] });
      expect(accepted.status).toBe(200);
      const [{ offset, timestamp: answered }] = accepted.body as Array<{ offset: number; timestamp: number }>;
      expect(answered).toBe(timestamp);
      const [stored] = (await api('/fetch', { body: { topic: 'solo', partition: 0, offset, timeout: 0 } })).body as Array<{ timestamp: number }>;
      expect(stored!.timestamp).toBe(timestamp);
    }
  });

  it('answers fetch and consume with timeout 0 at once, and offsets with the smallest timeout', async () => {
    const { offset } = (await produce('solo', ['now']))[0]!;
    const fetched = await api('/fetch', { body: { topic: 'solo', partition: 0, offset, timeout: 0 } });
    expect(fetched.status).toBe(200);
    const group = randomUUID();
    expect((await api(`/consume/${group}/i/solo?timeout=0`, { method: 'GET' })).status).toBe(200);
    await api(`/delete-consumer/${group}/i`, { method: 'DELETE' });
    expect((await api('/offsets/earliest?timeout=100', { body: [{ topic: 'solo', partition: 0 }] })).status).toBe(200);
  });

  it('answers what the broker itself refuses as a client error: a timestamp past the topic’s limit 400, a message too large 413', async () => {
    const strict = stack.credentials('strict', 'events');
    expect((await api('/produce', { body: { topic: 's', value: 'created' }, as: strict })).status).toBe(200);
    const admin = new Kafka({ brokers: stack.kafka.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: `${streamPrefix('strict', 'events')}s`,
          configEntries: [
            { name: 'message.timestamp.after.max.ms', value: '1000' },
            { name: 'max.message.bytes', value: '300' },
          ],
        },
      ],
    });
    await admin.disconnect();
    await eventually(async () => {
      const res = await api('/produce', { body: { topic: 's', value: 'v', timestamp: Date.now() + 10 * 60_000 }, as: strict });
      expect(res).toMatchObject({ status: 400, body: { error: expect.stringMatching(/broker refused a message \(INVALID_TIMESTAMP\)/), status: 400 } });
      expect(JSON.stringify(res.body)).not.toContain('restash.');
    }, 15_000, 200);
    // The gateway may still hold the topic's earlier limit (read at the first produce): then the broker refuses the batch.
    const large = await api('/produce', { body: { topic: 's', value: 'x'.repeat(1000) }, as: strict });
    expect(large).toMatchObject({ status: 413, body: { error: expect.stringMatching(/MESSAGE_TOO_LARGE|max\.message\.bytes of 300/), status: 413 } });
    // After a refusal it reads the limit again.
    const again = await api('/produce', { body: { topic: 's', value: 'x'.repeat(1000) }, as: strict });
    expect(again).toMatchObject({ status: 413, body: { error: expect.stringMatching(/topic 's' make a record batch of \d+ bytes, more than the topic's max\.message\.bytes of 300; nothing was written/), status: 413 } });
  });

  it('refuses produce and webhook with read-only credentials but lets them read', async () => {
    const readonly = stack.credentials('acme', 'events', 'readonly');
    expect((await api('/produce', { body: { topic: 'orders', value: 'v' }, as: readonly })).status).toBe(403);
    expect((await api('/webhook?topic=hooks', { raw: 'v', as: readonly })).status).toBe(403);
    expect((await api('/topics', { as: readonly })).body).toEqual({ orders: 1, wide: 2, hooks: 1, solo: 1 });
  });

  it('refuses reset none for a group with no committed offset, and accepts it once one exists', async () => {
    const group = randomUUID();
    const none = { 'Stream-Auto-Offset-Reset': 'none' };
    const refused = await api(`/consume/${group}/i1/orders`, { method: 'GET', headers: none });
    expect(refused).toMatchObject({ status: 400, body: { error: expect.stringMatching(/No committed offset for orders-0/) } });
    // Commit an offset through another instance of the group, then reset none works.
    expect((await api(`/consume/${group}/i2/orders?timeout=200`, { method: 'GET', headers: { 'Stream-Auto-Offset-Reset': 'earliest' } })).status).toBe(200);
    expect((await api(`/commit/${group}/i2`, { body: { topic: 'orders', partition: 0, offset: 0 } })).status).toBe(200);
    await api(`/delete-consumer/${group}/i2`, { method: 'DELETE' });
    const accepted = await api(`/consume/${group}/i1/orders`, { method: 'GET', headers: none });
    expect(accepted.status).toBe(200);
    await api(`/delete-consumer/${group}/i1`, { method: 'DELETE' });
  });

  it('keeps at most as many instances as the cluster has partitions', async () => {
    const group = randomUUID();
    // acme/events has 5 partitions in all; other tests may hold a few instances, so open until refused.
    const opened: string[] = [];
    let refused: Awaited<ReturnType<typeof call>> | undefined;
    for (let i = 0; i < 6 && !refused; i++) {
      const res = await api(`/consume/${group}/i${i}/solo?timeout=0`, { method: 'GET' });
      if (res.status === 200) opened.push(`i${i}`);
      else refused = res;
    }
    expect(refused).toMatchObject({ status: 400, body: { error: expect.stringMatching(/at most 5 consumer instances/) } });
    for (const name of opened) await api(`/delete-consumer/${group}/${name}`, { method: 'DELETE' });
  });
});

describe('consumer groups', () => {
  it('buffers at most CONSUMER_MAX_BUFFERED_BYTES (here 256 KiB) for an instance, plus one batch, and delivers the rest in order later', async () => {
    const big = stack.credentials('big', 'events');
    const values = Array.from({ length: 20 }, (_, i) => `${String(i).padStart(2, '0')}${'v'.repeat(100_000)}`);
    // One batch per message: one request each.
    for (const value of values) expect((await api('/produce', { as: big, body: { topic: 'wide', value } })).status).toBe(200);
    const group = randomUUID();
    const path = `/consume/${group}/i/wide?timeout=0`;
    const headers = { 'Stream-Auto-Offset-Reset': 'earliest' };
    expect((await api(path, { as: big, method: 'GET', headers })).status).toBe(200);
    // Time for the instance to fetch as far as its buffer lets it.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const seen: string[] = [];
    const first = (await api(path, { as: big, method: 'GET' })).body as Array<{ value: string }>;
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThanOrEqual(4);
    seen.push(...first.map((m) => m.value));
    await eventually(async () => {
      seen.push(...((await api(`/consume/${group}/i/wide?timeout=500`, { as: big, method: 'GET' })).body as Array<{ value: string }>).map((m) => m.value));
      expect(seen.length).toBe(20);
    }, 20_000);
    expect(seen.map((v) => v.slice(0, 2))).toEqual(values.map((v) => v.slice(0, 2)));
    await api(`/delete-consumer/${group}/i`, { as: big, method: 'DELETE' });
  });

  it('reads from the earliest offset with Stream-Auto-Offset-Reset and with Kafka-Auto-Offset-Reset', async () => {
    const values = [randomUUID(), randomUUID()];
    await produce('solo', values);
    for (const header of ['Stream-Auto-Offset-Reset', 'Kafka-Auto-Offset-Reset']) {
      const group = randomUUID();
      const seen = await consumeValues(`/consume/${group}/i/solo`, values, { [header]: 'earliest' });
      expect(seen).toEqual(expect.arrayContaining(values));
      await api(`/delete-consumer/${group}/i`, { method: 'DELETE' });
    }
  });

  it('with reset latest (the default) reads only what is produced after the instance joined', async () => {
    const group = randomUUID();
    await produce('solo', ['before']);
    expect((await api(`/consume/${group}/i/solo?timeout=200`, { method: 'GET' })).body).toEqual([]);
    const after = randomUUID();
    await produce('solo', [after]);
    expect(await consumeValues(`/consume/${group}/i/solo?timeout=500`, 1)).toEqual([after]);
    await api(`/delete-consumer/${group}/i`, { method: 'DELETE' });
  });

  it('splits a topic’s partitions between two instances of a group, each message going to one of them', async () => {
    const group = randomUUID();
    const headers = { 'Kafka-Auto-Offset-Reset': 'earliest', 'Kafka-Enable-Auto-Commit': 'false' };
    await api(`/consume/${group}/a/wide?timeout=0`, { method: 'GET', headers });
    await api(`/consume/${group}/b/wide?timeout=0`, { method: 'GET', headers });
    const assignments = await eventually(async () => {
      // Both instances keep polling so that the group settles.
      await Promise.all(['a', 'b'].map((i) => api(`/consume/${group}/${i}/wide?timeout=100`, { method: 'GET' })));
      const groups = (await api('/consumers')).body as Array<{ name: string; instances: Array<{ name: string; topics: Array<{ partitions: number[] }> }> }>;
      const instances = groups.find((g) => g.name === group)!.instances;
      const partitions = instances.map((i) => i.topics.flatMap((t) => t.partitions));
      expect(partitions.map((p) => p.length)).toEqual([1, 1]);
      return partitions;
    }, 30_000, 200);
    expect(assignments.flat().sort()).toEqual([0, 1]);

    const values = Array.from({ length: 20 }, (_, i) => `split-${group}-${i}`);
    await api('/produce', { body: values.map((value, i) => ({ topic: 'wide', value, partition: i % 2 })) });
    const byInstance = new Map<string, string[]>([['a', []], ['b', []]]);
    await eventually(async () => {
      for (const i of ['a', 'b']) {
        const res = await api(`/consume/${group}/${i}/wide?timeout=100`, { method: 'GET' });
        byInstance.get(i)!.push(...(res.body as Array<{ value: string }>).map((m) => m.value).filter((v) => v.startsWith(`split-${group}`)));
      }
      expect([...byInstance.get('a')!, ...byInstance.get('b')!].sort()).toEqual([...values].sort());
    }, 20_000, 50);
    expect(byInstance.get('a')!.length).toBe(10);
    expect(byInstance.get('b')!.length).toBe(10);
    for (const i of ['a', 'b']) await api(`/delete-consumer/${group}/${i}`, { method: 'DELETE' });
  });

  it('auto commit on commits what was returned; off commits nothing until asked', async () => {
    const first = (await produce('solo', ['c1', 'c2']))[0]!.offset;
    const committed = async (group: string) =>
      ((await api(`/committed/${group}/i`, { body: [{ topic: 'solo', partition: 0 }] })).body as Array<{ offset: number }>)[0]!.offset;

    const on = randomUUID();
    const onHeaders = { 'Stream-Auto-Offset-Reset': 'earliest', 'Stream-Auto-Commit-Interval': '200' };
    const seenOn = await consumeValues(`/consume/${on}/i/solo`, ['c1', 'c2'], onHeaders);
    expect(seenOn).toEqual(expect.arrayContaining(['c1', 'c2']));
    await eventually(async () => expect(await committed(on)).toBeGreaterThanOrEqual(first + 2), 10_000, 100);

    const off = randomUUID();
    const offHeaders = { 'Kafka-Auto-Offset-Reset': 'earliest', 'Kafka-Enable-Auto-Commit': 'false', 'Kafka-Auto-Commit-Interval': '200' };
    const returned = (await api(`/consume/${off}/i/solo?timeout=3000`, { method: 'GET', headers: offHeaders })).body as Array<{ offset: number }>;
    expect(returned.length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 600));
    expect(await committed(off)).toBe(-1);
    expect((await api(`/commit/${off}/i`, { method: 'POST' })).body).toEqual({ result: 'Success', status: 200 });
    expect(await committed(off)).toBe(returned.at(-1)!.offset + 1);
    for (const group of [on, off]) await api(`/delete-consumer/${group}/i`, { method: 'DELETE' });
  });

  it('keeps committed progress across a gateway restart and delivers the uncommitted messages again', async () => {
    const group = randomUUID();
    const headers = { 'Stream-Auto-Offset-Reset': 'latest', 'Stream-Enable-Auto-Commit': 'false' };
    expect((await api(`/consume/${group}/i/orders?timeout=200`, { method: 'GET', headers })).status).toBe(200);
    const values = Array.from({ length: 10 }, (_, i) => `r-${group}-${i}`);
    await produce('orders', values);
    const firstHalf: Array<{ value: string; offset: number }> = [];
    await eventually(async () => {
      firstHalf.push(...((await api(`/consume/${group}/i/orders?timeout=200`, { method: 'GET' })).body as Array<{ value: string; offset: number }>));
      expect(firstHalf.length).toBe(10);
    }, 15_000, 50);
    // The client has processed the first 4 and commits them, then the gateway goes away mid-work.
    expect((await api(`/commit/${group}/i`, { body: { topic: 'orders', partition: 0, offset: firstHalf[4]!.offset } })).status).toBe(200);
    await stack.restartGateway();

    const again = await consumeValues(`/consume/${group}/i/orders?timeout=500`, 6, headers);
    expect(again).toEqual(values.slice(4));
    await api(`/delete-consumer/${group}/i`, { method: 'DELETE' });
  });

  it('loses nothing when the gateway is killed (SIGKILL) mid-work: committed progress stays, the rest comes again', async () => {
    const gateway = await gatewayProcess(stack);
    await gateway.start();
    try {
      const group = randomUUID();
      const headers = { authorization: basicAuth(acme), 'Kafka-Auto-Offset-Reset': 'earliest', 'Kafka-Enable-Auto-Commit': 'false' };
      const consume = async () => (await call(`${gateway.url}/consume/${group}/i/wide?timeout=300`, { method: 'GET', headers })).body as Array<{ value: string; partition: number; offset: number }>;
      const values = Array.from({ length: 40 }, (_, i) => `k-${group}-${i}`);
      await produce('wide', values);
      const before: Array<{ value: string; partition: number; offset: number }> = [];
      await eventually(async () => {
        before.push(...(await consume()).filter((m) => m.value.startsWith(`k-${group}`)));
        expect(before.length).toBe(40);
      }, 20_000, 50);
      // The client has processed the first half of what it got from each partition and commits that.
      const commits = [0, 1].map((partition) => {
        const mine = before.filter((m) => m.partition === partition);
        return { topic: 'wide', partition, offset: mine[Math.floor(mine.length / 2)]!.offset };
      });
      expect((await call(`${gateway.url}/commit/${group}/i`, { body: commits, headers })).status).toBe(200);
      const processed = before.filter((m) => m.offset < commits[m.partition]!.offset).map((m) => m.value);
      await gateway.kill();

      await gateway.start();
      const after: string[] = [];
      await eventually(async () => {
        after.push(...(await consume()).map((m) => m.value).filter((v) => v.startsWith(`k-${group}`)));
        expect(new Set([...processed, ...after]).size).toBe(40);
      }, 30_000, 50);
      const lost = values.filter((v) => !processed.includes(v) && !after.includes(v));
      const redelivered = after.filter((v) => processed.includes(v));
      expect({ lost: lost.length, redeliveredCommitted: redelivered.length, deliveredAgain: after.length }).toEqual({
        lost: 0,
        redeliveredCommitted: 0,
        deliveredAgain: 40 - processed.length,
      });
    } finally {
      await gateway.stop();
    }
  });

  it('keeps tenants apart: the same topic and group names reach different data', async () => {
    const other = stack.credentials('other', 'events');
    const mine = randomUUID();
    await produce('orders', [mine]);
    const theirs = (await api('/produce', { body: { topic: 'orders', value: 'theirs' }, as: other })).body as Array<{ offset: number }>;
    const fetched = (await api('/fetch', { body: { topic: 'orders', partition: 0, offset: theirs[0]!.offset }, as: other })).body as Array<{ value: string }>;
    expect(fetched.map((m) => m.value)).toEqual(['theirs']);
    expect((await api('/topics', { as: other })).body).toEqual({ orders: 1 });
    expect((await api('/consumers', { as: other })).body).toEqual([]);
  });
});

describe('fetch between tenants', () => {
  /** The offset after the last message of a partition. */
  async function end(topic: string, as: TestCredentials = acme): Promise<number> {
    const res = await api('/offsets/latest', { body: [{ topic, partition: 0 }], as });
    return (res.body as Array<{ offset: number }>)[0]!.offset;
  }

  it("answers a fetch at once while another tenant's (and the same tenant's) fetches wait for data, and those still answer when data comes", async () => {
    const other = stack.credentials('other', 'events');
    await produce('solo', ['w']);
    const [solo, orders] = [await end('solo'), await end('orders', other)];
    const waiting = [1, 2, 3].map(() => api('/fetch', { body: { topic: 'solo', partition: 0, offset: solo, timeout: 4000 } }));
    await new Promise((resolve) => setTimeout(resolve, 300)); // the waiting fetches are at the broker
    for (const [as, topic, offset] of [[other, 'orders', orders], [acme, 'solo', solo]] as const) {
      const started = Date.now();
      const res = await api('/fetch', { body: { topic, partition: 0, offset, timeout: 0 }, as });
      expect(res).toMatchObject({ status: 200, body: [] });
      expect(Date.now() - started).toBeLessThan(1500);
    }
    const started = Date.now();
    await produce('solo', ['came']);
    for (const res of await Promise.all(waiting)) expect((res.body as Array<{ value: string }>).map((m) => m.value)).toEqual(['came']);
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it('answers 200 [] for a position past the end of the log every time, whichever tenant asks, and fetches on after it', async () => {
    const other = stack.credentials('other', 'events');
    const [solo, orders] = [await end('solo'), await end('orders', other)];
    for (const [as, topic, offset] of [[acme, 'solo', solo + 5], [acme, 'solo', solo + 5], [other, 'orders', orders + 1], [acme, 'solo', solo + 1]] as const) {
      expect(await api('/fetch', { body: { topic, partition: 0, offset, timeout: 0 }, as })).toMatchObject({ status: 200, body: [] });
    }
    const mixed = await api('/fetch', { body: { topicPartitionOffsets: [{ topic: 'solo', partition: 0, offset: solo - 1 }, { topic: 'wide', partition: 1, offset: 1_000_000 }], timeout: 0 } });
    expect(mixed.status).toBe(200);
    expect((mixed.body as Array<{ offset: number }>).map((m) => m.offset)).toEqual([solo - 1]);
  });
});

describe('produce: all or nothing', () => {
  const DAY = 86_400_000;
  const big = () => stack.credentials('big', 'events');
  async function latest(topic: string, partition: number, as: TestCredentials = acme): Promise<number> {
    const res = await api('/offsets/latest', { body: [{ topic, partition }], as });
    return (res.body as Array<{ offset: number }>)[0]!.offset;
  }

  it('refuses, writing nothing, messages to one partition whose timestamps lie more than 2^31-1 ms from the first one’s, and stores them right apart', async () => {
    const before = await latest('wide', 0);
    const old = Date.now() - 30 * DAY;
    const refused = await api('/produce/wide', { body: [{ value: 'backfill', partition: 0, timestamp: old }, { value: 'fresh', partition: 0 }] });
    expect(refused).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^Illegal argument: message\[1\]\.timestamp \d+ is more than 2147483647 ms from \d+, the timestamp of the first message to partition 0 of topic 'wide' \(message\[0\]\)/), status: 400 },
    });
    expect(await latest('wide', 0)).toBe(before);

    // On different partitions, or in separate requests, each message keeps its own timestamp.
    const apart = await api('/produce/wide', { body: [{ value: 'backfill', partition: 0, timestamp: old }, { value: 'fresh', partition: 1 }] });
    expect(apart.status).toBe(200);
    const near = Date.now() - 24 * DAY;
    const within = await api('/produce/wide', { body: [{ value: 'a', partition: 0, timestamp: near }, { value: 'b', partition: 0 }] });
    expect(within.status).toBe(200);
    const [backfill, fresh] = apart.body as Array<{ partition: number; offset: number; timestamp: number }>;
    const [a, b] = within.body as Array<{ offset: number; timestamp: number }>;
    const stored = async (partition: number, offset: number) =>
      ((await api('/fetch', { body: { topic: 'wide', partition, offset, timeout: 0 } })).body as Array<{ offset: number; timestamp: number }>).find((m) => m.offset === offset)?.timestamp;
    expect(await stored(0, backfill!.offset)).toBe(old);
    expect(await stored(1, fresh!.offset)).toBe(fresh!.timestamp);
    expect(await stored(0, a!.offset)).toBe(near);
    expect(await stored(0, b!.offset)).toBe(b!.timestamp);
    expect(b!.timestamp).toBeGreaterThan(Date.now() - 60_000);
  });

  it("refuses with 413, writing nothing, a request whose batch for one partition is over the broker's max.message.bytes, to the byte", async () => {
    // A batch of one record of n value bytes (no key, no headers) takes n + 72 bytes; Kafka's default limit is 1 MiB + 12.
    const limit = 1024 * 1024 + 12;
    const fits = await api('/produce', { body: { topic: 'two', value: 'x'.repeat(limit - 72), partition: 1 }, as: big() });
    expect(fits.status).toBe(200);
    const before = [await latest('two', 0, big()), await latest('two', 1, big())];
    const refused = await api('/produce', {
      body: [{ topic: 'two', value: 'small', partition: 0 }, { topic: 'two', value: 'x'.repeat(limit - 71), partition: 1 }],
      as: big(),
    });
    expect(refused).toEqual({
      status: 413,
      headers: expect.anything(),
      body: {
        error: `Request too large: the 1 message(s) to partition 1 of topic 'two' make a record batch of ${limit + 1} bytes, more than the topic's max.message.bytes of ${limit}; nothing was written`,
        status: 413,
      },
    });
    expect([await latest('two', 0, big()), await latest('two', 1, big())]).toEqual(before);
  });
});

describe('consumer group and instance ids', () => {
  it('refuses a group id with whitespace on every group endpoint with 400 naming the rule; an instance id may hold any text', async () => {
    const requests = [
      api('/consume/a%20b/i/solo?timeout=0', { method: 'GET' }),
      api('/consume/a%09b/i', { body: { topic: 'solo', timeout: 0 } }),
      api('/commit/a%20b/i', { method: 'POST' }),
      api('/committed/a%20b/i', { body: [{ topic: 'solo', partition: 0 }] }),
      api('/delete-consumer/a%0Ab/i', { method: 'DELETE' }),
    ];
    for (const res of await Promise.all(requests)) {
      expect(res).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^Illegal argument: consumer group id "a( |\\t|\\n)b" must not contain whitespace/), status: 400 } });
    }
    const group = randomUUID();
    expect((await api(`/consume/${group}/one%20two/solo?timeout=0`, { method: 'GET' })).status).toBe(200);
    expect((await api('/consumers')).body).toEqual(expect.arrayContaining([{ name: group, instances: [expect.objectContaining({ name: 'one two' })] }]));
    expect((await api(`/delete-consumer/${group}/one%20two`, { method: 'DELETE' })).status).toBe(200);
  });

  it('answers committed for a partition the topic does not have with 400, as fetch, commit and offsets do', async () => {
    const res = await api('/committed/g/i', { body: [{ topic: 'solo', partition: 0 }, { topic: 'wide', partition: 2 }] });
    expect(res).toMatchObject({ status: 400, body: { error: "Illegal argument: topic 'wide' has 2 partition(s), there is no partition 2", status: 400 } });
  });
});

describe('produce from the path', () => {
  it('takes the rest of the path as the message, slashes and a trailing slash included', async () => {
    for (const [path, value] of [['/produce/orders/msg/', 'msg/'], ['/produce/orders/a/b%2Fc/', 'a/b/c/'], ['/produce/orders/x%20y', 'x y'], ['/produce/orders//', '/']] as const) {
      const res = await api(path, { method: 'GET' });
      expect([path, res.status]).toEqual([path, 200]);
      const { offset } = res.body as { offset: number };
      const [message] = (await api('/fetch', { body: { topic: 'orders', partition: 0, offset, timeout: 0 } })).body as Array<{ value: string }>;
      expect([path, message?.value]).toEqual([path, value]);
    }
    // A trailing slash after the topic alone is the same endpoint: the body holds the messages.
    expect(await api('/produce/orders/', { body: { value: 'from the body' } })).toMatchObject({ status: 200, body: [expect.objectContaining({ topic: 'orders' })] });
  });
});

describe('webhook header values', () => {
  it('reads header values as UTF-8 text', async () => {
    const bytes = (text: string) => Buffer.from(text, 'utf8').toString('latin1'); // fetch sends each character as one byte
    const res = await api('/webhook?topic=hooks', { raw: 'v', headers: { 'X-Val': bytes('ünï ✓'), 'X-Plain': 'ascii' } });
    expect(res.status).toBe(200);
    const { offset } = res.body as { offset: number };
    const [message] = (await api('/fetch', { body: { topic: 'hooks', partition: 0, offset, timeout: 0 } })).body as Array<{ headers: unknown[] }>;
    expect(message!.headers).toEqual([
      { key: 'X-Val', value: 'ünï ✓' },
      { key: 'X-Plain', value: 'ascii' },
    ]);
  });
});
