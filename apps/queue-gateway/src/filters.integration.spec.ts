import { createHash } from 'node:crypto';
import { Client } from '@upstash/qstash';
import { eventually } from '@restash/shared/util-testing';
import { queueTestbed } from './testing/queue-testbed';
import { atLeast, nonEmpty } from './testing/sink';

const redacted = (text: string) => `REDACTED:${createHash('sha256').update(text).digest('hex')}`;

/**
 * Bulk cancel, DLQ and log filters, log states and `Upstash-Redact-Fields` (docs/queue.md, "Queue: endpoints") with the
 * official `@upstash/qstash` Client against queue-gateway + queue-worker on real Redis servers.
 */
describe('filters, log states and redaction with the official @upstash/qstash Client', () => {
  const bed = queueTestbed({ acme: [{ name: 'main' }], mallory: [{ name: 'main' }] });
  let client: Client;
  let mallory: Client;
  let token: string;

  beforeAll(() => {
    token = bed.stack.secrets('acme', 'main').token;
    client = bed.client();
    mallory = bed.client('mallory');
  });

  /** Publishes a message delivered in an hour (pending until cancelled). */
  const later = (c: Client, path: string, extra: Record<string, unknown> = {}) =>
    c.publishJSON({ url: `${bed.sink.url}${path}`, body: {}, delay: 3600, ...extra }) as Promise<{ messageId: string }>;
  const pending = async (ids: string[]) => {
    const states = await Promise.all(
      ids.map(async (id) => (await client.logs({ messageIds: [id] })).logs.some((l) => ['CANCELLED', 'CANCEL_REQUESTED'].includes(l.state as string))),
    );
    return ids.filter((_, i) => !states[i]);
  };

  it('cancels by each filter (OR within a key, AND across keys), never touching another tenant', async () => {
    const a = await later(client, '/c/a', { label: 'red' });
    const b = await later(client, '/c/b', { label: 'blue' });
    const c = await later(client, '/c/c', { label: 'red' });
    const other = await later(mallory, '/c/a', { label: 'red' });

    // AND across keys: label red and path /c/c → only c.
    await expect(client.messages.cancel({ filter: { label: 'red', path: '/c/c' } })).resolves.toEqual({ cancelled: 1 });
    expect(await pending([a.messageId, b.messageId, c.messageId])).toEqual([a.messageId, b.messageId]);
    // OR within a key: two URLs.
    await expect(client.messages.cancel({ filter: { url: [`${bed.sink.url}/c/a`, `${bed.sink.url}/c/b`] } })).resolves.toEqual({ cancelled: 2 });
    expect(await pending([a.messageId, b.messageId])).toEqual([]);
    // The other tenant's message with the same label and URL is still there.
    await expect(mallory.messages.get(other.messageId)).resolves.toMatchObject({ messageId: other.messageId });
    expect((await mallory.logs({ messageIds: [other.messageId] })).logs.map((l) => l.state)).toEqual(['CREATED']);
  });

  it('cancels by host, callerIp, dates and urlGroup; every match whatever count says; a count that is no whole number from 1 is a 400', async () => {
    await client.urlGroups.addEndpoints({ name: 'g', endpoints: [{ url: `${bed.sink.url}/g/1` }, { url: `${bed.sink.url}/g/2` }] });
    await client.publishJSON({ urlGroup: 'g', body: {}, delay: 3600 });
    await expect(client.messages.cancel({ filter: { urlGroup: 'g' } })).resolves.toEqual({ cancelled: 2 });

    const since = Date.now();
    const x = await later(client, '/h/x');
    await expect(client.messages.cancel({ filter: { host: 'other.example' } })).resolves.toEqual({ cancelled: 0 });
    await expect(client.messages.cancel({ filter: { callerIp: '203.0.113.1' } })).resolves.toEqual({ cancelled: 0 });
    await expect(client.messages.cancel({ filter: { toDate: since - 1, host: '127.0.0.1' } })).resolves.toEqual({ cancelled: 0 });
    await expect(client.messages.cancel({ filter: { fromDate: since, host: '127.0.0.1' } })).resolves.toEqual({ cancelled: 1 });
    expect(await pending([x.messageId])).toEqual([]);

    // More than the count=100 that @upstash/qstash 2.12 sends with every filter (and documents as ignored).
    await client.batchJSON(Array.from({ length: 130 }, () => ({ url: `${bed.sink.url}/all`, body: {}, delay: 3600 })));
    await client.batchJSON(Array.from({ length: 3 }, () => ({ url: `${bed.sink.url}/few`, body: {}, delay: 3600 })));
    const mine = await later(mallory, '/all');
    await expect(client.messages.cancel({ filter: { path: '/all' } })).resolves.toEqual({ cancelled: 130 });
    await expect(client.messages.cancel({ all: true, count: 2 })).resolves.toEqual({ cancelled: 3 });
    await expect(client.messages.cancel({ all: true, count: 1000 })).resolves.toEqual({ cancelled: 0 });
    await expect(mallory.messages.get(mine.messageId)).resolves.toMatchObject({ messageId: mine.messageId });

    for (const count of ['0', '-1', '1.5', 'x']) {
      const res = await fetch(`${bed.stack.url}/v2/messages?count=${count}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
      expect([count, res.status, ((await res.json()) as { error: string }).error]).toEqual([count, 400, expect.stringMatching(/^invalid count/)]);
    }
  });

  it('messages.delete, deleteMany and deleteAll (the deprecated SDK calls) cancel pending messages of the project only', async () => {
    const [a, b, c, d] = [await later(client, '/d/a'), await later(client, '/d/b'), await later(client, '/d/c'), await later(client, '/d/d')];
    const theirs = await later(mallory, '/d/a');
    await client.messages.delete(a.messageId);
    await expect(client.messages.deleteMany([b.messageId, c.messageId, theirs.messageId])).resolves.toBe(2);
    await expect(client.messages.deleteAll()).resolves.toBe(1);
    expect(await pending([a.messageId, b.messageId, c.messageId, d.messageId])).toEqual([]);
    await expect(mallory.messages.get(theirs.messageId)).resolves.toMatchObject({ messageId: theirs.messageId });
    // Its own deleteAll takes it (and what the earlier tests left pending there).
    await expect(mallory.messages.deleteAll()).resolves.toBeGreaterThanOrEqual(1);
    expect((await mallory.logs({ messageIds: [theirs.messageId] })).logs.map((l) => l.state)).toEqual(['CANCELLED', 'CREATED']);
  });

  it('takes bulk filters as a JSON body too (earlier SDK releases send them so): cancels only what they name', async () => {
    // What messages.deleteMany(ids) and messages.delete({label}) of earlier @upstash/qstash releases send.
    const bulk = (body: unknown, as: string = token) =>
      fetch(`${bed.stack.url}/v2/messages`, { method: 'DELETE', headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const [a, b, c] = [await later(client, '/j/a'), await later(client, '/j/b'), await later(client, '/j/c', { label: 'jay' })];
    const theirs = await later(mallory, '/j/a', { label: 'jay' });
    const answer = async (res: Response) => [res.status, await res.json()];
    await expect(bulk({ messageIds: [a.messageId, theirs.messageId] }).then(answer)).resolves.toEqual([200, { cancelled: 1 }]);
    expect(await pending([a.messageId, b.messageId, c.messageId])).toEqual([b.messageId, c.messageId]);
    await expect(bulk({ label: 'jay', fromDate: Date.now() - 60_000 }).then(answer)).resolves.toEqual([200, { cancelled: 1 }]);
    expect(await pending([b.messageId, c.messageId])).toEqual([b.messageId]);
    await expect(bulk({ label: { not: 'a string' } }).then(answer)).resolves.toEqual([400, { error: expect.stringMatching(/^invalid label/) }]);
    await expect(bulk('not an object').then(answer)).resolves.toEqual([400, { error: expect.stringMatching(/JSON object/) }]);
    expect(await pending([b.messageId])).toEqual([b.messageId]);
    await expect(mallory.messages.get(theirs.messageId)).resolves.toMatchObject({ messageId: theirs.messageId });
    await client.messages.cancel(b.messageId);
  });

  it('filters the DLQ by urlGroup, and deletes DLQ entries by filter', async () => {
    bed.sink.answer('/dg/1', { status: 500 });
    bed.sink.answer('/dg/2', { status: 500 });
    await client.urlGroups.addEndpoints({ name: 'dead', endpoints: [{ name: 'one', url: `${bed.sink.url}/dg/1` }, { url: `${bed.sink.url}/dg/2` }] });
    const sent = (await client.publishJSON({ urlGroup: 'dead', body: {}, retries: 0 })) as unknown as Array<{ messageId: string }>;
    const entries = await eventually(async () => atLeast((await client.dlq.listMessages({ filter: { urlGroup: 'dead' } })).messages, 2), 15_000);
    expect(entries.map((e) => e.messageId).sort()).toEqual(sent.map((r) => r.messageId).sort());
    expect(entries.every((e) => e.topicName === 'dead' && e.urlGroup === 'dead')).toBe(true);
    expect((await client.dlq.listMessages({ filter: { urlGroup: 'alive' } })).messages).toEqual([]);
    expect((await mallory.dlq.listMessages({ filter: { urlGroup: 'dead' } })).messages).toEqual([]);
    await expect(client.dlq.delete({ filter: { urlGroup: 'dead', url: `${bed.sink.url}/dg/1` } })).resolves.toMatchObject({ deleted: 1 });
    const left = (await client.dlq.listMessages({ filter: { urlGroup: 'dead' } })).messages;
    expect(left.map((e) => e.url)).toEqual([`${bed.sink.url}/dg/2`]);
    // The same as a JSON body (earlier SDKs' dlq.delete with a filter): another tenant's filter deletes nothing.
    const byBody = (as: string, topicName: string) =>
      fetch(`${bed.stack.url}/v2/dlq`, { method: 'DELETE', headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' }, body: JSON.stringify({ topicName }) }).then((r) => r.json());
    await expect(byBody(token, 'alive')).resolves.toEqual({ deleted: 0 });
    await expect(byBody(bed.stack.secrets('mallory', 'main').token, 'dead')).resolves.toEqual({ deleted: 0 });
    await expect(byBody(token, 'dead')).resolves.toEqual({ deleted: 1 });
    expect((await client.dlq.listMessages({ filter: { urlGroup: 'dead' } })).messages).toEqual([]);
  }, 40_000);

  it('writes CREATED, ACTIVE, DELIVERED; ACTIVE, ERROR, FAILED for a failed attempt; filters logs and the DLQ', async () => {
    bed.sink.answer('/states/fail', { status: 500, body: 'no' });
    const ok = await client.publishJSON({ url: `${bed.sink.url}/states/ok`, body: {}, label: 'states' });
    const failed = await client.publishJSON({ url: `${bed.sink.url}/states/fail`, body: {}, retries: 0, label: 'states' });
    const states = (id: string) => eventually(async () => {
      const logs = (await client.logs({ messageIds: [id] })).logs.map((l) => l.state).reverse();
      if (!logs.includes('DELIVERED') && !logs.includes('FAILED')) throw new Error(`so far ${logs.join(',')}`);
      return logs;
    }, 15_000);
    expect(await states(ok.messageId)).toEqual(['CREATED', 'ACTIVE', 'DELIVERED']);
    expect(await states(failed.messageId)).toEqual(['CREATED', 'ACTIVE', 'ERROR', 'FAILED']);

    const byState = await client.logs({ filter: { label: 'states', state: 'ERROR' } });
    expect(byState.logs.map((l) => l.messageId)).toEqual([failed.messageId]);
    const byHost = await client.logs({ filter: { host: '127.0.0.1', path: '/states/ok', state: 'DELIVERED' } });
    expect(byHost.logs.map((l) => l.messageId)).toEqual([ok.messageId]);
    const res = await fetch(`${bed.stack.url}/v2/logs?state=CANCELED&label=states`, { headers: { authorization: `Bearer ${token}` } });
    expect(((await res.json()) as { logs: unknown[] }).logs).toEqual([]);

    const dlq = await eventually(async () => nonEmpty((await client.dlq.listMessages({ filter: { label: 'states', responseStatus: 500 } })).messages), 15_000);
    expect(dlq.map((m) => m.messageId)).toEqual([failed.messageId]);
    expect((await client.dlq.listMessages({ filter: { label: 'states', responseStatus: 200 } })).messages).toEqual([]);
  }, 40_000);

  it('shows redacted fields as REDACTED:<sha256> in the message, logs and DLQ, and delivers them unchanged', async () => {
    bed.sink.answer('/redact/fail', { status: 500 });
    const { messageId } = await client.publish({
      url: `${bed.sink.url}/redact/ok`,
      body: 'secret body',
      headers: { authorization: 'Bearer s3cret', 'x-visible': 'shown' },
      delay: 1,
      redact: { body: true, header: ['Authorization'] },
    });
    const message = await client.messages.get(messageId);
    expect(message.body).toBe(redacted('secret body'));
    expect(message.header).toMatchObject({ Authorization: [redacted('Bearer s3cret')], 'X-Visible': ['shown'] });

    const [delivered] = await eventually(() => nonEmpty(bed.sink.on('/redact/ok')), 15_000);
    expect(delivered.body.toString()).toBe('secret body');
    expect(delivered.headers.authorization).toBe('Bearer s3cret');

    const created = (await client.logs({ messageIds: [messageId] })).logs.find((l) => l.state === 'CREATED');
    expect(created?.body).toBe(redacted('secret body'));
    expect(created?.header).toMatchObject({ Authorization: [redacted('Bearer s3cret')] });

    const failed = await client.publish({ url: `${bed.sink.url}/redact/fail`, body: 'dlq secret', retries: 0, redact: { header: true, body: true } });
    const entry = await eventually(async () => nonEmpty((await client.dlq.listMessages({ filter: { messageId: failed.messageId } })).messages)[0], 15_000);
    expect(entry.body).toBe(redacted('dlq secret'));
    expect(Object.values(entry.header ?? {}).flat().every((v) => v.startsWith('REDACTED:'))).toBe(true);
    await eventually(() => atLeast(bed.sink.on('/redact/fail'), 1), 5_000);
    expect(bed.sink.on('/redact/fail')[0]?.body.toString()).toBe('dlq secret');
  }, 40_000);
  it('never widens a mistaken bulk call to everything: an unknown, empty or null parameter, all=false or an empty id in the path is a 400; an empty id list acts on nothing', async () => {
    bed.sink.answer('/widen/dead', { status: 500 });
    const keep = await later(client, '/widen/keep', { label: 'other' });
    const dead = await client.publishJSON({ url: `${bed.sink.url}/widen/dead`, body: {}, retries: 0 });
    const [entry] = await eventually(async () => nonEmpty((await client.dlq.listMessages({ filter: { messageId: dead.messageId } })).messages), 15_000);
    const send = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${bed.stack.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return [res.status, text === '' ? undefined : JSON.parse(text)];
    };
    const refused = (pattern: RegExp) => [400, { error: expect.stringMatching(pattern) }];
    const cases: Array<[string, string, unknown, unknown[]]> = [
      ['DELETE', '/v2/messages?lable=other', undefined, refused(/^unknown parameter "lable"/)],
      ['DELETE', '/v2/messages?label=', undefined, refused(/^empty label/)],
      ['DELETE', '/v2/messages?messageIds=', undefined, refused(/^empty messageIds/)],
      ['DELETE', '/v2/messages?all=false', undefined, refused(/^all=false names no message/)],
      ['DELETE', '/v2/messages', { all: false }, refused(/^all=false names no message/)],
      ['DELETE', '/v2/messages', { label: null }, refused(/^invalid label: null/)],
      ['DELETE', '/v2/messages', { lable: 'other' }, refused(/^unknown parameter "lable"/)],
      ['DELETE', '/v2/messages', {}, refused(/^the body names nothing/)],
      ['DELETE', '/v2/messages', { messageIds: [] }, [200, { cancelled: 0 }]],
      ['DELETE', '/v2/messages/', undefined, refused(/^the message id is missing from the path/)],
      ['GET', '/v2/messages/', undefined, refused(/^the message id is missing from the path/)],
      ['DELETE', '/v2/dlq/', undefined, refused(/^the DLQ id is missing from the path/)],
      ['POST', '/v2/dlq/retry/', undefined, refused(/^the DLQ id is missing from the path/)],
      ['DELETE', '/v2/dlq?responsestatus=500', undefined, refused(/^unknown parameter "responsestatus"/)],
      ['POST', '/v2/dlq/retry?dlqIds=', undefined, refused(/^empty dlqIds/)],
      ['DELETE', '/v2/dlq?all=false&count=100', undefined, refused(/^all=false names no message/)],
      ['DELETE', '/v2/dlq', { dlqIds: [] }, [200, { deleted: 0 }]],
      ['POST', '/v2/dlq/retry', { dlqIds: [] }, [200, { responses: [] }]],
    ];
    for (const [method, path, body, expected] of cases) {
      expect([method, path, body, await send(method, path, body)]).toEqual([method, path, body, expected]);
    }
    // @upstash/qstash 2.12's dlq.retry("") sends POST /v2/dlq/retry?dlqIds=; 2.10's messages.cancel("") DELETE /v2/messages/.
    await expect(client.dlq.retry('')).rejects.toMatchObject({ status: 400 });
    await expect(client.messages.cancel([])).resolves.toEqual({ cancelled: 0 });

    // Nothing was cancelled, deleted or retried.
    expect(await pending([keep.messageId])).toEqual([keep.messageId]);
    expect((await client.dlq.listMessages({ filter: { messageId: dead.messageId } })).messages.map((m) => m.dlqId)).toEqual([entry.dlqId]);
    // The explicit forms still act on everything: all=true (and no parameter at all, deleteAll above).
    expect(await send('DELETE', '/v2/messages?all=true')).toEqual([200, { cancelled: expect.any(Number) }]);
    expect(await pending([keep.messageId])).toEqual([]);
    expect(await send('DELETE', '/v2/dlq', { all: true, count: 1000 })).toEqual([200, { deleted: expect.any(Number) }]);
    expect((await client.dlq.listMessages({ filter: { messageId: dead.messageId } })).messages).toEqual([]);
  }, 40_000);

  it('refuses malformed cursors and counts with 400 naming them, and takes every cursor form handed out', async () => {
    const get = async (path: string): Promise<[number, Record<string, unknown>]> => {
      const res = await fetch(`${bed.stack.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
      return [res.status, (await res.json()) as Record<string, unknown>];
    };
    for (const path of ['/v2/events?cursor=abc', '/v2/events?cursor=-1', '/v2/logs?cursor=99999999999999999999', '/v2/dlq?cursor=garbage', '/v2/dlq?cursor=1:2:3']) {
      expect([path, await get(path)]).toEqual([path, [400, { error: expect.stringMatching(/^invalid cursor: /) }]]);
    }
    for (const path of ['/v2/events?count=0', '/v2/logs?count=-5', '/v2/dlq?count=0', '/v2/dlq?count=1.5']) {
      expect([path, await get(path)]).toEqual([path, [400, { error: expect.stringMatching(/^invalid count: /) }]]);
    }
    // A Unix time in ms (the SDK documents Date.now()), the cursor of a page, a stream id, and the DLQ's position cursor.
    await later(client, '/cursor/a');
    await later(client, '/cursor/b');
    const [, first] = await get('/v2/events?count=1');
    expect(first.cursor).toEqual(expect.any(String));
    for (const cursor of [String(Date.now()), String(first.cursor), `${Date.now()}-0`]) {
      const [status, page] = await get(`/v2/events?count=1&cursor=${cursor}`);
      expect([cursor, status, (page.events as unknown[]).length]).toEqual([cursor, 200, 1]);
    }
    expect((await get('/v2/dlq?cursor=0'))[0]).toBe(200);
    await client.messages.cancel({ filter: { path: ['/cursor/a', '/cursor/b'] } });
  });

  it('keeps the deduplication id of a cancelled message for its 10 minutes: the same publish answers 202 with the first id', async () => {
    const first = await client.publishJSON({ url: `${bed.sink.url}/dd`, body: { a: 1 }, deduplicationId: 'dd-cancel', delay: 600 });
    await expect(client.messages.cancel(first.messageId)).resolves.toEqual({ cancelled: 1 });
    const res = await fetch(`${bed.stack.url}/v2/publish/${bed.sink.url}/dd`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'upstash-deduplication-id': 'dd-cancel', 'upstash-delay': '600s' },
      body: '{"a":1}',
    });
    expect([res.status, await res.json()]).toEqual([202, { messageId: first.messageId, url: `${bed.sink.url}/dd`, deduplicated: true }]);
    expect((await client.logs({ filter: { url: `${bed.sink.url}/dd` } })).logs.map((l) => [l.messageId, l.state])).toEqual([
      [first.messageId, 'CANCELLED'],
      [first.messageId, 'CREATED'],
    ]);
  });
});
