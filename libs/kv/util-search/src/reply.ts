import type { Reply } from '@restash/kv/util-command';
import { KvError } from '@restash/kv/util-command';

/** The text of a bulk or status reply (UTF-8); numbers as their decimal text; anything else ''. */
export function text(reply: Reply | undefined): string {
  if (Buffer.isBuffer(reply)) return reply.toString('utf8');
  if (typeof reply === 'string') return reply;
  if (typeof reply === 'number') return String(reply);
  return '';
}

/** A RESP2 `[name, value, name, value, …]` array as a Map from name to value (FT.INFO, FT.AGGREGATE rows). */
export function pairs(reply: Reply | undefined): Map<string, Reply> {
  const out = new Map<string, Reply>();
  if (!Array.isArray(reply)) return out;
  for (let i = 0; i + 1 < reply.length; i += 2) out.set(text(reply[i]), reply[i + 1] as Reply);
  return out;
}

/** The array of a reply, or [] when it is not one. */
export function list(reply: Reply | undefined): Reply[] {
  return Array.isArray(reply) ? reply : [];
}

/**
 * A number from a reply or JSON value: RediSearch sends doubles as text (`"12.5"`, `"inf"`, `"nan"`).
 * @returns NaN when the value is not numeric
 */
export function num(value: Reply | unknown): number {
  if (typeof value === 'number') return value;
  const s = Buffer.isBuffer(value) ? value.toString('utf8') : typeof value === 'string' ? value : '';
  if (s === '') return Number.NaN;
  if (s === 'inf' || s === '+inf') return Number.POSITIVE_INFINITY;
  if (s === '-inf') return Number.NEGATIVE_INFINITY;
  return Number(s);
}

/** The 400 of bad SEARCH.* input, with an Upstash-like `ERR …` text. */
export function bad(message: string): KvError {
  return KvError.badRequest(`ERR ${message}`);
}
