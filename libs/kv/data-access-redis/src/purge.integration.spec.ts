import { Redis } from 'ioredis';
import { type RedisServer, kvEngine, startRedisServer } from '@restash/platform/util-stack';
import { purgeKvDatabase } from './purge';

const ADMIN = { username: 'restash-gateway', password: 'purge-test-password' };

/** No database is bound to the server. */
const unbound = async () => null;

describe(`purgeKvDatabase (${kvEngine().name})`, () => {
  let server: RedisServer;
  let admin: Redis;
  const record = () => ({ id: 'acme.main', redisUrl: `redis://${ADMIN.username}:${ADMIN.password}@127.0.0.1:${server.port}/2` });

  beforeAll(async () => {
    server = await startRedisServer({ engine: kvEngine().name, config: ['user default off', `user ${ADMIN.username} on >${ADMIN.password} ~* &* +@all`], auth: ADMIN });
    admin = new Redis({ port: server.port, host: '127.0.0.1', ...ADMIN });
  });
  afterAll(async () => {
    admin.disconnect();
    await server.stop();
  });

  it('wipes keys of every logical database, scripts, functions and the tenant’s ACL users, and keeps the gateway’s user', async () => {
    await admin.select(2);
    await admin.set('k', 'v');
    await admin.select(5);
    await admin.set('elsewhere', 'v');
    const sha = (await admin.script('LOAD', 'return 1')) as string;
    await admin.call('FUNCTION', 'LOAD', "#!lua name=lib\nredis.register_function('f', function() return 1 end)");
    await admin.call('ACL', 'SETUSER', 'acme.main:alice', 'on', '>pw', '~*', '+@all');
    await admin.call('ACL', 'SETUSER', 'acme.main:bob', 'on', '>pw', '~*', '+@all');
    const alice = new Redis({ port: server.port, host: '127.0.0.1', username: 'acme.main:alice', password: 'pw', retryStrategy: () => null });
    alice.on('error', () => undefined);
    await alice.ping();
    const aliceGone = new Promise<void>((resolve) => alice.once('end', () => resolve()));

    expect(await purgeKvDatabase(record(), unbound)).toBe('purged');

    await admin.select(0);
    expect(await admin.info('keyspace')).not.toMatch(/^db\d+:/m);
    expect(await admin.script('EXISTS', sha)).toEqual([0]);
    expect(await admin.call('FUNCTION', 'LIST')).toEqual([]);
    expect(((await admin.call('ACL', 'USERS')) as string[]).sort()).toEqual(['default', ADMIN.username]);
    await aliceGone; // ACL DELUSER disconnects the user's clients
    alice.disconnect();
    expect(await admin.ping()).toBe('PONG');
  });

  it('wipes a server bound to this database, and leaves one bound to another database untouched', async () => {
    await admin.select(0);
    await admin.set('theirs', 'v');
    const runIds: string[] = [];
    const boundToOther = async (runId: string) => (runIds.push(runId), 'other.main');
    // The same server under another host name, as a dropped database that named it so would reach it.
    const sameServer = { id: 'acme.evil', redisUrl: `redis://${ADMIN.username}:${ADMIN.password}@localhost:${server.port}/1` };
    expect(await purgeKvDatabase(sameServer, boundToOther)).toBe('other');
    expect(await admin.get('theirs')).toBe('v');
    expect(runIds).toEqual([/^run_id:(\w+)/m.exec(await admin.info('server'))?.[1]]);

    expect(await purgeKvDatabase(record(), async () => 'acme.main')).toBe('purged');
    expect(await admin.exists('theirs')).toBe(0);
  });

  it('throws when the server cannot be reached', async () => {
    await expect(purgeKvDatabase({ id: 'acme.main', redisUrl: 'redis://127.0.0.1:1/0' }, unbound)).rejects.toThrow();
  });

  it('throws when the credentials are refused', async () => {
    await expect(purgeKvDatabase({ id: 'acme.main', redisUrl: `redis://${ADMIN.username}:wrong@127.0.0.1:${server.port}/0` }, unbound)).rejects.toThrow(/WRONGPASS/);
  });
});
