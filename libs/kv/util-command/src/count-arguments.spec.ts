import { KvError } from './kv-error';
import { MAX_ALLOCATING_COUNT, MIN_REPLY_ELEMENT_BYTES, checkCountArguments } from './count-arguments';

const LIMIT = 6_000; // room for 1000 elements of the smallest reply
const INT64_EDGES = ['-9223372036854775808', '-9223372036854775807', '-4611686018427387904', '-2147483648', '9223372036854775807', '9223372036854775808'];

function refusal(args: string[], limit = LIMIT): string | undefined {
  try {
    checkCountArguments(args[0]!.toLowerCase(), args, limit);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(KvError);
    expect((error as KvError).status).toBe(400);
    return (error as KvError).message;
  }
}

describe('checkCountArguments', () => {
  it('refuses a negative count of the random-member family whose reply cannot fit the limit', () => {
    for (const name of ['SRANDMEMBER', 'zrandmember', 'HRANDFIELD', 'VRANDMEMBER']) {
      expect(refusal([name, 'k', '-9223372036854775807'])).toBe(
        `ERR max request size exceeded. Limit: ${LIMIT} bytes, Actual: a reply of at least ${9223372036854775807n * 6n} bytes (count -9223372036854775807)`,
      );
      expect(refusal([name, 'k', String(-(LIMIT / MIN_REPLY_ELEMENT_BYTES) - 1)])).toMatch(/^ERR max request size exceeded/);
      expect(refusal([name, 'k', String(-(LIMIT / MIN_REPLY_ELEMENT_BYTES))])).toBeUndefined();
    }
  });

  it('counts members and scores (or fields and values) twice', () => {
    expect(refusal(['ZRANDMEMBER', 'z', '-500', 'WITHSCORES'])).toBeUndefined();
    expect(refusal(['ZRANDMEMBER', 'z', '-501', 'withscores'])).toMatch(/at least 6012 bytes/);
    expect(refusal(['HRANDFIELD', 'h', '-501', 'WITHVALUES'])).toMatch(/at least 6012 bytes/);
    expect(refusal(['SRANDMEMBER', 's', '-501', 'WITHSCORES'])).toBeUndefined(); // not an option of SRANDMEMBER: Redis answers
  });

  it('leaves positive counts, non-numbers and other commands to Redis', () => {
    for (const edge of INT64_EDGES.filter((e) => !e.startsWith('-'))) expect(refusal(['SRANDMEMBER', 's', edge])).toBeUndefined();
    for (const text of ['-1e30', 'abc', '-', '', '-0x10']) expect(refusal(['SRANDMEMBER', 's', text])).toBeUndefined();
    expect(refusal(['SRANDMEMBER', 's'])).toBeUndefined();
    expect(refusal(['LRANGE', 'l', '-9223372036854775808', '9223372036854775807'])).toBeUndefined();
    expect(refusal(['SPOP', 's', '9223372036854775807'])).toBeUndefined();
  });

  it('refuses every int64 edge of the counts that size an allocation, whatever the reply limit', () => {
    for (const edge of INT64_EDGES) {
      expect(refusal(['VSIM', 'v', 'VALUES', '2', '1', '2', 'COUNT', edge], 1e12)).toMatch(/^ERR COUNT is out of range: at most 1000000/);
      expect(refusal(['vsim', 'v', 'ELE', 'm', 'ef', edge], 1e12)).toMatch(/^ERR EF is out of range/);
      expect(refusal(['FT.SUGGET', 'sug', 'he', 'MAX', edge], 1e12)).toMatch(/^ERR MAX is out of range/);
    }
    expect(refusal(['VSIM', 'v', 'ELE', 'm', 'COUNT', String(MAX_ALLOCATING_COUNT), 'EF', '500'])).toBeUndefined();
    expect(refusal(['FT.SUGGET', 'sug', 'max', 'MAX', '5'])).toBeUndefined(); // a prefix named like the keyword
  });
});
