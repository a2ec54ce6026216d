import { Client, Receiver } from '@upstash/qstash';
import { eventually } from '@restash/shared/util-testing';
import { queueTestbed } from './testing/queue-testbed';
import { type SinkRequest, atLeast, nonEmpty } from './testing/sink';

/**
 * The official `@upstash/qstash` Client against queue-gateway + queue-worker on real Redis servers; a local
 * destination checks every request with the official Receiver (docs/queue.md, "Queue: signature").
 */
describe('queue API with the official @upstash/qstash Client', () => {
  const bed = queueTestbed({ acme: [{ name: 'main' }] });
  let client: Client;
  let receiver: Receiver;

  beforeAll(() => {
    client = bed.client();
    receiver = bed.receiver();
  });

  /** Receiver.verify of a request the sink got, against the URL it was sent to. */
  const verified = (request: SinkRequest, url: string) =>
    receiver.verify({ signature: String(request.headers['upstash-signature']), body: request.body.toString('utf8'), url });

  it('publishes with a callback: the destination verifies the signature and the callback carries every field', async () => {
    const destination = `${bed.sink.url}/orders?source=sdk`;
    const callback = `${bed.sink.url}/callback`;
    const { messageId } = await client.publishJSON({ url: destination, body: { order: 1 }, headers: { 'test-header': 'forwarded' }, callback });
    expect(messageId).toMatch(/^msg_/);

    const [request] = await eventually(() => nonEmpty(bed.sink.on('/orders')), 15_000);
    expect(request.path).toBe('/orders?source=sdk');
    expect(request.method).toBe('POST');
    expect(JSON.parse(request.body.toString())).toEqual({ order: 1 });
    expect(request.headers['test-header']).toBe('forwarded');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['upstash-message-id']).toBe(messageId);
    expect(request.headers['upstash-retried']).toBe('0');
    expect(request.headers['user-agent']).toBe('Upstash-QStash');
    await expect(verified(request, destination)).resolves.toBe(true);
    await expect(receiver.verify({ signature: String(request.headers['upstash-signature']), body: 'tampered', url: destination })).rejects.toThrow();

    const [callbackRequest] = await eventually(() => nonEmpty(bed.sink.on('/callback')), 15_000);
    await expect(verified(callbackRequest, callback)).resolves.toBe(true);
    const payload = JSON.parse(callbackRequest.body.toString()) as Record<string, unknown>;
    expect(payload).toMatchObject({
      status: 200,
      body: Buffer.from('ok').toString('base64'),
      retried: 0,
      maxRetries: 3,
      sourceMessageId: messageId,
      sourceMessasgeId: messageId,
      url: destination,
      method: 'POST',
      sourceBody: Buffer.from('{"order":1}').toString('base64'),
    });
    expect(payload.sourceHeader).toMatchObject({ 'Test-Header': ['forwarded'], 'Content-Type': ['application/json'] });
    expect(typeof payload.header).toBe('object');
    expect(Number(payload.createdAt)).toBeGreaterThan(0);
    expect(Number(payload.notBefore)).toBeGreaterThan(0);
    expect(typeof payload.callerIP).toBe('string');
  }, 40_000);

  it('reads a message right after publishing it, with canonical header names', async () => {
    bed.sink.answer('/slow', { status: 200, delayMs: 500 });
    const { messageId } = await client.publish({ url: `${bed.sink.url}/slow`, body: 'plain text', headers: { 'Bypass-Tunnel-Reminder': 'yes' }, retries: 1, delay: 1 });
    const message = await client.messages.get(messageId);
    expect(message).toMatchObject({ messageId, url: `${bed.sink.url}/slow`, method: 'POST', body: 'plain text', maxRetries: 1 });
    // The forwarded headers and Content-Type only (fetch adds text/plain for a string body); no Upstash-* or telemetry.
    expect(message.header).toEqual({ 'Bypass-Tunnel-Reminder': ['yes'], 'Content-Type': ['text/plain;charset=UTF-8'] });
    expect(message.notBefore).toBeGreaterThanOrEqual(message.createdAt + 900);
  });

  it('retries with the Upstash-Retry-Delay backoff in order, then moves the message to the DLQ and posts the failure callback', async () => {
    bed.sink.answer('/fails', { status: 500, body: 'boom' });
    const failureCallback = `${bed.sink.url}/failure`;
    const { messageId } = await client.publish({ url: `${bed.sink.url}/fails`, body: 'x', retries: 2, retryDelay: 'pow(2, retried) * 300', failureCallback });

    const attempts = await eventually(() => atLeast(bed.sink.on('/fails'), 3), 20_000, 50);
    expect(attempts.map((r) => r.headers['upstash-retried'])).toEqual(['0', '1', '2']);
    const gaps = [attempts[1]!.at - attempts[0]!.at, attempts[2]!.at - attempts[1]!.at];
    expect(gaps[0]).toBeGreaterThanOrEqual(280); // 2^0 * 300 ms
    expect(gaps[1]).toBeGreaterThanOrEqual(580); // 2^1 * 300 ms
    expect(gaps[1]!).toBeGreaterThan(gaps[0]!);

    const [failure] = await eventually(() => nonEmpty(bed.sink.on('/failure')), 15_000);
    await expect(verified(failure, failureCallback)).resolves.toBe(true);
    const payload = JSON.parse(failure.body.toString()) as Record<string, unknown>;
    expect(payload).toMatchObject({ status: 500, retried: 2, maxRetries: 2, sourceMessageId: messageId, body: Buffer.from('boom').toString('base64') });
    expect(typeof payload.dlqId).toBe('string');
    expect(bed.sink.on('/fails')).toHaveLength(3);

    const { messages, cursor } = await client.dlq.listMessages({ filter: { messageId } });
    expect(cursor).toBeUndefined();
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ messageId, dlqId: payload.dlqId, responseStatus: 500, responseBody: 'boom', url: `${bed.sink.url}/fails` });

    bed.sink.answer('/fails', { status: 200 });
    const retried = await client.dlq.retry(String(payload.dlqId));
    expect(retried.responses).toHaveLength(1);
    await eventually(() => atLeast(bed.sink.on('/fails'), 4), 15_000);
    expect((await client.dlq.listMessages({ filter: { messageId } })).messages).toHaveLength(0);
    await expect(client.dlq.delete(String(payload.dlqId))).rejects.toThrow();
  }, 60_000);

  it('honours Retry-After, and a 489 with Upstash-NonRetryable-Error goes to the DLQ at once', async () => {
    bed.sink.answer('/busy', { status: 503, headers: { 'Retry-After': '1' } }, { status: 200 });
    await client.publish({ url: `${bed.sink.url}/busy`, body: 'x', retries: 3 });
    const busy = await eventually(() => atLeast(bed.sink.on('/busy'), 2), 15_000);
    expect(busy[1]!.at - busy[0]!.at).toBeGreaterThanOrEqual(950); // not QStash's default 12 s either

    bed.sink.answer('/reject', { status: 489, headers: { 'Upstash-NonRetryable-Error': 'true' }, body: 'bad payload' });
    const { messageId } = await client.publish({ url: `${bed.sink.url}/reject`, body: 'x', retries: 3 });
    const [entry] = await eventually(async () => nonEmpty((await client.dlq.listMessages({ filter: { messageId } })).messages), 15_000);
    expect(entry).toMatchObject({ messageId, responseStatus: 489 });
    expect(bed.sink.on('/reject')).toHaveLength(1);
    await client.dlq.delete(entry!.dlqId);
  }, 40_000);

  it('deduplicates by id and by content within the window', async () => {
    const first = await client.publish({ url: `${bed.sink.url}/dedup`, body: 'a', deduplicationId: 'order-7', delay: 60 });
    const again = await client.publish({ url: `${bed.sink.url}/dedup`, body: 'b', deduplicationId: 'order-7', delay: 60 });
    expect(again.messageId).toBe(first.messageId);
    expect(again.deduplicated).toBe(true);

    const byContent = await client.publish({ url: `${bed.sink.url}/dedup`, body: 'same', contentBasedDeduplication: true, delay: 60 });
    const sameContent = await client.publish({ url: `${bed.sink.url}/dedup`, body: 'same', contentBasedDeduplication: true, delay: 60 });
    const otherContent = await client.publish({ url: `${bed.sink.url}/dedup`, body: 'other', contentBasedDeduplication: true, delay: 60 });
    expect(sameContent.messageId).toBe(byContent.messageId);
    expect(otherContent.messageId).not.toBe(byContent.messageId);
    await client.messages.cancel([first.messageId, byContent.messageId, otherContent.messageId]);
  });

  it('delays delivery, and cancels a delayed message so it is never delivered', async () => {
    const published = Date.now();
    await client.publish({ url: `${bed.sink.url}/delayed`, body: 'later', delay: 2 });
    const { messageId } = await client.publish({ url: `${bed.sink.url}/cancelled`, body: 'never', delay: 2 });
    await expect(client.messages.cancel(messageId)).resolves.toEqual({ cancelled: 1 });
    const [delivered] = await eventually(() => nonEmpty(bed.sink.on('/delayed')), 15_000);
    expect(delivered.at - published).toBeGreaterThanOrEqual(1900);
    await new Promise((r) => setTimeout(r, 500));
    expect(bed.sink.on('/cancelled')).toHaveLength(0);
    await expect(client.messages.get(messageId)).rejects.toThrow();
  }, 30_000);

  it('lists the events of a message, newest first, with no cursor on the last page', async () => {
    const { messageId } = await client.publish({ url: `${bed.sink.url}/logged`, body: 'x' });
    const logs = await eventually(async () => {
      const page = await client.logs({ filter: { messageId } });
      if (!page.logs.some((l) => l.state === 'DELIVERED')) throw new Error('not delivered yet');
      return page;
    }, 15_000);
    expect(logs.logs.map((l) => l.state)).toEqual(['DELIVERED', 'ACTIVE', 'CREATED']);
    expect(logs.logs[0]).toMatchObject({ messageId, url: `${bed.sink.url}/logged` });
    expect(logs.cursor).toBeUndefined();
  }, 20_000);

  it('publishes a batch in order', async () => {
    const results = await client.batchJSON([
      { url: `${bed.sink.url}/batch`, body: { n: 1 } },
      { url: `${bed.sink.url}/batch`, body: { n: 2 } },
    ]);
    expect(results).toHaveLength(2);
    const received = await eventually(() => atLeast(bed.sink.on('/batch'), 2), 15_000);
    expect(received.map((r) => JSON.parse(r.body.toString()).n).sort()).toEqual([1, 2]);
  }, 20_000);
});
