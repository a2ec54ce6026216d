import { Redis } from 'ioredis';
import { type RedisServer, kvEngine, startRedisServer } from '@restash/platform/util-stack';
import { purgeKvDatabase } from './purge';

const ADMIN = { username: 'restash-gateway', password: 'purge-test-password' };

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

    await purgeKvDatabase(record());

    await admin.select(0);
    expect(await admin.info('keyspace')).not.toMatch(/^db\d+:/m);
    expect(await admin.script('EXISTS', sha)).toEqual([0]);
    expect(await admin.call('FUNCTION', 'LIST')).toEqual([]);
    expect(((await admin.call('ACL', 'USERS')) as string[]).sort()).toEqual(['default', ADMIN.username]);
    await aliceGone; // ACL DELUSER disconnects the user's clients
    alice.disconnect();
    expect(await admin.ping()).toBe('PONG');
  });

  it('throws when the server cannot be reached', async () => {
    await expect(purgeKvDatabase({ id: 'acme.main', redisUrl: 'redis://127.0.0.1:1/0' })).rejects.toThrow();
  });

  it('throws when the credentials are refused', async () => {
    await expect(purgeKvDatabase({ id: 'acme.main', redisUrl: `redis://${ADMIN.username}:wrong@127.0.0.1:${server.port}/0` })).rejects.toThrow(/WRONGPASS/);
  });
});
