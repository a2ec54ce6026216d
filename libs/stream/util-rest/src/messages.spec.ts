import { restMessage, webhookHeaders } from './messages';

describe('restMessage', () => {
  const b = (text: string) => Buffer.from(text);

  it('shapes a record as spec 002’s Message: "" for no key, [] for no headers', () => {
    expect(restMessage('t', 2, { offset: 41, timestamp: 1_700_000_000_000, key: null, value: b('v'), headers: [] })).toEqual({
      topic: 't',
      partition: 2,
      offset: 41,
      timestamp: 1_700_000_000_000,
      key: '',
      value: 'v',
      headers: [],
    });
  });

  it('keeps header order and repeated names, reads bytes as UTF-8, and leaves out a header without a value', () => {
    const message = restMessage('t', 0, {
      offset: 0,
      timestamp: 0,
      key: b('k'),
      value: null,
      headers: [
        [b('a'), b('1')],
        [b('toString'), b('x')],
        [b('a'), b('2')],
        [b('gone'), null],
        [b('__proto__'), b('é')],
      ],
    });
    expect(message.headers).toEqual([
      { key: 'a', value: '1' },
      { key: 'toString', value: 'x' },
      { key: 'a', value: '2' },
      { key: '__proto__', value: 'é' },
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
