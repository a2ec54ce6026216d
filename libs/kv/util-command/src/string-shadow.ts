import type { Reply } from './encode';

/**
 * The key prefix of the JSON shadows the gateway keeps of string keys indexed by `SEARCH.CREATE … ON STRING`
 * (docs/kv.md, "KV: Search"; libs/kv/util-search/src/string-index.ts): the Redis Query Engine indexes only hash and
 * JSON keys, so each string key under such an index's prefixes has a JSON copy at `<prefix><key>`. SCAN and KEYS
 * leave them out and RANDOMKEY names the key they shadow ({@link hideShadows}).
 */
export const STRING_SHADOW_PREFIX = '__restash_string:';

/**
 * The key prefix of what the gateway keeps for a stream indexed by `SEARCH.CREATE … ON STREAM` (libs/kv/util-search/
 * src/stream-index.ts): `<prefix><n>:<stream>` (a sorted set of the shadowed entry IDs), `<prefix><n>:<stream>:` +
 * entry ID (a hash of each entry's fields) and `<prefix><n>:<stream>!` (the last entry ID shadowed), n being the
 * stream key's length in bytes, so that no stream's keys fall under another's.
 */
export const STREAM_SHADOW_PREFIX = '__restash_stream:';

const SHADOW = Buffer.from(STRING_SHADOW_PREFIX);
const STREAM_SHADOW = Buffer.from(STREAM_SHADOW_PREFIX);

function startsWith(key: Buffer, prefix: Buffer): boolean {
  return key.length >= prefix.length && prefix.equals(key.subarray(0, prefix.length));
}

/** Whether a key (a bulk reply or an argument) is a shadow ({@link STRING_SHADOW_PREFIX}, {@link STREAM_SHADOW_PREFIX}). */
export function isShadowKey(key: Reply | undefined): boolean {
  if (Buffer.isBuffer(key)) return startsWith(key, SHADOW) || startsWith(key, STREAM_SHADOW);
  return typeof key === 'string' && (key.startsWith(STRING_SHADOW_PREFIX) || key.startsWith(STREAM_SHADOW_PREFIX));
}

/** The shadow's key of a string key. */
export function shadowOf(key: string | Buffer): Buffer {
  return Buffer.concat([SHADOW, Buffer.from(key)]);
}

/** `<STREAM_SHADOW_PREFIX><n>:<stream>`: the root of a stream's shadow keys (see {@link STREAM_SHADOW_PREFIX}). */
export function streamShadowRoot(stream: string | Buffer): Buffer {
  const bytes = Buffer.from(stream);
  return Buffer.concat([STREAM_SHADOW, Buffer.from(`${bytes.length}:`), bytes]);
}

/** The stream a stream shadow key belongs to (undefined for any other key), and the rest after its root. */
export function streamOfShadow(key: Buffer): { stream: Buffer; rest: Buffer } | undefined {
  if (!startsWith(key, STREAM_SHADOW)) return undefined;
  const colon = key.indexOf(':', STREAM_SHADOW.length);
  const length = Number(key.subarray(STREAM_SHADOW.length, colon).toString('latin1'));
  if (colon < 0 || !Number.isInteger(length) || colon + 1 + length > key.length) return undefined;
  return { stream: key.subarray(colon + 1, colon + 1 + length), rest: key.subarray(colon + 1 + length) };
}

/** The key a shadow shadows (a stream shadow: the stream); any other key as it is. */
export function unshadow(key: Reply): Reply {
  if (!isShadowKey(key)) return key;
  const bytes = Buffer.isBuffer(key) ? key : Buffer.from(key as string);
  if (startsWith(bytes, SHADOW)) return bytes.subarray(SHADOW.length);
  return streamOfShadow(bytes)?.stream ?? key;
}

/**
 * A reply of SCAN (`[cursor, keys]`), KEYS (`keys`) or RANDOMKEY (`key`) without the shadows: SCAN and KEYS leave
 * them out; RANDOMKEY answers the key a shadow shadows (the string key, or the stream).
 */
export function hideShadows(command: 'scan' | 'keys' | 'randomkey', reply: Reply): Reply {
  if (command === 'randomkey') return reply === null ? reply : unshadow(reply);
  if (command === 'keys') return Array.isArray(reply) ? reply.filter((key) => !isShadowKey(key)) : reply;
  if (!Array.isArray(reply) || !Array.isArray(reply[1])) return reply;
  return [reply[0] as Reply, reply[1].filter((key) => !isShadowKey(key))];
}
