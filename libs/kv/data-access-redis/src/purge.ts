import { Redis } from 'ioredis';
import type { KvDatabaseRecord } from '@restash/shared/data-access-registry';

/**
 * Wipes what a KV database left on its Redis server, for tenant deletion: every key of every logical
 * database (FLUSHALL: the server backs only this database, README, "KV: one Redis server per database"), the script cache, every
 * function library, and the ACL users the tenant created (named `<database id>:<user>`, see the
 * command policy's prefix; deleting them also disconnects their clients). The gateway's own user and
 * the server's configuration stay. Connects once with `record.redisUrl` (the gateway's admin user)
 * and disconnects before returning.
 *
 * @throws Error when the server cannot be reached or refuses one of the commands (nothing is retried)
 */
export async function purgeKvDatabase(record: Pick<KvDatabaseRecord, 'id' | 'redisUrl'>): Promise<void> {
  const client = new Redis(record.redisUrl, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  let cause: Error | undefined;
  client.on('error', (error: Error) => (cause ??= error)); // e.g. WRONGPASS, where connect() only says the connection closed
  try {
    await client.connect().catch((error: unknown) => {
      throw cause ?? error;
    });
    await client.call('flushall', 'sync');
    await client.call('script', 'flush', 'sync');
    await client.call('function', 'flush', 'sync');
    const users = (await client.call('acl', 'users')) as string[];
    const own = users.filter((user) => user.startsWith(`${record.id}:`));
    if (own.length > 0) await client.call('acl', 'deluser', ...own);
  } finally {
    client.disconnect();
  }
}
