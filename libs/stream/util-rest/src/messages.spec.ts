import { restMessage, webhookHeaders } from './messages';

describe('restMessage', () => {
  it('keeps only the values of a header kafkajs decoded under an Object.prototype member name', () => {
    // kafkajs reduces headers into a plain object: for `toString` it finds the inherited function first.
    const decoded = { toString: [Object.prototype.toString, Buffer.from('x')], ['__proto__']: [Object.prototype, Buffer.from('y')] };
    const headers = decoded as unknown as Parameters<typeof restMessage>[2]['headers'];
    expect(restMessage('t', 0, { offset: '0', timestamp: '0', key: null, value: null, headers }).headers).toEqual([
      { key: 'toString', value: 'x' },
      { key: '__proto__', value: 'y' },
    ]);
  });

  it('shapes a record as spec 002’s Message: "" for no key, [] for no headers, numbers for offset and timestamp', () => {
    expect(restMessage('t', 2, { offset: '41', timestamp: '1700000000000', key: null, value: Buffer.from('v') })).toEqual({
      topic: 't',
      partition: 2,
      offset: 41,
      timestamp: 1_700_000_000_000,
      key: '',
      value: 'v',
      headers: [],
    });
  });

  it('repeats a header name given several times', () => {
    const message = restMessage('t', 0, {
      offset: '0',
      timestamp: '0',
      key: Buffer.from('k'),
      value: null,
      headers: { a: [Buffer.from('1'), Buffer.from('2')], b: Buffer.from('3') },
    });
    expect(message.headers).toEqual([
      { key: 'a', value: '1' },
      { key: 'a', value: '2' },
      { key: 'b', value: '3' },
    ]);
    expect(message.value).toBe('');
    expect(message.key).toBe('k');
  });
});

describe('webhookHeaders', () => {
  it('keeps non-standard headers as the client spelled them, in order', () => {
    const raw = ['Host', 'x', 'Content-Type', 'application/json', 'X-Signature', 's', 'User-Agent', 'curl', 'Sec-Fetch-Mode', 'cors', 'Stripe-Event', 'e'];
    expect(webhookHeaders(raw)).toEqual([
      { key: 'X-Signature', value: 's' },
      { key: 'Stripe-Event', value: 'e' },
    ]);
  });
});
