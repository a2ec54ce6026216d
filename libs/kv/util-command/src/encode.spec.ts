import fc from 'fast-check';
import { encodeBatch, encodeError, encodeReply, encodeResp2, encodeResult, type Reply } from './encode';

/** What @upstash/redis does with a base64 reply (docs/kv.md, "KV: response encoding"), for checking round trips. */
function sdkDecode(value: unknown, topLevel = true): unknown {
  if (typeof value === 'string') {
    if (topLevel && value === 'OK') return 'OK';
    return Buffer.from(value, 'base64').toString('latin1');
  }
  if (Array.isArray(value)) return value.map((v) => sdkDecode(v, false));
  return value;
}

const reply: fc.Arbitrary<Reply> = fc.letrec<{ reply: Reply }>((tie) => ({
  reply: fc.oneof(
    { depthSize: 'small' },
    fc.uint8Array().map((b) => Buffer.from(b)),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
    fc.constant(null),
    fc.array(tie('reply'), { maxLength: 4 }),
  ),
})).reply;

function bytesOf(r: Reply): unknown {
  if (Buffer.isBuffer(r)) return r.toString('latin1');
  if (typeof r === 'string') return Number(r);
  if (Array.isArray(r)) return r.map(bytesOf);
  return r;
}

describe('encodeReply', () => {
  it('base64: every string decodes back to its exact bytes, integers stay numbers', () => {
    fc.assert(
      fc.property(reply, (r) => {
        const isOk = Buffer.isBuffer(r) && r.toString() === 'OK';
        const decoded = sdkDecode(JSON.parse(encodeReply(r, true)));
        expect(decoded).toEqual(isOk ? 'OK' : bytesOf(r));
      }),
    );
  });

  it('keeps a top-level OK but encodes a nested one', () => {
    expect(encodeReply(Buffer.from('OK'), true)).toBe('"OK"');
    expect(encodeReply([Buffer.from('OK')], true)).toBe('["T0s="]');
    expect(encodeReply(Buffer.from('PONG'), true)).toBe('"UE9ORw=="');
  });

  it('without base64, replaces invalid UTF-8 with U+FFFD and keeps valid text', () => {
    expect(JSON.parse(encodeReply(Buffer.from([0x61, 0xff, 0x62]), false))).toBe('a\uFFFDb');
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (s) => {
        expect(JSON.parse(encodeReply(Buffer.from(s), false))).toBe(s);
      }),
    );
  });

  it('writes integers beyond 2^53 as exact JSON numbers', () => {
    expect(encodeReply('9223372036854775807', false)).toBe('9223372036854775807');
    expect(encodeReply(null, true)).toBe('null');
    expect(encodeReply(new Error('ERR x'), false)).toBe('"ERR x"');
  });
});

describe('bodies', () => {
  it('carry exactly one of result and error', () => {
    expect(JSON.parse(encodeResult(null, true))).toEqual({ result: null });
    expect(JSON.parse(encodeError('ERR "quoted"'))).toEqual({ error: 'ERR "quoted"' });
    expect(JSON.parse(encodeBatch([{ reply: Buffer.from('OK') }, { error: 'ERR no' }, { reply: '3' }], true))).toEqual([
      { result: 'OK' },
      { error: 'ERR no' },
      { result: 3 },
    ]);
  });
});

describe('encodeResp2', () => {
  it('writes RESP2: bulk strings, integers, nil, arrays and error lines', () => {
    expect(encodeResp2([Buffer.from('OK')]).toString()).toBe('$2\r\nOK\r\n');
    expect(encodeResp2([[Buffer.from('a'), '12', null, [new Error('ERR x\r\ny')]]]).toString()).toBe('*4\r\n$1\r\na\r\n:12\r\n$-1\r\n*1\r\n-ERR x y\r\n');
    expect(encodeResp2([Buffer.from([0xff, 0x0a]), { error: 'WRONGTYPE no' }])).toEqual(Buffer.concat([Buffer.from('$2\r\n'), Buffer.from([0xff, 0x0a]), Buffer.from('\r\n-WRONGTYPE no\r\n')]));
  });
});
