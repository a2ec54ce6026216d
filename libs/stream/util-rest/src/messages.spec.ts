import { restMessage, webhookHeaders } from './messages';

describe('restMessage', () => {
  const b = (text: string) => Buffer.from(text);

  it('shapes a record as a Message of docs/stream.md, "Stream: messages": "" for no key, [] for no headers', () => {
    expect(restMessage('t', 2, 41, 1_700_000_000_000, null, b('v'), [])).toEqual({
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
    const message = restMessage('t', 0, 0, 0, b('k'), null, [
      [b('a'), b('1')],
      [b('toString'), b('x')],
      [b('a'), b('2')],
      [b('gone'), null],
      [b('__proto__'), b('é')],
    ]);
    expect(message.headers).toEqual([
      { key: 'a', value: '1' },
      { key: 'toString', value: 'x' },
      { key: 'a', value: '2' },
      { key: '__proto__', value: 'é' },
    ]);
    expect(message.value).toBe('');
    expect(message.key).toBe('k');
  });

  it('lists its fields in the order the API writes them (JSON.stringify gives the response as it is)', () => {
    expect(JSON.stringify(restMessage('t', 1, 2, 3, null, b('v'), [[null, b('x')]]))).toBe(
      '{"topic":"t","partition":1,"offset":2,"timestamp":3,"key":"","value":"v","headers":[{"key":"","value":"x"}]}',
    );
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

  it('reads header values as UTF-8 (Node hands each byte as one latin1 character), and values whose bytes are not UTF-8 as latin1', () => {
    const latin1 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
    const raw = ['X-Val', latin1('ünï ✓ 日本'), 'X-Plain', 'ascii', 'X-Bad', Buffer.from([0x61, 0xff]).toString('latin1')];
    expect(webhookHeaders(raw)).toEqual([
      { key: 'X-Val', value: 'ünï ✓ 日本' },
      { key: 'X-Plain', value: 'ascii' },
      { key: 'X-Bad', value: 'a\u00ff' },
    ]);
    // Node's fetch sends `café` as the single byte 0xE9.
    expect(webhookHeaders(['X-Node', 'caf\u00e9'])).toEqual([{ key: 'X-Node', value: 'café' }]);
  });
});
