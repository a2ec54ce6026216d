import { Client, Receiver } from '@upstash/qstash';
import { eventually } from '@restash/shared/util-testing';
import { queueTestbed } from './testing/queue-testbed';
import { type SinkRequest, atLeast } from './testing/sink';

/**
 * `POST /v2/keys/rotate` (docs/queue.md, "Queue: signing-key rotation") against queue-gateway and queue-worker on real
 * Redis servers: the worker signs with the new current key, and the official Receiver verifies across the switch.
 * `@upstash/qstash` 2.x has no keys API: the endpoints are called over HTTP, as QStash's docs show.
 */
describe('queue signing-key rotation', () => {
  const bed = queueTestbed({ acme: [{ name: 'main' }], other: [{ name: 'main' }] });
  let client: Client;
  let token: string;
  let readonlyToken: string;

  beforeAll(() => {
    ({ token, readonlyToken } = bed.stack.secrets('acme', 'main'));
    client = bed.client();
  });

  const keysCall = async (method: 'GET' | 'POST', path: string, bearer: string) => {
    const response = await fetch(`${bed.stack.url}/v2/${path}`, { method, headers: { Authorization: `Bearer ${bearer}` } });
    return { status: response.status, body: (await response.json()) as Record<string, string> };
  };

  const verify = (receiver: Receiver, request: SinkRequest) =>
    receiver.verify({ signature: String(request.headers['upstash-signature']), body: request.body.toString(), url: `${bed.sink.url}/signed` }).catch(() => false);

  it('rotates: next becomes current, a new next; the worker signs with the new current; receivers verify across the switch', async () => {
    const before = await keysCall('GET', 'keys', token);
    expect(before.status).toBe(200);
    const old = { current: before.body.current as string, next: before.body.next as string };
    expect(old).toEqual({ current: bed.stack.secrets('acme', 'main').currentSigningKey, next: bed.stack.secrets('acme', 'main').nextSigningKey });

    await client.publish({ url: `${bed.sink.url}/signed`, body: 'first' });
    await eventually(() => atLeast(bed.sink.on('/signed'), 1), 15_000);

    const rotated = await keysCall('POST', 'keys/rotate', token);
    expect(rotated.status).toBe(200);
    expect(rotated.body.current).toBe(old.next);
    expect(rotated.body.next).toMatch(/^sig_/);
    expect(rotated.body.next).not.toBe(old.current);
    expect(rotated.body.next).not.toBe(old.next);
    await eventually(async () => expect((await keysCall('GET', 'keys', token)).body).toEqual(rotated.body), 5_000);

    await client.publish({ url: `${bed.sink.url}/signed`, body: 'second' });
    const [first, second] = await eventually(() => atLeast(bed.sink.on('/signed'), 2), 15_000);
    const oldReceiver = new Receiver({ currentSigningKey: old.current, nextSigningKey: old.next });
    const newReceiver = new Receiver({ currentSigningKey: rotated.body.current as string, nextSigningKey: rotated.body.next as string });
    // Signed with the old current key, then with the new current key (the old next).
    expect(await verify(oldReceiver, first as SinkRequest)).toBe(true);
    expect(await verify(newReceiver, first as SinkRequest)).toBe(false);
    expect(await verify(newReceiver, second as SinkRequest)).toBe(true);
    expect(await verify(oldReceiver, second as SinkRequest)).toBe(true);
    expect(await verify(new Receiver({ currentSigningKey: old.current, nextSigningKey: 'sig_unrelated' }), second as SinkRequest)).toBe(false);
  }, 60_000);

  it('refuses read-only tokens (403) and touches only the caller\'s project', async () => {
    const otherToken = bed.stack.secrets('other', 'main').token;
    const otherBefore = (await keysCall('GET', 'keys', otherToken)).body;
    const mineBefore = (await keysCall('GET', 'keys', token)).body;

    const denied = await keysCall('POST', 'keys/rotate', readonlyToken);
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatch(/read-only/);
    expect((await keysCall('GET', 'keys', token)).body).toEqual(mineBefore);

    const rotated = await keysCall('POST', 'keys/rotate', token);
    expect(rotated.body.current).toBe(mineBefore.next);
    expect((await keysCall('GET', 'keys', otherToken)).body).toEqual(otherBefore);
  });
});
