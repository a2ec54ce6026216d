import type { Reply } from './encode';

/**
 * The key prefix of the JSON shadows the gateway keeps of string keys indexed by `SEARCH.CREATE … ON STRING`
 * (docs/kv.md, "KV: Search"; libs/kv/util-search/src/string-index.ts): the Redis Query Engine indexes only hash and
 * JSON keys, so each string key under such an index's prefixes has a JSON copy at `<prefix><key>`. SCAN and KEYS
 * leave them out and RANDOMKEY names the key they shadow ({@link hideShadows}).
 */
export const STRING_SHADOW_PREFIX = '__restash_string:';

const SHADOW = Buffer.from(STRING_SHADOW_PREFIX);

/** Whether a key (a bulk reply or an argument) is a shadow ({@link STRING_SHADOW_PREFIX}). */
export function isShadowKey(key: Reply | undefined): boolean {
  if (Buffer.isBuffer(key)) return key.length >= SHADOW.length && SHADOW.equals(key.subarray(0, SHADOW.length));
  return typeof key === 'string' && key.startsWith(STRING_SHADOW_PREFIX);
}

/** The shadow's key of a string key. */
export function shadowOf(key: string | Buffer): Buffer {
  return Buffer.concat([SHADOW, Buffer.from(key)]);
}

/** The key a shadow shadows; any other key as it is. */
export function unshadow(key: Reply): Reply {
  if (!isShadowKey(key)) return key;
  return Buffer.isBuffer(key) ? key.subarray(SHADOW.length) : Buffer.from((key as string).slice(STRING_SHADOW_PREFIX.length));
}

/**
 * A reply of SCAN (`[cursor, keys]`), KEYS (`keys`) or RANDOMKEY (`key`) without the shadows: SCAN and KEYS leave
 * them out; RANDOMKEY answers the string key a shadow shadows (it exists while its shadow does).
 */
export function hideShadows(command: 'scan' | 'keys' | 'randomkey', reply: Reply): Reply {
  if (command === 'randomkey') return reply === null ? reply : unshadow(reply);
  if (command === 'keys') return Array.isArray(reply) ? reply.filter((key) => !isShadowKey(key)) : reply;
  if (!Array.isArray(reply) || !Array.isArray(reply[1])) return reply;
  return [reply[0] as Reply, reply[1].filter((key) => !isShadowKey(key))];
}
