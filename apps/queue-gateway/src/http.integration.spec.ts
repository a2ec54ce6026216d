import { Client, QstashDailyRatelimitError } from '@upstash/qstash';
import { Redis } from 'ioredis';
import { platformOwner, registryKeys } from '@restash/shared/data-access-registry';
import { serverRunId } from '@restash/shared/data-access-redis';
import { call, eventually } from '@restash/shared/util-testing';
import { type QueueStack, startQueueStack } from './testing/queue-stack';
import { type Sink, atLeast, nonEmpty, startSink } from './testing/sink';

/** Raw HTTP against queue-gateway + queue-worker: error shapes, limits, tenancy, the SSRF guard and a worker crash. */
describe('queue API over raw HTTP', () => {
  let stack: QueueStack;
  let sink: Sink;
  let token: string;

  beforeAll(async () => {
    [stack, sink] = await Promise.all([
      startQueueStack({
        acme: [{ name: 'main', maxRequestBytes: 1024, retries: { default: 3, max: 5 } }, { name: 'limited', dailyRequests: 2 }],
        other: [{ name: 'main' }],
      }),
      startSink(),
    ]);
    token = stack.secrets('acme', 'main').token;
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await sink?.close();
  });

  const publish = (destination: string, init: { token?: string; raw?: string; headers?: Record<string, string> } = {}) =>
    call(`${stack.url}/v2/publish/${destination}`, { method: 'POST', token, raw: 'body', ...init });

  it("claims the queue's Redis for the platform in the registry, so that no KV database is served from it", async () => {
    const registry = new Redis(stack.control.url);
    const direct = new Redis(stack.queueRedis.url);
    try {
      const runId = await serverRunId(direct);
      await eventually(async () => expect(await registry.get(registryKeys.kvServer(runId))).toBe(platformOwner('queue')));
    } finally {
      registry.disconnect();
      direct.disconnect();
    }
  });

  it('answers the daily limit with 429 and RateLimit-* headers, which the SDK reads as QstashDailyRatelimitError', async () => {
    const client = new Client({ baseUrl: stack.url, token: stack.secrets('acme', 'limited').token });
    await client.publish({ url: `${sink.url}/limited`, body: '1' });
    await client.publish({ url: `${sink.url}/limited`, body: '2' });
    const error = await client.publish({ url: `${sink.url}/limited`, body: '3' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QstashDailyRatelimitError);
    const { limit, remaining, reset } = error as QstashDailyRatelimitError;
    const midnight = Math.ceil(Date.now() / 86_400_000) * 86_400;
    expect({ limit, remaining, reset: Number(reset) }).toEqual({ limit: '2', remaining: '0', reset: midnight });
  }, 20_000);

  it('keeps the destination raw: its // and its query string reach the destination', async () => {
    const response = await publish(`${sink.url}/raw//path?x=1&y=a%20b`);
    expect(response.status).toBe(201);
    const [request] = await eventually(() => nonEmpty(sink.requests.filter((r) => r.path.startsWith('/raw'))), 15_000);
    expect(request.path).toBe('/raw//path?x=1&y=a%20b');
  }, 20_000);

  it('takes the token as the qstash_token query parameter too, and keeps it out of the destination', async () => {
    const response = await call(`${stack.url}/v2/publish/${sink.url}/query-token?keep=1&qstash_token=${token}`, { method: 'POST', raw: 'x' });
    expect(response.status).toBe(201);
    const [request] = await eventually(() => nonEmpty(sink.on('/query-token')), 15_000);
    expect(request.path).toBe('/query-token?keep=1');
  }, 20_000);

  it.each([
    ['no token', undefined],
    ['an unknown token', 'not-a-token'],
  ])('answers %s with 401 and an {error} body', async (_what, bad) => {
    const response = await call(`${stack.url}/v2/publish/${sink.url}/x`, { method: 'POST', raw: 'x', ...(bad ? { token: bad } : {}) });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: expect.any(String) });
  });

  it.each([
    ['a malformed destination', 'not a url', {}],
    ['a destination that is not http(s)', 'ftp://example.com/file', {}],
    ['an unknown method', 'http://127.0.0.1:1/x', { 'Upstash-Method': 'FETCH' }],
    ['a malformed delay', 'http://127.0.0.1:1/x', { 'Upstash-Delay': 'soon' }],
    ['a malformed not-before', 'http://127.0.0.1:1/x', { 'Upstash-Not-Before': 'tomorrow' }],
    ['negative retries', 'http://127.0.0.1:1/x', { 'Upstash-Retries': '-1' }],
    ['more retries than the project allows', 'http://127.0.0.1:1/x', { 'Upstash-Retries': '6' }],
    ['a retry delay that is not arithmetic', 'http://127.0.0.1:1/x', { 'Upstash-Retry-Delay': 'process.exit(1)' }],
    ['a malformed timeout', 'http://127.0.0.1:1/x', { 'Upstash-Timeout': '10 parsecs' }],
    ['a malformed callback', 'http://127.0.0.1:1/x', { 'Upstash-Callback': '/relative' }],
    ['a malformed failure callback', 'http://127.0.0.1:1/x', { 'Service-Failure-Callback': 'mailto:x@example.com' }],
    ['a destination with one slash, which the URL parser would repair', 'http:/127.0.0.1:1/x', {}],
    ['a destination with no slash, which the URL parser would repair', 'http:127.0.0.1:1/x', {}],
    ['a callback holding a TAB, which the URL parser would drop', 'http://127.0.0.1:1/x', { 'Upstash-Callback': 'http://127.0.0.1:1/a\tb' }],
  ])('refuses %s with 400 and writes nothing', async (_what, destination, headers) => {
    const before = await call(`${stack.url}/v2/events`, { token });
    const response = await publish(destination, { headers });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: expect.any(String) });
    const after = await call(`${stack.url}/v2/events`, { token });
    expect((after.body as { events: unknown[] }).events).toHaveLength((before.body as { events: unknown[] }).events.length);
  });

  it('refuses destinations and endpoint URLs holding CR or LF (URL parsing drops them) in batches, URL groups and schedules, writing nothing', async () => {
    const before = (await call(`${stack.url}/v2/events?count=1000`, { token })).body as { events: unknown[] };
    const crlf = 'http://127.0.0.1:19400/crlf4\r\nX: y';
    const batch = await call(`${stack.url}/v2/batch`, {
      method: 'POST',
      token,
      body: [{ destination: `${sink.url}/fine`, headers: {} }, { destination: crlf, headers: { 'Content-Type': 'text/plain' }, body: 'b' }],
    });
    expect([batch.status, batch.body]).toEqual([400, { error: expect.stringMatching(/^invalid destination url: .*control characters/) }]);
    const group = await call(`${stack.url}/v2/topics/crlf/endpoints`, { method: 'POST', token, body: { endpoints: [{ url: crlf }] } });
    expect([group.status, group.body]).toEqual([400, { error: expect.stringMatching(/^invalid endpoints\[0\]\.url: /) }]);
    expect((await call(`${stack.url}/v2/topics/crlf`, { token })).status).toBe(404);
    const schedule = await call(`${stack.url}/v2/schedules/http:/127.0.0.1:1/x`, { method: 'POST', token, raw: '', headers: { 'Upstash-Cron': '* * * * *' } });
    expect([schedule.status, schedule.body]).toEqual([400, { error: expect.stringMatching(/^invalid destination url: /) }]);
    expect((await call(`${stack.url}/v2/schedules`, { token })).body).toEqual([]);
    const after = (await call(`${stack.url}/v2/events?count=1000`, { token })).body as { events: unknown[] };
    expect(after.events).toHaveLength(before.events.length);
  });

  it("reads the queue's own header values as UTF-8 and delivers forwarded ones as the bytes they were", async () => {
    // fetch sends each character of a header value as one byte: these strings put UTF-8 bytes on the wire, as curl does.
    const utf8 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
    const refused = await publish(`${sink.url}/utf8`, { headers: { 'Upstash-Delay': utf8('١٠s') } });
    expect([refused.status, refused.body]).toEqual([400, { error: 'invalid Upstash-Delay: "١٠s" (expected a duration such as 90s, 10m, 1d10h30m)' }]);

    const published = await publish(`${sink.url}/utf8`, {
      headers: { 'Upstash-Flow-Control-Key': utf8('clé-ü'), 'Upstash-Flow-Control-Value': 'parallelism=1', 'Upstash-Label': utf8('étiquette'), 'Upstash-Forward-X-Name': utf8('ü') },
    });
    expect(published.status).toBe(201);
    const { messageId } = published.body as { messageId: string };
    const message = (await call(`${stack.url}/v2/messages/${messageId}`, { token })).body;
    expect(message).toMatchObject({ flowControlKey: 'clé-ü', label: 'étiquette', labels: ['étiquette'] });
    expect((await call(`${stack.url}/v2/flowControl/${encodeURIComponent('clé-ü')}`, { token })).status).toBe(200);
    const [delivered] = await eventually(() => nonEmpty(sink.on('/utf8')), 15_000);
    expect(Buffer.from(String(delivered.headers['x-name']), 'latin1')).toEqual(Buffer.from('ü', 'utf8'));

    // The official SDK (Node's fetch) sends ü as the one byte 0xFC: still ü.
    const client = new Client({ baseUrl: stack.url, token });
    const viaSdk = await client.publish({ url: `${sink.url}/utf8-sdk`, body: 'x', delay: 600, flowControl: { key: 'sdk-ü', parallelism: 1 } });
    expect((await client.messages.get(viaSdk.messageId)).flowControlKey).toBe('sdk-ü');
    await client.messages.cancel(viaSdk.messageId);
  }, 20_000);

  it('refuses a body over the project limit with 413', async () => {
    const response = await publish(`${sink.url}/big`, { raw: 'x'.repeat(1025) });
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ error: expect.stringContaining('1024') });
  });

  it('answers unknown endpoints with 404 and wrong methods with 405', async () => {
    expect((await call(`${stack.url}/v2/nothing`, { token })).status).toBe(404);
    expect((await call(`${stack.url}/v1/publish/x`, { method: 'POST', token, raw: 'x' })).status).toBe(404);
    expect((await call(`${stack.url}/v2/keys`, { method: 'POST', token, raw: 'x' })).status).toBe(405);
    expect((await call(`${stack.url}/v2/messages/msg_unknown`, { token })).status).toBe(404);
  });

  it("answers each path's own 405 with the Allow of its endpoints, for every method, before any token is checked", async () => {
    const cases: Array<[string, string, string]> = [
      ['/v2/publish/https://example.com/x', 'GET', 'POST'],
      ['/v2/publish/https://example.com/x', 'PUT', 'POST'],
      ['/v2/publish/https://example.com/x', 'DELETE', 'POST'],
      ['/v2/publish/https://example.com/x', 'PATCH', 'POST'],
      ['/v2/publish/https://example.com/x', 'OPTIONS', 'POST'],
      ['/v2/dlq', 'PATCH', 'GET, DELETE'],
      ['/v2/dlq', 'PUT', 'GET, DELETE'],
      ['/v2/keys', 'OPTIONS', 'GET'],
      ['/v2/keys', 'HEAD', 'GET'],
    ];
    for (const [path, method, allow] of cases) {
      for (const auth of [token, 'not-a-token']) {
        const response = await call(`${stack.url}${path}`, { method, token: auth });
        expect(`${method} ${path}: ${response.status} ${response.headers.get('allow')}`).toBe(`${method} ${path}: 405 ${allow}`);
        if (method !== 'HEAD') expect(response.body).toEqual({ error: `Method ${method} is not allowed on ${path}; use ${allow.replace(', ', ' or ')}` });
      }
    }
    // A path that is no endpoint stays 404 whatever the method.
    for (const method of ['PUT', 'OPTIONS']) expect((await call(`${stack.url}/v2/nothing`, { method, token })).status).toBe(404);
  });

  it('gives read-only tokens the reads and refuses them every change', async () => {
    const readonly = stack.secrets('acme', 'main').readonlyToken;
    expect((await publish(`${sink.url}/ro`, { token: readonly })).status).toBe(403);
    expect((await call(`${stack.url}/v2/dlq`, { token: readonly })).status).toBe(200);
    expect((await call(`${stack.url}/v2/keys`, { token: readonly })).status).toBe(403);
    expect((await call(`${stack.url}/v2/messages/msg_x`, { method: 'DELETE', token: readonly })).status).toBe(403);
  });

  it('serves the signing keys to the project token', async () => {
    const { currentSigningKey, nextSigningKey } = stack.secrets('acme', 'main');
    expect((await call(`${stack.url}/v2/keys`, { token })).body).toEqual({ current: currentSigningKey, next: nextSigningKey });
  });

  it('keeps projects apart: another tenant cannot read, cancel or list a message', async () => {
    const other = stack.secrets('other', 'main').token;
    const { body } = await publish(`${sink.url}/isolated`, { headers: { 'Upstash-Delay': '60s' } });
    const { messageId } = body as { messageId: string };
    expect((await call(`${stack.url}/v2/messages/${messageId}`, { token: other })).status).toBe(404);
    expect((await call(`${stack.url}/v2/messages/${messageId}`, { method: 'DELETE', token: other })).status).toBe(404);
    const events = (await call(`${stack.url}/v2/events?messageIds=${messageId}`, { token: other })).body as { events: unknown[] };
    expect(events.events).toHaveLength(0);
    expect((await call(`${stack.url}/v2/messages/${messageId}`, { token })).status).toBe(200);
    expect((await call(`${stack.url}/v2/messages/${messageId}`, { method: 'DELETE', token })).body).toEqual({ cancelled: 1 });
  });

  it('answers a duplicate with 202 and the first message id', async () => {
    const headers = { 'Upstash-Deduplication-Id': 'same', 'Upstash-Delay': '60s' };
    const first = await publish(`${sink.url}/dup`, { headers });
    const second = await publish(`${sink.url}/dup`, { headers });
    expect(first.status).toBe(201);
    expect(second.status).toBe(202);
    expect(second.body).toMatchObject({ messageId: (first.body as { messageId: string }).messageId, deduplicated: true });
  });

  it('loses no message when the worker is killed with SIGKILL in the middle of deliveries', async () => {
    const total = 300;
    // Each answer takes 1 s, so with 100 deliveries in flight the kill lands while about 100 are under way.
    sink.answer('/crash', { status: 200, delayMs: 1000 });
    const published: string[] = [];
    for (let i = 0; i < total; i++) {
      const { status, body } = await publish(`${sink.url}/crash`, { raw: `m${i}` });
      expect(status).toBe(201);
      published.push((body as { messageId: string }).messageId);
    }
    await eventually(() => atLeast(sink.on('/crash'), 50), 20_000, 10);
    await stack.worker.kill();
    const atKill = sink.on('/crash').length;
    expect(atKill).toBeLessThan(total); // the kill came in the middle of the deliveries
    await stack.worker.start();
    const delivered = await eventually(() => {
      const ids = new Set(sink.on('/crash').map((r) => String(r.headers['upstash-message-id'])));
      if (ids.size < total) throw new Error(`${ids.size} of ${total} delivered`);
      return sink.on('/crash');
    }, 60_000, 100);
    const unique = new Set(delivered.map((r) => String(r.headers['upstash-message-id'])));
    const lost = published.filter((id) => !unique.has(id)).length;
    const duplicated = delivered.length - unique.size;
    process.stdout.write(`SIGKILL test: ${total} published, ${atKill} deliveries before the kill, ${lost} lost, ${duplicated} delivered twice\n`);
    expect(lost).toBe(0);
    // Only attempts under way at the kill can repeat: at most the worker's concurrency.
    expect(duplicated).toBeLessThanOrEqual(100);
  }, 120_000);
});

