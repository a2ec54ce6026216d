import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { registryKeys } from './records';

/** Outcome of {@link DailyQuota.consume}. */
export interface QuotaDecision {
  allowed: boolean;
  /** Requests counted today after this call (unchanged when refused). */
  used: number;
}

// Check and count in one step, so that replicas never overshoot the limit together. A refused
// request is not counted. The counter lives two days, long enough for any clock skew.
const CONSUME = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = tonumber(ARGV[1])
if used + n > tonumber(ARGV[2]) then return {0, used} end
used = redis.call('INCRBY', KEYS[1], n)
if used == n then redis.call('EXPIRE', KEYS[1], 172800) end
return {1, used}
`;

/** SHA-1 of the script: EVALSHA first, EVAL (which also caches it) when the server does not know it yet. */
const CONSUME_SHA = createHash('sha1').update(CONSUME).digest('hex');

/**
 * Per-resource daily request limits, counted in the control Redis so that every gateway replica
 * shares one count (docs/architecture.md, "Architecture: limits"). Days are UTC calendar days.
 */
export class DailyQuota {
  constructor(private readonly redis: Redis) {}

  /**
   * Counts `count` requests against `limit` for today, or refuses them all when that would exceed it.
   * @param api the API the resource belongs to, e.g. `kv`
   * @param resource the resource id
   * @param limit requests allowed per day; callers skip the call for unlimited resources
   * @throws Error when the control Redis cannot be reached
   */
  async consume(api: string, resource: string, count: number, limit: number, now = new Date()): Promise<QuotaDecision> {
    const key = registryKeys.quota(api, resource, now.toISOString().slice(0, 10));
    let reply: [number, number];
    try {
      reply = (await this.redis.evalsha(CONSUME_SHA, 1, key, count, limit)) as [number, number];
    } catch (error) {
      if (!String(error).includes('NOSCRIPT')) throw error;
      reply = (await this.redis.eval(CONSUME, 1, key, count, limit)) as [number, number];
    }
    return { allowed: reply[0] === 1, used: Number(reply[1]) };
  }
}
