import type { Redis } from 'ioredis';

/** `text` with Redis glob characters escaped, for SCAN MATCH. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/** Every key matching `pattern` (SCAN through ioredis's scanStream; a key may repeat, as SCAN allows). */
export async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const batch of redis.scanStream({ match: pattern, count: 1000 }) as AsyncIterable<string[]>) keys.push(...batch);
  return keys;
}