describe('the SSRF guard of queue-worker', () => {
  let stack: QueueStack;
  let sink: Sink;
  let token: string;

  beforeAll(async () => {
    // Only 127.0.0.1 is allowed: 127.0.0.2 is still loopback (no test connects off loopback) but not allowlisted.
    [stack, sink] = await Promise.all([startQueueStack({ acme: [{ name: 'main' }] }, { DESTINATION_ALLOWLIST: '127.0.0.1/32' }), startSink()]);
    token = stack.secrets('acme', 'main').token;
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await sink?.close();
  });

  const dlqOf = async (messageId: string) => {
    const { body } = await call(`${stack.url}/v2/dlq?messageId=${messageId}`, { token });
    return nonEmpty((body as { messages: Array<Record<string, unknown>> }).messages)[0];
  };

  it('refuses a destination whose address is not allowed, without connecting, and moves it to the DLQ', async () => {
    const port = new URL(sink.url).port;
    const { body } = await call(`${stack.url}/v2/publish/http://127.0.0.2:${port}/guarded`, {
      method: 'POST',
      token,
      raw: 'x',
      headers: { 'Upstash-Retries': '0' },
    });
    const entry = await eventually(() => dlqOf((body as { messageId: string }).messageId), 15_000);
    expect(entry.error).toMatch(/refused-address: loopback address 127\.0\.0\.2/);
    expect(sink.on('/guarded')).toHaveLength(0);
  }, 20_000);

  it('checks every redirect: an allowed destination redirecting to a refused address fails', async () => {
    const port = new URL(sink.url).port;
    sink.answer('/redirect', { status: 302, headers: { location: `http://127.0.0.2:${port}/target` } });
    const { body } = await call(`${stack.url}/v2/publish/${sink.url}/redirect`, { method: 'POST', token, raw: 'x', headers: { 'Upstash-Retries': '0' } });
    const entry = await eventually(() => dlqOf((body as { messageId: string }).messageId), 15_000);
    expect(entry.error).toMatch(/refused-address/);
    expect(sink.on('/redirect')).toHaveLength(1);
    expect(sink.on('/target')).toHaveLength(0);
  }, 20_000);
});
