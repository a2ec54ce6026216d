import { type KvDatabaseRecord } from '@restash/shared/data-access-registry';
import { openRedis, serverRunId } from '@restash/shared/data-access-redis';

/**
 * Wipes what a KV database left on its Redis server, for tenant deletion: every key of every logical
 * database (FLUSHALL: the server backs only this database, docs/kv.md, "KV: one Redis server per database"), the script cache, every
 * function library, and the ACL users the tenant created (named `<database id>:<user>`, see the
 * command policy's prefix; deleting them also disconnects their clients). The gateway's own user and
 * the server's configuration stay. Connects once with `record.redisUrl` (the gateway's admin user; for a Sentinel
 * URL, to the primary the sentinels name now, openRedis) and disconnects before returning. ACL users exist only on
 * the server they were made on (Redis does not replicate them): on a Sentinel deployment, a replica keeps those the
 * tenant made while it was the primary, if it ever was.
 *
 * Wipes nothing when the server's binding (`restash:v1:kv:server:<run_id>`, made by kv-gateway when it
 * first serves a database there) names another owner: another KV database, or the platform (the control Redis,
 * the queue's Redis: `platform:<role>`). Then this database was never served from that server (the gateway refuses
 * a database on a server bound to another owner), and the server holds the other owner's data, which a database
 * that named the same server under another host name (`localhost` for `127.0.0.1`) must not wipe.
 *
 * @param boundTo the owner of the server with this `run_id` (a KV database id or `platform:<role>`), or null when unbound
 * @returns `'purged'`, or `'other'` when the server is bound to another owner and was left untouched
 * @throws Error when the server cannot be reached or refuses one of the commands (nothing is retried)
 */
export async function purgeKvDatabase(
  record: Pick<KvDatabaseRecord, 'id' | 'redisUrl'>,
  boundTo: (runId: string) => Promise<string | null>,
): Promise<'purged' | 'other'> {
  // Nothing is retried: neither the server nor, for a Sentinel URL, the sentinels (ioredis would ask them again forever).
  const client = openRedis(record.redisUrl, { lazyConnect: true, retryStrategy: () => null, sentinelRetryStrategy: () => null, maxRetriesPerRequest: 0 });
  let cause: Error | undefined;
  client.on('error', (error: Error) => (cause ??= error)); // e.g. WRONGPASS, where connect() only says the connection closed
  try {
    await client.connect().catch((error: unknown) => {
      throw cause ?? error;
    });
    const owner = await boundTo(await serverRunId(client));
    if (owner !== null && owner !== record.id) return 'other';
    await client.call('flushall', 'sync');
    await client.call('script', 'flush', 'sync');
    await client.call('function', 'flush', 'sync');
    const users = (await client.call('acl', 'users')) as string[];
    const own = users.filter((user) => user.startsWith(`${record.id}:`));
    if (own.length > 0) await client.call('acl', 'deluser', ...own);
    return 'purged';
  } finally {
    client.disconnect();
  }
}
