import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { type RedisServer, kvEngine, startRedisServer } from '@restash/platform/util-stack';
import { KvBackend } from './kv-backend';

const ADMIN = { username: 'restash-gateway', password: 'backend-test-password' };

describe(`KvBackend ACL user connections (${kvEngine().name})`, () => {
  let server: RedisServer;
  let admin: Redis;
  let backend: KvBackend;

  beforeAll(async () => {
    server = await startRedisServer({ engine: kvEngine().name, config: ['user default off', `user ${ADMIN.username} on >${ADMIN.password} ~* &* +@all`], auth: ADMIN });
    admin = new Redis({ port: server.port, host: '127.0.0.1', ...ADMIN });
    backend = new KvBackend(`redis://${ADMIN.username}:${ADMIN.password}@127.0.0.1:${server.port}/0`, { poolSize: 1, transactionPoolSize: 1, commandTimeoutMs: 0, idleTimeoutMs: 60_000 });
  });
  afterAll(async () => {
    await backend?.close();
    admin?.disconnect();
    await server?.stop();
  });

  it('serves a request that holds a dropped user’s connection for a grace, then closes it; new requests authenticate again', async () => {
    await admin.set('k', 'v');
    await admin.call('ACL', 'SETUSER', 'acme.main:app', 'on', '>old', '~*', '+@read');
    const held = await backend.asUser('acme.main:app', 'old');
    expect(await held.run(['GET', 'k'])).toEqual(Buffer.from('v'));

    // The password changes (ACL SETUSER on any replica; each replica drops its connections of the user).
    await admin.call('ACL', 'SETUSER', 'acme.main:app', '<old', '>new');
    backend.dropUser('acme.main:app');
    await sleep(10); // the request's own work between authentication and its command (admission, parsing)
    // A request authenticated before the change still runs on the connection it holds …
    expect(await held.run(['GET', 'k'])).toEqual(Buffer.from('v'));
    // … a new one authenticates again: the old password is refused, the new one works.
    await expect(backend.asUser('acme.main:app', 'old')).rejects.toThrow(/WRONGPASS/);
    expect(await (await backend.asUser('acme.main:app', 'new')).run(['GET', 'k'])).toEqual(Buffer.from('v'));
    // After the grace the old connection is closed.
    await sleep(2_500);
    await expect(held.run(['GET', 'k'])).rejects.toThrow(/Connection is closed/);
  });
});
