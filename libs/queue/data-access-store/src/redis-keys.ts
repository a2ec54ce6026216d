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

/** A Lua script to define as a command of a connection (ioredis's defineCommand). */
export interface ScriptDefinition {
  /** Absent: each call's first argument is its number of keys. */
  numberOfKeys?: number;
  lua: string;
}

/**
 * The connection with each of `scripts` defined as a command, once per connection: EVALSHA from then on, not the
 * script's text per call (the lanes' and workflow runs' scripts, docs/queue.md, "Queue: queues and flow control"). Defined before an auto-pipelining connection's first pipeline, so
 * call it when the connection is handed over, not per request.
 */
export function withScripts<Scripts>(redis: Redis, scripts: Record<keyof Scripts & string, ScriptDefinition>): Redis & Scripts {
  for (const [name, definition] of Object.entries<ScriptDefinition>(scripts)) {
    if (!(name in redis)) redis.defineCommand(name, definition);
  }
  return redis as Redis & Scripts;
}
