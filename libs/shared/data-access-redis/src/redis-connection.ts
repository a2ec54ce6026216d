import { Redis, type RedisOptions } from 'ioredis';
import { parseSentinelUrl } from '@restash/shared/util-config';

/**
 * A connection to the Redis a URL names (docs/configuration.md, "Redis URLs and Redis Sentinel"): `redis://` and `rediss://` as ioredis reads
 * them, or a Redis Sentinel deployment (`redis+sentinel://…`, parseSentinelUrl) through ioredis's own Sentinel
 * support: it asks the sentinels for the primary, and after a failover it reconnects to the new one, without a
 * restart of the process. `options` apply to the connection either way (`duplicate()` keeps both).
 * @throws Error when a sentinel URL is malformed (the services' configuration refuses those at boot)
 */
export function openRedis(url: string, options: RedisOptions = {}): Redis {
  const target = parseSentinelUrl(url);
  if (!target) return new Redis(url, options);
  return new Redis({
    ...options,
    sentinels: target.sentinels,
    name: target.name,
    db: target.db,
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
    ...(target.sentinelUsername !== undefined ? { sentinelUsername: target.sentinelUsername } : {}),
    ...(target.sentinelPassword !== undefined ? { sentinelPassword: target.sentinelPassword } : {}),
    ...(target.tls ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
  });
}
