import { Receiver } from '@upstash/qstash';
import { decodeJwt } from 'jose';
import { deliveryRequest } from './delivery';
import type { QueueMessage } from './message';
import { queueMessage } from './testing/message';

const KEY = 'sig_current';

function message(overrides: Partial<QueueMessage> = {}): QueueMessage {
  return queueMessage({
    messageId: 'msg_abc',
    url: 'https://example.com/hook?x=1',
    header: { 'Content-Type': ['application/json'], 'X-Multi': ['a', 'b'], Authorization: ['Bearer t'] },
    body: Buffer.from('{"a":1}').toString('base64'),
    notBefore: 1,
    createdAt: 1,
    ...overrides,
  });
}

describe('deliveryRequest', () => {
  it('sends the forwarded headers, Content-Type and the QStash headers', async () => {
    const nowSec = Math.floor(Date.now() / 1000);
    const request = await deliveryRequest(message(), 2, KEY, nowSec);
    expect(request.url).toBe('https://example.com/hook?x=1');
    expect(request.method).toBe('POST');
    expect(request.body).toEqual(Buffer.from('{"a":1}'));
    expect(request.headers).toEqual({
      'Content-Type': 'application/json',
      'X-Multi': 'a, b',
      Authorization: 'Bearer t',
      'User-Agent': 'Upstash-QStash',
      'Upstash-Message-Id': 'msg_abc',
      'Upstash-Retried': '2',
      'Upstash-Caller-Ip': '203.0.113.7',
      'Upstash-Signature': expect.any(String),
    });
    const claims = decodeJwt(request.headers['Upstash-Signature'] as string);
    expect(claims).toMatchObject({ sub: 'https://example.com/hook?x=1', iat: nowSec });
    const receiver = new Receiver({ currentSigningKey: KEY, nextSigningKey: 'sig_next' });
    await expect(receiver.verify({ signature: request.headers['Upstash-Signature'] as string, body: '{"a":1}', url: request.url })).resolves.toBe(true);
  });

  it('sends Upstash-Topic-Name for a URL-group message only', async () => {
    expect((await deliveryRequest(message({ topicName: 'g1', endpointName: 'e' }), 0, KEY, 1)).headers['Upstash-Topic-Name']).toBe('g1');
    expect((await deliveryRequest(message(), 0, KEY, 1)).headers['Upstash-Topic-Name']).toBeUndefined();
  });

  it('says Upstash-Retried 0 on the first attempt', async () => {
    expect((await deliveryRequest(message(), 0, KEY, 1)).headers['Upstash-Retried']).toBe('0');
  });

  it('does not let forwarded headers replace its own, nor send hop-by-hop or invalid ones', async () => {
    const request = await deliveryRequest(
      message({
        header: {
          'User-Agent': ['evil'],
          'Upstash-Signature': ['forged'],
          'upstash-message-id': ['msg_other'],
          Host: ['internal'],
          Connection: ['close'],
          'Transfer-Encoding': ['chunked'],
          'Content-Length': ['999'],
          'Bad Name': ['x'],
          'X-Split': ['a\r\nInjected: 1'],
          'X-Fine': ['ok'],
        },
      }),
      0,
      KEY,
      1,
    );
    expect(Object.keys(request.headers).sort()).toEqual(
      ['Upstash-Caller-Ip', 'Upstash-Message-Id', 'Upstash-Retried', 'Upstash-Signature', 'User-Agent', 'X-Fine'].sort(),
    );
    expect(request.headers['User-Agent']).toBe('Upstash-QStash');
    expect(request.headers['Upstash-Message-Id']).toBe('msg_abc');
    expect(request.headers['Upstash-Signature']).not.toBe('forged');
  });

  it('sends an empty body for GET and DELETE without one, and any bytes otherwise', async () => {
    for (const method of ['GET', 'DELETE'] as const) {
      const request = await deliveryRequest(message({ method, body: '', header: {} }), 0, KEY, 1);
      expect(request.method).toBe(method);
      expect(request.body).toEqual(Buffer.alloc(0));
      expect(request.headers).not.toHaveProperty('Content-Type');
    }
    const bytes = Buffer.from([0, 255, 1]);
    expect((await deliveryRequest(message({ method: 'PUT', body: bytes.toString('base64') }), 0, KEY, 1)).body).toEqual(bytes);
  });
});
