import { KvError } from './kv-error';
import type { CommandArgs } from './request';

/**
 * The fewest bytes one element of a RESP2 array reply takes: an empty bulk string, `$0\r\n\r\n`. A reply of n
 * elements is at least n times this, whatever the data.
 */
export const MIN_REPLY_ELEMENT_BYTES = 6;

/**
 * The most a count may ask a command to allocate for, before it looks at the data (VSIM's COUNT and EF,
 * FT.SUGGET's MAX). Measured on Redis 8.2.3 with a 2 GiB address-space cap: VSIM with COUNT 2·10^8, or EF 10^8,
 * and FT.SUGGET with MAX 2^31-1 abort the server on out-of-memory; 10^6 costs a few MB.
 */
export const MAX_ALLOCATING_COUNT = 1_000_000;

/** Commands whose reply holds exactly |count| elements for a negative count (repeats allowed), whatever the data. */
const RANDOM_WITH_REPEATS: ReadonlyMap<string, string | undefined> = new Map([
  ['srandmember', undefined],
  ['zrandmember', 'withscores'],
  ['hrandfield', 'withvalues'],
  ['vrandmember', undefined],
]);

/** Commands with a keyword argument whose count sizes an allocation before any data is read. */
const ALLOCATING_KEYWORDS: ReadonlyMap<string, readonly string[]> = new Map([
  ['vsim', ['count', 'ef']],
  ['ft.sugget', ['max']],
]);

/** An argument as a whole decimal number (int64 edges exact), or undefined when it is not one (Redis answers those itself). */
function integer(arg: CommandArgs[number] | undefined): bigint | undefined {
  if (arg === undefined) return undefined;
  const text = String(arg);
  return /^[+-]?\d{1,40}$/.test(text) ? BigInt(text) : undefined;
}

const magnitude = (n: bigint): bigint => (n < 0n ? -n : n);

/**
 * Refuses, before Redis sees it, a count argument that would make a reply pass what the database may answer,
 * or make the server allocate without bound (docs/kv.md, "KV: limits"; issue 30). Two families, found by going
 * through the command tables of Redis 8.2 (with RedisJSON and RediSearch) and Valkey 9.1:
 * - SRANDMEMBER, ZRANDMEMBER, HRANDFIELD and VRANDMEMBER with a negative count answer |count| elements (twice as
 *   many WITHSCORES / WITHVALUES) from a key of one member: `-9223372036854775807` made Redis allocate until the
 *   kernel killed it, and VRANDMEMBER loops for ever even under an output-buffer limit. Refused when
 *   |count| × {@link MIN_REPLY_ELEMENT_BYTES} (× 2) passes `maxReplyBytes`, with the text of the reply limit.
 * - VSIM's COUNT and EF and FT.SUGGET's MAX size an allocation before the data is read: refused past
 *   {@link MAX_ALLOCATING_COUNT}.
 * Counts that only bound what the data holds (LRANGE, SCAN COUNT, SPOP, LPOS, XRANGE, ZRANGE … LIMIT) are left
 * to the reply limit; XAUTOCLAIM's COUNT and FT.SEARCH / FT.AGGREGATE's LIMIT are bounded by the server itself.
 *
 * @param name the lower-case command name
 * @param maxReplyBytes the database's reply limit (its `maxRequestBytes`)
 * @throws KvError 400 when refused
 */
export function checkCountArguments(name: string, args: CommandArgs, maxReplyBytes: number): void {
  if (RANDOM_WITH_REPEATS.has(name)) {
    const doubledBy = RANDOM_WITH_REPEATS.get(name);
    const count = integer(args[2]);
    if (count === undefined || count >= 0n) return;
    const doubled = doubledBy !== undefined && args.slice(3).some((a) => String(a).toLowerCase() === doubledBy);
    const least = magnitude(count) * BigInt(MIN_REPLY_ELEMENT_BYTES) * (doubled ? 2n : 1n);
    if (least > BigInt(maxReplyBytes)) {
      throw KvError.badRequest(`ERR max request size exceeded. Limit: ${maxReplyBytes} bytes, Actual: a reply of at least ${least} bytes (count ${count})`);
    }
    return;
  }
  const keywords = ALLOCATING_KEYWORDS.get(name);
  if (!keywords) return;
  for (let i = 2; i < args.length - 1; i++) {
    const keyword = String(args[i]).toLowerCase();
    if (!keywords.includes(keyword)) continue;
    const count = integer(args[i + 1]);
    if (count !== undefined && magnitude(count) > BigInt(MAX_ALLOCATING_COUNT)) {
      throw KvError.badRequest(`ERR ${keyword.toUpperCase()} is out of range: at most ${MAX_ALLOCATING_COUNT} (got ${count})`);
    }
  }
}
